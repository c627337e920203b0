"""How the page is served: Gradio's queue and launch options (app.py and the tests use the same),
with a guard in front of Gradio on every request.

- A body past MAX_REQUEST_BYTES is refused before Gradio sees it: Gradio reads a request's whole
  body, however large, and keeps its values in the session (a 100 MB /export body added ~334 MB that
  was never given back).
- No input of the page is a file, so nothing that carries one is taken: uploads (Gradio would keep
  each for anyone to download: free hosting, a full disk), its screen-recording route (it runs ffmpeg
  on what it is sent), and a file reference in any call's data (Gradio downloads a `gradio.FileData`
  whose path is a public URL into its cache before the function's own checks: a fetch of any
  address a caller names). Nor is a URL given to Gradio's file route, which fetched it and sent it
  back (an open proxy with no time or size bound).
- One address holds at most DEVICE_RUNS_PER_CLIENT runs on the device and QUEUED_PER_CLIENT events
  of any kind (a quarter of the queue), queued, running or joining: past the first, its next join of
  the queue for a run (/queue/join, or /call/<name>, which joins it too; a function not known counts
  as a run) is refused with the status of Gradio's own "queue full" (503; Gradio's clients show their
  own words for it), past the second any join; the others go on. A page's first load joins three
  quick events at once (the calculator's chart, the export, the thinking budget), none a run. A
  run's work counts until it ends on the engine thread, also once Gradio's /cancel has taken its
  event out of the queue (a cancel ends its constraint's compile in a worker, and work cancelled
  while it waited for the thread never starts: playground.ui.pacing). In one quick lane (a function's, or the constraint
  checks') an address holds at most QUICK_PER_LANE: the lane serves one at a time.
  The address: the peer's, or where the peer is a proxy of this host (a private or loopback address:
  a Space's proxy, a local nginx) the first of X-Forwarded-For, or PLAYGROUND_PROXY_HOPS from its end
  (limits.PROXY_HOPS: where the proxies in front append the caller, a caller forges the first). The
  first by default, not the last: the last may be an inner proxy's, which would put every visitor
  under one. An entry that is no IP address is not taken (the peer's then). An IPv6 address counts by its
  /64 (keyed). Past SESSIONS_KEPT sessions, Gradio forgets those of the address holding the most first
  (playground.ui.sessions: any call naming a new session_hash makes one).
- Gradio keeps each session's last value of every input it was sent, before the function's own
  checks: one value is at most VALUE_CHARS characters, or what its component was `bound` to (a
  prompt, a schema as typed: past the page's own limit, so the page's message says what is too
  long), checked where a body is longer than that. Three refused 7 MiB values a session, in three
  calls, held 2.6 GiB over 128 sessions (twice what limits.py said).
  A call past VALUE_CHARS has a whole number for its fn_index (Gradio also reads "43" and 43.0,
  whose calls were checked against no function's bounds), and its JSON holds at most MAX_CONTAINERS
  objects and arrays outside strings (8 MiB of `[{}, {}, ...]` became 600 MB of Python objects in
  Gradio's parses) and MAX_ITEMS values (8 MiB of numbers held the interpreter lock 1.3 s a call).
  A call's session_hash is at most 128 visible ASCII characters (SESSION_HASH; Gradio's page sends
  11, gradio_client a UUID's 36): Gradio keeps it as the key of every session's state, and
  7 MB hashes from one address pinned 2.4 GB that was never given back. A call's own fields hold
  no NaN or infinity (not_finite: Gradio's answer echoed it, FastAPI could not write it, a 500);
  each is a 400 saying what to send.
- A /call/ route naming no endpoint, or a /call/v2/ body naming an input its endpoint lacks, is
  answered 404 or 400 with the names to use (misnamed_input); Gradio answered 500 and logged the
  name whole with a traceback. So is an fn_index naming no function, or one that runs in the page
  alone (unknown_function), and a page's stream of a session not held (playground.ui.leftovers).
  What Gradio still prints of a failed call is at most QuietTracebacks.MOST tracebacks a minute.
- Gradio's deep links are off: its route saved a session's values as they were sent (HTML
  included, unchecked) to a file that `?deep_link=` then drew in anyone's page (a script ran there),
  one file per call, never removed. The page's share links carry every setting, checked. So is its
  reload mode's stream, registered without reload mode (idle connections held the CPU).
- One address has at most OPEN_PER_CLIENT requests open at once: a stream (heartbeat, the queue's
  data) lasts as long as its caller keeps it, and 20,000 idle ones took every file the server may open.
  Every address together has at most OPEN_IN_ALL (503 past it): an address forged in X-Forwarded-For
  passes the per-address bounds, not this one.
- Queued functions are reached through the queue only (`api_open=False`, Gradio's default on Spaces
  and not elsewhere): a direct POST to /gradio_api/run/generate skipped the queue and its device
  limit, and 45 of them held page loads for over a minute. Gradio's traffic monitoring is off, and
  its run history (a page at /gradio_api/runs keeping every call's outputs in the browser, or in a
  Hugging Face bucket a visitor connects): a share link restores a run's settings.
- What Gradio keeps of an event nobody reads is bounded, and a stream it no longer holds is answered
  404 with the reason (playground.ui.leftovers: the guard counts the streams open and passes on
  cancels)."""
