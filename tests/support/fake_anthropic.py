"""A fake Anthropic Messages API on 127.0.0.1, for driving the real Claude Code CLI offline.

It speaks the real wire format: ``POST /v1/messages`` (any query string, Claude Code sends
``?beta=true``) answers either a JSON message or, when the body says ``"stream": true``, the
server-sent events of the streaming API (``message_start``, ``content_block_start``, ``ping``,
``content_block_delta`` with ``text_delta`` / ``input_json_delta``, ``content_block_stop``,
``message_delta``, ``message_stop``). ``HEAD /`` answers 200 (Claude Code probes it), and
``POST /v1/messages/count_tokens`` gives a rough count. Every request is recorded.

What to answer is decided by a *responder*, a function from the request body to a
:class:`Reply`. :class:`ToolThenAnswer` is the script the end-to-end tests use: the
conversation that offers the tool gets a ``tool_use`` block, the request that carries its
``tool_result`` gets a final text answer, and everything else Claude Code sends on the side
(title and summary calls to the small model, quota probes) gets plain text.

The server runs uvicorn in a thread of the test process, on a port the OS picks.

For the capture proxy's tests and benchmark it can also behave like the real API under load:
``first_event_delay`` / ``event_delay`` (seconds before the first event and between events of a
stream), ``fault`` (``"rate_limit"``: 429 with ``retry-after``; ``"server_error"``: 500;
``"cut"``: the stream stops mid-way and the connection is dropped), ``gzip`` (non-streamed
answers gzip-encoded) and ``tls=(certfile, keyfile)`` (HTTPS, e.g. for a forward proxy that
intercepts TLS; :func:`self_signed_certificate` makes a pair for ``localhost``).
"""

from __future__ import annotations

import asyncio
import datetime
import gzip as gzip_module
import itertools
import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .threaded_server import ThreadedServer


