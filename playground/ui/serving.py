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
- Queued functions are reached through the queue only (`api_open=False`, Gradio's default on Spaces
  and not elsewhere): a direct POST to /gradio_api/run/generate skipped the queue and its device
  limit, and 45 of them held page loads for over a minute. Gradio's traffic monitoring is off."""
import json
import re

import anyio
from starlette.middleware import Middleware

from playground.limits import CONCURRENCY, MAX_REQUEST_BYTES, QUEUE_SIZE, SESSIONS_KEPT

NO_FILES = "no input of this page is a file"
REFUSED_ROUTES = ("/upload", "/process_recording")  # (a path's ending) Gradio's routes that take files
FETCHING_ROUTE = re.compile(r"/file[=/]https?://", re.IGNORECASE)  # Gradio's file route given a URL: it fetched
# the URL and streamed it back (a public proxy, with no time or size bound); the page's files are local paths
BODY_METHODS = {"POST", "PUT", "PATCH"}  # the requests whose bodies Gradio reads
_parsing = anyio.Lock()  # one body parsed at a time: 8 MiB of JSON takes about a second and 250 MB


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
        sent = False

        async def replay():  # the body once, as read; then the client's own messages (a disconnect)
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, replay, send)


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