import collections
import ipaddress
import json
import logging
import math
import os
import re
import sys
import traceback
import urllib.parse
from time import monotonic

import anyio
from gradio.context import LocalContext
from starlette.datastructures import Headers
from starlette.middleware import Middleware

from playground.limits import (CONCURRENCY, DEVICE_RUNS_PER_CLIENT, MAX_REQUEST_BYTES, OPEN_IN_ALL, OPEN_PER_CLIENT, QUEUE_SIZE,
                               MAX_URL_CHARS, PROXY_HOPS, QUEUED_PER_CLIENT, QUICK_PER_LANE, SESSIONS_KEPT)
from playground.ui import leftovers, pacing, sessions
from playground.ui.theme import theme

NO_FILES = "no input of this page is a file"
REFUSED_ROUTES = ("/upload", "/process_recording")  # (a path's ending) Gradio's routes that take files
NOT_SERVED = {  # (a path's ending) Gradio's routes this page does not serve -> why
    "/deep_link": "deep links are not made here: the page's Share link carries every setting",  # saves a session's values
    "/dev/reload": "Gradio's reload mode is off here",  # its stream, served without reload mode: each idle
}  # connection polled every 50 ms, forever (2,000 of them held the server's CPU at 99%)
MAX_CONTAINERS = 1000  # JSON objects and arrays in a call, outside its strings (a call of the page: under 10)
MAX_ITEMS = 100_000  # values in a call (its commas and strings, outside strings): 7.7 MiB of [1e308, ...] took 1.3 s of
# the interpreter lock to parse and measure (every thread stalled: a 32-token run took 34 s); 100,000 about 50 ms
STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"')  # a JSON string, escapes included (possessive: no backtracking)
SESSION_HASH = re.compile(r"[!-~]{1,128}")  # a session's key: visible ASCII (Gradio's clients send 11 letters and digits,
# or a UUID's 36 characters)
DEEP_LINK_PARAM = "deep_link"  # the query parameter that draws them in a page
VALUE_CHARS = 16 * 1024  # the most characters one value of a call may carry where its component says no more
_value_chars: dict[int, tuple[int, int, str | None]] = {}  # component id -> (bound, limit, name) (see bound)
FETCHING_ROUTE = re.compile(r"/file[=/]https?://", re.IGNORECASE)  # Gradio's file route given a URL: it fetched
# the URL and streamed it back (a public proxy, with no time or size bound); the page's files are local paths
BODY_METHODS = {"POST", "PUT", "PATCH"}  # the requests whose bodies Gradio reads
_parsing = anyio.Lock()  # one body parsed at a time: 8 MiB of JSON takes about a second and 250 MB
LARGE_BODIES = 16  # long bodies (see BodySlot) read and held at once, every address together: 16 x 8 MiB
LARGE_PER_CLIENT = 4  # of them from one address, waiting or held (a page with a long prompt sends it with each
# of up to three events at once)
_long_places = anyio.Semaphore(LARGE_BODIES)
_long_bodies = collections.Counter()  # address -> its long bodies waiting for a place or held
_own_places: dict[str, anyio.Semaphore] = {}  # address -> its LARGE_PER_CLIENT places (while it has long bodies)
JOINS = re.compile(r"/(queue/join|call/(v2/)?[^/]+)/?$")  # Gradio's routes that put an event in the queue
CALLED = re.compile(r"/call/(v2/)?([^/]+)/?$")  # Gradio's routes for an endpoint by name (v2: its inputs named)
_joining = anyio.Lock()  # joins checked one at a time, each counted as pending before the next is checked
_pending = collections.Counter()  # address -> its joins passed on to Gradio and not yet answered
_pending_lanes = collections.Counter()  # (address, lane) -> those of them in one lane (a concurrency_id; DEVICE: runs
# on the device, or may be: a function not known)
_open = collections.Counter()  # address -> its requests open now (streams until they end)
DEVICE = "device"  # the concurrency_id of every run on the model pair: the page's and the API's (playground.ui.page)


