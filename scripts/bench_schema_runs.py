"""Generation over real-world JSON Schemas: speculative runs under each schema, with the target
alone beside them, through the project's own path (the page's checks, the bounded compile, the
session's run and its check of the output after it).

    python scripts/bench_schema_runs.py --data DIR [--per-subset 8] [--skip 0] [--subsets A,B] [--max-new-tokens 256] [--backend llguidance]
        [--temperature 0 --seed 0] [--tree 2,2,1]

DIR is JSONSchemaBench's data/ folder (see scripts/bench_schemas.py; the same schemas in the same
order). The pair is the offline default, SmolLM2-135M-Instruct with its feature draft, k=3 (or a
static token tree: --tree), greedy (or sampled: --temperature, each schema seeded the same), chat
template, the schema in the prompt where it fits (minified; the smollm2-json preset asks the same
way). Per schema it records: refused (and why) or run; the speculative output valid, cut by max new
tokens, or invalid (and why); whether its tokens equal the target alone's (greedy: they must;
sampled, they need not, and the target alone's own verdicts are counted instead); acceptance and
tokens per target pass; each output not cut checked again outside the product (strict JSON, then
jsonschema by the declared draft): a verdict that check contradicts is a fault, listed; a valid output
cut where it could have gone on (open_end) is counted. Any other exception is a bug and is recorded
with its type. --target/--draft run another pair (the offline demo pair: demo-target, demo-draft).
Prints Markdown for BENCHMARKS.md; --out writes every row as JSON lines."""
import argparse
import collections
import json
import pathlib
import platform
import sys
import time
import traceback

import jsonschema
from jsonschema.validators import validator_for

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from bench_schemas import reason_class, schemas  # noqa: E402
from playground import session  # noqa: E402
from playground.constraints import from_user  # noqa: E402
from playground.errors import PlaygroundError  # noqa: E402

TARGET, DRAFT = "smollm2-135m-instruct", "smollm2-feature-draft"
PROMPT = "Write one JSON value for the schema below, with realistic made-up content."
SCHEMA_IN_PROMPT_CHARS = 6000  # minified; past this the prompt asks without the schema (the constraint still holds it)


def run_one(pair, text: str, backend: str, cfg) -> dict:
    started = time.perf_counter()
    try:
        spec = from_user(schema=text, backend=backend)
        constraint = session.constrain(pair, spec)
    except PlaygroundError as exc:
        return {"status": "refused", "reason": str(exc), "wall_s": time.perf_counter() - started}
    minified = json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    in_prompt = len(minified) <= SCHEMA_IN_PROMPT_CHARS
    ids = session.encode_prompt(pair, PROMPT, chat=True, schema=minified if in_prompt else None)
    try:
        session.check_prompt_ids(pair, ids, cfg.max_new_tokens)
    except PlaygroundError as exc:  # said in words: the prompt with the schema past a small pair's context
        return {"status": "refused", "reason": str(exc), "wall_s": time.perf_counter() - started}
    spec_run = session.run(pair, ids, cfg, speculative=True, constraint=constraint)
    alone = session.run(pair, ids, cfg, speculative=False, constraint=constraint)
    status = status_of(spec_run)
    return {"status": status, "reason": spec_run.validation_error, "notes": spec_run.constraint_notes,
            "open_end": spec_run.open_end, "checked_here": None if status == "cut" else checked_here(spec_run.text, text),
            "schema_in_prompt": in_prompt, "prompt_tokens": len(ids), "tokens": len(spec_run.token_ids),
            "finish": spec_run.finish_reason, "identical": spec_run.token_ids == alone.token_ids,
            "first_difference": first_difference(spec_run.token_ids, alone.token_ids),
            "alone_status": status_of(alone), "alone_reason": alone.validation_error,
            "acceptance": spec_run.stats["acceptance_rate"], "tokens_per_pass": spec_run.stats["tokens_per_target_pass"],
            "forced": spec_run.stats["forced"], "text": spec_run.text[:2000], "wall_s": time.perf_counter() - started}


def checked_here(output: str, schema_text: str) -> bool | None:
    """The output checked without the product: strict JSON, then the declared draft's validator
    (formats not asserted, as the product's check); None where jsonschema cannot tell."""
    try:  # (a key twice is no valid output: the product refuses it too)
        value = json.loads(output, object_pairs_hook=_once)
    except ValueError:
        return False
    schema = json.loads(schema_text)
    try:
        return validator_for(schema, default=jsonschema.Draft202012Validator)(schema).is_valid(value)
    except Exception:  # noqa: BLE001 - a reference or a nesting jsonschema cannot follow
        return None


def _once(pairs: list) -> dict:
    if len({key for key, _ in pairs}) < len(pairs):
        raise ValueError("a key twice")
    return dict(pairs)


