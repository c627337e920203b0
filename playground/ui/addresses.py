"""Who sent a request, and each address's share of the queue and the device: playground.ui.serving's
guard asks `joining` before a call joins the queue.

- One address holds at most DEVICE_RUNS_PER_CLIENT runs on the device and QUEUED_PER_CLIENT events
  of any kind (a quarter of the queue), queued, running or joining: past the first, its next join of
  the queue for a run (/queue/join, or /call/<name>, which joins it too; a function not known counts
  as a run) is refused with the status of Gradio's own "queue full" (503; Gradio's clients show their
  own words for it), past the second any join; the others go on. Every address together has at most
  QUEUE_SIZE runs waiting for the device (RUNS_FULL past them): Gradio's queue counts every kind of event
  together, and runs from 11 addresses filled it (every visitor's Share link and Export "Queue is full").
  A page's first load joins three quick events at once (the calculator's chart, the export, the
  thinking budget), none a run. A run's work counts until it ends on the engine thread, also once Gradio's /cancel has taken its
  event out of the queue (a cancel ends its constraint's compile in a worker, and work cancelled
  while it waited for the thread never starts: playground.ui.pacing). In one quick lane (a function's, or the constraint
  checks') an address holds at most QUICK_PER_LANE: the lane serves one at a time. The runs waiting
  for the device take turns by address (take_turns), not first come, first served.
  The address: the peer's, or where the peer is a proxy of this host (a private or loopback address:
  a Space's proxy, a local nginx) the first of X-Forwarded-For, or PLAYGROUND_PROXY_HOPS from its end
  (limits.PROXY_HOPS: where the proxies in front append the caller, a caller forges the first). The
  first by default, not the last: the last may be an inner proxy's, which would put every visitor
  under one. An entry that is no IP address is not taken (the peer's then). An IPv6 address counts by its
  /64 (keyed). Past SESSIONS_KEPT sessions, Gradio forgets those of the address holding the most first
  (playground.ui.sessions: any call naming a new session_hash makes one)."""
import collections
import ipaddress
import logging
import os
from time import monotonic
from contextlib import asynccontextmanager

import anyio
from gradio.context import LocalContext

from playground.limits import DEVICE_RUNS_PER_CLIENT, PROXY_HOPS, QUEUE_SIZE, QUEUED_PER_CLIENT, QUICK_PER_LANE
from playground.metrics import counted
from playground.ui import pacing
from playground.ui.files import stop_requested

RUNS_FULL = "runs full"  # share_taken's word where QUEUE_SIZE runs of every address wait for the device already
DEVICE = "device"  # the concurrency_id of every run on the model pair: the page's and the API's (playground.ui.page)
_joining = anyio.Lock()  # joins checked one at a time, each counted as pending before the next is checked
_pending = collections.Counter()  # address -> its joins passed on to Gradio and not yet answered
_pending_lanes = collections.Counter()  # (address, lane) -> those of them in one lane (a concurrency_id; DEVICE: runs
# on the device, or may be: a function not known)


def client_address(headers, peer) -> str:
    """Who sent a request (headers: Starlette's; peer: (host, port) or None): see the module's words."""
    host = peer[0] if peer else ""
    try:
        ip = ipaddress.ip_address(host)
        proxied = ip.is_private or ip.is_loopback
    except ValueError:  # no address (a test client's name)
        proxied = False
    if proxied:
        say_forwarded_length(headers)
    forwarded = _forwarded_caller(_forwarded_for(headers)) if proxied else None
    return keyed(forwarded or host)


_lengths_said: set[int] = set()  # X-Forwarded-For lengths logged (SAID_LENGTHS at most)
SAID_LENGTHS = 8
TEST_ADDRESSES = ipaddress.ip_network("198.51.100.0/24")  # TEST-NET-2: documentation's, never a caller's own
_test_said = [0.0]  # when a test address's line was last logged (one a second at most)


