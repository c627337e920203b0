"""How long one job may hold the device: the host's limit on it (on ZeroGPU nine tenths of its lease
where that is shorter: the lease ends the call mid-work, without the clean stop that keeps what was
made), and, once it has held the device its share, giving way to a run waiting for it (another
visitor's, whose wait would otherwise last the whole job with nothing on their page to say why).
No Gradio here: a run's turn is read on the lent GPU machine too, which has none."""
from time import monotonic

from playground.limits import GPU_SECONDS
from playground.session.host import on_zero_gpu


def within_lease(seconds: int, runs: int) -> tuple[int, str]:
    """-> (the time work of `runs` runs may take, whose limit it is): the host's `seconds`, or on ZeroGPU
    nine tenths of the lease where that is shorter (900 s of experiment were asked of a 360 s lease)."""
    lease = int(0.9 * GPU_SECONDS * runs)
    return (lease, "this Space's GPU lease") if on_zero_gpu() and lease < seconds else (seconds, "this host's")


def waiting() -> int:
    """The runs waiting for the device in the served page's queue (0 outside one)."""
    from playground.ui.addresses import device_waiting  # (Gradio's: absent on the lent GPU machine)
    return device_waiting()


class Turn:
    """A job's hold on the device from now: `ended()` once it is past `limit` seconds (or its lease's), or past
    `share` seconds while a run waits; `why` then says which (the words after "stopped"), latched."""

    def __init__(self, limit: int, runs: int, share: int, job: str):
        self.began, self.share, self.job = monotonic(), share, job
        self.limit, self.whose = within_lease(limit, runs)
        self.why: str | None = None

    def ended(self) -> bool:
        if self.why is None:
            held = monotonic() - self.began
            if held > self.limit:
                self.why = f" at {self.whose} limit of {self.limit} s for one {self.job}"
            elif held >= self.share and waiting():
                self.why = f" after {duration(held)} on the device, giving way to a run waiting for the model"
        return self.why is not None


def duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"
