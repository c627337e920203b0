"""Where the app's model work runs, and how its results reach the page.

Every run, sweep and comparison of the app goes on the engine threads (one per concurrent run,
PLAYGROUND_CONCURRENCY), and the caller takes its newest result at its own pace (`paced`): Gradio
asks a generator for its next value only once it has drawn and sent the last, so a run streamed
directly waits while the page is made (measured on a 2-core CPU: 0.65-0.76 of the CLI's speed).

Why the same few threads, not a new one per run: torch's OpenMP gives each thread that runs a
parallel product a team of workers of its own, and with more workers alive than cores (a second
team) it stops spinning between products: SmolLM2's 2-row bf16 products took 2.5x longer from a
second thread (34 -> 85 us for 1536x576 on 2 cores, measured) and its runs 30% longer. Work on
these threads alone keeps one team per thread: the warm-up's loading too (`on_engine`). Loaded on
the main thread, it gave that thread a team, and the page made 0.60-0.64x the CLI's tokens/s
against 0.84-0.85x (SmolLM2, scripts/bench_page.py, 2-core Xeon, 2026-11-27)."""
import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from playground import stopping
from playground.limits import CONCURRENCY

T = TypeVar("T")
ENGINE_THREADS = "playground-engine"  # their names' prefix
_engine = ThreadPoolExecutor(max_workers=max(1, CONCURRENCY), thread_name_prefix=ENGINE_THREADS)
_handed: dict[str, tuple[threading.Event, object]] = {}  # Gradio event id -> (its work's stop, its request), from
# the work's hand-over until it ends: a cancelled event's work goes on to its next item, or waits its turn


def on_engine(work: Callable[..., T], *args) -> T:
    """work(*args) run on an engine thread, its result (or its error) returned here: model work the
    app does outside a run (the warm-up's loading) goes there too, so no other thread keeps a team.
    Called on an engine thread, it runs there at once (a second wait on the only engine thread would
    wait for itself). (A process forked after an engine thread started must not submit here: the
    child's executor counts a thread it does not have. Nothing forked does: the constraint worker's
    child only compiles, and ZeroGPU never warms up.)"""
    if threading.current_thread().name.startswith(ENGINE_THREADS):
        return work(*args)
    return _engine.submit(contextvars.copy_context().run, work, *args).result()


PAGE_SHARE = 0.03  # the most of the time the caller may spend on handed-over items (drawing, sending)
MOST_WAIT = 2.0  # s: the longest the page goes without the newest item, whatever its drawing costs
RECENT = 5  # handed items whose median cost sets the wait


