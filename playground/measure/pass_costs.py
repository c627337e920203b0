"""What one model pass costs: the seconds of a draft pass (the median over bursts of a burst's mean) and
the median of a target verify pass per width, at a realistic context, measured the way decoding alternates the two models. bench uses
them to tell how much of a run's time is model passes (its efficiency column)."""
import statistics
import time

import torch

from playground import session
from playground.engine.runner import ModelRunner
from playground.engine.static import StaticRunner
from playground.models.loading import Pair


@torch.inference_mode()
def measure_pass_costs(pair: Pair, context: int, widths: range, reps: int = 30, burst: int = 4,
                       compiled: bool = False) -> dict:
    """Seconds of one draft pass (1 token: the median over bursts of a burst's mean, its first pass after
    a verify pass counted as in a round; a plain mean let a load spike tilt bench's efficiency column
    against the median verify passes) and the median of a target verify pass per width, at a
    realistic context length, with the same runners (and thread settings) the engine uses. The
    passes alternate as in decoding: each verify pass follows a burst of draft passes and each
    burst follows a verify pass, so neither model finds its weights in a cache the other has just
    used (on a CPU, measuring a model alone makes its passes look up to 2x cheaper)."""

    def prime(runner: ModelRunner) -> None:
        runner.prefill(torch.arange(context, device=runner.device) % 100)

    def timed_pass(runner: ModelRunner, width: int) -> float:
        ids = torch.arange(width, device=runner.device) % 100
        _sync(runner.device)
        start = time.perf_counter()
        runner.forward(ids, keep=width)
        _sync(runner.device)
        runner.crop(context)
        return time.perf_counter() - start

    target, draft = cost_runners(pair, context + max(widths) + 1, widths, compiled)
    prime(target)
    if draft is not None:
        prime(draft)
    verify, drafting = {w: [] for w in widths}, []
    for _ in range(reps):
        for w in widths:
            if draft is not None:
                drafting.append(statistics.mean(timed_pass(draft, 1) for _ in range(burst)))
            verify[w].append(timed_pass(target, w))
    return {"verify": {w: statistics.median(t) for w, t in verify.items()},
            "draft": statistics.median(drafting) if drafting else 0.0}


def cost_runners(pair: Pair, capacity: int, widths: range, compiled: bool):
    """The runners the engine would use: eager, or static with every measured width compiled where
    the model supports it."""
    if not compiled:
        return session.eager_runners(pair)
    target = session.static_or_eager(pair, pair.target, capacity, {(w, w) for w in widths}, pair.target_threads)
    draft = session.static_or_eager(pair, pair.draft, capacity, {(1, 1)}, pair.draft_threads,
                                    pair.draft_vocab_map) if pair.draft is not None else None
    for runner in (target, draft):
        if isinstance(runner, StaticRunner):
            runner.warm()
    return target, draft


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def log_costs(log, title: str, context: int, costs: dict) -> None:
    log(f"{title} at context {context}: draft {costs['draft'] * 1e3:.2f} ms, verify "
        + ", ".join(f"{w}: {s * 1e3:.2f} ms" for w, s in costs["verify"].items()))
