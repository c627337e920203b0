"""The CPU thread count for a small model's short passes, measured on this machine: one thread where
starting the thread team costs more than splitting its products saves, else all of them.

Measured both ways: the 1.6M demo draft took 1.0 ms a pass on one thread, 1.9 ms on two (a 2-core
AMD EPYC), where on a 2-core Intel Xeon with AMX (torch 2.13) every shipped small model was faster
on two: the demo target alone 0.36 s against 0.44 s for 64 tokens (one thread had made it 1.25x
slower than transformers' own generate on two), the SmolLM2 feature and token drafts' runs 1.10x
faster. So it is timed, not assumed: each of the model's linear layers on one row (the products of a
one-token pass), interleaved, on one thread and on all."""
import statistics
import time

import torch

from playground.models.placement import SMALL_MODEL  # past it, all threads without asking (its products split well)

TRIES = 7  # interleaved timings of each thread count (after one to warm up)
CLEARLY = 0.95  # one thread only where its median pass takes under 95% of all threads' (the rest is noise)


def fastest_decode_threads(model) -> int | None:
    """CPU threads for a model's short passes: 1 where measured clearly faster for it, else None (all
    threads: GPU models, big ones, a process on one thread)."""
    if model.device.type != "cpu" or torch.get_num_threads() == 1:
        return None
    if sum(p.numel() for p in model.parameters()) > SMALL_MODEL:
        return None
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not linears:
        return None
    one, every = _pass_seconds(linears)
    return 1 if one < CLEARLY * every else None


def _pass_seconds(linears: list) -> tuple[float, float]:
    """Median seconds of the layers' one-row products on one thread and on all, timed in turns."""
    rows = [torch.zeros(1, m.in_features, dtype=m.weight.dtype, device=m.weight.device) for m in linears]
    default = torch.get_num_threads()
    times = {1: [], default: []}
    try:
        with torch.inference_mode():
            for attempt in range(TRIES + 1):
                for threads in times:
                    torch.set_num_threads(threads)
                    start = time.perf_counter()
                    for m, x in zip(linears, rows):
                        m(x)
                    if attempt:  # (the first of each: warm-up)
                        times[threads].append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(default)
    return statistics.median(times[1]), statistics.median(times[default])
