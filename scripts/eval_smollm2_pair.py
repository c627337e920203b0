"""Measure the SmolLM2 pair on its held-out prompts, greedy: acceptance, tokens per target pass and
the speedup over the target alone, the two runs side by side per prompt (order alternating), plus
the cost of a draft pass in target passes. Prints a Markdown table for the README.

    python scripts/eval_smollm2_pair.py [--k 3,4,5,6] [--prompts 12] [--max-new-tokens 128] [--draft ...]
"""
import argparse
import json
import platform
import statistics
import sys
import time
import pathlib

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from playground import session  # noqa: E402
from playground.measure import pass_costs  # noqa: E402
from playground.models import locate  # noqa: E402


def timed(pair, ids, cfg, speculative: bool):
    started = time.perf_counter()
    result = session.run(pair, ids, cfg, speculative=speculative)
    return time.perf_counter() - started, result


def evaluate(pair, prompts: list[list[int]], k: int, max_new: int) -> dict:
    cfg = session.spec_config(k=k, max_new_tokens=max_new)
    spec_s = base_s = tokens = accepted = proposed = rejections = passes = identical = 0
    ratios = []
    for i, ids in enumerate(prompts):
        order = (True, False) if i % 2 == 0 else (False, True)
        runs = {s: timed(pair, ids, cfg, s) for s in order}
        (s_spec, spec), (s_base, base) = runs[True], runs[False]
        spec_s, base_s, tokens = spec_s + s_spec, base_s + s_base, tokens + len(spec.token_ids)
        accepted, proposed = accepted + spec.stats["accepted"], proposed + spec.stats["proposed"]
        rejections += sum(r.accepted < r.proposed for r in spec.rounds)
        passes += spec.stats["target_passes"]
        identical += spec.token_ids == base.token_ids
        ratios.append((len(spec.token_ids) / s_spec) / (len(base.token_ids) / s_base))
    return {"k": k, "acceptance": accepted / proposed, "alpha": accepted / (accepted + rejections),
            "tokens_per_pass": tokens / passes, "speedup": base_s / spec_s, "low": min(ratios), "high": max(ratios),
            "identical": identical, "prompts": len(prompts), "tokens": tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", default="3,4,5,6")
    parser.add_argument("--prompts", type=int, default=12)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--draft", default="smollm2-draft", help="smollm2-draft or smollm2-feature-draft (or a directory)")
    args = parser.parse_args()
    pair = session.load_pair("smollm2-135m-instruct", args.draft, "cpu")
    texts = json.loads((locate.SMOLLM2_DRAFT_DIR / "heldout_prompts.json").read_text())[: args.prompts]
    prompts = [session.encode_prompt(pair, t, chat=True) for t in texts]
    session.run(pair, prompts[0], session.spec_config(k=4, max_new_tokens=8))  # warm-up
    costs = pass_costs.measure_pass_costs(pair, 96, range(1, 8))
    print(f"# {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}; "
          f"target {pair.target.dtype}, draft {pair.draft.dtype}")
    print(f"draft pass {costs['draft'] * 1e3:.2f} ms, target pass {costs['verify'][1] * 1e3:.2f} ms "
          f"(c = {costs['draft'] / costs['verify'][1]:.3f}); verify at 5 tokens {costs['verify'][5] * 1e3:.2f} ms")
    print("| k | acceptance | per-token α | tokens/target pass | speedup (per-prompt range) | identical |")
    print("|---|---|---|---|---|---|")
    for k in (int(x) for x in args.k.split(",")):
        r = evaluate(pair, prompts, k, args.max_new_tokens)
        print(f"| {k} | {r['acceptance']:.3f} | {r['alpha']:.3f} | {r['tokens_per_pass']:.2f} | "
              f"{r['speedup']:.2f}x ({r['low']:.2f}-{r['high']:.2f}) | {r['identical']} / {r['prompts']} |", flush=True)
    print(f"median prompt length {statistics.median(map(len, prompts))} tokens")


if __name__ == "__main__":
    main()