class RequestGuard:
    """ASGI middleware: 429 past OPEN_PER_CLIENT requests open from one address or LARGE_PER_CLIENT long
    bodies (BodySlot; 503 past a wait for one of LARGE_BODIES places), 413 for a body
    over `max_bytes` (declared, or sent in chunks without a length), 408 for one not sent within
    BODY_SECONDS, 414 for an address past MAX_URL_CHARS, a value past its bound or past MAX_CONTAINERS objects and arrays or MAX_ITEMS values, 400 for an fn_index that is not a whole number (in a body past
    VALUE_CHARS: a shorter one holds no value past a bound) or a session_hash not like Gradio's, 403 for a
    route that takes files, fetches a URL, makes a deep link or streams reloads, or a body that names
    a file, 503 for a join of the queue past its address's share, 404 for the stream of an event not
    held (playground.ui.leftovers); a `deep_link` parameter dropped."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        caller = client_address(Headers(scope=scope), scope.get("client"))
        if _open[caller] >= OPEN_PER_CLIENT:
            return await refuse(send, 429, f"this address has {_open[caller]} requests open; close some first")
        if _open.total() >= OPEN_IN_ALL:  # every address together (a forged one passes the line above)
            return await refuse(send, 503, f"this server has {_open.total()} requests open, its most; try again shortly")
        _open[caller] += 1
        try:
            await self.guarded(scope, receive, send, caller)
        finally:
            _open[caller] -= 1
            if not _open[caller]:
                del _open[caller]

    async def guarded(self, scope, receive, send, caller: str):
        path = scope.get("path", "")
        if (length := len(scope.get("raw_path") or path) + len(scope.get("query_string", b""))) > MAX_URL_CHARS:
            return await refuse(send, 414, f"this address is {length:,} characters long, past the {MAX_URL_CHARS:,} "
                                           "this server reads (Share link makes far shorter ones): shorten the prompt "
                                           "or the constraint it carries")  # (past httpx's bound Gradio answered 500)
        if path.rstrip("/").endswith(REFUSED_ROUTES) or FETCHING_ROUTE.search(path):
            return await refuse(send, 403, f"files are not taken or fetched here: {NO_FILES}")
        if why := next((why for route, why in NOT_SERVED.items() if path.rstrip("/").endswith(route)), None):
            return await refuse(send, 403, why)
        scope = without_deep_link(scope)
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            return await refuse(send, 413, f"request body over this host's limit of {self.max_bytes} bytes")
        queue = getattr(scope["app"].get_blocks(), "_queue", None)
        if scope.get("method") not in BODY_METHODS:
            if why := leftovers.not_held(queue, path, scope.get("query_string", b"")):
                return await refuse(send, 404, why)
            with leftovers.stream_open(queue, scope):
                return await self.app(scope, receive, send)
        slot = BodySlot(caller)
        if (declared is None or int(declared) > VALUE_CHARS) and (refused := await slot.take()):
            return await refuse(send, *refused)
        try:
            await self.received(scope, receive, send, caller, slot)
        finally:
            slot.release()

    async def received(self, scope, receive, send, caller: str, slot: "BodySlot"):
        """A request with a body: read, checked, then handed to Gradio (its slot let go as Gradio reads it)."""
        path, queue = scope.get("path", ""), getattr(scope["app"].get_blocks(), "_queue", None)
        body = NOT_SENT
        with anyio.move_on_after(BODY_SECONDS):
            body = await read_body(receive, self.max_bytes)
        if body is NOT_SENT:
            return await refuse(send, 408, f"the request's body was not sent within {BODY_SECONDS} s")
        if body is None:  # the client left while sending
            return
        if body is TOO_LONG:
            return await refuse(send, 413, f"request body over this host's limit of {self.max_bytes} bytes")
        refused, fn, session = await refusal(body, scope["app"].get_blocks(), path)
        if refused:
            return await refuse(send, *refused)
        if session is not None:
            sessions.opened_by(session, caller)
        if not JOINS.search(path):
            if leftovers.CANCEL.search(path):
                pacing.stop_handed(_cancelled_event(body))
            return await self.app(scope, _replay(body, receive, slot.release), leftovers.on_cancel(queue, path, body, send))
        lane = DEVICE if fn is None else fn.concurrency_id  # a function not known counts as a run
        async with _joining:
            held = share_taken(queue, caller, lane)
            if not held:
                _pending[caller] += 1
                _pending_lanes[caller, lane] += 1
        if held:
            return await refuse(send, 503, f"this address already has {held} queued or running; start another "
                                           "once one has ended")
        try:
            await self.app(scope, _replay(body, receive, slot.release), send)
        finally:
            for pending, key in ((_pending, caller), (_pending_lanes, (caller, lane))):
                pending[key] -= 1
                if pending[key] <= 0:
                    del pending[key]


def _cancelled_event(body: bytes) -> object:
    """The event id a /cancel body names (None past VALUE_CHARS: Gradio's own are short)."""
    call = _parsed(body) if len(body) <= VALUE_CHARS else None
    return call.get("event_id") if isinstance(call, dict) else None


def _replay(body: bytes, receive, handed=lambda: None):
    """The body once, as read (then `handed()`); then the client's own messages (a disconnect)."""
    sent = False

    async def replay():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        handed()
        return {"type": "http.request", "body": body, "more_body": False}
    return replay


class BodySlot:
    """A place for a long body (past VALUE_CHARS bytes declared, or no length declared), taken before
    it is read and let go once Gradio has read it (or the request ended): a body is held whole while
    it is checked, and 128 bodies of 8 MiB read at once took the server from 0.6 to 5.5 GB (an audit).
    At most LARGE_BODIES are held in all, LARGE_PER_CLIENT of them from one address (its others wait
    unread, in the socket, as a page's burst of long events does); one waits at most BODY_SECONDS
    for its place (503 then)."""

    def __init__(self, caller: str):
        self.caller, self.counted, self.own, self.held = caller, False, None, False

    async def take(self) -> tuple[int, str] | None:
        """None once held, else (status, why) refused."""
        _long_bodies[self.caller] += 1
        self.counted = True
        own = _own_places.setdefault(self.caller, anyio.Semaphore(LARGE_PER_CLIENT))
        with anyio.move_on_after(BODY_SECONDS):
            await own.acquire()
            self.own = own
            await _long_places.acquire()
            self.held = True
        return None if self.held else (503, f"this server was reading its most long requests at once for {BODY_SECONDS} s; "
                                             "try again shortly")

    def release(self) -> None:
        if self.held:
            self.held = False
            _long_places.release()
        if self.own is not None:
            self.own, own = None, self.own
            own.release()
        if self.counted:
            self.counted = False
            _long_bodies[self.caller] -= 1
            if not _long_bodies[self.caller]:
                del _long_bodies[self.caller], _own_places[self.caller]


def client_address(headers, peer) -> str:
    """Who sent a request (headers: Starlette's; peer: (host, port) or None): see the module's words."""
    host = peer[0] if peer else ""
    try:
        ip = ipaddress.ip_address(host)
        proxied = ip.is_private or ip.is_loopback
    except ValueError:  # no address (a test client's name)
        proxied = False
    forwarded = _forwarded_caller(headers.get("x-forwarded-for", "")) if proxied else None
    return keyed(forwarded or host)


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
    whole share for one more event in `lane` (a concurrency_id; DEVICE: a run), else ""."""
    waiting = [e for q in queue.event_queue_per_concurrency_id.values() for e in q.queue]
    running = [e for job in queue.active_jobs if job for e in job]
    mine = [e for e in waiting + running if client_address(e.request.headers, _peer(e.request)) == caller]
    held = {e._id for e in mine}
    cancelled = [i for i, request in pacing.handed_requests() if i not in held and request is not None
                 and client_address(request.headers, _peer(request)) == caller]  # a run's work, going on after
    # its event was cancelled (its constraint's compile), or waiting its turn on the engine thread
    if len(mine) + len(cancelled) + _pending[caller] >= QUEUED_PER_CLIENT:
        return f"{len(mine) + len(cancelled) + _pending[caller]} events"
    in_lane = sum(e.concurrency_id == lane for e in mine) + _pending_lanes[caller, lane]
    if lane == DEVICE and in_lane + len(cancelled) >= DEVICE_RUNS_PER_CLIENT:
        return f"{in_lane + len(cancelled)} runs on the device"
    return f"{in_lane} events of this kind" if lane != DEVICE and in_lane >= QUICK_PER_LANE else ""


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
    return len(waiting.queue)


def _peer(request):
    return (request.client.host, request.client.port) if request.client else None


TOO_LONG, NOT_SENT = object(), object()
BODY_SECONDS = 60  # to send a body (8 MiB at about 1 Mbit/s): 256 bodies declared and never sent, from an address
# forged in X-Forwarded-For, held that address's share of open requests for as long as their sockets lasted


async def read_body(receive, most: int):
    """The whole body (b"" for none) -> bytes, TOO_LONG past `most` bytes, None on a disconnect."""
    parts, seen = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > most:
            return TOO_LONG
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def bound(component, limit: int, room: float = 1.0, name: str | None = None) -> None:
    """Let `component`'s values carry up to `room` times `limit` characters (past VALUE_CHARS: a
    prompt, a schema as typed): a value past `limit` and within that room reaches the page's own
    check, which says what is too long; a refusal says `limit` and `name` (else the label)."""
    _value_chars[component._id] = int(limit * room), limit, name


def without_deep_link(scope: dict) -> dict:
    """The request with no `deep_link` in its query (a page, its /config): the page opens as it is."""
    query = scope.get("query_string", b"")
    if DEEP_LINK_PARAM.encode() not in urllib.parse.unquote_to_bytes(query):
        return scope
    kept = [(k, v) for k, v in urllib.parse.parse_qsl(query.decode("latin-1"), keep_blank_values=True)
            if k != DEEP_LINK_PARAM]
    return {**scope, "query_string": urllib.parse.urlencode(kept).encode("latin-1")}


async def refusal(body: bytes, blocks, path: str) -> tuple[tuple[int, str] | None, object, str | None]:
    """((status, why) or None to pass it on, the BlockFunction the call runs or None where not known, the
    session_hash it names or None).
    Refused: a JSON body that holds a Gradio file reference anywhere ({"path": ..., "meta": {"_type":
    "gradio.FileData"}}, as gradio_client.utils.is_file_obj_with_meta reads it) or a value past its
    bound (see bound). Read as FastAPI reads it (json.loads: UTF-8, -16 or -32); a body that is not
    JSON is left to Gradio, which refuses it. A short body is parsed here; one where a file's name
    could be (as written, or behind a \\u escape) or longer than VALUE_CHARS, in a worker thread, so
    the server goes on answering meanwhile. (The function tells a run on the device from a quick event:
    a page's first load joins three quick ones at once, and a page with a long prompt sends it with
    each; all counted as runs, the third was refused while the server was slow to answer the first.)
    A body of more than VALUE_CHARS bytes is decoded in the worker too: its text takes up to 4 bytes a
    character (an 8 MiB body with one emoji: 32 MiB), and 128 such bodies decoded while waiting for the
    lock took the server from 0.6 to 5.5 GB (an audit)."""
    if len(body) > VALUE_CHARS:
        async with _parsing:
            return await anyio.to_thread.run_sync(_refusal_of, body, blocks, path)
    text = _decoded(body)
    if text is None:
        return None, _function(blocks, None, path), None
    if "FileData" not in text and "\\u" not in text:
        call = _parsed(text)
        fn = _function(blocks, _fn_index(call), path)
        return _field_refusal(call, fn, path), fn, _session(call)
    async with _parsing:
        return await anyio.to_thread.run_sync(_refusal, text, blocks, path)


def _decoded(body: bytes) -> str | None:
    """A body's text as Starlette's json.loads reads it (UTF-8, -16 or -32; surrogatepass: a lone
    surrogate's bytes skipped every check); None where it is no text (Gradio refuses it)."""
    try:
        return body.decode(json.detect_encoding(body), "surrogatepass")
    except (UnicodeDecodeError, LookupError):
        return None


def _refusal_of(body: bytes, blocks, path: str) -> tuple[tuple[int, str] | None, object, str | None]:
    text = _decoded(body)
    return (None, _function(blocks, None, path), None) if text is None else _refusal(text, blocks, path)


def _parsed(text: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _fn_index(call) -> int | None:
    """A call's fn_index where it is a whole number (Gradio reads "43" and 43.0 as 43 too: not known here)."""
    fn_index = call.get("fn_index") if isinstance(call, dict) else None
    return fn_index if type(fn_index) is int else None


class _FileFound(Exception):
    pass


def _refusal(text: str, blocks, path: str) -> tuple[tuple[int, str] | None, object, str | None]:
    def hook(value: dict) -> dict:  # each object as it is read, innermost first: stops at the first file
        meta = value.get("meta")
        if isinstance(meta, dict) and meta.get("_type") == "gradio.FileData":
            raise _FileFound
        return value
    named = _function(blocks, None, path)
    containers, items = _outside_strings(text, MAX_CONTAINERS, MAX_ITEMS) if len(text) > VALUE_CHARS else (0, 0)
    if containers > MAX_CONTAINERS:  # (Python objects from 8 MiB of [{}, {}, ...]: 600 MB over Gradio's parses of it)
        return (413, f"a call holds over {MAX_CONTAINERS} JSON objects and arrays, more than this host reads"), named, None
    if items > MAX_ITEMS:
        return (413, f"a call holds over {MAX_ITEMS} values, more than this host reads"), named, None
    try:
        call = json.loads(text, object_hook=hook)
    except _FileFound:
        return (403, f"a file in a call's data is not taken: {NO_FILES}"), named, None
    except (ValueError, RecursionError):
        return None, named, None
    fn_index = call.get("fn_index") if isinstance(call, dict) else None
    if fn_index is not None and (type(fn_index) is not int):  # Gradio reads "43" and 43.0 as 43 too
        return (400, "fn_index must be a whole number"), named, None
    fn = _function(blocks, fn_index, path)
    return overlong_value(call, fn) or _field_refusal(call, fn, path), fn, _session(call)


def _session(call) -> str | None:
    session = call.get("session_hash") if isinstance(call, dict) else None
    return session if isinstance(session, str) else None


def _field_refusal(call, fn, path: str) -> tuple[int, str] | None:
    """The checks of a parsed call, short or long, past its values' bounds."""
    return odd_session(call) or not_finite(call, path) or misnamed_input(call, fn, path) or unknown_function(call, fn, path)


def odd_session(call) -> tuple[int, str] | None:
    """(400, why) for a session_hash that is not SESSION_HASH's (None, or none given: Gradio's own)."""
    session = call.get("session_hash") if isinstance(call, dict) else None
    if session is None or isinstance(session, str) and SESSION_HASH.fullmatch(session):
        return None
    return 400, "session_hash must be 1 to 128 visible ASCII characters (letters, digits, punctuation)"


def not_finite(call, path: str) -> tuple[int, str] | None:
    """(400, why) for NaN or an infinity (NaN, Infinity, 1e400: Python's JSON reads them) in a call's
    own fields: Gradio's answer to a field it cannot read echoes the value, which FastAPI cannot write
    as JSON: a 500 and a traceback. The inputs (a list in "data", /call/v2/'s named ones) are the
    functions' own to check, and each says what it takes. A body that is no object (`NaN`, `[NaN]`)
    is read whole: Gradio refuses it, echoing it."""
    if not isinstance(call, dict):
        todo = [call]
    elif (called := CALLED.search(path)) and called.group(1):
        return None
    else:
        todo = [value for key, value in call.items() if key != "data" or not isinstance(value, list)]
    while todo:  # (a short body, or one within MAX_CONTAINERS and MAX_ITEMS)
        value = todo.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return 400, f"a call's fields hold {value}, which JSON has no number for"
        todo += value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return None


def _outside_strings(text: str, most_containers: int, most_items: int) -> tuple[int, int]:
    """(objects and arrays, values: commas and strings) in a JSON text, those inside its strings left
    out, counted until either passes its most: one pass, left to right, to an unterminated string (the
    rest is inside it). STRING.sub tried a match at every quote: quadratic in an unterminated string
    of escaped quotes (32 K characters took 2.9 s); 7.6 MiB of empty strings took 2.8 s counted whole."""
    containers, items, pos = 0, 0, 0
    while containers <= most_containers and items <= most_items:
        quote = text.find('"', pos)
        outside = text[pos:] if quote < 0 else text[pos:quote]
        containers += outside.count("{") + outside.count("[")
        items += outside.count(",")
        if quote < 0 or (string := STRING.match(text, quote)) is None:
            break
        items += 1
        pos = string.end()
    return containers, items


def overlong_value(call, fn) -> tuple[int, str] | None:
    """(413, why) for the first value of a call, for the function `fn` it runs, longer than its
    component's bound (VALUE_CHARS where the call names no function of the page); None when all fit.
    Its values: its "data" in the inputs' order, or (/call/v2/<name>, which the README shows) its
    inputs by parameter name, each unknown name's value bounded by VALUE_CHARS."""
    if not isinstance(call, dict):
        return None
    data = call.get("data")
    if isinstance(data, list):
        values = zip(fn.inputs if fn else [None] * len(data), data)
    elif data is None:  # the inputs by name: no bound applied to them before
        by_name = dict(zip(fn.input_parameter_names, fn.inputs)) if fn else {}
        values = ((by_name.get(name), value) for name, value in call.items())
    else:
        return None
    for component, value in values:
        size = len(value) if isinstance(value, str) else len(json.dumps(value))
        most, limit, name = _value_chars.get(getattr(component, "_id", None), (VALUE_CHARS, VALUE_CHARS, None))
        if size > most:
            name = name or getattr(component, "label", None) or "a value"
            return 413, f"{name[:60]} is {size} characters, more than this host allows ({limit})"
    return None


def misnamed_input(call, fn, path: str) -> tuple[int, str] | None:
    """(404, why) for a /call/ route naming no endpoint (a /call/v2/ one: no public one); (400, why) for
    a /call/v2/<name> body (inputs by name) naming an input its function lacks (every public one has a
    default for each). Gradio answered each "Internal Server Error" (500) and logged a traceback, the
    name whole (a 7 MB name: 62 MiB of log a second)."""
    called = CALLED.search(path)
    if called is None:
        return None
    by_name = called.group(1) is not None
    if fn is None or by_name and fn.api_visibility == "private":
        return 404, f"no endpoint {ascii(called.group(2)[:40])} here; /gradio_api/info lists them"
    if not by_name or not isinstance(call, dict):
        return None
    names = list(fn.input_parameter_names)
    wrong = next((name for name in call if name not in names and name != "oauth_token"), None)
    return None if wrong is None else (400, f"{ascii(wrong[:40])} is not an input of /{fn.api_name}; its inputs: "
                                            f"{', '.join(names)}")


def unknown_function(call, fn, path: str) -> tuple[int, str] | None:
    """(404, why) for a call by fn_index (the queue's join, /run/predict) naming no function of the
    page, or one that runs in the page alone (no Python function): Gradio answered each 500 and
    printed a traceback (a red-team pass: tiny calls logged 1 MiB a second)."""
    fn_index = _fn_index(call)
    if fn_index is None or CALLED.search(path):
        return None
    if fn is None:
        return 404, f"no function {fn_index} here; /gradio_api/info lists the endpoints"
    return (404, f"function {fn_index} runs in the page alone, not here") if fn.fn is None else None


def _function(blocks, fn_index: int | None, path: str):
    """The BlockFunction a call runs, as Gradio picks it: the name in a /call/ route (its body's
    fn_index is not read there: a forged one had the guard count a /call/generate as a quick event),
    else its fn_index (the queue's join, /run/), else the name in a /run/ route; None for none."""
    called = re.search(r"/call/(?:v2/)?([^/]+)/?$", path)
    run = None if called or fn_index is not None else re.search(r"/run/([^/]+)/?$", path)
    if called or run:
        name = (called or run).group(1)
        return next((fn for fn in blocks.fns.values() if fn.api_name == name), None)
    return blocks.fns.get(fn_index) if fn_index is not None else None


async def refuse(send, status: int, text: str) -> None:
    """The answer as Gradio's own errors are, JSON with a "detail": the page shows it (plain text
    showed as "Could not parse server response")."""
    body = json.dumps({"detail": text}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class QuietTracebacks(logging.Filter):
    """At most MOST tracebacks a minute in the log, then once a line saying the others are left out
    (and, at the next, how many were): the traceback module as Gradio's routes and queue use it (its
    print_exc), and a filter of uvicorn's error log. Gradio prints one for every call its function
    fails (a malformed call of a quick event: 712 bytes of log a request) and uvicorn one for every
    stream that fails after its start: a red-team pass logged 1-1.7 MiB a second. The first ones of
    each minute still show what failed."""
    MOST = 20

    def __init__(self):
        super().__init__()
        self.minute, self.printed, self.left_out = -1, 0, 0

    def __getattr__(self, name: str):
        return getattr(traceback, name)

    def print_exc(self, *args, **kwargs) -> None:
        if self.allowed():
            traceback.print_exc(*args, **kwargs)

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.exc_info or self.allowed()

    def allowed(self) -> bool:
        """Whether one more traceback may be printed now (counted either way)."""
        minute = int(monotonic() // 60)
        if minute != self.minute:
            if self.left_out:
                print(f"({self.left_out} tracebacks were left out of the log in that minute)", file=sys.stderr)
            self.minute, self.printed, self.left_out = minute, 0, 0
        self.printed += 1
        if self.printed <= self.MOST:
            return True
        if not self.left_out:
            print(f"(past {self.MOST} tracebacks in a minute: the others are left out of the log until the next)",
                  file=sys.stderr)
        self.left_out += 1
        return False


QUIET_TRACEBACKS = QuietTracebacks()  # (installed by playground.ui.gradio_patches)


def queue_options() -> dict:
    """Keyword arguments of demo.queue for every host."""
    return {"default_concurrency_limit": CONCURRENCY, "max_size": QUEUE_SIZE, "api_open": False}


def launch_options() -> dict:
    """Keyword arguments of demo.launch for every host."""
    return {"show_error": True, "state_session_capacity": SESSIONS_KEPT, "enable_monitoring": False, "run_history": False,
            "theme": theme(), "app_kwargs": {"middleware": [Middleware(RequestGuard, max_bytes=MAX_REQUEST_BYTES)]}}
