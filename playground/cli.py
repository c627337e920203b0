"""`python -m playground generate|bench|export`: the command-line contract other tools rely on.

Bad input exits with status 2 and one line `error: ...` on stderr, before any model work when the
input alone shows the mistake; an output that does not meet its constraint (INVALID: cut short, or
a keyword checked only after the run) is printed in full and exits with status 1. The session (torch, transformers: seconds to import) is imported by the
commands, so --help and a mistyped flag answer at once."""
import codecs
import contextlib
import dataclasses
import json
import os
import pathlib
import signal
import sys
import threading
import warnings

from playground.cli_args import (STDIN_NAMES, build_parser, compiles, confidence_of, constraint_flags, flag_or_preset,
                                  parse_prompt_ids, read_prompts, resolve_models, said_to_type, writable_dir)
from playground.cli_notes import CONFIDENCE_UNUSED, rows_bench_cannot_measure, unused_by_export, unused_flags
from playground.config import BUDGET_RAN_OUT, MAX_SEED, THINK_END, SpecConfig, tree_fields, tree_text
from playground.draft_ids import NGRAM
from playground.errors import PlaygroundError
from playground.events import OPEN_END, STOPPED
from playground.limits import MAX_PROMPT_CHARS, MAX_REPEAT, MAX_SAMPLES, MAX_SWEEP_PROMPTS, MAX_SWEEP_VALUES, at_most
from playground.metrics import comparison_json, counted, identity_note, lookup_level, speedup_said


def cmd_generate(args) -> int:
    from playground import session
    settings = _settings(args)
    prompt_ids = _given_prompt_ids(args, settings)
    cfg, spec = session.checked_run(settings, prompt=prompt_ids is None)  # all before loading, as export checks it (a
    # prompt one character too long, a token tree over prompt lookup were said after a download of GB; CLI reviews)
    _check_samples(args.num_samples, cfg.seed)
    preset, target, draft = resolve_models(args)
    if preset is not None and preset.gpu and not args.target and session.resolve_device(args.device).type == "cpu":
        print(f"note: the preset {preset.name} is made for a GPU; on this CPU it runs very slowly (and its weights, "
              "if not cached, are a download of several GB)", file=sys.stderr)  # (a CLI review: said after the download)
    pair = session.load_pair(target, draft, args.device, progress=_progress_printer())
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
        out = generate_report(pair, prompt_ids, cfg, args.baseline, args.num_samples, constraint, stopped)
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


def invalid_outputs(out: dict) -> str:
    """'' when every output meets its constraint (or there is none); else which did not, and why."""
    samples = out.get("samples") or [{"seed": None, **out}]
    broken = [s for s in samples if s["valid"] is False]
    if not broken:
        return ""
    seeds = [str(s["seed"]) for s in broken]
    which = ("the output does" if len(samples) == 1 else f"the sample with seed {seeds[0]} does" if len(seeds) == 1
             else f"the samples with seeds {', '.join(seeds[:-1])} and {seeds[-1]} do")
    return f"{which} not meet the constraint (" + broken[0]["validation_error"] + ")"


def ran_with(target: str, draft: str, cfg, prompt: str | None, prompt_ids: list[int]) -> str:
    """The line that says what produced the text above it (the text alone began mid-code, from nowhere);
    prompt None: given as token ids."""
    t = cfg.sampling.temperature
    sampling = "greedy" if t == 0 else f"temperature {t:g}, seed {cfg.seed}"
    shown = "given as token ids" if prompt is None else repr(prompt if len(prompt) <= 60 else prompt[:59] + "…")
    return (f"-- {target} with {draft}, {_drafting(cfg, draft)}, {sampling}, at most {counted(cfg.max_new_tokens, 'new token')}; "
            f"prompt {shown} ({counted(len(prompt_ids))})")


def _drafting(cfg, draft: str = "") -> str:
    """'token tree 2,2,2/5+3' (its k unused), or 'k 4' and a policy other than fixed (not the confidence
    policy under prompt lookup, which drafts as under fixed: cli_notes said so before the run)."""
    if cfg.tree:
        return f"token tree {tree_text(cfg)}"
    if cfg.policy == "fixed" or (cfg.policy == "confidence" and draft == NGRAM):
        return f"k {cfg.k}"
    return f"k {cfg.k}, {cfg.policy} policy" + (f" at {cfg.confidence:g}" if cfg.policy == "confidence" else "")


