"""The CLI's flags, and the reading of what they name (models, prompt files, schemas, the output
folder): every mistake is a PlaygroundError, raised before any model loads."""
import argparse
import difflib
import json
import os
import pathlib
import re
import sys

from playground.config import BACKENDS, CPU_DEFAULT, CPU_FALLBACK, GPU_DEFAULT, MAX_K, tree_fields
from playground.errors import PlaygroundError
from playground.limits import MAX_GRAMMAR_CHARS, MAX_PROMPTS_FILE_CHARS, MAX_SCHEMA_TEXT_CHARS, at_most
from playground.typed import decimal, listed, whole


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr and status 2, with the name meant where one is near
    ('genrate', '--kk 3': said without a guess, and pointed at the top's help, not the command's; a CLI review)."""

    def parse_known_args(self, args=None, namespace=None):
        self.given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message):
        if self.prog != "python -m playground":
            raise PlaygroundError(message)
        commands = self._subparsers._group_actions[0].choices if self._subparsers else {}
        command = next((a for a in getattr(self, "given", []) if a in commands), None)
        names = ([s for action in commands[command]._actions for s in action.option_strings] if command else list(commands))
        typed = re.findall(r"invalid choice: '([^']*)'|unrecognized arguments: (\S+)", message)
        near = difflib.get_close_matches("".join(typed[0]), names, n=1) if typed else []
        meant = f"; did you mean {near[0]}?" if near else ""
        raise PlaygroundError(f"{message}{meant} (python -m playground {command + ' ' if command else ''}--help for more)")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m playground", description="Speculative decoding playground")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    gen = commands.add_parser("generate", help="generate once, speculatively (and optionally target-only)",
                              description="Generate once with a draft and a target: the text on standard output, the "
                                          "report (speed, acceptance, a constraint's verdict, --baseline's speedup) on "
                                          "standard error; --json for one object.")
    add_model_args(gen)
    add_prompt_args(gen)
    gen.add_argument("--prompt-ids", help="comma-separated token ids instead of text, e.g. 1,2,3")
    add_sampling_args(gen)
    add_constraint_args(gen)
    gen.add_argument("--baseline", action="store_true", help="also decode with the target alone and compare")
    gen.add_argument("--num-samples", type=parse_whole, default=1, help="N runs seeded seed..seed+N-1")
    gen.add_argument("--json", action="store_true", help="print one JSON object")
    bench = commands.add_parser("bench", help="this engine vs target-only and transformers, side by side",
                                description="Every k and temperature against the target alone and transformers' "
                                            "generation, interleaved; minutes on a CPU (fewer --num-prompts, "
                                            "--max-new-tokens or --repeat for a first look).")
    add_model_args(bench)
    bench.add_argument("--k", default="1,2,4,8", help="comma-separated draft lengths (default 1,2,4,8)")
    bench.add_argument("--temperature", default="0", help="comma-separated temperatures (default 0)")
    bench.add_argument("--prompts", help="a JSON list of prompts (the text, or a .json file), or a text file with "
                                         "one prompt per line (\\n for a newline), or - for standard input; default: the held-out prompts of "
                                         "the demo pair or of SmolLM2 (for a pair with its target), else the preset's")
    bench.add_argument("--num-prompts", type=parse_whole, default=8, help="prompts measured for each row (default 8)")
    bench.add_argument("--max-new-tokens", type=parse_whole, default=96, help="tokens each run writes (default 96)")
    bench.add_argument("--repeat", type=parse_whole, default=3, help="interleaved repeats of each row (default 3)")
    bench.add_argument("--seed", type=parse_whole, help="sampling seed (default 0)")  # (None: told from a seed given)
    bench.add_argument("--raw", action="store_true", help="no chat template")
    bench.add_argument("--json", action="store_true", help="print one JSON list of rows")
    bench.add_argument("--out", help="directory for rows.json, table.md and charts")
    bench.add_argument("--tree", type=parse_tree, default="", help="adds an engine-tree row: this token tree "
                       "(children per depth, e.g. 1,2,1,1; a dynamic one with its node budget, e.g. 4,4,4,4/16; +N: a "
                       "prompt-lookup branch of up to N tokens) "
                       "beside the chain of each k")
    bench.add_argument("--policy", type=parse_policies, default=(), help="adds an engine row per k drafting under "
                       "this draft-length policy, k the most, or one each for schedule,confidence (schedule: +2/-1, "
                       "pausing where one guess does not pay; "
                       "confidence: the draft stops below --confidence), beside the fixed k's engine row")
    bench.add_argument("--confidence", type=parse_decimal, help="the confidence policy's threshold (default 0.5)")
    export = commands.add_parser("export", help="this setting as vLLM and SGLang launch commands and requests, "
                                                "and a transformers generate call (loads nothing)")
    add_model_args(export)
    add_prompt_args(export)
    add_sampling_args(export)
    add_constraint_args(export)
    export.add_argument("--json", action="store_true", help="print one JSON object")
    commands.metavar = "{" + ",".join(commands.choices) + "}"  # a missing command's error names them (not 'command')
    return parser


def add_prompt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prompt", help="prompt text, or - to read it from standard input (default: the preset's example prompt)")
    p.add_argument("--raw", action="store_true", help="send the prompt as is, without the chat template (which "
                   "is applied where the preset says so, or the models are named alone and their tokenizer has one)")
    p.add_argument("--system", help="system prompt (with the chat template)")


def add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", help=f"a preset name from presets/ (default: PLAYGROUND_PRESET, else {GPU_DEFAULT} with "
                                    f"a GPU, else {CPU_DEFAULT} where it loads offline, else {CPU_FALLBACK})")
    p.add_argument("--target", help="target model: Hugging Face id or local directory (with --draft, or a --preset)")
    p.add_argument("--draft", help="draft model: Hugging Face id, local directory, 'ngram' (prompt lookup), "
                   "or 'ngram+<model>' (a cascade: prompt lookup drafts for the model)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="static KV caches and compiled draft/verify passes, compiled once per process, the compile "
                        "time reported apart (default: on with CUDA, not on ZeroGPU or --device cpu; bench: "
                        "off unless given, which adds an engine-compiled row; none where the host sets "
                        "PLAYGROUND_COMPILED_PASSES=0)")


def compiles(args) -> bool:
    """--compile or --no-compile, else the host's default (on with CUDA, off ZeroGPU) unless --device cpu."""
    if args.compile is not None:
        return args.compile
    from playground.presets import compiles_by_default
    return compiles_by_default() and args.device != "cpu"


