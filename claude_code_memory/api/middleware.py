"""Small ASGI middlewares: body-size cap, lone-surrogate check of JSON bodies, and trailing-slash
tolerance for /api/ paths."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import TooLarge

log = logging.getLogger(__name__)


async def _reject(send: Send, status: int, code: str, detail: str, **extra: Any) -> None:
    await _send_json(send, status, json.dumps({"detail": detail, "error": code, **extra}).encode())


async def _send_json(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def quiet(paths: Iterable[str]) -> frozenset[str]:
    """Paths that answer a refused body with 200 ``{}`` (the Claude Code hook route promises
    a hook never stands in the session's way), in the form :func:`refuse` compares."""
    return frozenset(path.rstrip("/") for path in paths)


async def refuse(
    scope: Scope, send: Send, quiet_paths: frozenset[str], status: int, code: str, detail: str, **extra: Any
) -> None:
    """Refuse a request's body in the one error shape, or with 200 ``{}`` on a quiet path."""
    if scope["path"].rstrip("/") in quiet_paths:
        log.warning("%s %s: %s; answered {}", scope["method"], scope["path"], detail)
        await _send_json(send, 200, b"{}")
        return
    await _reject(send, status, code, detail, **extra)


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, before anything reads them whole.

    ``exempt_prefixes`` get ``exempt_max_bytes`` instead (backup import uploads a zip);
    ``quiet_paths`` answer 200 ``{}`` instead of 413 (:func:`refuse`).
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        exempt_prefixes: tuple[str, ...] = (),
        exempt_max_bytes: int = 0,
        quiet_paths: Iterable[str] = (),
    ):
        self.app = app
        self.quiet_paths = quiet(quiet_paths)
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
                    detail = f"request body is {declared} bytes; the limit is {limit}"
                    await refuse(scope, send, self.quiet_paths, 413, "too_large", detail)
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
                detail = f"request body exceeds the limit of {exc.limit} bytes"
                await refuse(scope, send, self.quiet_paths, 413, "too_large", detail)


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
#: The methods whose requests carry a body the guards read.
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


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


def lone_surrogate_error(fields: list[str]) -> dict[str, Any]:
    """The refusal of strings holding a lone surrogate at ``fields``, as a batch's per-item
    error fields (:func:`.errors.item_error`); its ``error`` is the whole request's ``detail``."""
    reason = "contains a lone UTF-16 surrogate (half of a pair); send valid Unicode"
    problems = [{"field": field, "message": reason} for field in fields]
    summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    return {"error": summary, "code": "bad_input", "status": 422, "problems": problems}


class RejectLoneSurrogates:
    """Refuse a JSON body whose strings hold a lone UTF-16 surrogate (the escape ``"\\ud800"``
    or its bytes) with 422 naming the field (200 ``{}`` on ``quiet_paths``), before any route or
    the MCP transport parses it.

    Valid JSON may carry one, but no UTF-8 text can: left in, it fails deep inside (the
    database driver, the embedder) as a 500. A body without a surrogate-range escape, nearly
    all of them, costs one byte scan; only one with such an escape is parsed here.
    """

    def __init__(
        self, app: ASGIApp, per_item: Mapping[str, str] | None = None, quiet_paths: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.quiet_paths = quiet(quiet_paths)
        #: path -> the field of its body holding a list whose items the route checks one by one
        #: (a batch: one bad item fails alone, the others are stored).
        self.per_item = {path.rstrip("/"): field for path, field in (per_item or {}).items()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS or not _may_be_json(scope):
            await self.app(scope, receive, send)
            return
        body, gone = await read_whole(receive)
        if gone is None and _SURROGATE_ESCAPE.search(body):
            fields = _lone_surrogate_fields(body)
            items = self.per_item.get(scope["path"].rstrip("/"))
            if items is not None:
                fields = [f for f in fields if not re.match(rf"{re.escape(items)}\.[0-9]+(\.|$)", f)]
            if fields:
                error = lone_surrogate_error(fields)
                detail, problems = error["error"], error["problems"]
                await refuse(scope, send, self.quiet_paths, 422, "bad_input", detail, problems=problems)
                return
        await self.app(scope, replay(body, gone, receive), send)


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


async def read_whole(receive: Receive) -> tuple[bytes, Message | None]:
    """The request's body read whole, and the message that ended it early when the client went
    away (``None`` when the body came whole). Pass both to :func:`replay` to let the app see
    them: a body that ended early is the app's to answer, not a middleware's to refuse."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), message
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks), None


def replay(body: bytes, pending: Message | None, receive: Receive) -> Receive:
    """``receive`` delivering the body already read (then ``pending``, if any) first."""
    queue: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    if pending is not None:
        queue.append(pending)

    async def replayed() -> Message:
        if queue:
            return queue.pop(0)
        return await receive()

    return replayed
