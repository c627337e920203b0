"""Run a constraint compile (or an output's check against its schema) where it cannot take the
server down: in a forked child process with a memory allowance and a time limit. A schema can make a compiler grow without bound (xgrammar built
8 GiB in 29 s from a 2.3 KB self-recursive schema), and nothing about the schema's size predicts
it, so the compile itself is what gets bounded.

The child inherits the backend (tokenizer tables already built, copy-on-write), caps its private
memory with RLIMIT_DATA at what it has plus COMPILE_BYTES, compiles, and sends back a picklable
result (llguidance: the grammar text; xgrammar: the text it compiled, which the caller compiles
again at the same low priority (yielding): work the child has shown fits the bounds, where the
compiled form serialized ran to 256 MB and past the allowance to write it). The parent waits
at most COMPILE_SECONDS and kills it past that (or less where its caller set a ceiling: the page's
check as typed and its Export tab, whose lanes every visitor's calls wait in). The child runs at a
lower CPU priority (CHILD_NICENESS): on a 2-core host one caller's checks slowed a 32-token run from
0.9 s to 14 s. Where fork is not available or not safe (not Linux), or not allowed (a daemon
process: a ZeroGPU task), the work runs in-process, unbounded, which is only fit for a trusted local
user."""
import contextvars
import multiprocessing
import os
import resource
import sys
import tempfile
import threading
import time
from contextlib import contextmanager

from playground.errors import PlaygroundError
from playground.limits import COMPILE_BYTES, COMPILE_SECONDS
from playground.stopping import Stopped, raise_if_stopped, stop_asked

FORKS = sys.platform.startswith("linux")
CHILD_NICENESS = 10  # added to the server's: a child's work yields the CPU to the runs and the page
_ceiling: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar("worker_ceiling", default=None)
# (its deadline on the monotonic clock, its seconds)
_in_child = False  # True inside a worker child: its fd 2 is its own to redirect
STOP_POLL_SECONDS = 0.1  # how soon a stop reaches a worker's parent


COMPILING = ("compiling this constraint", "simplify it (fewer alternatives, less recursion)")  # (a schema, regex or
# grammar: "simplify the schema" was said of a grammar; a review)


class TooSlow(PlaygroundError):
    """The work ran past its time limit and was stopped."""


class OverMemory(PlaygroundError):
    """The work grew past its memory allowance and was stopped."""


class OverCeiling(TooSlow):
    """The work ran past its caller's ceiling (shorter than its own limit) and was stopped."""


@contextmanager
def ceiling(seconds: float):
    """Within it, all the work in workers together is stopped past `seconds` from now, where a
    work's own limit would go on longer (OverCeiling)."""
    token = _ceiling.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _ceiling.reset(token)


def bounded(compile_fn, *args, seconds: float | None = None, extra_bytes: int | None = None,
            task: tuple[str, str] = COMPILING):
    """compile_fn(*args) in a child bounded in time and memory -> its (picklable) result.
    PlaygroundError from the child is raised here as is; running out of either bound is a
    PlaygroundError saying which. task: (what is being done, what would make it lighter)."""
    seconds = COMPILE_SECONDS if seconds is None else seconds
    deadline, ceiling_seconds = _ceiling.get() or (None, None)
    capped = deadline is not None and deadline - time.monotonic() < seconds
    wait = max(0.0, deadline - time.monotonic()) if capped else seconds
    extra_bytes = COMPILE_BYTES if extra_bytes is None else extra_bytes
    if not FORKS or _in_child or multiprocessing.current_process().daemon:  # inside a worker already: its bounds
        return compile_fn(*args)  # hold; a daemon process (a ZeroGPU task) may not start children
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_child, args=(send, extra_bytes, compile_fn, args, task[0]),
                                                        daemon=True)
    started = time.monotonic()
    try:
        child.start()
    except OSError as exc:  # no memory or processes left to fork
        raise PlaygroundError(f"{task[0]} could not start its worker process ({exc.strerror or exc}): try again") from None
    send.close()
    try:
        if not _answered(receive, wait, task):
            said = f"{task[0]} took longer than {ceiling_seconds if capped else seconds:g} s"
            raise (OverCeiling(f"{said}, the time given to the whole check, and was stopped") if capped
                   else TooSlow(f"{said} and was stopped: {task[1]}"))
        try:
            kind, value = receive.recv()
        except EOFError:  # the child died without a word: killed by the memory cap, or crashed
            child.join(1)
            raise OverMemory(_died(task, child.exitcode, extra_bytes, time.monotonic() - started)) from None
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join(5)
    if kind == "ok":
        return value
    if kind == "memory":
        raise OverMemory(_over_memory(task, extra_bytes))
    raise PlaygroundError(value)


