"""`python -m playground generate|bench|export`: the command-line contract other tools rely on.

Bad input exits with status 2 and one line `error: ...` on stderr, before any model work when the
input alone shows the mistake; an output that does not meet its constraint (INVALID: cut short, or
a keyword checked only after the run) is printed in full and exits with status 1. The session (torch, transformers:
seconds to import) is imported by the commands, so --help and a mistyped flag answer at once. generate and export are
here; bench is cli_bench's, generate's report cli_report's."""
import codecs
import contextlib
import dataclasses
import json
import os
import signal
import sys
import threading
import warnings

from playground.cli_args import (STDIN_NAMES, build_parser, compiles, confidence_of, constraint_flags, flag_or_preset,
                                  parse_prompt_ids, resolve_models, said_to_type)
from playground.cli_bench import Interrupted, cmd_bench
from playground.cli_notes import unused_by_export, unused_flags
from playground.cli_report import format_text, invalid_outputs, progress_printer, ran_with, written
from playground.config import MAX_SEED
from playground.errors import PlaygroundError
from playground.limits import MAX_PROMPT_CHARS, MAX_SAMPLES, at_most


def cmd_generate(args) -> int:
    from playground import session
    from playground.measure.compared import compared_run
    settings = _settings(args)
    prompt_ids = _given_prompt_ids(args, settings)
    cfg, spec = session.checked_run(settings, prompt=prompt_ids is None)  # all before loading, as export checks it (a
    # prompt one character too long, a token tree over prompt lookup were said after a download of GB; CLI reviews)
    _check_samples(args.num_samples, cfg.seed)
    preset, target, draft = resolve_models(args)
    if preset is not None and preset.gpu and not args.target and session.resolve_device(args.device).type == "cpu":
        print(f"note: the preset {preset.name} is made for a GPU; on this CPU it runs very slowly (and its weights, "
              "if not cached, are a download of several GB)", file=sys.stderr)  # (a CLI review: said after the download)
    pair = session.load_pair(target, draft, args.device, progress=progress_printer())
    constraint = session.constrain(pair, spec)
    notes = unused_flags(args, settings, bool(getattr(pair.tokenizer, "chat_template", None)), target, cfg, draft)
    if prompt_ids is None:
        prompt_ids = session.prompt_ids_of(pair, settings, settings.prompt)
    session.check_prompt_ids(pair, prompt_ids, cfg.max_new_tokens)
    notes += session.run_notes(pair, prompt_ids, cfg, constraint)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    shown = None if args.prompt_ids else settings.prompt
    with _ctrl_c_ends_the_run() as stopped:  # (the output too: a Ctrl-C as the run ended lost its report)
        out = compared_run(pair, prompt_ids, cfg, args.baseline, args.num_samples, constraint, stopped,
                           progress_printer())
        cut = stopped.is_set()
        out = {"settings": ran_settings(settings, args.baseline, shown), **out, "note": "; ".join(notes)}  # (as the
        # page's download: a stored JSON said neither the models, k nor the constraint; a scripting review)
        _print_generated(out, args.json, ran_with(target, draft, cfg, shown, prompt_ids))
    if stopped.is_set():
        print("interrupted: the output is what came before Ctrl-C" if cut else
              "interrupted as the run ended: the output above is whole", file=sys.stderr)
        return 130  # (as a shell reports SIGINT)
    if broken := invalid_outputs(out):  # (a script reading the text as JSON was told 0, as for a valid one)
        print(f"invalid: {broken}", file=sys.stderr)
        return 1
    return 0


def _print_generated(out: dict, as_json: bool, ran: str) -> None:
    """The JSON, or the text alone on stdout (`generate > answer.txt` kept the report's lines in it too; a CLI review)
    and the report on stderr, also where stdout's reader went away (`| head -1`: BrokenPipeError, main's 141)."""
    if as_json:
        print(json.dumps(out))
        return
    try:
        print(written(out), flush=True)
    finally:  # (it was lost after a whole run)
        print(format_text(out) + "\n" + ran, file=sys.stderr)


