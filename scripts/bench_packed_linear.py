"""Packed weights (playground/models/packed_linear.py) against unpacked ones on the SmolLM2 pair, greedy,
one process, the two variants alternating per prompt and repeat on the same models (packing is
switched off by hiding the packed copies), so background load hits both alike. Prints tokens/s
of the target alone and of speculation at each k, per variant, and whether the tokens agree.

"target, one-row" is the target alone with plain one-row products instead of batch_invariant's
two rows: the fastest target alone here, but not the exact baseline (its greedy tokens differ from
speculation's on near-ties), so the playground compares with "target"; the script shows the gap.

    python scripts/bench_packed_linear.py [--k 3,4] [--prompts 6] [--repeats 2] [--max-new-tokens 96]
"""
import argparse
import json
import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from playground import session  # noqa: E402
from playground.measure import pass_costs  # noqa: E402
from playground.models import locate  # noqa: E402
from playground.models import packed_linear  # noqa: E402
from playground.models.batch_invariant import two_row_linear  # noqa: E402


def packed_state(pair) -> dict:
    """module -> its packed weight, for every packed product of the pair (the draft's head too)."""
    found = {m: m.__dict__[packed_linear.ATTR] for model in (pair.target, pair.draft)
             for m in model.modules() if m.__dict__.get(packed_linear.ATTR) is not None}
    if getattr(pair.draft, "packed_head", None) is not None:
        found[pair.draft] = pair.draft.packed_head
    return found


def use(state: dict, packed: bool) -> None:
    for module, weight in state.items():
        if isinstance(module, torch.nn.Linear):
            module.__dict__[packed_linear.ATTR] = weight if packed else None
        else:
            module.packed_head = weight if packed else None


def one_row_products(pair, on: bool) -> None:
    """The target's products as plain one-row ones (not batch-invariant) or back to two rows."""
    forward = packed_linear.packed_forward if on else two_row_linear
    for m in pair.target.modules():
        if isinstance(m, torch.nn.Linear):
            m.forward = forward.__get__(m)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", default="3,4")
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--draft", default="smollm2-feature-draft")
    args = parser.parse_args()
    pair = session.load_pair("smollm2-135m-instruct", args.draft, "cpu", dtype=torch.bfloat16)  # (float32 is the kernel's)
    state = packed_state(pair)
    if not state:
        sys.exit("nothing is packed here (packing needs a CPU with native bfloat16)")
    texts = json.loads((locate.SMOLLM2_DRAFT_DIR / "heldout_prompts.json").read_text())[: args.prompts]
    prompts = [session.encode_prompt(pair, t, chat=True) for t in texts]
    methods = [("target", 0), ("target, one-row", -1)] + [(f"k={k}", int(k)) for k in args.k.split(",")]
    session.run(pair, prompts[0], session.spec_config(k=4, max_new_tokens=8))  # warm-up
    for packed in (True, False):
        use(state, packed)
        costs = pass_costs.measure_pass_costs(pair, 96, range(1, 6))
        print(f"{'packed' if packed else 'unpacked'}: draft pass {costs['draft'] * 1e3:.2f} ms, target pass "
              f"{costs['verify'][1] * 1e3:.2f} ms, at 5 tokens {costs['verify'][5] * 1e3:.2f} ms")
    seconds = {(m, p): [] for m, _ in methods for p in (True, False)}
    tokens, same = {}, 0
    for r in range(args.repeats):
        for i, ids in enumerate(prompts):
            for packed in (True, False) if (i + r) % 2 == 0 else (False, True):
                use(state, packed)
                for name, k in methods:
                    cfg = session.spec_config(k=max(k, 1), max_new_tokens=args.max_new_tokens)
                    one_row_products(pair, k < 0)
                    started = time.perf_counter()
                    out = session.run(pair, ids, cfg, speculative=k > 0).token_ids
                    seconds[name, packed].append(time.perf_counter() - started)
                    one_row_products(pair, False)
                    same += tokens.setdefault((i, name), out) == out
                    tokens[i, name, packed] = len(out)
    use(state, True)
    print(f"{same} of {len(prompts) * len(methods) * 2 * args.repeats} runs gave the first run's tokens of their "
          "method; the one-row target gave the exact target's on "
          f"{sum(tokens[i, 'target, one-row'] == tokens[i, 'target'] for i in range(len(prompts)))} of {len(prompts)} prompts")
    def rate(name: str, packed: bool) -> float:  # tokens/s over every run of the method
        return sum(tokens[i, name, packed] for i in range(len(prompts))) * args.repeats / sum(seconds[name, packed])

    print("| method | packed tok/s | unpacked tok/s | packed / unpacked (per-run median) | packed, vs the exact target |")
    print("|---|---|---|---|---|")
    for name, _ in methods:
        ratios = [b / a for a, b in zip(seconds[name, True], seconds[name, False])]
        print(f"| {name} | {rate(name, True):.1f} | {rate(name, False):.1f} | {rate(name, True) / rate(name, False):.2f}x "
              f"({statistics.median(ratios):.2f}x; {min(ratios):.2f}-{max(ratios):.2f}) | "
              f"{rate(name, True) / rate('target', True):.2f}x |")


if __name__ == "__main__":
    main()