def next_wait(costs: list[float], every: float) -> float:
    """Seconds until the next item is handed, from the caller's time on the last few (`costs`): the
    median's 1/PAGE_SHARE, from `every` up to MOST_WAIT. The last cost alone set it: a run's first
    item (its outputs cleared, its constraint checked) took 0.3-0.8 s to hand, and the page then
    showed nothing for 10-15 s of a constrained SmolLM2 run (a newcomer's review, 2-core EPYC)."""
    recent = sorted(costs[-RECENT:])
    return min(MOST_WAIT, max(every, recent[len(recent) // 2] / PAGE_SHARE)) if recent else every


def stop_handed(event_id: object) -> None:
    """A cancel of Gradio's event `event_id`: its work ends at its next item (a constraint's compile
    in a worker at once: playground.stopping.stopped_by), or does not start.
    (Gradio's /cancel frees the event's place in the queue at once, while the thread asking the
    work for its next item waits on: cancelling runs one after another in a constraint's compile
    queued 24 of them on the engine thread, and another visitor's run waited 160 s behind them.)"""
    stop, _ = _handed.get(event_id, (None, None)) if isinstance(event_id, str) else (None, None)
    if stop is not None:
        stop.set()


def handed_requests() -> list[tuple[str, object]]:
    """(event id, the request that asked for it) of each work on the engine threads or waiting for
    one, whether or not Gradio still holds its event (a cancelled one's goes on to its next item)."""
    return [(event_id, request) for event_id, (_, request) in list(_handed.items())]


def _gradio_event(event_id: str | None):
    """The Event Gradio is running for `event_id` (its `alive` turns false once the page's stream closes), or None."""
    from gradio.context import LocalContext
    queue = getattr(LocalContext.blocks.get(None), "_queue", None)
    jobs = getattr(queue, "active_jobs", None) or []
    return next((e for job in list(jobs) if job for e in job if getattr(e, "_id", None) == event_id), None)


UNREAD_SECONDS = 30  # a run no stream reads ends after this long (a late reader gets what it wrote)


def paced(make: Callable[[threading.Event], Iterator], every: float, idle: float | None = None) -> Iterator:
    """Run the iterator `make(stop)` on an engine thread (in the caller's context, so Gradio's
    progress reaches the page) and yield its newest item at most every `every` seconds, and no more
    often than keeps the caller's own time per item under PAGE_SHARE of the wall time (its work
    competes with the engine for the CPU), but at least every MOST_WAIT seconds; the last item always.
    An error there is raised here. Closing this generator sets `stop` (the work should end at its next
    item) without waiting. With `idle`, the newest item again after that long without a new one: Gradio closes the
    generator of a page that has gone only when it hands it something (an experiment's point makes
    nothing for minutes). Gradio's event marked gone (its page's stream closed) sets `stop` too, looked
    at every `every` seconds: a run hands nothing while its models load and its constraint compiles;
    so does an event no stream of its session has read for UNREAD_SECONDS (a `/call/` caller who never
    opens its stream: a 300-byte POST held the CPU for the run's whole length, a sweep's 15 minutes)."""
    stop = threading.Event()
    from gradio.context import LocalContext
    event_id = LocalContext.event_id.get(None)
    event = _gradio_event(event_id)
    newest, finished, failure = _start(make, stop, event_id, LocalContext.request.get(None))
    sent, wait, last, costs = 0, every, time.monotonic(), []
    read_at = last  # when a stream of the event's session was last seen open
    try:
        while not finished.wait(wait):
            read_at = _stop_if_abandoned(event, stop, read_at)
            count, item = newest
            if count != sent or (idle is not None and count and time.monotonic() - last >= idle):
                sent, handed = count, time.perf_counter()
                yield item
                last = time.monotonic()
                costs.append(time.perf_counter() - handed)
                wait = next_wait(costs, every)
        if failure:
            raise failure[0]
        if newest[0] != sent:
            yield newest[1]
    finally:
        stop.set()


def _start(make: Callable[[threading.Event], Iterator], stop: threading.Event, event_id: str | None, request):
    """make(stop) submitted to an engine thread, in the caller's context -> (newest: [items made, the
    last], finished: set once it ended, failure: its error, if any), filled by that thread; handed over
    (handed_requests, stop_handed) as Gradio's `event_id`, asked for by `request`."""
    finished, failure = threading.Event(), []
    newest = [0, None]  # (an item may be the same object, grown)
    if event_id is not None:
        _handed[event_id] = stop, request

    def work() -> None:
        try:
            if not stop.is_set():  # (cancelled while it waited for the engine thread: nothing to do)
                with stopping.stopped_by(stop.is_set):  # a constraint's compile in a worker ends on a stop too
                    for item in make(stop):
                        newest[:] = [newest[0] + 1, item]
        except BaseException as exc:  # noqa: BLE001 (raised again in the caller's thread)
            failure.append(exc)
        finally:
            if event_id is not None and _handed.get(event_id, (None,))[0] is stop:
                del _handed[event_id]
            finished.set()
    try:
        _engine.submit(contextvars.copy_context().run, work)
    except BaseException:  # (an executor shut down: the interpreter ending)
        _handed.pop(event_id, None)
        raise
    return newest, finished, failure


def _stop_if_abandoned(event, stop: threading.Event, read_at: float) -> float:
    """Set `stop` where Gradio's event is gone (its page's stream closed) or no stream of its session has
    been read for UNREAD_SECONDS -> when one was last seen read."""
    from playground.ui.leftovers import being_read
    if event is None:
        return read_at
    if not event.alive:  # a visitor who left during a compile held the engine to its end, 19 s (a
        stop.set()  # 256-property schema on xgrammar), and the next visitor waited
    if being_read(event.session_hash):
        return time.monotonic()
    if time.monotonic() - read_at > UNREAD_SECONDS:
        stop.set()
    return read_at