def ran_settings(settings, baseline: bool, prompt: str | None) -> dict:
    """The settings as the page's download says them: `compare` whether the target alone ran beside, `prompt` None
    where it was given as token ids."""
    return settings.as_dict() | {"compare": baseline, "prompt": prompt}


def _check_samples(num_samples: int, seed: int) -> None:
    if num_samples < 1:
        raise PlaygroundError(f"--num-samples must be >= 1, got {num_samples}")
    at_most(num_samples, MAX_SAMPLES, "--num-samples", " (PLAYGROUND_MAX_SAMPLES)")
    if seed + num_samples - 1 > MAX_SEED:  # (said after the first sample's run, of a seed never typed)
        raise PlaygroundError(f"--num-samples {num_samples} seeds {seed}..{seed + num_samples - 1}: "
                              "the last is past 2^63 - 1, the largest seed")


def _given_prompt_ids(args, settings) -> list[int] | None:
    """--prompt-ids read, or None where the prompt is text (checked here: given, not empty)."""
    prompt_ids = parse_prompt_ids(args.prompt_ids) if args.prompt_ids is not None else None
    if args.prompt is not None and prompt_ids is not None:
        raise PlaygroundError("give --prompt or --prompt-ids, not both")
    if prompt_ids is None:
        _check_prompt(args, settings, "give --prompt or --prompt-ids")
    return prompt_ids


