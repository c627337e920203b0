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
- One address has at most DEVICE_RUNS_PER_CLIENT runs on the device queued or running, and at most
  QUEUED_PER_CLIENT events of any kind (a quarter of the queue): past them, its join of the queue
  gets Gradio's own "queue full" answer (503), the others go on.
  The address is the first of X-Forwarded-For where a proxy sets it (a Space's: the peer is the
  proxy), else the peer's; a caller who forges that header gets no more than without this bound.
- Queued functions are reached through the queue only (`api_open=False`, Gradio's default on Spaces
  and not elsewhere): a direct POST to /gradio_api/run/generate skipped the queue and its device
  limit, and 45 of them held page loads for over a minute. Gradio's traffic monitoring is off."""
import json
import re

import anyio
from starlette.middleware import Middleware

from playground.limits import (CONCURRENCY, DEVICE_RUNS_PER_CLIENT, MAX_REQUEST_BYTES, QUEUE_SIZE, QUEUED_PER_CLIENT,
                               SESSIONS_KEPT)

NO_FILES = "no input of this page is a file"
REFUSED_ROUTES = ("/upload", "/process_recording")  # (a path's ending) Gradio's routes that take files
FETCHING_ROUTE = re.compile(r"/file[=/]https?://", re.IGNORECASE)  # Gradio's file route given a URL: it fetched
# the URL and streamed it back (a public proxy, with no time or size bound); the page's files are local paths
BODY_METHODS = {"POST", "PUT", "PATCH"}  # the requests whose bodies Gradio reads
_parsing = anyio.Lock()  # one body parsed at a time: 8 MiB of JSON takes about a second and 250 MB
_joining = anyio.Lock()  # one queue join at a time: two at once would each count the other's caller short
DEVICE = "device"  # the concurrency_id of every run on the model pair: the page's and the API's (playground.ui.page)


class RequestGuard:
    """ASGI middleware: 413 for a body over `max_bytes` (declared, or sent in chunks without a
    length), 403 for a route that takes files or fetches a URL, or a body that names a file."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        if path.rstrip("/").endswith(REFUSED_ROUTES) or FETCHING_ROUTE.search(path):
            return await refuse(send, 403, f"files are not taken or fetched here: {NO_FILES}")
        declared = dict(scope.get("headers", [])).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.max_bytes:
            return await refuse(send, 413, f"request body over this host's limit of {self.max_bytes} bytes")
        if scope.get("method") not in BODY_METHODS:
            return await self.app(scope, receive, send)
        body = await read_body(receive, self.max_bytes)
        if body is None:  # the client left while sending
            return
        if body is TOO_LONG:
            return await refuse(send, 413, f"request body over this host's limit of {self.max_bytes} bytes")
        if await names_a_file(body):
            return await refuse(send, 403, f"a file in a call's data is not taken: {NO_FILES}")
        if path.rstrip("/").endswith("/queue/join"):
            async with _joining:
                held = await over_share(scope, body)
                if held:
                    return await refuse(send, 503, f"this address already has {held} queued or running; start "
                                                   "another once one has ended")
                return await self.app(scope, _replay(body, receive), send)
        await self.app(scope, _replay(body, receive), send)


def _replay(body: bytes, receive):
    """The body once, as read; then the client's own messages (a disconnect)."""
    sent = False

    async def replay():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}
    return replay


def client_address(headers, peer) -> str:
    """Who sent a request: X-Forwarded-For's first address when a proxy set it, else the peer's
    (headers: name -> value, lower-case names; peer: (host, port) or None)."""
    forwarded = headers.get("x-forwarded-for", "").split(",")[0].strip()
    return forwarded or (peer[0] if peer else "")


async def over_share(scope, body: bytes) -> str:
    """What this join's address holds already where that is its share (read from Gradio's queue;
    the body is parsed only for a join that may be for the device), else ""."""
    blocks = scope["app"].get_blocks()
    queue = blocks._queue
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    caller = client_address(headers, scope.get("client"))
    waiting = [e for q in queue.event_queue_per_concurrency_id.values() for e in q.queue]
    running = [e for job in queue.active_jobs if job for e in job]
    mine = [e for e in waiting + running if client_address(e.request.headers, _peer(e.request)) == caller]
    if len(mine) >= QUEUED_PER_CLIENT:
        return f"{len(mine)} events"
    runs = sum(e.concurrency_id == DEVICE for e in mine)
    if runs < DEVICE_RUNS_PER_CLIENT:
        return ""
    fn = blocks.fns.get(await anyio.to_thread.run_sync(_fn_index, body))
    return f"{runs} runs on the device" if fn is not None and fn.concurrency_id == DEVICE else ""


def _peer(request):
    return (request.client.host, request.client.port) if request is not None and request.client else None


def _fn_index(body: bytes):
    try:
        return json.loads(body).get("fn_index")
    except (ValueError, AttributeError, RecursionError):
        return None


TOO_LONG = object()


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


async def names_a_file(body: bytes) -> bool:
    """Whether a JSON body holds a Gradio file reference anywhere ({"path": ..., "meta": {"_type":
    "gradio.FileData"}}, as gradio_client.utils.is_file_obj_with_meta reads it), read as FastAPI
    reads it (json.loads: UTF-8, -16 or -32); a body that is not JSON is left to Gradio, which
    refuses it. Parsed only when the name could be in it (as written, or behind a \\u escape), in a
    worker thread, so the server goes on answering meanwhile."""
    try:
        text = body.decode(json.detect_encoding(body))
    except (UnicodeDecodeError, LookupError):
        return False
    if "FileData" not in text and "\\u" not in text:
        return False
    async with _parsing:
        return await anyio.to_thread.run_sync(_holds_a_file, text)


class _FileFound(Exception):
    pass


def _holds_a_file(text: str) -> bool:
    def hook(value: dict) -> dict:  # each object as it is read, innermost first: stops at the first file
        meta = value.get("meta")
        if isinstance(meta, dict) and meta.get("_type") == "gradio.FileData":
            raise _FileFound
        return value
    try:
        json.loads(text, object_hook=hook)
    except _FileFound:
        return True
    except (ValueError, RecursionError):
        pass
    return False


async def refuse(send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def queue_options() -> dict:
    """Keyword arguments of demo.queue for every host."""
    return {"default_concurrency_limit": CONCURRENCY, "max_size": QUEUE_SIZE, "api_open": False}


def launch_options() -> dict:
    """Keyword arguments of demo.launch for every host."""
    return {"show_error": True, "state_session_capacity": SESSIONS_KEPT, "enable_monitoring": False,
            "app_kwargs": {"middleware": [Middleware(RequestGuard, max_bytes=MAX_REQUEST_BYTES)]}}
