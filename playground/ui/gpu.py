"""The page's GPU leases: on a ZeroGPU Space every callback that touches the GPU runs inside
`spaces.GPU` (a lease of `duration` seconds); elsewhere the decorator does nothing."""
import spaces

from playground.limits import GPU_SECONDS
from playground.session.host import on_zero_gpu

EXPERIMENT_RUNS = 3  # an experiment's lease: three runs' time


def on_gpu(runs: int = 1):
    """Decorator: a lease long enough for `runs` runs (a sweep is several)."""
    return spaces.GPU(duration=GPU_SECONDS * runs)


def within_lease(seconds: int, runs: int) -> tuple[int, str]:
    """-> (the time work of `runs` runs may take, whose limit it is): the host's `seconds`, or on ZeroGPU
    nine tenths of the lease where that is shorter (the lease ends the call mid-work, without the
    clean stop that keeps what was measured: 900 s of experiment were asked of a 360 s lease)."""
    lease = int(0.9 * GPU_SECONDS * runs)
    return (lease, "this Space's GPU lease") if on_zero_gpu() and lease < seconds else (seconds, "this host's")