def say_forwarded_length(headers) -> None:
    """Log how many entries a proxied request's X-Forwarded-For held and which one was read as the caller: once per
    length (SAID_LENGTHS at most), and for a host's own test, a first entry in TEST_ADDRESSES, named (one line a
    second at most). A host finds PLAYGROUND_PROXY_HOPS by sending `X-Forwarded-For: 198.51.100.<n>` itself
    (README): one entry more than the page's own requests, the proxies append to what a caller sends; as many, the
    front proxy writes the header anew (a Space host could not tell which its proxy does; the lengths alone, said
    once each, could be said already by another caller's)."""
    entries = [entry.strip() for entry in _forwarded_for(headers).split(",")]
    length, test = (len(entries), _test_address(entries[0])) if entries[0] else (0, None)
    if test:
        if monotonic() - _test_said[0] < 1:
            return
        _test_said[0] = monotonic()
    elif not length or length in _lengths_said or len(_lengths_said) >= SAID_LENGTHS:
        return
    else:
        _lengths_said.add(length)
    read = f"entry {length - PROXY_HOPS + 1}" if PROXY_HOPS and length >= PROXY_HOPS else "the first entry"
    logging.getLogger(__name__).info(
        "a request through this host's proxies: X-Forwarded-For of %d entries%s; PLAYGROUND_PROXY_HOPS=%d reads %s as the "
        "caller", length, f", the first {test} (a test address)" if test else "", PROXY_HOPS, read)


def _test_address(entry: str) -> str | None:
    """The entry as an address of TEST_ADDRESSES (written as Python writes it), else None."""
    try:
        address = ipaddress.ip_address(entry)
    except ValueError:
        return None
    return str(address) if address in TEST_ADDRESSES else None


def _forwarded_for(headers) -> str:
    """Every X-Forwarded-For line as one list: a proxy may add a line of its own instead of appending to
    the caller's (HAProxy's forwardfor), which the first line alone would leave out. (Starlette's headers;
    a request Gradio kept as a plain mapping holds one line.)"""
    lines = getattr(headers, "getlist", None)
    return ", ".join(lines("x-forwarded-for")) if lines else headers.get("x-forwarded-for", "")


def _forwarded_caller(forwarded: str) -> str | None:
    """The caller X-Forwarded-For names: its first entry, or PROXY_HOPS entries from its end; None where
    that is not an IP address (the peer's then: "anything-1", "anything-2", ... were each an address of
    their own)."""
    entries = [entry.strip() for entry in forwarded.split(",")]
    entry = entries[-PROXY_HOPS] if PROXY_HOPS and len(entries) >= PROXY_HOPS else entries[0]
    if entry.startswith("["):  # [IPv6]:port
        entry = entry[1:].partition("]")[0]
    elif entry.count(":") == 1:  # IPv4:port
        entry = entry.partition(":")[0]
    try:
        return str(ipaddress.ip_address(entry))
    except ValueError:
        return None


def keyed(address: str) -> str:
    """An address as the bounds count it: an IPv6 caller by its /64 (one subscriber's network: each
    of its 2^64 addresses had a share of its own), an IPv4 one mapped into IPv6 as itself."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6 and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.ip_network(f"{ip}/64", strict=False)) if ip.version == 6 else address


def share_taken(queue, caller: str, lane: str = DEVICE) -> str:
    """What `caller` holds in Gradio's queue (waiting, running, or joining now) where that is its
    whole share for one more event in `lane` (a concurrency_id; DEVICE: a run), else "". RUNS_FULL where
    `lane` is DEVICE and QUEUE_SIZE runs, from every address together, wait or join already: quick events
    keep their room in Gradio's queue (limits.QUEUED_IN_ALL)."""
    if lane == DEVICE and runs_waiting(queue) >= QUEUE_SIZE:
        return RUNS_FULL
    waiting = [e for q in queue.event_queue_per_concurrency_id.values() for e in q.queue]
    running = [e for job in queue.active_jobs if job for e in job]
    mine = [e for e in waiting + running if address_of(e.request) == caller]
    held = {e._id for e in mine}
    cancelled = [i for i, request in pacing.handed_requests() if i not in held and request is not None
                 and address_of(request) == caller]  # a run's work, going on after
    # its event was cancelled (its constraint's compile), or waiting its turn on the engine thread
    if len(mine) + len(cancelled) + _pending[caller] >= QUEUED_PER_CLIENT:
        return counted(len(mine) + len(cancelled) + _pending[caller], "event")
    in_lane = sum(e.concurrency_id == lane for e in mine) + _pending_lanes[caller, lane]
    if lane == DEVICE and in_lane + len(cancelled) >= DEVICE_RUNS_PER_CLIENT:
        return f"{counted(in_lane + len(cancelled), 'run')} on the device"
    return f"{counted(in_lane, 'event')} of this kind" if lane != DEVICE and in_lane >= QUICK_PER_LANE else ""