def generate_report(pair, prompt_ids, cfg, baseline: bool, num_samples: int, constraint=None,
                    stop: threading.Event | None = None) -> dict:
    """The run (with `baseline`, beside the target alone, measured), as JSON. Once `stop` is set (Ctrl-C:
    _ctrl_c_ends_the_run) the run ends at its next round with what came, the measurement with the
    estimate before the block it cut short, and no further sample starts."""
    from playground import session
    from playground.measure.speedup import engine_block, least_blocks, measure
    stop = stop or threading.Event()
    compile_s = session.compile_graphs(pair, len(prompt_ids), cfg, _progress_printer(), constrained=constraint is not None)
    if baseline:  # the target alone interleaved beside the run, measured by playground.measure.speedup
        make = engine_block(pair, [prompt_ids], cfg, constraint, should_stop=stop.is_set, whole_base=True)  # (its
        first = make()  # text in the JSON)
        if not first.spec_runs:  # Ctrl-C in the warm-up: nothing written yet
            raise KeyboardInterrupt
        events = first.spec_runs[0]
        result = session.collect(pair, events, constraint=constraint, guide=first.guides[0], prompt_ids=prompt_ids)
    else:
        result = session.run(pair, prompt_ids, cfg, constraint=constraint, should_stop=stop.is_set)
    out = result.as_json()
    if cfg.compile:
        out["compile_s"] = compile_s
        out["compile_note"] = session.compile_fallback(pair, cfg, prompt_len=len(prompt_ids))
    if baseline:
        base = session.collect(pair, first.base_runs[0], prompt_ids=prompt_ids)
        measured = measure(make, [first], least_blocks(cfg), should_stop=stop.is_set)  # (Ctrl-C: the estimate before the block it cut)
        out |= comparison_json(result, base, measured, cfg.sampling.greedy,  # as the page's download
                               form=session.baseline_form(pair, cfg, first.base_runs[0]))
    if num_samples > 1:  # the first is the run above; each its seed, text and tokens
        runs = [result]
        for i in range(1, num_samples):
            if stop.is_set():
                break
            runs.append(session.run(pair, prompt_ids, _reseeded(cfg, cfg.seed + i), constraint=constraint,
                                    should_stop=stop.is_set))
        out["samples"] = [{"seed": cfg.seed + i, "text": run.text, "token_ids": run.token_ids, "stats": run.stats,
                           "finish_reason": run.finish_reason, "valid": run.valid,  # (stats: each draw's acceptance,
                           "validation_error": run.validation_error, "open_end": run.open_end}  # what a sampling study
                          for i, run in enumerate(runs)]  # reads; the first's alone was given, a scripting review)
    return out


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


def cmd_bench(args) -> int:
    from playground import session
    from playground.measure import report
    from playground.measure.machine import machine, machine_line
    preset, target, draft = resolve_models(args)
    seed_given = args.seed is not None
    args.seed = args.seed if seed_given else SpecConfig().seed  # (None: told from a seed given; the engine's default)
    ks, temperatures = _bench_values(args)  # every setting is checked before anything loads
    if args.confidence is not None and "confidence" not in args.policy:
        _log(f"note: {CONFIDENCE_UNUSED}")
    if seed_given and not any(temperatures):  # (said by generate, not by bench; a CLI review)
        _log("note: --seed is not used: every --temperature is 0 (greedy), which draws nothing")
    for flag, why in rows_bench_cannot_measure(args, draft).items():
        _log(f"note: {why}")
        setattr(args, flag, {"tree": "", "policy": (), "compile": None}[flag])  # (machine.json: what was measured)
    out_dir = _bench_folder(args)
    texts = read_prompts(args.prompts, preset, target)[: args.num_prompts]
    pair = session.load_pair(target, draft, args.device, progress=_progress_printer())
    chat = flag_or_preset(None, preset, "chat", True) and not args.raw
    if args.raw and not getattr(pair.tokenizer, "chat_template", None):
        _log(f"note: --raw is not used: {target} has no chat template, so its prompts are sent as written anyway")
    prompts = [session.encode_prompt(pair, t, chat) for t in texts]
    for i, ids in enumerate(prompts, 1):  # (a long prompt was refused once the costs were measured, 20 s on)
        try:
            session.check_prompt_ids(pair, ids, args.max_new_tokens)
        except PlaygroundError as exc:
            raise PlaygroundError(f"--prompts: prompt {i}: {exc}") from None
    ran_on = machine(next(pair.target.parameters()).device) | {"run": _benched(args, pair, ks, temperatures, prompts)}
    _log(f"machine: {machine_line(ran_on)}")
    title = f"{_benched_line(ran_on['run'])}\n\nMeasured on {machine_line(ran_on)}"
    if out_dir:
        if earlier := _written(lambda: report.clear_earlier(out_dir), out_dir):
            _log(f"note: {out_dir} held an earlier bench's {', '.join(earlier)}: removed (this bench's files replace them)")
        _written(lambda: report.write_machine(ran_on, out_dir), out_dir)
    rows = _bench_rows(args, pair, prompts, ks, temperatures, out_dir, title, ran_on)
    if out_dir:
        ran_on["load_average_after"] = machine()["load_average"]  # (a load that came during the bench: said)
        _written(lambda: report.write_machine(ran_on, out_dir), out_dir)
        for path in _written(lambda: report.write_outputs(rows, out_dir, title, _log), out_dir):
            _log(f"wrote {path}")
    print(_bench_table(rows, args.json))
    return 0


