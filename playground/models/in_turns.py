"""Timing ways of doing the same work on this machine in turns (one of each, again and again), so that a
neighbour's load falls on every way alike: how decode_threads picks a thread count, batch_invariant states what
exactness costs and row_products whether its kernel beats F.linear for a model that need not be exact."""
import contextlib
import statistics
import time
from collections.abc import Callable, Hashable

import torch


def medians_in_turns(ways: dict[Hashable, Callable[[], float]], tries: int, over_after_s: float | None = None,
                     at_least: int = 3) -> dict[Hashable, float]:
    """ways: each a callable doing the work once and returning its seconds (what it sets up first not counted) ->
    each way's median seconds over `tries` turns, after one turn to warm up (not counted); where over_after_s is
    given, the turns stop once they have taken that long, after at least `at_least` counted ones."""
    if tries < 1:
        raise ValueError("medians_in_turns needs one counted turn at least")
    times = {way: [] for way in ways}
    spent = 0.0
    for turn in range(tries + 1):
        if over_after_s is not None and turn > at_least and spent > over_after_s:
            break
        for way, once in ways.items():
            seconds = once()
            spent += seconds
            if turn:  # (the first of each: warm-up)
                times[way].append(seconds)
    return {way: statistics.median(seconds) for way, seconds in times.items()}


def seconds_of(work: Callable, calls: list[tuple]) -> float:
    """Seconds of work(*args) for each args of calls, one after the other."""
    started = time.perf_counter()
    for args in calls:
        work(*args)
    return time.perf_counter() - started


def one_row_calls(modules, dtype: torch.dtype) -> list[tuple]:
    """(module, a row of zeros [1, in] of the model's dtype, on its weight's device) for each linear layer among
    modules (a model's .modules(), or a list): the products of a one-token pass, for seconds_of(lambda m, x: ...,
    calls). (A float32 model's weight may be held in bfloat16: row_products.hold_halved.)"""
    return [(m, torch.zeros(1, m.in_features, dtype=dtype, device=m.weight.device))
            for m in modules if isinstance(m, torch.nn.Linear)]


@contextlib.contextmanager
def on_threads(threads: int | None):
    """Within: torch's operations on `threads` threads (None: as many as now), the count restored after."""
    default = torch.get_num_threads()
    try:
        torch.set_num_threads(threads or default)
        yield
    finally:
        torch.set_num_threads(default)