def runs_waiting(queue) -> int:
    """Runs in Gradio's queue waiting for the device, and those of every address joining it now."""
    waiting = queue.event_queue_per_concurrency_id.get(DEVICE) if queue is not None else None
    return (len(waiting.queue) if waiting else 0) + sum(n for (_, lane), n in _pending_lanes.items() if lane == DEVICE)


SERVER_PID = os.getpid()  # the process that serves the page and holds Gradio's queue


def device_waiting() -> int:
    """The runs waiting their turn on the device in the queue of the page whose event is being served
    (read in that event's context, on the engine thread too), counted only while every device slot is
    taken (with PLAYGROUND_CONCURRENCY > 1 an event sits in the queue a moment before a free slot
    takes it); 0 outside one (the CLI, a direct call) and in another process (a ZeroGPU worker,
    forked with a copy of the queue as it was then)."""
    queue = getattr(LocalContext.blocks.get(None), "_queue", None)
    waiting = queue.event_queue_per_concurrency_id.get(DEVICE) if queue and os.getpid() == SERVER_PID else None
    if not waiting or waiting.concurrency_limit is None or waiting.current_concurrency < waiting.concurrency_limit:
        return 0
    return sum(not _stopped(event) for event in waiting.queue)


STOPPABLE = ("run", "sweep", "compare_drafts")  # the page's jobs its Stop asks to end (files.stop_flag's names)


def _stopped(event) -> bool:
    """A waiting run or experiment whose page's Stop was pressed: it ends at once when its turn comes, so no one
    gives way to it (a sweep ended early for a run stopped while it waited, which then wrote nothing; a review)."""
    job = getattr(event.fn, "api_name", None)
    return job in STOPPABLE and stop_requested(event, job)


def take_turns(queue) -> bool:
    """The runs waiting for the device, in turns by address: every address's first waiting run before any
    address's second, and so on (within a turn, in the order they joined); an address with a run on the
    device already waits its second turn. (First come, first served, one address's three runs went before a
    newcomer's: 85 s behind three 1,000-token runs of the demo pair, 28 s behind three sweeps giving way to
    each other's turn: an audit.) Called as Gradio answers each join of the device's lane. -> whether the
    order changed (each waiting run's place told then is out of date)."""
    waiting = queue.event_queue_per_concurrency_id.get(DEVICE) if queue is not None else None
    if not waiting or len(waiting.queue) < 2:
        return False
    turns = collections.Counter(address_of(e.request) for job in queue.active_jobs if job for e in job
                                if e.concurrency_id == DEVICE)

    def turn(event) -> int:
        turns[who := address_of(event.request)] += 1
        return turns[who]
    ordered = [e for *_, e in sorted([(turn(e), i, e) for i, e in enumerate(waiting.queue)], key=lambda t: t[:2])]
    changed = ordered != waiting.queue
    waiting.queue[:] = ordered
    return changed


def address_of(request) -> str:
    """The address a request Gradio keeps with an event came from ("" for none)."""
    return client_address(request.headers, _peer(request)) if request is not None else ""


def _peer(request):
    return (request.client.host, request.client.port) if request.client else None


@asynccontextmanager
async def joining(queue, caller: str, lane: str):
    """-> "" with this join counted as pending until Gradio has answered it (share_taken counts it), or
    what `caller` already holds where that is its whole share in `lane` (nothing counted then)."""
    async with _joining:
        held = share_taken(queue, caller, lane)
        if not held:
            _pending[caller] += 1
            _pending_lanes[caller, lane] += 1
    if held:
        yield held
        return
    try:
        yield ""
    finally:
        for pending, key in ((_pending, caller), (_pending_lanes, (caller, lane))):
            pending[key] -= 1
            if pending[key] <= 0:
                del pending[key]
