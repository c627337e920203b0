"""`python -m playground generate|bench`: the command-line contract other tools rely on.

Bad input exits with status 2 and one line `error: ...` on stderr, before any model work when the
input alone shows the mistake."""
import argparse
import dataclasses
import json
import pathlib
import sys
import warnings

from playground import session
from playground.errors import PlaygroundError
from playground.events import RunResult
from playground.limits import MAX_REPEAT, MAX_SAMPLES, MAX_SWEEP_PROMPTS, MAX_SWEEP_VALUES, at_most
from playground.metrics import engine_seconds, first_difference
from playground.measure.speedup import engine_block, measure


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr and status 2."""

    def error(self, message):
        raise PlaygroundError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m playground", description="Speculative decoding playground")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    gen = commands.add_parser("generate", help="generate once, speculatively (and optionally target-only)")
    add_model_args(gen)
    gen.add_argument("--prompt", help="prompt text (default: the preset's example prompt)")
    gen.add_argument("--prompt-ids", help="comma-separated token ids instead of text, e.g. 1,2,3")
    gen.add_argument("--raw", action="store_true", help="send the prompt as is, without the chat template")
    gen.add_argument("--system", help="system prompt for chat models")
    add_sampling_args(gen)
    add_constraint_args(gen)
    gen.add_argument("--baseline", action="store_true", help="also decode with the target alone and compare")
    gen.add_argument("--num-samples", type=int, default=1, help="N runs seeded seed..seed+N-1")
    gen.add_argument("--json", action="store_true", help="print one JSON object")
    gen.set_defaults(func=cmd_generate)
    bench = commands.add_parser("bench", help="this engine vs target-only and transformers, side by side")
    add_model_args(bench)
    bench.add_argument("--k", default="1,2,4,8", help="comma-separated draft lengths")
    bench.add_argument("--temperature", default="0", help="comma-separated temperatures")
    bench.add_argument("--prompts", help="a JSON list of prompts, or a text file with one prompt per line "
                                         "(\\n for a newline); default: the demo pair's held-out prompts or the preset's")
    bench.add_argument("--num-prompts", type=int, default=8)
    bench.add_argument("--max-new-tokens", type=int, default=96)
    bench.add_argument("--repeat", type=int, default=3)
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--raw", action="store_true", help="no chat template")
    bench.add_argument("--json", action="store_true", help="print one JSON list of rows")
    bench.add_argument("--out", help="directory for rows.json, table.md and charts")
    bench.set_defaults(func=cmd_bench)
    return parser


def add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", help="a preset name from presets/ (default: demo without a GPU)")
    p.add_argument("--target", help="target model: Hugging Face id or local directory")
    p.add_argument("--draft", help="draft model: Hugging Face id, local directory, or 'ngram' (prompt lookup)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--compile", action="store_true", help="static KV caches and compiled draft/verify passes "
                   "(compiled once per process; the compile time is reported apart; bench: adds engine-compiled)")


def add_sampling_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--k", type=int, help="draft tokens per round (1..32)")
    p.add_argument("--temperature", type=float, help="0 for greedy")
    p.add_argument("--top-p", type=float)
    p.add_argument("--top-k", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-new-tokens", type=int)
    p.add_argument("--policy", default="fixed", help="draft length: fixed, schedule (+2/-1) or confidence (k = ceiling)")
    p.add_argument("--confidence", type=float, default=0.5, help="the confidence policy's threshold")


def add_constraint_args(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--schema", help="JSON Schema: a file, or the JSON text itself")
    group.add_argument("--regex", help="regular expression the whole output must match")
    group.add_argument("--grammar", help="grammar file (Lark for llguidance, EBNF for xgrammar)")
    p.add_argument("--constraint-backend", default="llguidance", choices=["llguidance", "xgrammar"])
    p.add_argument("--schema-in-prompt", action="store_true", help="append the schema to the prompt")


def constraint_from_args(args, preset):
    """-> a checked ConstraintSpec or None; flags win over the preset's constraint."""
    from playground.constraints import from_user
    schema = read_text_arg(args.schema, "schema") if args.schema else ""
    grammar = read_text_arg(args.grammar, "grammar", must_be_file=True) if args.grammar else ""
    regex = args.regex or ""
    if not (schema or grammar or regex) and preset is not None:
        schema, regex = preset.schema, preset.regex
    return from_user(schema=schema, regex=regex, grammar=grammar, backend=args.constraint_backend)


def read_text_arg(value: str, what: str, must_be_file: bool = False) -> str:
    """The value itself when it is JSON text (starts with '{'), else the contents of that file."""
    if not must_be_file and value.lstrip().startswith("{"):
        return value
    return read_utf8(value, f"--{what}")