def confidence_of(args) -> float:
    """--confidence, else 0.5 (not a parser default: a flag given is told from one not, cli_notes)."""
    return 0.5 if args.confidence is None else args.confidence


def add_sampling_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--k", type=parse_whole, help=f"draft tokens per round (1..{MAX_K}; default: the preset's, e.g. 4 for demo)")
    p.add_argument("--temperature", type=parse_decimal, help="0 for greedy (default: the preset's)")
    p.add_argument("--top-p", type=parse_decimal, help="nucleus sampling, above 0 up to 1 (default: the preset's)")
    p.add_argument("--top-k", type=parse_whole, help="sample among the k likeliest tokens, 0 for all (default: the preset's)")
    p.add_argument("--seed", type=parse_whole, help="sampling seed (default 0)")  # (None: told from a seed given, cli_notes)
    p.add_argument("--max-new-tokens", type=parse_whole, help="tokens to write at most (default: the preset's)")
    p.add_argument("--policy", default="fixed", help="draft length: fixed, schedule (+2/-1, pausing where one guess "
                   "does not pay) or confidence (k = ceiling; each round pays one draft pass, guesses or none: no "
                   "faster than the target alone where the draft is mostly unsure)")
    p.add_argument("--confidence", type=parse_decimal, help="the confidence policy's threshold (default 0.5)")
    p.add_argument("--tree", type=parse_tree, default="", help="draft a token tree instead of a chain: children per "
                   "node at each depth, e.g. 3,2,1 (15 nodes verified in one pass; k is then unused), or a dynamic "
                   "tree (greedy), e.g. 4,4,4,4/16: the 4 likeliest nodes of each depth grow 4 children, the 16 "
                   "likeliest nodes are verified; '+N' (greedy), e.g. 2,2,2/5+3, grafts up to N tokens found by "
                   "prompt lookup onto each tree")


def add_constraint_args(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--schema", help="JSON Schema: a file, the JSON text itself, or - for standard input")
    group.add_argument("--regex", help="regular expression the whole output must match")
    group.add_argument("--grammar", help="grammar (Lark, or GBNF: every rule defined with ::=): a file, the text itself, or - for standard input")
    p.add_argument("--constraint-backend", default=BACKENDS[0], choices=BACKENDS,
                   help=f"the constraint engine (default: {BACKENDS[0]})")
    p.add_argument("--schema-in-prompt", action="store_true", help="append the schema to the prompt")
    p.add_argument("--think-budget", type=parse_whole, help="reasoning models (Qwen3, DeepSeek-R1): think first, at most N "
                   "tokens (then </think> is forced); the constraint applies after </think>. 0: from the first token")


def constraint_flags(args) -> dict[str, str]:
    """--schema, --grammar (each a file, the text or '-' for standard input), --regex -> their texts
    ('' where not given; given empty, an error: it ran unconstrained). Read once (export asks twice,
    and standard input is there once)."""
    if (read := getattr(args, "constraint_texts", None)) is not None:
        return read
    for name in ("schema", "regex", "grammar"):  # (blank, it was taken for a file's name: "no such file '   '")
        if (given := getattr(args, name)) is not None and not given.strip():
            raise PlaygroundError(f"--{name} is empty (or only spaces)")
    texts = {"schema": read_text_arg(args.schema, "schema") if args.schema else "", "regex": args.regex or "",
             "grammar": read_text_arg(args.grammar, "grammar") if args.grammar else ""}
    for name, text in texts.items():
        given = getattr(args, name)
        if given is not None and not text.strip():  # (a file it read, or standard input)
            raise PlaygroundError(f"--{name} is empty (or only spaces): {given[:80]}")
    args.constraint_texts = texts
    return texts


def read_text_arg(value: str, what: str) -> str:
    """The value itself when it is the text (a schema: starts with '{', or names no file and parses as
    JSON, `true`; a grammar: names no file and has a rule in it, `::=` or a line starting with a name
    and ':'), else the contents of that file."""
    looks_like_text = _json_not_a_file if what == "schema" else _grammar_not_a_file
    if (what == "schema" and value.lstrip().startswith("{")) or looks_like_text(value):
        return value
    return read_utf8(value, f"--{what}", MAX_SCHEMA_TEXT_CHARS if what == "schema" else MAX_GRAMMAR_CHARS)


def _grammar_not_a_file(value: str) -> bool:
    drive = re.match(r"[A-Za-z]:[\\/]", value)  # C:\grammars\g.lark names a file
    return bool(re.search(r"::=|^\s*[?!]?\w+(\.\d+)?\s*:", value, re.M)) and not drive and not _exists(value)


def _exists(value: str) -> bool:
    try:
        return pathlib.Path(value).exists()
    except OSError:  # a name too long for a file
        return False


def _json_not_a_file(value: str) -> bool:
    try:
        json.loads(value)
    except (ValueError, RecursionError):
        return False
    return not _exists(value)


def read_utf8(value: str, what: str, most_chars: int) -> str:
    """A text file's contents, standard input's for '-', or one clear error (missing, a folder,
    unreadable, not UTF-8, more bytes than `most_chars` characters can take: a 2 GB --schema file was
    read whole, 27 s and 4.6 GB, before its length was refused). A pipe is read as a file is (/dev/stdin,
    a shell's <(...): "no such file" before), never past the bound; a byte-order mark is not the text's."""
    most_bytes = 4 * most_chars  # UTF-8: at most 4 a character
    if value == "-":
        said_to_type(what)
        return _without_mark(sys.stdin.buffer.read(most_bytes + 1), value, what, most_bytes)
    path = pathlib.Path(value)
    try:
        if path.is_dir():
            raise PlaygroundError(f"{what}: '{value}' is a folder, not a file")
        if not path.exists():
            raise PlaygroundError(f"{what}: no such file '{value}'")
        if path.is_file():
            at_most(path.stat().st_size, most_bytes, f"{what}: the size of {value[:80]} (bytes)")
    except OSError as exc:  # a name too long for a file, say
        raise PlaygroundError(f"{what}: no such file '{value[:80]}' ({exc.strerror or exc})") from None
    try:
        with path.open("rb") as file:
            data = file.read(most_bytes + 1)
    except OSError as exc:
        raise PlaygroundError(f"{what}: cannot read {value[:80]}: {exc.strerror or exc}") from None
    return _without_mark(data, value, what, most_bytes)


STDIN_NAMES = ("-", "/dev/stdin", "/dev/fd/0")


def said_to_type(what: str) -> None:
    """Where standard input is a terminal, what it waits for (it waited with nothing said)."""
    if sys.stdin.isatty():
        print(f"reading {what} from standard input: type it, then Ctrl-D", file=sys.stderr)


def _without_mark(data: bytes, value: str, what: str, most_bytes: int) -> str:
    named = "standard input" if value in STDIN_NAMES else value[:80]  # ("- is not UTF-8 text")
    at_most(len(data), most_bytes, f"{what}: the size of {named} (bytes)")
    try:
        return data.decode("utf-8-sig")  # (Windows editors start a UTF-8 file with a byte-order mark)
    except UnicodeDecodeError as exc:
        raise PlaygroundError(f"{what}: {named} is not UTF-8 text (byte {exc.start})") from None


def resolve_models(args):
    """-> (preset or None, target id, draft id); explicit --target/--draft override the preset. A
    --target alone would take the default preset's draft (a feature draft of another model, say):
    it names its --preset or --draft."""
    from playground.presets import default_preset_name, get_preset
    for flag in ("preset", "target", "draft"):  # ('' read as not given: the default ran, unsaid; a CLI review)
        if getattr(args, flag, None) is not None and not getattr(args, flag).strip():
            raise PlaygroundError(f"--{flag} is empty: name one, or leave the flag out")
    if args.target and not (args.draft or args.preset or os.environ.get("PLAYGROUND_PRESET")):
        raise PlaygroundError("--target needs a --draft (a model, 'ngram' for prompt lookup, 'ngram+<model>' for a cascade) "
                              "or a --preset whose draft and settings it takes")
    preset, env = None, os.environ.get("PLAYGROUND_PRESET")
    if args.preset or not (args.target and args.draft):
        try:  # a mistyped PLAYGROUND_PRESET is refused here, with its close match (the page starts on its default)
            preset = get_preset(args.preset or env or default_preset_name())
        except PlaygroundError as exc:
            if args.preset or not env:
                raise
            raise PlaygroundError(f"environment variable PLAYGROUND_PRESET: {exc}") from None  # (the user typed no name)
    target = args.target or preset.target
    draft = args.draft or (preset.draft if preset else None)
    return preset, target, draft


def flag_or_preset(value, preset, name, default):
    """The flag if given, else the preset's value, else the default."""
    if value is not None:
        return value
    return getattr(preset, name) if preset is not None else default


def parse_prompt_ids(text: str) -> list[int]:
    try:
        ids = [whole(part) for part in listed(text)]  # (int() read '1_0' and '٤')
    except ValueError:
        raise PlaygroundError(f"--prompt-ids must be comma-separated integers, got '{text[:80]}'"
                              + ("..." * (len(text) > 80))) from None  # (a million digits were echoed whole)
    if not ids:
        raise PlaygroundError("the prompt is empty")
    return ids


def writable_dir(value: str) -> pathlib.Path:
    """--out, created if needed; checked before any model work so a typo costs nothing."""
    path = pathlib.Path(value)
    if path.exists() and not path.is_dir():  # (it said "cannot write into /etc/passwd: File exists")
        raise PlaygroundError(f"--out: {value[:80]} is a file; name a folder (it is created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise PlaygroundError(f"--out: cannot write into {value}: {exc.strerror or exc}") from None
    return path


def read_prompts(path: str | None, preset, target: str) -> list[str]:
    from playground.measure.sweeps import prompt_lines
    from playground.models.locate import DEMO_DIR, SMOLLM2_DRAFT_DIR
    if path is None:
        if target.startswith("demo-"):
            return json.loads((DEMO_DIR / "heldout_prompts.json").read_text())
        if target == "smollm2-135m-instruct":
            return json.loads((SMOLLM2_DRAFT_DIR / "heldout_prompts.json").read_text())
        return [preset.prompt] if preset is not None else ["def fib(n):\n"]
    inline = _json_not_a_file(path)  # the list itself: '["a", "b"]'
    if not inline and path.lstrip().startswith("[") and not _exists(path):  # ('[broken' was "no such file")
        try:
            json.loads(path)
        except (ValueError, RecursionError) as exc:
            raise PlaygroundError(f"--prompts: {path[:40]!r} is no file, nor a JSON list of prompts: {exc}") from None
    text = path if inline else read_utf8(path, "--prompts", MAX_PROMPTS_FILE_CHARS)
    piped = path in STDIN_NAMES or not (inline or pathlib.Path(path).is_file())  # no name to say which: a list if it reads as one
    try:
        listed = inline or path.endswith(".json") or (piped and text.lstrip().startswith("["))
        prompts = json.loads(text) if listed else prompt_lines(text)
    except (ValueError, RecursionError) as exc:
        raise PlaygroundError(f"--prompts: cannot read {path}: {exc}") from None
    if not isinstance(prompts, list) or not prompts:  # ('{"a": 1}' "held no prompts")
        kind = {dict: "object", str: "string", bool: "boolean", type(None): "null"}.get(type(prompts), "number")
        held = "no prompts" if isinstance(prompts, list) else f"a JSON {kind}, not a list of prompts"
        raise PlaygroundError(f"--prompts: {path[:80]} holds {held} (a JSON list of texts, or one a line)")
    if (bad := next((i for i, p in enumerate(prompts) if not isinstance(p, str) or not p.strip()), None)) is not None:
        raise PlaygroundError(f"--prompts: prompt {bad + 1} is {'empty' if isinstance(prompts[bad], str) else 'not a text'}: "
                              f"{json.dumps(prompts[bad])[:40]}")  # (["a", 3] "held no prompts")
    return prompts


BENCH_POLICIES = ("schedule", "confidence")  # (fixed is the engine row itself)


def parse_policies(text: str) -> tuple[str, ...]:
    """'schedule', 'confidence' or both, comma-separated -> their names, each once."""
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",")))
    if not names or any(name not in BENCH_POLICIES for name in names):
        raise argparse.ArgumentTypeError(f"one of {', '.join(BENCH_POLICIES)}, or both comma-separated (the fixed k "
                                         f"is the engine row), not {text[:40]!r}")
    return names


def parse_whole(text: str) -> int:
    """'3', '-1' in ASCII digits, as typed.whole reads them: int() read '٣' as 3 and '1_0' as 10 (a CLI review)."""
    try:
        return whole(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is {exc}") from None


def parse_decimal(text: str) -> float:
    """'0.7', '1e-3' as a link reads them (typed.decimal): 1e-400 is refused, not run greedy as float() read it."""
    try:
        return decimal(text.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is {exc}") from None


def parse_tree(text: str) -> str:
    """'3,2,1', '4,4,4/12' or '4,4,4/12+3', read by config.tree_fields; SpecConfig checks the rest."""
    try:
        tree_fields(text)
    except PlaygroundError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text
