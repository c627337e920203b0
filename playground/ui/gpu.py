"""The page's GPU leases: on a ZeroGPU Space every callback that touches the GPU runs inside
`spaces.GPU` (a lease of `duration` seconds); elsewhere the decorator does nothing."""
import spaces

from playground.limits import GPU_SECONDS

EXPERIMENT_RUNS = 3  # an experiment's lease: three runs' time


def on_gpu(runs: int = 1):
    """Decorator: a lease long enough for `runs` runs (a sweep is several)."""
    return spaces.GPU(duration=GPU_SECONDS * runs)