def read_utf8(value: str, what: str) -> str:
    """A text file's contents, or one clear error (missing, unreadable, not UTF-8)."""
    path = pathlib.Path(value)
    if not path.is_file():
        raise PlaygroundError(f"{what}: no such file '{value}'")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PlaygroundError(f"{what}: {value} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise PlaygroundError(f"{what}: cannot read {value}: {exc.strerror or exc}") from None


def resolve_models(args):
    """-> (preset or None, target id, draft id); explicit --target/--draft override the preset."""
    from playground.presets import default_preset_name, get_preset
    preset = None
    if args.preset or not (args.target and args.draft):
        preset = get_preset(args.preset or default_preset_name())
    target = args.target or preset.target
    draft = args.draft or (preset.draft if preset else None)
    return preset, target, draft


def pick(value, preset, name, default):
    """The flag if given, else the preset's value, else the default."""
    if value is not None:
        return value
    return getattr(preset, name) if preset is not None else default


def parse_prompt_ids(text: str) -> list[int]:
    try:
        ids = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise PlaygroundError(f"--prompt-ids must be comma-separated integers, got '{text}'") from None
    if not ids:
        raise PlaygroundError("the prompt is empty")
    return ids


def cmd_generate(args) -> int:
    preset, target, draft = resolve_models(args)
    cfg = session.settings(k=pick(args.k, preset, "k", 4), temperature=pick(args.temperature, preset, "temperature", 0.0),
                           top_p=pick(args.top_p, preset, "top_p", 1.0), top_k=pick(args.top_k, preset, "top_k", 0),
                           seed=args.seed, max_new_tokens=pick(args.max_new_tokens, preset, "max_new_tokens", 128),
                           policy=args.policy, confidence=args.confidence, compile=args.compile)
    if args.num_samples < 1:
        raise PlaygroundError(f"--num-samples must be >= 1, got {args.num_samples}")
    at_most(args.num_samples, MAX_SAMPLES, "--num-samples", " (PLAYGROUND_MAX_SAMPLES)")
    prompt_ids = parse_prompt_ids(args.prompt_ids) if args.prompt_ids is not None else None
    prompt = args.prompt if args.prompt is not None else pick(None, preset, "prompt", "")
    if prompt_ids is None and not prompt.strip():
        raise PlaygroundError("the prompt is empty")
    spec = constraint_from_args(args, preset)
    pair = session.load_pair(target, draft, args.device, progress=_progress_printer())
    constraint = session.constrain(pair, spec)
    if prompt_ids is None:
        chat = pick(None, preset, "chat", False) and not args.raw
        in_prompt = args.schema_in_prompt or pick(None, preset, "schema_in_prompt", False)
        schema = spec.text if spec is not None and spec.kind == "json" and in_prompt else None
        prompt_ids = session.encode_prompt(pair, prompt, chat, args.system or pick(None, preset, "system", ""), schema)
    session.check_prompt_ids(pair, prompt_ids, cfg.max_new_tokens)
    out = generate_report(pair, prompt_ids, cfg, args.baseline, args.num_samples, constraint)
    print(json.dumps(out) if args.json else format_text(out))
    return 0


def generate_report(pair, prompt_ids, cfg, baseline: bool, num_samples: int, constraint=None) -> dict:
    compile_s = session.compile_graphs(pair, len(prompt_ids), cfg, _progress_printer(), constrained=constraint is not None)
    if baseline:  # the target alone interleaved beside the run, measured by playground.measure.speedup
        make = engine_block(pair, [prompt_ids], cfg, constraint)
        first = make()
        events = first.spec_runs[0]
        result = session.collect(pair, events, engine_seconds(events), constraint, first.guides[0])
    else:
        result = session.run(pair, prompt_ids, cfg, constraint=constraint)
    out = result_dict(result)
    if cfg.compile:
        out["compile_s"] = compile_s
        out["compile_note"] = session.compile_fallback(pair, cfg)
    if baseline:
        base = session.collect(pair, first.base_runs[0], engine_seconds(first.base_runs[0]))
        measured = measure(make, [first])
        out["baseline"] = {"token_ids": base.token_ids, "text": base.text, "wall_s": base.stats["wall_s"],
                           "tokens_per_s": base.stats["tokens_per_s"]}
        out["speedup"] = measured.speedup
        out["speedup_measure"] = dataclasses.asdict(measured)
        if cfg.sampling.greedy:
            out["identical_to_baseline"] = base.token_ids == result.token_ids
            out["first_difference"] = first_difference(result.token_ids, base.token_ids)
    if num_samples > 1:
        out["samples"] = [result.token_ids] + [
            session.run(pair, prompt_ids, _reseeded(cfg, cfg.seed + i), constraint=constraint).token_ids
            for i in range(1, num_samples)]
    return out


def cmd_bench(args) -> int:
    from playground.measure import bench
    from playground.ui.experiments import parse_values
    preset, target, draft = resolve_models(args)
    try:
        ks, temperatures = parse_values(args.k, int), parse_values(args.temperature, float)
    except ValueError as exc:
        raise PlaygroundError(f"--k / --temperature: {exc}") from None
    for k in ks:  # every setting is checked before anything loads
        for t in temperatures:
            session.settings(k=k, temperature=t, max_new_tokens=args.max_new_tokens, seed=args.seed)
    at_most(len(ks) * len(temperatures), MAX_SWEEP_VALUES, "the number of --k x --temperature combinations")
    if args.repeat < 1 or args.num_prompts < 1:
        raise PlaygroundError("--repeat and --num-prompts must be >= 1")
    at_most(args.repeat, MAX_REPEAT, "--repeat")
    at_most(args.num_prompts, MAX_SWEEP_PROMPTS, "--num-prompts")
    out_dir = writable_dir(args.out) if args.out else None
    texts = read_prompts(args.prompts, preset, target)[: args.num_prompts]
    pair = session.load_pair(target, draft, args.device, progress=_progress_printer())
    chat = pick(None, preset, "chat", False) and not args.raw
    prompts = [session.encode_prompt(pair, t, chat) for t in texts]
    pairs = {"draft": pair, "ngram": bench.ngram_pair(pair)}
    log = (lambda line: print(line, file=sys.stderr)) if args.json else print
    title = f"{target} + {draft}"
    on_row = (lambda rows: _written(lambda: bench.write_rows(rows, out_dir, title), out_dir)) if out_dir else None
    rows = bench.run_bench(pairs, prompts, ks, temperatures, args.repeat, args.max_new_tokens, args.seed, log,
                           compiled=args.compile, on_row=on_row)
    if out_dir:
        for path in _written(lambda: bench.write_outputs(rows, out_dir, title, log), out_dir):
            log(f"wrote {path}")
    if args.json:
        print(json.dumps(rows))
    else:
        print(bench.markdown_table(rows))
    return 0


def _written(write, out_dir: pathlib.Path):
    try:
        return write()
    except OSError as exc:
        raise PlaygroundError(f"--out: cannot write into {out_dir}: {exc.strerror or exc}") from None


def writable_dir(value: str) -> pathlib.Path:
    """--out, created if needed; checked before any model work so a typo costs nothing."""
    path = pathlib.Path(value)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise PlaygroundError(f"--out: cannot write into {value}: {exc.strerror or exc}") from None
    return path


def read_prompts(path: str | None, preset, target: str) -> list[str]:
    from playground.ui.experiments import prompt_lines
    from playground.models.loading import DEMO_DIR, SMOLLM2_DRAFT_DIR
    if path is None:
        if target.startswith("demo-"):
            return json.loads((DEMO_DIR / "heldout_prompts.json").read_text())
        if target == "smollm2-135m-instruct":
            return json.loads((SMOLLM2_DRAFT_DIR / "heldout_prompts.json").read_text())
        return [preset.prompt] if preset is not None else ["def fib(n):\n"]
    text = read_utf8(path, "--prompts")
    try:
        prompts = json.loads(text) if path.endswith(".json") else prompt_lines(text)
    except (ValueError, RecursionError) as exc:
        raise PlaygroundError(f"--prompts: cannot read {path}: {exc}") from None
    if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) and p.strip() for p in prompts):
        raise PlaygroundError(f"--prompts: {path} holds no prompts")
    return prompts