@contextlib.contextmanager
def _ctrl_c_ends_the_run():
    """Within it, a first Ctrl-C sets the event it yields (the run ends at its next round and prints what
    it wrote); a second quits at once, as Ctrl-C does elsewhere."""
    stop = threading.Event()

    def on_ctrl_c(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()  # (nothing printed here: a handler printing while the run prints would reenter it)
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN or threading.current_thread() is not threading.main_thread():
        yield stop  # (a job started in the background ignores Ctrl-C; only the main thread takes signals)
        return
    signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def cmd_export(args) -> int:
    from playground.export import export_setting, format_export
    from playground.session import checked_run
    settings = _settings(args)
    _check_prompt(args, settings, "give --prompt")  # (an empty one was exported, exit 0)
    checked_run(settings)  # an export of what would run, refused as generate refuses it (lone surrogates,
    # an empty or nested cascade were exported)
    exported = export_setting(settings)
    for note in unused_by_export(args, settings):
        print(note, file=sys.stderr)
    if not settings.preset and exported.endpoint.endswith("/chat/completions"):  # nothing loaded: not known
        print("note: models named without a --preset are exported with their chat template, as generate applies it "
              "where their tokenizer has one; give --raw for a model without one (a base model)", file=sys.stderr)
    print(json.dumps(dataclasses.asdict(exported)) if args.json else format_export(exported), end="" if not args.json else "\n")
    return 0


def _check_prompt(args, settings, give: str) -> None:
    if not settings.prompt.strip():
        why = "" if args.prompt is not None else f": {give} (models named without a --preset have no prompt of their own)"
        raise PlaygroundError("the prompt is empty" + why)


def _settings(args):
    """The page's Settings for the flags: the preset's, each flag given overriding it (loads nothing; checked by
    session.checked_run)."""
    from playground.presets import Settings, chosen_constraint
    preset, target, draft = resolve_models(args)
    base = Settings.from_preset(preset) if preset else Settings(preset="", chat=True)
    flags = {"k": args.k, "temperature": args.temperature, "top_p": args.top_p, "top_k": args.top_k,
             "max_new_tokens": args.max_new_tokens, "prompt": args.prompt, "system": args.system}
    s = dataclasses.replace(base, target=target, draft=draft, seed=args.seed or 0, policy=args.policy,
                            confidence=confidence_of(args), tree=args.tree,
                            **chosen_constraint(constraint_flags(args), base),
                            backend=args.constraint_backend,
                            schema_in_prompt=args.schema_in_prompt or base.schema_in_prompt, compile=compiles(args),
                            chat=base.chat and not args.raw, **{k: v for k, v in flags.items() if v is not None},
                            think_budget=flag_or_preset(args.think_budget, preset, "think_budget", 0))
    if s.think_budget < 0:  # (-3 ran, "not used", where no constraint was given; refused with one)
        raise PlaygroundError(f"--think-budget: the thinking budget must be a whole number of tokens >= 0, got {s.think_budget}")
    return s


def _quiet_libraries() -> None:
    warnings.filterwarnings("ignore")
    from huggingface_hub.utils import disable_progress_bars
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    disable_progress_bars()


def stdin_prompt() -> str:
    """`--prompt -`: the prompt from standard input (a pipe was ignored in silence, and '-' sent as the
    prompt: a CLI review), read up to the prompt's bound (past it, refused as a typed one is). Its one
    last line end is dropped: what `echo`, a heredoc and an editor add (it was sent, and the demo pair
    continued a line no one had begun); a blank line typed before it stays."""
    said_to_type("the prompt")
    text = _stdin_text(MAX_PROMPT_CHARS + 2)
    text = text.removesuffix("\n") if len(text) <= MAX_PROMPT_CHARS + 1 else text  # (a prompt of the bound and its
    # line end was refused, where typed it ran; a CLI review)
    if len(text) > MAX_PROMPT_CHARS:  # (only so much is read: its length was said as the bound plus one)
        raise PlaygroundError(f"the prompt from standard input is longer than this host allows ({MAX_PROMPT_CHARS} "
                              "characters, PLAYGROUND_MAX_PROMPT_CHARS)")
    return text


def _stdin_text(most_chars: int) -> str:
    """Up to `most_chars` characters of standard input, its bytes read as UTF-8 whatever the locale says (under
    LC_ALL=C PYTHONUTF8=0, 日本語 was "not valid UTF-8"; a review)."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # (a stream of text alone; twice the characters: \r\n pairs read as one)
        text = sys.stdin.read(2 * most_chars).removeprefix("\ufeff")
    else:
        data = stream.read(4 * most_chars)  # (UTF-8: at most 4 bytes a character)
        try:  # (utf-8-sig: a byte-order mark, as Windows editors start a file, is no character, as files' are read)
            text = codecs.getincrementaldecoder("utf-8-sig")().decode(data, final=len(data) < 4 * most_chars)
        except UnicodeDecodeError as exc:
            raise PlaygroundError(f"the prompt: standard input is not UTF-8 text (byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")[:most_chars]  # lines as text mode reads them (bytes read
    # alone kept a Windows file's \r\n: a review)


def main(argv: list[str] | None = None) -> int:
    if sys.stdout is None:  # (`>&-`: the run went on, its text lost, then a traceback and status 1; a scripting review)
        print("error: standard output is closed: nowhere to write", file=sys.stderr)
        return 2
    if hasattr(sys.stdout, "reconfigure"):  # a standard output that cannot write every character (cp1252 on Windows,
        sys.stdout.reconfigure(errors="backslashreplace")  # redirected) wrote a traceback after the whole run
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "prompt", None) == "-":  # generate's and export's: from standard input
            if taken := [f"--{name}" for name in ("schema", "grammar") if getattr(args, name, None) in STDIN_NAMES]:
                raise PlaygroundError(f"--prompt and {taken[0]} both read standard input: give one of them a file")
            args.prompt = stdin_prompt()
        _quiet_libraries()
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # (a full disk said at exit, as Python's "Exception ignored" lines, with status 120)
        return code
    except PlaygroundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # (Ctrl-C is no error: "error: interrupted" read as a failure)
        if not isinstance(exc, Interrupted):
            print("interrupted (Ctrl-C)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`| head -1`): quiet, as other tools are (a traceback was printed);
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is left to flush at exit goes nowhere
        return 141  # (128 + SIGPIPE, as a shell reports a tool the signal ended)
    except OSError as exc:  # what the machine refused (`> /dev/full`: a traceback): one line, as for bad input
        print(f"error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""), file=sys.stderr)
        return 2


COMMANDS = {"generate": cmd_generate, "bench": cmd_bench, "export": cmd_export}
