"""Small ASGI middlewares: body-size cap, lone-surrogate check of JSON bodies, and trailing-slash
tolerance for /api/ paths."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import TooLarge


async def _reject(send: Send, status: int, code: str, detail: str, **extra: Any) -> None:
    body = json.dumps({"detail": detail, "error": code, **extra}).encode()
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


#: The cheap first test: a JSON escape in the UTF-16 surrogate range (``\\ud800``-``\\udfff``),
#: or a surrogate's three bytes encoded as if UTF-8 (which ``json.loads`` decodes with
#: ``surrogatepass``, so they reach a route as the same lone surrogate).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\xed[\xa0-\xbf]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def lone_surrogates(value: Any, path: str = "") -> list[str]:
    """The dotted paths of strings (keys or values) in parsed JSON holding a lone surrogate.

    ``json.loads`` joins a valid pair (an emoji's ``\\ud83d\\ude00``) into one character, so
    any surrogate left in a string had no partner: it cannot be encoded as UTF-8, which the
    database, the embedder and every response need.
    """
    found: list[str] = []
    if isinstance(value, str):
        if _SURROGATE.search(value):
            found.append(path or "body")
    elif isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if _SURROGATE.search(key):
                found.append(where)
            found.extend(lone_surrogates(item, where))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(lone_surrogates(item, f"{path}.{index}" if path else str(index)))
    return found


class RejectLoneSurrogates:
    """Refuse a JSON body whose strings hold a lone UTF-16 surrogate (the escape ``"\\ud800"``
    or its bytes) with 422 naming the field, before any route or the MCP transport parses it.

    Valid JSON may carry one, but no UTF-8 text can: left in, it fails deep inside (the
    database driver, the embedder) as a 500. A body without a surrogate-range escape, nearly
    all of them, costs one byte scan; only one with such an escape is parsed here.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS or not _may_be_json(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see it
                await self.app(scope, _replay(b"".join(chunks), message, receive), send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        if _SURROGATE_ESCAPE.search(body):
            fields = _lone_surrogate_fields(body)
            if fields:
                reason = "contains a lone UTF-16 surrogate (half of a pair); send valid Unicode"
                problems = [{"field": f, "message": reason} for f in fields]
                summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
                await _reject(send, 422, "bad_input", summary, problems=problems)
                return
        await self.app(scope, _replay(body, None, receive), send)


def _may_be_json(scope: Scope) -> bool:
    # FastAPI parses a body without a content type as JSON too.
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            return b"json" in value.lower()
    return True


def _lone_surrogate_fields(body: bytes) -> list[str]:
    try:
        parsed = json.loads(body)
    except ValueError:
        return []  # not JSON: the route answers that itself
    return lone_surrogates(parsed)


def _replay(body: bytes, pending: Message | None, receive: Receive) -> Receive:
    """``receive`` delivering the body already read (then ``pending``, if any) first."""
    queue: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    if pending is not None:
        queue.append(pending)

    async def replayed() -> Message:
        if queue:
            return queue.pop(0)
        return await receive()

    return replayed
