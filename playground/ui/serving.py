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
- Each address's share of the queue and the device (playground.ui.addresses) and what a call's body
  may hold (playground.ui.calls) are checked here, before Gradio reads the call.
- What Gradio still prints of a failed call is at most QuietTracebacks.MOST tracebacks a minute.
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
import json
import logging
import re
import sys
import traceback
import urllib.parse
from time import monotonic

import anyio
from starlette.datastructures import Headers
from starlette.middleware import Middleware

from playground.errors import for_log
from playground.limits import CONCURRENCY, MAX_REQUEST_BYTES, MAX_URL_CHARS, OPEN_IN_ALL, OPEN_PER_CLIENT, QUEUED_IN_ALL, SESSIONS_KEPT
from playground.ui import addresses, leftovers, pacing, sessions
from playground.ui.addresses import DEVICE, client_address
from playground.ui.calls import NO_FILES, VALUE_CHARS, parsed, refusal
from playground.ui.theme import theme

log = logging.getLogger("playground.ui")
REFUSED_ROUTES = ("/upload", "/process_recording")  # (a path's ending) Gradio's routes that take files
NOT_SERVED = {  # (a path's ending) Gradio's routes this page does not serve -> why
    "/deep_link": "deep links are not made here: the page's Share link carries every setting",  # saves a session's values
    "/dev/reload": "Gradio's reload mode is off here",  # its stream, served without reload mode: each idle
    # connection polled every 50 ms, forever (2,000 of them held the server's CPU at 99%)
    "/component_server": "no component on this page has server functions",  # (a made-up call answered 500 and
}  # logged a 4 KB traceback: 20 a minute took every slot of calls' log limit; a hostile-input review)
DEEP_LINK_PARAM = "deep_link"  # the query parameter that draws them in a page
FETCHING_ROUTE = re.compile(r"/file[=/]https?://", re.IGNORECASE)  # Gradio's file route given a URL: it fetched
# the URL and streamed it back (a public proxy, with no time or size bound); the page's files are local paths
BODY_METHODS = {"POST", "PUT", "PATCH"}  # the requests whose bodies Gradio reads
LARGE_BODIES = 16  # long bodies (see BodySlot) read and held at once, every address together: 16 x 8 MiB
LARGE_PER_CLIENT = 4  # of them from one address, waiting or held (a page with a long prompt sends it with each
# of up to three events at once)
_long_places = anyio.Semaphore(LARGE_BODIES)
_long_bodies = collections.Counter()  # address -> its long bodies waiting for a place or held
_own_places: dict[str, anyio.Semaphore] = {}  # address -> its LARGE_PER_CLIENT places (while it has long bodies)
JOINS = re.compile(r"/(queue/join|call/(v2/)?[^/]+)/?$")  # Gradio's routes that put an event in the queue
_open = collections.Counter()  # address -> its requests open now (streams until they end)


class RequestGuard:
    """ASGI middleware: 429 past OPEN_PER_CLIENT requests open from one address, 413 for a body
    over `max_bytes` (declared, or sent in chunks without a length), 408 for one not sent within
    BODY_SECONDS, 503 for a long body that waited BODY_SECONDS for a place (BodySlot), 414 for an
    address past MAX_URL_CHARS, 403 for a route that takes files, fetches a URL, makes a deep link or
    streams reloads, what playground.ui.calls refuses in a body, 429 for a join of the queue past its
    address's share (playground.ui.addresses) or 503 past the runs of all (_busy), 404 for the stream of an event not held
    (playground.ui.leftovers); a `deep_link` parameter dropped."""

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
        try:  # (a refused or cancelled wait lets go of what it took too: four 503s left an address no place)
            if (declared is None or int(declared) > VALUE_CHARS) and (refused := await slot.take()):
                return await refuse(send, *refused)
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
                if (event_id := _cancelled_event(body, queue)) is None:
                    return await refuse(send, 404, "no event of that session is held here to cancel")
                pacing.stop_handed(event_id)
            return await self.app(scope, _replay(body, receive, slot.release), leftovers.on_cancel(queue, path, body, send))
        lane = DEVICE if fn is None else fn.concurrency_id  # a function not known counts as a run
        async with addresses.joining(queue, caller, lane) as held:
            if held == addresses.RUNS_FULL:
                return await refuse(send, _busy(scope, whole=True), f"the queue of runs is full ({addresses.QUEUE_SIZE} "
                                    "waiting for the device, this host's most: PLAYGROUND_QUEUE_SIZE); try again once some have ended")
            if held:
                return await refuse(send, _busy(scope, whole=False), f"this address already has {held} queued or running; "
                                    "start another once one has ended")
            await self.app(scope, _replay(body, receive, slot.release), _in_turns(queue, send) if lane == DEVICE else send)


def _busy(scope, whole: bool) -> int:
    """The status of a join refused for room: 503 (the host is busy) where the whole queue of runs is full
    or the caller is gradio_client (`x-gradio-user: api`; 503 is the one refusal it names, a QueueError),
    else 429 (this address's share). A browser's page gets 429 either way: Gradio's page shows a refusal's
    detail for any status but 503, for which it says "This application is currently busy" (three tabs of
    one visitor, or a classroom behind one address, were told the Space was busy)."""
    headers = Headers(scope=scope)
    if headers.get("x-gradio-user") in ("api", "mcp"):
        return 503
    return 503 if whole and "sec-fetch-mode" not in headers else 429


