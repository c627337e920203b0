"""Smarter drafting on the demo pair: adaptive draft length against the best fixed k, and the
cascade (prompt lookup -> draft -> target) against the draft alone, greedy and at temperature 0.7.

    python scripts/bench_drafting.py [--prompts 8] [--max-new-tokens 96] [--ceiling 8] [--confidence 0.1 0.2 ...]

Every speedup is measured against the target alone on the same prompts in the same process, interleaved,
with its 95% interval (playground.measure.speedup)."""
import argparse
import dataclasses
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from playground import session  # noqa: E402
from playground.measure import sweeps  # noqa: E402
from playground.measure.machine import machine, machine_line  # noqa: E402
from playground.models.locate import DEMO_DIR  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--ceiling", type=int, default=8, help="k for the adaptive policies (the most per round)")
    parser.add_argument("--confidence", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.5],
                        help="thresholds for the confidence policy")
    args = parser.parse_args()
    print(f"machine: {machine_line(machine('cpu'))}")
    texts = json.loads((DEMO_DIR / "heldout_prompts.json").read_text())[: args.prompts]
    pair = session.load_pair("demo-target", "demo-draft", "cpu")
    prompts = [session.encode_prompt(pair, t) for t in texts]
    encode = lambda p, text: session.encode_prompt(p, text)  # noqa: E731
    print("| T | drafting | k | acceptance | tokens/pass | tokens/s | target alone tokens/s | speedup |")
    print("|---|---|---|---|---|---|---|---|")
    for temperature in (0.0, 0.7):
        cfg = session.spec_config(temperature=temperature, max_new_tokens=args.max_new_tokens)
        rows = list(sweeps.sweep(pair, prompts, cfg, "k", [1, 2, 3, 4, 5, 6]))[-1]
        for row in rows:
            show(temperature, "draft model, fixed k", row["k"], row)
        told = [r for r in rows if r["speedup"] is not None] or rows  # "cannot tell" rows have no number
        best = max(told, key=lambda r: r["speedup"] or r["speedup_estimate"] or 0)["k"]
        runs = [(best, 0.5, ["draft model", "cascade (lookup -> draft)"]), (args.ceiling, 0.5, ["adaptive: schedule"])]
        runs += [(args.ceiling, c, ["adaptive: confidence"]) for c in args.confidence]
        for k, confidence, variants in runs:
            run_cfg = dataclasses.replace(cfg, k=k, confidence=confidence)
            for row in list(sweeps.compare_drafts("demo-target", "demo-draft", texts, run_cfg, variants, encode))[-1]:
                name = row["variant"] + (f" {confidence}" if row["policy"] == "confidence" else "")
                show(temperature, name, f"{k}" if "adaptive" not in name else f"<= {k}", row)


def show(temperature, name, k, row):
    if row["tokens_per_s"] is None:  # a variant that could not run
        print(f"| {temperature} | {name} | {k} | {row['note']} |", flush=True)
        return
    acceptance = "n/a" if row["acceptance_rate"] is None else f"{row['acceptance_rate']:.2f}"  # (nothing drafted)
    speedup = (f"{row['speedup']:.2f}x ({row['speedup_low']:.2f}-{row['speedup_high']:.2f})" if row["speedup"] is not None
               else f"{row['verdict']}: {row['note']}")
    print(f"| {temperature} | {name} | {k} | {acceptance} | {row['tokens_per_target_pass']:.2f} | "
          f"{row['tokens_per_s']:.1f} | {row['baseline_tokens_per_s']:.1f} | {speedup} |", flush=True)


if __name__ == "__main__":
    main()