@dataclass
class Reply:
    """One assistant message: its content blocks (``text`` / ``tool_use``) and stop reason."""

    content: list[dict[str, Any]]
    stop_reason: str = "end_turn"

    @classmethod
    def text(cls, text: str) -> Reply:
        return cls([{"type": "text", "text": text}])

    @classmethod
    def tool_use(
        cls, name: str, tool_input: dict[str, Any], *, tool_use_id: str, preamble: str = ""
    ) -> Reply:
        blocks: list[dict[str, Any]] = []
        if preamble:
            blocks.append({"type": "text", "text": preamble})
        blocks.append({"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input})
        return cls(blocks, stop_reason="tool_use")


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON
    reply: Reply | None = None


Responder = Callable[[dict[str, Any]], Reply]

#: Claude Code's tool that loads the schemas of deferred (e.g. MCP) tools.
TOOL_SEARCH = "ToolSearch"


# -- reading request bodies --------------------------------------------------------------------


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool.get("name", "") for tool in body.get("tools") or [] if isinstance(tool, dict)]


def content_blocks(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every content block of every message of a request body, in order."""
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            yield {"type": "text", "text": content}
        elif isinstance(content, list):
            yield from (block for block in content if isinstance(block, dict))


def tool_results(body: dict[str, Any], tool_use_id: str | None = None) -> list[dict[str, Any]]:
    return [
        block
        for block in content_blocks(body)
        if block.get("type") == "tool_result"
        and (tool_use_id is None or block.get("tool_use_id") == tool_use_id)
    ]


def block_text(block: dict[str, Any]) -> str:
    """The text of a ``tool_result`` (a string or a list of text blocks) or a ``text`` block."""
    content = block.get("content", block.get("text", ""))
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


# -- scripts -----------------------------------------------------------------------------------


def always_text(text: str = "OK.") -> Responder:
    return lambda body: Reply.text(text)


def mentions(body: dict[str, Any], needle: str) -> bool:
    """Whether ``needle`` appears anywhere in the request (system prompt, messages, tools)."""
    return needle in json.dumps(body)


class ToolThenAnswer:
    """Call ``tool_name`` once, then answer ``final_text`` when its result comes back.

    It plays the model the way a real one would with Claude Code 2.1's deferred tools: MCP
    tools are not in ``tools`` but named in a system message, to be loaded with the
    ``ToolSearch`` tool first. So: a request that offers ``tool_name`` gets a ``tool_use`` of
    it; a request that only names it, and offers ``ToolSearch``, gets a ``ToolSearch`` for it
    (``select:<name>``) and, once that result is back, the ``tool_use``. Everything else Claude
    Code sends (titles, summaries, probes) is answered with plain text.

    ``tool_use_id`` is the id of the scripted call, to find its ``tool_result`` upstream.
    """

    def __init__(self, tool_name: str, tool_input: dict[str, Any], final_text: str) -> None:
        self.tool_name = tool_name
        self.tool_input = tool_input
        self.final_text = final_text
        self.tool_use_id = "toolu_" + uuid.uuid4().hex[:24]
        self.search_id = "toolu_" + uuid.uuid4().hex[:24]

    def __call__(self, body: dict[str, Any]) -> Reply:
        if tool_results(body, self.tool_use_id):
            return Reply.text(self.final_text)
        if self.tool_name in tool_names(body) or tool_results(body, self.search_id):
            return Reply.tool_use(
                self.tool_name,
                self.tool_input,
                tool_use_id=self.tool_use_id,
                preamble="Let me check your memories.",
            )
        if TOOL_SEARCH in tool_names(body) and mentions(body, self.tool_name):
            query = {"query": f"select:{self.tool_name}", "max_results": 5}
            return Reply.tool_use(TOOL_SEARCH, query, tool_use_id=self.search_id)
        return Reply.text("OK.")


class ToolSequence:
    """Call ``tool_name`` with each of ``inputs`` in turn, one per request, then answer
    ``final_text``: the script of a model using a client tool several times in one
    conversation (Anthropic's memory tool, named ``memory``). The next call is made once a
    request has carried the result of the one before; ``results`` collects their texts and
    error flags in order. Results are remembered across requests: a client may send the whole
    history each time, or (the SDK's ``thread``) only what is new."""

    def __init__(self, tool_name: str, inputs: list[dict[str, Any]], final_text: str) -> None:
        self.tool_name = tool_name
        self.inputs = inputs
        self.final_text = final_text
        self.ids = ["toolu_" + uuid.uuid4().hex[:24] for _ in inputs]
        self._answered: dict[str, tuple[str, bool]] = {}

    @property
    def results(self) -> list[tuple[str, bool]]:
        return [self._answered[tool_use_id] for tool_use_id in self.ids if tool_use_id in self._answered]

    def __call__(self, body: dict[str, Any]) -> Reply:
        for block in tool_results(body):
            if block.get("tool_use_id") in self.ids:
                self._answered[block["tool_use_id"]] = (block_text(block), bool(block.get("is_error")))
        done = len(self.results)
        if done < len(self.inputs):
            return Reply.tool_use(self.tool_name, self.inputs[done], tool_use_id=self.ids[done])
        return Reply.text(self.final_text)


# -- the wire format ---------------------------------------------------------------------------


def _usage(output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": 25,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def message_json(reply: Reply, model: str, message_id: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": reply.content,
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": _usage(10),
    }


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def message_events(reply: Reply, model: str, message_id: str) -> Iterator[bytes]:
    """The streamed form of ``reply``, event by event, as the real API sends it."""
    start = message_json(reply, model, message_id) | {"content": [], "stop_reason": None, "usage": _usage(1)}
    yield _event("message_start", {"type": "message_start", "message": start})
    for index, block in enumerate(reply.content):
        if block["type"] == "text":
            yield _event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            if index == 0:
                yield _event("ping", {"type": "ping"})
            for piece in _chunks(block["text"], 12):
                delta = {"type": "text_delta", "text": piece}
                yield _event(
                    "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
                )
        elif block["type"] == "tool_use":
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
            if index == 0:
                yield _event("ping", {"type": "ping"})
            for piece in ["", *_chunks(json.dumps(block["input"]), 10)]:
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield _event(
                    "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
                )
        else:
            raise ValueError(f"unsupported content block type {block['type']!r}")
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 10},
        },
    )
    yield _event("message_stop", {"type": "message_stop"})


# -- the server --------------------------------------------------------------------------------


@dataclass
class FakeAnthropic:
    """The fake upstream. Use as a context manager; ``base_url`` is what ``ANTHROPIC_BASE_URL`` takes."""

    responder: Responder = field(default_factory=always_text)
    requests: list[RecordedRequest] = field(default_factory=list)
    host: str = "127.0.0.1"
    first_event_delay: float = 0.0
    event_delay: float = 0.0
    fault: str | None = None  # None, "rate_limit", "server_error" or "cut"
    gzip: bool = False
    tls: tuple[Path, Path] | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadedServer | None = None
        self.port = 0

    # Views of what was recorded.
    @property
    def message_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/messages"]

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    # Lifecycle.
    def start(self) -> FakeAnthropic:
        app = Starlette(
            routes=[
                Route("/", self._root, methods=["GET", "HEAD"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/{path:path}", self._unknown, methods=["GET", "POST", "PUT", "DELETE", "HEAD"]),
            ]
        )
        bind = "127.0.0.1" if self.host == "localhost" else self.host
        self._server = ThreadedServer(app, name="fake-anthropic", host=bind, tls=self.tls).start()
        self.port = self._server.port
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # Handlers.
    async def _record(self, request: Request) -> RecordedRequest:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        recorded = RecordedRequest(
            method=request.method,
            path=request.url.path,
            query=request.url.query,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
        )
        with self._lock:
            self.requests.append(recorded)
        return recorded

    async def _root(self, request: Request) -> Response:
        await self._record(request)
        return Response(status_code=200)

    async def _count_tokens(self, request: Request) -> Response:
        recorded = await self._record(request)
        size = len(json.dumps(recorded.body)) if recorded.body is not None else 0
        return JSONResponse({"input_tokens": max(1, size // 4)})

    async def _unknown(self, request: Request) -> Response:
        await self._record(request)
        return _error(404, "not_found_error", f"the fake upstream does not serve {request.url.path}")

    async def _messages(self, request: Request) -> Response:
        recorded = await self._record(request)
        body = recorded.body
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "invalid_request_error", "body must be a JSON object with messages")
        try:
            reply = self.responder(body)
        except Exception as exc:  # a broken script should show up in the client, not hang it
            return _error(500, "api_error", f"fake upstream responder failed: {exc!r}")
        recorded.reply = reply
        model = str(body.get("model") or "claude-fake")
        message_id = f"msg_fake{next(self._ids):06d}"
        headers = {"request-id": f"req_fake{message_id[-6:]}", "anthropic-organization-id": "fake-org"}
        if self.fault == "rate_limit":
            response = _error(
                429, "rate_limit_error", "Number of request tokens has exceeded your rate limit."
            )
            response.headers["retry-after"] = "7"
            return response
        if self.fault == "server_error":
            return _error(500, "api_error", "Internal server error")
        if body.get("stream"):
            return StreamingResponse(
                self._paced(list(message_events(reply, model, message_id))),
                media_type="text/event-stream",
                headers=headers | {"cache-control": "no-cache"},
            )
        if self.gzip:
            data = gzip_module.compress(json.dumps(message_json(reply, model, message_id)).encode())
            return Response(
                data, media_type="application/json", headers=headers | {"content-encoding": "gzip"}
            )
        return JSONResponse(message_json(reply, model, message_id), headers=headers)

    async def _paced(self, events: list[bytes]) -> AsyncIterator[bytes]:
        """The events with the configured waits; ``fault="cut"``: half of them, then a dropped connection."""
        if self.first_event_delay:
            await asyncio.sleep(self.first_event_delay)
        for number, event in enumerate(events):
            if self.fault == "cut" and number == len(events) // 2:
                raise ConnectionAbortedError("fake upstream: stream cut mid-way (on purpose)")
            if number and self.event_delay:
                await asyncio.sleep(self.event_delay)
            yield event


def _error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"type": "error", "error": {"type": kind, "message": message}}, status_code=status)


def self_signed_certificate(directory: Path, host: str = "localhost") -> tuple[Path, Path]:
    """A certificate and key for ``host`` (and 127.0.0.1), valid for a day; returns their paths."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(host), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / f"{host}.crt", directory / f"{host}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path