def contradicted(row: dict) -> bool:
    """The product's verdict and the check outside it disagree: a fault."""
    return row.get("checked_here") is not None and row["checked_here"] != (row["status"] == "valid")


def status_of(result) -> str:
    return "valid" if result.valid else ("cut" if (result.validation_error or "").startswith("truncated") else "invalid")


def first_difference(a: list[int], b: list[int]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None if len(a) == len(b) else min(len(a), len(b)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=pathlib.Path)
    parser.add_argument("--per-subset", type=int, default=8)
    parser.add_argument("--skip", type=int, default=0, help="leave out each subset's first N (an earlier run's)")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--subsets", help="comma-separated subset names (default: all)")
    parser.add_argument("--backend", default="llguidance")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tree", default="", help="children per node at each depth, e.g. 2,2,1 (default: a chain)")
    parser.add_argument("--target", default=TARGET)
    parser.add_argument("--draft", default=DRAFT)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    pair = session.load_pair(args.target, args.draft, "cpu")
    tree = tuple(int(n) for n in args.tree.split(",")) if args.tree else ()
    cfg = session.spec_config(k=3, max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed, tree=tree)
    todo = schemas(args.data, args.per_subset, args.skip)
    if args.subsets:
        todo = [row for row in todo if row[0] in args.subsets.split(",")]
    drafting = f"the tree {args.tree}" if tree else "k=3"
    sampling = f"temperature {args.temperature:g}, seed {args.seed}" if args.temperature else "greedy"
    print(f"{len(todo)} schemas from {args.data}, {args.backend}, {args.target} + {args.draft}, {drafting}, {sampling}, "
          f"{args.max_new_tokens} new tokens at most; {platform.processor() or platform.machine()}", file=sys.stderr)
    out = args.out.open("w") if args.out else None
    rows = []
    for i, (subset, name, text) in enumerate(todo):
        try:
            row = run_one(pair, text, args.backend, cfg)
        except Exception as exc:  # a bug: recorded, not raised, so one schema does not end the run
            row = {"status": "crashed", "reason": f"{type(exc).__name__}: {exc}"[:500],
                   "traceback": traceback.format_exc()[-3000:]}
        row = {"subset": subset, "file": name, **row}
        rows.append(row)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()
        print(f"{i + 1}/{len(todo)} {subset}/{name}: {row['status']}", file=sys.stderr, flush=True)
    report(rows, greedy=not args.temperature)


def report(rows: list[dict], greedy: bool = True) -> None:
    kinds = ["valid", "cut", "invalid", "refused", "crashed"]
    print("| subset | schemas | " + " | ".join(kinds) + " | identical to the target alone |")
    print("|---|---|" + "---|" * (len(kinds) + 1))
    for subset in sorted({r["subset"] for r in rows}) + ["all"]:
        mine = [r for r in rows if subset in ("all", r["subset"])]
        counts = collections.Counter(r["status"] for r in mine)
        ran = [r for r in mine if "identical" in r]
        alone = collections.Counter(r["alone_status"] for r in ran)
        same = (f"{sum(r['identical'] for r in ran)} of {len(ran)}" if greedy else  # sampled: the target alone's own counts
                "sampled; alone: " + ", ".join(f"{alone[k]} {k}" for k in kinds[:3]))
        print(f"| {subset} | {len(mine)} | " + " | ".join(str(counts[k]) for k in kinds) + f" | {same} |")
    ran = [r for r in rows if "identical" in r]
    if ran:
        mean = lambda key: sum(r[key] or 0 for r in ran) / len(ran)  # noqa: E731
        print(f"\nmean acceptance {mean('acceptance'):.2f}, tokens per target pass {mean('tokens_per_pass'):.2f}, "
              f"forced tokens {sum(r['forced'] for r in ran) / max(1, sum(r['tokens'] for r in ran)):.0%} of the output")
        noted = sum(bool(r["notes"]) for r in ran if r["status"] == "invalid")
        print(f"invalid with a note on what the backend does not enforce while writing: {noted}; valid but cut "
              f"where it could have gone on (open_end): {sum(r['open_end'] for r in ran)}")
    faults = [r for r in rows if contradicted(r)]
    print(f"verdicts the check outside the product contradicts: {len(faults)}")
    for r in faults:
        print(f"  FAULT {r['subset']}/{r['file']}: {r['status']}, checked here {r['checked_here']}: {r['text'][:120]!r}")
    for kind in ("invalid", "refused", "crashed"):
        reasons = collections.Counter(reason_class(r["reason"] or "") for r in rows if r["status"] == kind)
        for reason, count in reasons.most_common(10):
            print(f"  {kind} {count:3d}  {reason}")


if __name__ == "__main__":
    main()
