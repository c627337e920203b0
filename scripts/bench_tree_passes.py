"""The cost of one target pass of n rows, as a chain (`runner.forward`) and as a token tree shaped
as one branch (`runner.forward_tree`), on SmolLM2-135M-Instruct after 150 tokens: medians of 7,
widths interleaved. Usage: python scripts/bench_tree_passes.py (set PLAYGROUND_CPU_DTYPE and the
oneDNN/ATen ISA variables to measure another CPU path)."""
import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from playground import session  # noqa: E402
from playground.engine.runner import ModelRunner  # noqa: E402
from playground.engine.tree import verify_rows  # noqa: E402

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
                if width > 1:
                    positions, visible = verify_rows([-1] + list(range(width - 2)), 1, 150)
                    times.setdefault(("tree", width), []).append(timed(lambda: runner.forward_tree(ids, positions, visible)))
                    runner.crop(150)
    print(f"{pair.target.dtype}, {pair.target.config._attn_implementation} attention")
    for kind in ("chain", "tree"):
        print(kind, "  ".join(f"{w}: {statistics.median(times[kind, w]) * 1e3:.1f} ms" for w in WIDTHS if (kind, w) in times))


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