def _reseeded(cfg, seed):
    import dataclasses
    return dataclasses.replace(cfg, seed=seed)


def result_dict(result: RunResult) -> dict:
    return {"text": result.text, "token_ids": result.token_ids, "finish_reason": result.finish_reason,
            "valid": result.valid, "validation_error": result.validation_error,
            "constraint_notes": result.constraint_notes, "stats": result.stats}


def format_text(out: dict) -> str:
    s = out["stats"]
    lines = [out["text"], "", f"-- {s['generated_tokens']} tokens in {s['wall_s']:.2f} s ({s['tokens_per_s']:.1f} tok/s), "
             f"acceptance {s['acceptance_rate']:.2f}, {s['tokens_per_target_pass']:.2f} tokens per target pass"]
    if "compile_s" in out:
        lines.append(f"-- compiled passes: {out['compile_s']:.1f} s compiling before the run (not in its time)"
                     + (f"; {out['compile_note']}" if out.get("compile_note") else ""))
    if out["valid"] is not None:
        lines.append("-- valid" if out["valid"] else f"-- INVALID: {out['validation_error']}")
        lines += [f"-- note: {note}" for note in out.get("constraint_notes", [])]
    if "speedup_measure" in out:
        same = {True: ", identical to the target alone",
                False: f", DIFFERENT from the target alone from token {(out.get('first_difference') or 0) + 1}"}
        m = out["speedup_measure"]
        told = (f"{m['speedup']:.2f}x over the target alone ({m['low']:.2f}-{m['high']:.2f}x, 95% interval, "
                f"{m['blocks']} interleaved measurement{'s' * (m['blocks'] > 1)})" if m["speedup"] is not None else
                f"cannot tell ({m['reason']}; about {m['estimate']:.2f}x)")
        lines.append(f"-- speedup {told}" + same.get(out.get("identical_to_baseline"), ""))
    return "\n".join(lines)


def _progress_printer():
    """Loading progress on stderr for people at a terminal; silent for scripts (stderr holds errors)."""
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


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        _quiet_libraries()
        return args.func(args)
    except PlaygroundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