def _log(line: str) -> None:
    """A bench's progress, on standard error: the table or JSON alone on standard output (`bench > table.md`
    took the log too)."""
    print(line, file=sys.stderr)


def _bench_values(args) -> tuple[list[int], list[float]]:
    """--k and --temperature's values, each combination and the other counts checked (PlaygroundError)."""
    from playground import session
    from playground.measure.sweeps import parse_values
    try:
        ks, temperatures = parse_values(args.k, int), parse_values(args.temperature, float)
    except ValueError as exc:
        raise PlaygroundError(f"--k / --temperature: {exc}") from None
    for k in ks:
        for t in temperatures:
            session.spec_config(k=k, temperature=t, max_new_tokens=args.max_new_tokens, seed=args.seed,
                                **tree_fields(args.tree))
            for policy in args.policy:  # (its own row: a tree's row keeps the fixed policy)
                session.spec_config(k=k, temperature=t, max_new_tokens=args.max_new_tokens, seed=args.seed,
                                    policy=policy, confidence=confidence_of(args))
    at_most(len(ks) * len(temperatures), MAX_SWEEP_VALUES, "the number of --k x --temperature combinations",
            " (PLAYGROUND_MAX_SWEEP_VALUES)")
    if args.repeat < 1 or args.num_prompts < 1:
        raise PlaygroundError("--repeat and --num-prompts must be >= 1")
    at_most(args.repeat, MAX_REPEAT, "--repeat", " (PLAYGROUND_MAX_REPEAT)")
    at_most(args.num_prompts, MAX_SWEEP_PROMPTS, "--num-prompts", " (PLAYGROUND_MAX_SWEEP_PROMPTS)")
    return ks, temperatures