def _answered(receive, wait: float, task: tuple[str, str]) -> bool:
    """Whether the child answered within `wait` seconds; Stopped once the caller's stop is set."""
    stop, until = stop_asked(), time.monotonic() + wait
    while stop is not None and not stop():
        if receive.poll(min(STOP_POLL_SECONDS, max(0.0, until - time.monotonic()))):
            return True
        if time.monotonic() >= until:
            return False
    if stop is not None:
        raise Stopped(f"{task[0]} was stopped with its run")
    return receive.poll(wait)


def in_child() -> bool:
    """True inside a worker child: what it returns crosses a pipe to its parent."""
    return _in_child


def yielding(fn, *args):
    """fn(*args) on a thread of its own at the workers' lower CPU priority (Linux sets a niceness per
    thread, and the threads it starts inherit it), its exceptions raised here: work in the server
    that a worker has shown fits the bounds, and that should yield to the runs as a worker does. A stop
    (stopped_by) ends the wait (Stopped): the thread finishes alone, its result dropped (a cancelled run
    waited out xgrammar's second compile, 12.5 s, with every run behind it)."""
    outcome: list = [None, None]  # its result, or what it raised

    def run() -> None:
        try:
            os.nice(CHILD_NICENESS)
            outcome[0] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            outcome[1] = exc
    thread = threading.Thread(target=run, name="yielding", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(STOP_POLL_SECONDS)
        if thread.is_alive():
            raise_if_stopped("compiling this constraint again in the server")
    if outcome[1] is not None:
        raise outcome[1]
    return outcome[0]


def _child(send, extra_bytes: int, compile_fn, args, doing: str) -> None:
    global _in_child
    _in_child = True
    try:
        os.nice(CHILD_NICENESS)
    except OSError:  # (never seen: raising one's own niceness is always allowed on Linux)
        pass
    _cap_memory(extra_bytes)
    try:
        send.send(("ok", compile_fn(*args)))
    except PlaygroundError as exc:
        send.send(("error", str(exc)))
    except MemoryError:
        send.send(("memory", ""))
    except BaseException as exc:  # noqa: BLE001 - the parent must hear why, whatever it was
        text = f"{type(exc).__name__}: {exc}"
        kind = "memory" if "bad_alloc" in text or "Cannot allocate memory" in text else "error"
        send.send((kind, f"{doing} failed: {text.splitlines()[0][:300]}"))
    finally:
        send.close()


def _cap_memory(extra_bytes: int) -> None:
    """RLIMIT_DATA counts private writable memory (heap and anonymous maps), what a compiler grows."""
    with open("/proc/self/status") as status:
        data_kib = next(int(line.split()[1]) for line in status if line.startswith("VmData:"))
    limit = data_kib * 1024 + extra_bytes
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _over_memory(task: tuple[str, str], extra_bytes: int) -> str:
    return f"{task[0]} needed more than {extra_bytes / 2**30:g} GiB and was stopped: {task[1]}"


def _died(task: tuple[str, str], exitcode: int | None, extra_bytes: int, seconds: float) -> str:
    return (f"{task[0]} stopped without an answer after {seconds:.1f} s (exit code {exitcode}), as it does when it "
            f"runs past its {extra_bytes / 2**30:g} GiB allowance: {task[1]}")


@contextmanager
def stderr_lines(lines: list[str]):
    """Inside a worker child, what native code writes to fd 2 meanwhile (xgrammar's warnings on what
    it does not enforce) is appended to `lines` instead of printed; elsewhere nothing is captured
    (redirecting fd 2 would take other threads' output too)."""
    if not _in_child:
        yield
        return
    with tempfile.TemporaryFile() as log:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            log.seek(0)
            lines += log.read(1 << 20).decode(errors="replace").splitlines()
