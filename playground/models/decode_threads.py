"""The CPU thread count for a model's short passes, measured on this machine: one thread where
starting the thread team costs more than splitting its products saves, else all of them.

Measured both ways: the 1.6M demo draft took 1.0 ms a pass on one thread, 1.9 ms on two (a 2-core
AMD EPYC), where on a 2-core Intel Xeon with AMX (torch 2.13) every shipped small model was faster
on two: the demo target alone 0.36 s against 0.44 s for 64 tokens (one thread had made it 1.25x
slower than transformers' own generate on two), the SmolLM2 feature and token drafts' runs 1.10x
faster. Bigger models too: on a 2-core AMD EPYC VM (AVX512-BF16, torch 2.13, GOMP_SPINCOUNT=300 as
`import playground` sets it) SmolLM2-135M's one-token pass took 19.4 ms on one thread against 27.7 on
two in bf16, and 26.2 against 28.6 in float32 held to AVX2 (verify passes of 4 tokens 27.7 against
37.3): waking the second thread for each of a pass's few hundred products cost more than it saved.
So it is timed, not assumed, for models up to TIMED_UP_TO parameters: each of the model's linear
layers on one row (the products of a one-token pass), in turns on one thread and on all, within
BUDGET_S after at least three timings of each (eight passes over the linear weights, warm-ups counted:
for a model near TIMED_UP_TO, seconds of its load). All threads only where clearly faster: one thread
holds up when other work takes the cores (all threads' passes took 10-75x longer under a test suite's
load, one thread's about 2x). PLAYGROUND_DECODE_THREADS sets it instead."""
import functools
import os

import torch

from playground.errors import PlaygroundError
from playground.models.in_turns import medians_in_turns, one_row_calls, seconds_of

TRIES = 7  # timings of each thread count at most (after one to warm up)
BUDGET_S = 0.3  # the measurement's time at most (3 timings of each at least): a loaded host took 5 s for the demo target
CLEARLY = 0.9  # all threads where their median pass takes under 90% of one thread's
TIMED_UP_TO = 2_000_000_000  # parameters: past it, all threads without asking (timing its passes would take seconds)


def fastest_decode_threads(model) -> int | None:
    """CPU threads for a model's short passes: None (all) where measured clearly faster for it, else 1;
    None for GPU models, a process on one thread and, unless the host says otherwise, models past TIMED_UP_TO."""
    if model.device.type != "cpu" or torch.get_num_threads() == 1:
        return None
    if (asked := host_choice()) is not None:
        return asked or None
    if parameters(model) > TIMED_UP_TO:
        return None
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not linears:
        return None
    one, every = _pass_seconds(linears, model.dtype)
    return None if every < CLEARLY * one else 1


def parameters(model) -> int:
    """How many parameters the model holds (a tied weight once)."""
    return sum(p.numel() for p in model.parameters())


def host_choice() -> int | None:
    """PLAYGROUND_DECODE_THREADS: 1 (one thread), all (0 here), or unset (measured: None)."""
    raw = os.environ.get("PLAYGROUND_DECODE_THREADS", "").strip().lower()
    if not raw:
        return None
    if raw not in ("1", "all"):
        raise PlaygroundError(f"environment variable PLAYGROUND_DECODE_THREADS must be 1 or all, got {raw[:40]!r}")
    return 1 if raw == "1" else 0


def _pass_seconds(linears: list, dtype: torch.dtype) -> tuple[float, float]:
    """Median seconds of the layers' one-row products (rows of the model's dtype) on one thread and on all, timed
    in turns."""
    calls = one_row_calls(linears, dtype)  # (module, one row [1, in])
    default = torch.get_num_threads()
    try:
        with torch.inference_mode():
            medians = medians_in_turns({threads: functools.partial(_on_threads, threads, calls)
                                        for threads in (1, default)}, TRIES, BUDGET_S)
    finally:
        torch.set_num_threads(default)
    return medians[1], medians[default]


def _on_threads(threads: int, calls: list) -> float:
    """Seconds of module(row) for each (module, row) of calls, on `threads` threads."""
    torch.set_num_threads(threads)
    return seconds_of(lambda module, row: module(row), calls)