def _bench_folder(args) -> pathlib.Path | None:
    """--out's folder, writable and holding no files of anything but a bench, or None."""
    from playground.measure import report
    if args.out is not None and not args.out.strip():  # ('' wrote nothing, unsaid; a CLI review)
        raise PlaygroundError("--out is empty: name a folder, or leave the flag out")
    out_dir = writable_dir(args.out) if args.out else None
    if out_dir and (theirs := report.others_files(out_dir)):
        raise PlaygroundError(f"--out: {args.out[:80]} holds {', '.join(theirs)}, which no bench wrote there (no "
                              "machine.json of one beside them) and this bench would replace: name another folder")
    return out_dir


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, said already where it struck (what a bench kept)."""


def _bench_rows(args, pair, prompts, ks, temperatures, out_dir, title: str, ran_on: dict) -> list[dict]:
    """The bench's rows, each one written to --out as it is measured; on Ctrl-C, the rows measured whole printed as
    at the end, said what --out kept, and machine.json marked `interrupted` (it read as a finished bench's; a
    scripting review)."""
    from playground.measure import bench, report
    from playground.measure.machine import machine
    written: list[dict] = []  # the rows measured whole so far (in --out too)

    def on_row(rows: list[dict]) -> None:
        if out_dir:
            _written(lambda: report.write_rows(rows, out_dir, title), out_dir)
        written[:] = rows
    try:
        return bench.run_bench({"draft": pair, "ngram": bench.ngram_pair(pair)}, prompts, ks, temperatures, args.repeat,
                               args.max_new_tokens, args.seed, _log, compiled=bool(args.compile),
                               on_row=on_row, tree=args.tree,  # text: its row's label
                               policies=args.policy, confidence=confidence_of(args))
    except KeyboardInterrupt:  # (said only "interrupted": whether anything was kept, and where, was a guess)
        if written:
            print(_bench_table(written, args.json))
        if not out_dir:
            raise
        ran_on |= {"interrupted": True, "load_average_after": machine()["load_average"]}
        _written(lambda: report.write_machine(ran_on, out_dir), out_dir)
        kept = (f"{counted(len(written), 'row')} measured whole kept in {out_dir / 'rows.json'} and table.md"
                if written else f"no row was measured whole: {out_dir} holds machine.json alone")
        print(f"interrupted: {kept}; no chart", file=sys.stderr)
        raise Interrupted from None  # (said: not again as "error: interrupted", a CLI review)


def _bench_table(rows: list[dict], as_json: bool) -> str:
    from playground.measure import report
    return json.dumps(rows) if as_json else report.markdown_table(rows)


def _benched(args, pair, ks: list[int], temperatures: list[float], prompts: list[list[int]]) -> dict:
    """What a bench measured (machine.json's `run`, the table's title): rows.json named neither the models
    nor the precision they ran in (a CPU's bf16 flags and PLAYGROUND_CPU_DTYPE choose it, and whether float32 weights
    are held in bf16) nor the settings."""
    from playground import session

    def dtype(model) -> str | None:
        return None if model is None else session.precision(model)
    return {"target": pair.target_id, "draft": pair.draft_id, "target_dtype": dtype(pair.target),
            "draft_dtype": dtype(pair.draft), "k": ks, "temperatures": temperatures, "prompts": len(prompts),
            "max_new_tokens": args.max_new_tokens, "repeat": args.repeat, "seed": args.seed,
            "compile": bool(args.compile), "tree": args.tree, "policies": list(args.policy),
            "confidence": confidence_of(args) if "confidence" in args.policy else None}


def _benched_line(run: dict) -> str:
    draft = run["draft"] + (f" ({run['draft_dtype']})" if run["draft_dtype"] else "")
    return (f"{run['target']} ({run['target_dtype']}) + {draft}: {counted(run['prompts'], 'prompt')}, at most "
            f"{counted(run['max_new_tokens'], 'new token')}, seed {run['seed']}")


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


def _written(write, out_dir: pathlib.Path):
    try:
        return write()
    except OSError as exc:
        raise PlaygroundError(f"--out: cannot write into {out_dir}: {exc.strerror or exc}") from None


def _reseeded(cfg, seed):
    return dataclasses.replace(cfg, seed=seed)


def format_text(out: dict) -> str:
    """The report generate writes on stderr after the text: its figures, the constraint's verdict, the speedup."""
    s = out["stats"]
    acceptance = f"{s['acceptance_rate']:.2f}" if s["proposed"] else "n/a (nothing was drafted)"
    if s["proposed"] and s["theory_tokens_per_round"] is None:  # (a tree's rounds: every node counts)
        acceptance += " of the tree's nodes"
    elif s["proposed"] and s["token_acceptance"] is not None:  # the calculator's α beside it (a maths review: 0.38 read as α)
        acceptance += f" (per-token α {s['token_acceptance']:.2f}: of the guesses judged, the share kept)"
    lines = [f"-- {counted(s['generated_tokens'])} in {s['wall_s']:.2f} s ({s['tokens_per_s']:.1f} tok/s; the prompt pass "
             f"{s['prompt_s']:.2f} s of it, then {s['decode_tokens_per_s']:.1f} tok/s), "
             f"acceptance {acceptance}, {s['tokens_per_target_pass']:.2f} tokens per target pass"]
    if s.get("looked_up"):  # a cascade
        lines.append(f"-- {lookup_level(s)}")
    if "compile_s" in out:
        lines.append(f"-- compiled passes: {out['compile_s']:.1f} s compiling before the run (not in its time)"
                     + (f"; {out['compile_note']}" if out.get("compile_note") else ""))
    still = out.get("reasoning_tokens") == s["generated_tokens"] and THINK_END not in out["text"]  # (cut while thinking)
    if out.get("reasoning_tokens") is not None and out["valid"] is not None and not still:
        lines.append(f"-- thought for {counted(out['reasoning_tokens'])}{_budget_spent(out)}; the answer after </think> is what the "
                     f"constraint judged: {out['answer']}")
    elif out.get("reasoning_tokens") is not None:  # (no constraint: the answer is the text's end, above; or none yet, said
        lines.append(f"-- thought for {counted(out['reasoning_tokens'])}" + (  # so: it read as thinking ended, with an
            "" if not still else f": still thinking when it ended, no {THINK_END} yet"  # empty answer; a review)
            + " (raise max new tokens)" * (out["finish_reason"] == "length")))
    if out["valid"] is not None:
        samples = out.get("samples", [])  # (several: each verdict names its seed, the first's too)
        lines.append(validity(out) if len(samples) < 2 else f"-- sample with seed {samples[0]['seed']}: {validity(out).removeprefix('-- ')}")
        lines += [f"-- note: {note}" for note in out.get("constraint_notes", [])]
    if "speedup_measure" in out:
        greedy = "identical_to_baseline" in out  # (a sampled run's text is not compared)
        cut = STOPPED in (out["finish_reason"], out["baseline"]["finish_reason"])  # (a prefix: the same so far)
        same = identity_note(out["token_ids"], out["baseline"]["token_ids"], greedy, cut) if greedy else ""
        m = out["speedup_measure"]
        told = "" if m["speedup"] is None else (f" over the target alone ({m['interval']}; {m['blocks']} interleaved "
                                                f"measurement{'s' * (m['blocks'] > 1)})")
        lines.append(f"-- speedup: {speedup_said(m['speedup'], m['low'], m['high'], m['side'])}{told}" + (f"; {same}" if same else ""))
        if m["spec_tokens_per_s"] and m["base_tokens_per_s"]:  # (the ratio's own rates: the first line's is the run's alone)
            over = "over the interleaved measurements" if m["blocks"] > 1 else "side by side"
            lines.append(f"-- speculation {m['spec_tokens_per_s']:.1f} tok/s against the target alone's "
                         f"{m['base_tokens_per_s']:.1f} {over}" + (f"; {m['other_lengths']}" if m["other_lengths"] else ""))
        if m["caveat"]:
            lines.append(f"-- note: the speedup is {m['caveat']}")
        if m["speedup"] is None:  # why, on a line of its own (in brackets inside the verdict's it read as a riddle)
            about = f"; about {m['estimate']:.2f}x" if m["estimate"] > 0 else ""  # (a Stop before a token: "0.00x")
            lines.append(f"-- no single number: {m['reason']}{about}")
        if out["baseline"].get("form"):  # (slower than plain decoding, so that its tokens are speculation's)
            lines.append(f"-- baseline: {out['baseline']['form']}")
    for sample in out.get("samples", [])[1:]:  # (the first is the run above, its verdict the report's own)
        if sample["valid"] is not None:
            lines.append(f"-- sample with seed {sample['seed']}: {validity(sample).removeprefix('-- ')}")
    return "\n".join(lines)


def written(out: dict) -> str:
    """What generate writes on stdout: the text; with --num-samples, each sample's after a line naming its seed."""
    samples = out.get("samples", [])
    if len(samples) < 2:
        return out["text"]
    return "\n\n".join(f"-- sample with seed {sample['seed']}:\n{sample['text']}" for sample in samples)


def _budget_spent(out: dict) -> str:
    """' (the thinking budget ran out: </think> forced)' where it did, else '' (a review: a thinking run cut by
    its budget read as one that ended by itself; read from the marker's kind, forced, it missed a marker
    on the target's own row, that round's bonus)."""
    return f" ({BUDGET_RAN_OUT})" if out.get("thinking_cut") else ""


def validity(out: dict) -> str:
    return (f"-- valid as far as it goes: {OPEN_END}" if out["valid"] and out["open_end"] else "-- valid" if out["valid"]
            else f"-- INVALID: {out['validation_error']}")


def _progress_printer():
    """Loading progress on stderr for people at a terminal; silent for scripts (stderr holds errors, notes and the report)."""
    if not sys.stderr.isatty():
        return None
    return lambda fraction, message: print(f"[{fraction:4.0%}] {message}", file=sys.stderr, flush=True)


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
