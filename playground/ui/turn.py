"""How long one job may hold the device: the host's limit on it (on ZeroGPU nine tenths of its lease
where that is shorter: the lease ends the call mid-work, without the clean stop that keeps what was
made), and, once it has held the device its share, giving way to a run waiting for it (another
visitor's, whose wait would otherwise last the whole job with nothing on their page to say why).
No Gradio here: a run's turn is read on the lent GPU machine too, which has none."""
import threading
import weakref
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
        with _holding_lock:  # (until its job lets go of it)
            _holding.add(self)

    def release(self) -> None:
        """Its job has ended: it holds the device no more (held())."""
        with _holding_lock:
            _holding.discard(self)

    def ended(self) -> bool:
        if self.why is None:
            held = monotonic() - self.began
            if held > self.limit:
                self.why = f" at {self.whose} limit of {self.limit} s for one {self.job}"
            elif held >= self.share and waiting():
                self.why = f" after {duration(held)} on the device, giving way to a run waiting for the model"
        return self.why is not None


_holding: "weakref.WeakSet[Turn]" = weakref.WeakSet()  # the turns of the jobs in this process now
_holding_lock = threading.Lock()  # (made on engine threads, read by the server's)


def held() -> list[Turn]:
    """The turns of the jobs holding the device in this process (each job's until it ends and releases it, or is
    gone)."""
    with _holding_lock:
        turns = list(_holding)
    return [turn for turn in turns if turn.why is None]


def soonest_to_give_way(turns: list[Turn]) -> tuple[float, str]:
    """-> (the least share left of these jobs' turns, 0 past it: at its next round; that job's kind): the soonest one
    gives way to a run waiting for the device (a run still loading, not before its first round)."""
    now = monotonic()
    return min((max(0.0, turn.share - (now - turn.began)), turn.job) for turn in turns)


def duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"
