"""How the page is served: Gradio's launch options (app.py and the tests use the same), with a
bound on every request's body. Gradio reads a request's whole body, however large, and keeps its
values in the session (a 100 MB /export body added ~334 MB that was never given back), so bodies
past MAX_REQUEST_BYTES are refused before Gradio sees them. Uploads are refused outright: no input
of the page takes a file, and Gradio would keep each upload for anyone to download (free hosting,
a full disk)."""
from starlette.middleware import Middleware

from playground.limits import MAX_REQUEST_BYTES, SESSIONS_KEPT


class BodyLimit:
    """ASGI middleware: 413 for a body that declares more than `max_bytes`; a body sent in chunks
    without a length ends as a client disconnect once it passes `max_bytes`; 403 for an upload."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope.get("path", "").rstrip("/").endswith("/upload"):
            return await refuse(send, 403, "uploads are not taken here: no input of this page is a file")
        declared = dict(scope.get("headers", [])).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.max_bytes:
            return await refuse(send, 413, f"request body over this host's limit of {self.max_bytes} bytes")
        seen = 0

        async def bounded():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    return {"type": "http.disconnect"}
            return message
        await self.app(scope, bounded, send)


async def refuse(send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def launch_options() -> dict:
    """Keyword arguments of demo.launch for every host."""
    return {"show_error": True, "state_session_capacity": SESSIONS_KEPT,
            "app_kwargs": {"middleware": [Middleware(BodyLimit, max_bytes=MAX_REQUEST_BYTES)]}}
