"""`python -m playground bench`: speculation against the target alone over k, temperature, policies and a token
tree, every setting checked before the models load; its table on stdout, its log on stderr, its files in --out (each
row as it is measured, and what an interrupted bench kept)."""
import json
import pathlib
import sys

from playground.cli_args import confidence_of, flag_or_preset, read_prompts, resolve_models, writable_dir
from playground.cli_notes import CONFIDENCE_UNUSED, rows_bench_cannot_measure
from playground.cli_report import progress_printer
from playground.config import SpecConfig
from playground.errors import PlaygroundError
from playground.limits import MAX_REPEAT, MAX_SWEEP_PROMPTS, MAX_SWEEP_VALUES, at_most
from playground.metrics import counted


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
    pair = session.load_pair(target, draft, args.device, progress=progress_printer())
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
                                tree=args.tree)
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


def _written(write, out_dir: pathlib.Path):
    try:
        return write()
    except OSError as exc:
        raise PlaygroundError(f"--out: cannot write into {out_dir}: {exc.strerror or exc}") from None