def _in_turns(queue, send):
    """`send`, putting the runs waiting for the device in turns (addresses.take_turns) as Gradio answers a
    join, before the caller hears of it; where that changed the order, every waiting run is told its new place
    (Gradio told each its place as it joined: a newcomer put first read "3rd of 3", and the run it went
    ahead of "next", until the queue's next change, up to an experiment's share of the device; a review)."""
    async def sending(message):
        if message.get("type") == "http.response.start" and addresses.take_turns(queue):
            queue.broadcast_estimations(DEVICE)
        await send(message)
    return sending


def _cancelled_event(body: bytes, queue) -> str | None:
    """The event id a /cancel body names where the session it names holds it (Gradio keeps an event's id in
    its session's set from its join until its result is read), else None (past VALUE_CHARS too: Gradio's
    own are short). Gradio's /cancel ended any event whose id it was sent, with a session made up (an
    audit): a page's session hash, or a /call/ event's own id (its session), is what only its caller knows."""
    call = parsed(body) if len(body) <= VALUE_CHARS else None
    event_id, session = (call.get("event_id"), call.get("session_hash")) if isinstance(call, dict) else (None, None)
    held = getattr(queue, "pending_event_ids_session", {}).get(session, ()) if isinstance(session, str) else ()
    return event_id if isinstance(event_id, str) and event_id in held else None


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
        return None if self.held else (503, f"no place to read a long request came free within {BODY_SECONDS} s; "
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


def without_deep_link(scope: dict) -> dict:
    """The request with no `deep_link` in its query (a page, its /config): the page opens as it is."""
    query = scope.get("query_string", b"")
    if DEEP_LINK_PARAM.encode() not in urllib.parse.unquote_to_bytes(query):
        return scope
    kept = [(k, v) for k, v in urllib.parse.parse_qsl(query.decode("latin-1"), keep_blank_values=True)
            if k != DEEP_LINK_PARAM]
    return {**scope, "query_string": urllib.parse.urlencode(kept).encode("latin-1")}


async def refuse(send, status: int, text: str) -> None:
    """The answer as Gradio's own errors are, JSON with a "detail": the page shows it (plain text
    showed as "Could not parse server response"). Said in the log too, a few lines a minute (REFUSALS)."""
    REFUSALS.note(status, text)
    body = json.dumps({"detail": text}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class RefusalLog:
    """The guard's refusals in the log: each minute the first of each status with its reason, then at the next
    minute's first how many more there were by status (a Space full and turning visitors away, or one address
    flooding it, left no line at all; a line for each would be a flood of its own)."""

    def __init__(self):
        self.minute, self.more = -1, collections.Counter()
        self.said: set[int] = set()

    def note(self, status: int, text: str) -> None:
        minute = int(monotonic() // 60)
        if minute != self.minute:
            if self.more:
                log.info("refused %s more in that minute", ", ".join(f"{n} x {s}" for s, n in sorted(self.more.items())))
            self.minute, self.more, self.said = minute, collections.Counter(), set()
        if status in self.said:
            self.more[status] += 1
        else:
            self.said.add(status)
            log.info("refused (%d): %s", status, for_log(text))


REFUSALS = RefusalLog()


class QuietTracebacks(logging.Filter):
    """At most MOST tracebacks a minute in the log, then once a line saying the others are left out
    (and, at the next, how many were): the traceback module as Gradio's routes and queue use it (its
    print_exc), and a filter of uvicorn's error log. Gradio prints one for every call its function
    fails (a malformed call of a quick event: 712 bytes of log a request) and uvicorn one for every
    stream that fails after its start: a red-team pass logged 1-1.7 MiB a second. The first ones of
    each minute still show what failed, and the first of each kind (its exception and the line that raised
    it: a caller repeating one malformed call spent the minute's MOST and hid a real crash)."""
    MOST = 20

    def __init__(self):
        super().__init__()
        self.minute, self.printed, self.left_out = -1, 0, 0
        self.kinds: set[tuple] = set()

    def __getattr__(self, name: str):
        return getattr(traceback, name)

    def print_exc(self, *args, **kwargs) -> None:
        if self.allowed(sys.exc_info()):
            traceback.print_exc(*args, **kwargs)

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.exc_info or self.allowed(record.exc_info)

    def allowed(self, exc_info=(None, None, None)) -> bool:
        """Whether one more traceback may be printed now (counted either way)."""
        minute = int(monotonic() // 60)
        if minute != self.minute:
            if self.left_out:
                print(f"({self.left_out} tracebacks were left out of the log in that minute)", file=sys.stderr)
            self.minute, self.printed, self.left_out, self.kinds = minute, 0, 0, set()
        self.printed += 1
        kind = _kind(*exc_info)
        if self.printed <= self.MOST or (kind not in self.kinds and len(self.kinds) < 2 * self.MOST):
            self.kinds.add(kind)
            return True
        if not self.left_out:
            print(f"(past {self.MOST} tracebacks in a minute: the others are left out of the log until the next)",
                  file=sys.stderr)
        self.left_out += 1
        return False


def _kind(kind, exc, tb) -> tuple:
    """A failure's kind: its exception's type and where it was raised (the innermost frame)."""
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return (getattr(kind, "__name__", None), tb and tb.tb_frame.f_code.co_filename, tb and tb.tb_lineno)


QUIET_TRACEBACKS = QuietTracebacks()  # (installed by playground.ui.gradio_patches)


def queue_options() -> dict:
    """Keyword arguments of demo.queue for every host."""
    return {"default_concurrency_limit": CONCURRENCY, "max_size": QUEUED_IN_ALL, "api_open": False}


def launch_options() -> dict:
    """Keyword arguments of demo.launch for every host."""
    return {"show_error": True, "state_session_capacity": SESSIONS_KEPT, "enable_monitoring": False, "run_history": False,
            "theme": theme(), "app_kwargs": {"middleware": [Middleware(RequestGuard, max_bytes=MAX_REQUEST_BYTES)]}}
