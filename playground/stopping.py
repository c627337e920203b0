"""A run's Stop, as work below the page sees it: the page sets a `stopped()` check
for the work it starts (stopped_by); model loads, the compile of a run's passes and a constraint's
work in a worker ask it between their steps and end with Stopped. Owned by no layer: a context
variable each layer reads, so none calls up into the one that set it. No torch here."""
import contextvars
from collections.abc import Callable
from contextlib import contextmanager

from playground.errors import PlaygroundError

_stop: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar("run_stop", default=None)


class Stopped(PlaygroundError):
    """The work's caller stopped it (a run cancelled while its constraint compiled)."""


@contextmanager
def stopped_by(stopped: Callable[[], bool]):
    """Within it, work that asks (stop_in_force, raise_if_stopped; a worker every STOP_POLL_SECONDS, its
    child then killed) ends with Stopped once `stopped()` is true: a cancelled run's compile held the
    engine thread, and every run behind it, for up to its 20 s; the page's Stop waited for it too."""
    token = _stop.set(stopped)
    try:
        yield
    finally:
        _stop.reset(token)


def stop_in_force() -> Callable[[], bool]:
    """The caller's stop (stopped_by), to be asked from other threads too (a download's progress is told
    from the hub client's threads, where the caller's context is not), or one that never stops."""
    return stop_asked() or (lambda: False)


def raise_if_stopped(what: str) -> None:
    """Stopped where the caller's stop (stopped_by) is set: for work between its steps outside a worker
    (compiling a run's passes, one graph after another)."""
    stop = stop_asked()
    if stop is not None and stop():
        raise Stopped(f"{what} was stopped with its run")


def stop_asked() -> Callable[[], bool] | None:
    """The caller's stop (stopped_by), None where none is set (a worker then waits without polling)."""
    return _stop.get()
