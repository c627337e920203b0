"""The cost of one target pass of n rows, as a chain (`runner.forward`) and as token trees of
n - 1 nodes under the root (`runner.forward_tree`): one branch, and a bushy tree numbered depth
first (as TreeProposer numbers them: one run of rows per branch) and depth by depth (a run per
node), on SmolLM2-135M-Instruct after 150 tokens: medians of 7, widths interleaved. Usage: python scripts/bench_tree_passes.py (set PLAYGROUND_CPU_DTYPE and the
oneDNN/ATen ISA variables to measure another CPU path)."""
import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from playground import session  # noqa: E402
from playground.engine.runner import ModelRunner  # noqa: E402
from playground.engine.tree import depth_first, verify_rows  # noqa: E402

WIDTHS = (1, 2, 4, 6, 8, 11, 16, 22)


def main() -> None:
    pair = session.load_pair("smollm2-135m-instruct", "smollm2-feature-draft", "cpu")
    runner = ModelRunner(pair.target, pair.vocab, pair.target_threads)
    context = torch.arange(150) % 1000 + 100
    times: dict[tuple, list[float]] = {}
    with torch.inference_mode():
        runner.forward(context, keep=1)
        for _ in range(7):
            for width in WIDTHS:
                ids = torch.arange(width) + 200
                times.setdefault(("chain", width), []).append(timed(lambda: runner.forward(ids, keep=width)))
                runner.crop(150)
                for kind, parents in trees(width - 1).items():
                    positions, visible = verify_rows(parents, 1, 150)
                    times.setdefault((kind, width), []).append(timed(lambda: runner.forward_tree(ids, positions, visible)))
                    runner.crop(150)
    print(f"{pair.target.dtype}, {pair.target.config._attn_implementation} attention")
    for kind in ("chain", "branch", "depth-first", "depth-by-depth"):
        print(kind, "  ".join(f"{w}: {statistics.median(times[kind, w]) * 1e3:.1f} ms" for w in WIDTHS if (kind, w) in times))


def trees(n: int) -> dict[str, list[int]]:
    """Parents of n nodes: one branch; two children under every node, depth by depth and depth first."""
    if n < 1:
        return {}
    bushy = [-1] + [(i - 1) // 2 for i in range(1, n)]  # node i's parent, depth by depth
    order = depth_first(bushy)
    number = {node: i for i, node in enumerate(order)}
    return {"branch": [-1] + list(range(n - 1)), "depth-by-depth": bushy,
            "depth-first": [number.get(bushy[node], -1) for node in order]}


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
