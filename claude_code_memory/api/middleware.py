"""Small ASGI middlewares: body-size cap and trailing-slash tolerance for /api/ paths."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import TooLarge


async def _reject(send: Send, status: int, code: str, detail: str) -> None:
    body = json.dumps({"detail": detail, "error": code}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, before anything reads them whole.

    ``exempt_prefixes`` get ``exempt_max_bytes`` instead (backup import uploads a zip).
    """

    def __init__(
        self, app: ASGIApp, max_bytes: int, exempt_prefixes: tuple[str, ...] = (), exempt_max_bytes: int = 0
    ):
        self.app = app
        self.max_bytes = max_bytes
        self.exempt_prefixes = exempt_prefixes
        self.exempt_max_bytes = exempt_max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.exempt_max_bytes if scope["path"].startswith(self.exempt_prefixes) else self.max_bytes
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _reject(send, 400, "bad_input", "invalid Content-Length header")
                    return
                if declared > limit:
                    await _reject(
                        send, 413, "too_large", f"request body is {declared} bytes; the limit is {limit}"
                    )
                    return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge as exc:
            if not started:
                await _reject(send, 413, "too_large", f"request body exceeds the limit of {exc.limit} bytes")


class _TooLarge(TooLarge):
    # A TooLarge, so the app's own handler answers 413 when a route is reading the body.
    def __init__(self, limit: int) -> None:
        super().__init__(f"request body exceeds the limit of {limit} bytes")
        self.limit = limit


class StripTrailingSlash:
    """OpenMemory's routes end in '/', its UI calls some without: accept both for /api/."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if path.startswith("/api/") and len(path) > 1 and path.endswith("/"):
                scope = dict(scope)
                scope["path"] = path.rstrip("/")
                raw: Any = scope.get("raw_path")
                if raw:
                    scope["raw_path"] = raw.rstrip(b"/")
        await self.app(scope, receive, send)
