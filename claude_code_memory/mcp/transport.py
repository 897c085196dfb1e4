"""The MCP endpoint's HTTP routes: SSE and Streamable HTTP, behind bearer-token auth.

    GET  /mcp/{client_name}/sse/{user_id}                  SSE stream; its `endpoint` event names
                                                           /mcp/messages/?session_id=<hex>
    POST /mcp/messages/?session_id=...                     messages of an SSE session (202)
    POST /mcp/{client_name}/sse/{user_id}/messages/?...    the same, at the path OpenMemory also takes
    POST /mcp/{client_name}/http/{user_id}                 Streamable HTTP, stateless, JSON responses
                                                           (GET and DELETE answer 405: no sessions)

Either URL may name a tool set, ``?tools=<dialect>`` (:mod:`.dialects`); each dialect has a
server of its own, built on its first request. An SSE session keeps the dialect it connected
with. An unknown dialect is a 400 that lists the known ones.

Every request carries ``Authorization: Bearer <token>``. The token must be the admin token or
belong to the user in the path (else 403). An SSE session belongs to the token's principal
that opened it: a message POSTed with another principal's token is refused, so a leaked
session id cannot be driven by another user. Path names are validated (422). Our errors are
JSON ``{"detail", "error"}``; the SDK's plain-text refusals are rewritten to the same shape.

The caller (user and client from the path, or from the SSE session) is bound to the request's
context with :func:`~.server.bind_caller`; the SDK hands that context on to the tool handler.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import jsonrpc_message_adapter
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..auth.identity import validate_user_id
from ..errors import BadInput, Forbidden, MemoryStackError, NotFound, TooLarge, Unavailable
from . import dialects
from .caller import Caller, bind_caller
from .paths import DEFAULT_MAX_BODY_BYTES, MESSAGE_PATH, ROUTES, SSE_PATH

logger = logging.getLogger(__name__)

CLIENT_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
_SESSION_IN_ENDPOINT_EVENT = re.compile(rb"session_id=([0-9a-f]{32})")

Authenticate = Callable[[Request], Any]
"""``authenticate(request) -> Principal`` (or an awaitable of one); raises Unauthorised."""


class MalformedMessage(BadInput):
    """A POSTed body that is not JSON-RPC: 400, as the SDK and OpenMemory answer it."""

    status = 400


@dataclass(frozen=True)
class _SseSession:
    caller: Caller
    owner: str
    #: The user named in the GET's path (an alias of ``caller.user_id`` in the local mode).
    path_user: str
    dialect: str = dialects.DEFAULT


@dataclass
class _Dialect:
    """One dialect's server, and its Streamable HTTP manager while the endpoint runs."""

    server: MCPServer
    lowlevel: Server[Any]
    init_options: Any
    http: StreamableHTTPSessionManager | None = None


class McpEndpoint:
    """The MCP routes for one app. Mount :attr:`routes` and enter :meth:`run` in the lifespan."""

    def __init__(
        self,
        build: Callable[[str], MCPServer],
        authenticate: Authenticate,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        """``build(dialect)`` makes a dialect's server, on the first request that names it."""
        self._build = build
        self._dialects: dict[str, _Dialect] = {}
        logger.info("MCP endpoint built")
        self._building = anyio.Lock()
        self._tasks: anyio.abc.TaskGroup | None = None
        self._authenticate = authenticate
        self._authenticate_is_async = inspect.iscoroutinefunction(authenticate)
        self._max_body_bytes = max_body_bytes
        # No DNS-rebinding Host checks: every request needs a bearer token, which a rebinding
        # page cannot send, and Host checks would break the server behind Docker port mapping.
        self._sse = SseServerTransport(MESSAGE_PATH, max_request_body_size=max_body_bytes)
        self._sse_sessions: dict[str, _SseSession] = {}
        # Stateless mode builds and ends a transport per request, and the SDK logs both at INFO.
        logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)

    @property
    def apps(self) -> dict[str, ASGIApp]:
        """What answers each kind of route (:data:`.paths.ROUTES` names them)."""
        return {
            "sse_connect": _Asgi(self._sse_connect),
            "sse_message": _Asgi(_json_errors(self._sse_message)),
            "streamable_http": _Asgi(self._streamable_http),
        }

    @property
    def routes(self) -> list[BaseRoute]:
        apps = self.apps
        return [Route(path, apps[kind], name=name) for path, name, kind in ROUTES]

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Run the Streamable HTTP machinery; enter once per app lifespan."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                for dialect in self._dialects.values():  # built in an earlier lifespan (tests)
                    await self._start_http(dialect)
                yield
            finally:
                self._tasks = None
                for dialect in self._dialects.values():
                    dialect.http = None
                tasks.cancel_scope.cancel()

    async def _start_http(self, dialect: _Dialect) -> None:
        if self._tasks is None:
            raise Unavailable("the MCP endpoint is not running (McpEndpoint.run() was not entered)")
        # A session manager runs once; a fresh one per lifespan lets an app start again (tests).
        manager = StreamableHTTPSessionManager(
            app=dialect.lowlevel,
            stateless=True,
            json_response=True,
            max_request_body_size=self._max_body_bytes,
        )
        await self._tasks.start(_serve_http, manager)
        dialect.http = manager

    async def _dialect(self, request: Request) -> tuple[str, _Dialect]:
        """The dialect ``?tools=`` names, its server built and running on first use."""
        name = dialects.dialect_of(request.query_params.get(dialects.QUERY_PARAMETER))
        found = self._dialects.get(name)
        if found is None:
            async with self._building:
                found = self._dialects.get(name)
                if found is None:
                    found = _served(await anyio.to_thread.run_sync(self._build, name))
                    await self._start_http(found)
                    self._dialects[name] = found
        return name, found

    # -- admission --------------------------------------------------------------------------
    async def _principal(self, request: Request) -> Any:
        if self._authenticate_is_async:
            return await self._authenticate(request)
        principal = self._authenticate(request)
        if inspect.isawaitable(principal):
            principal = await principal
        return principal

    async def _admit(self, request: Request) -> tuple[Caller, str]:
        """Authenticate, validate the path's names and check the token may act for its user."""
        principal = await self._principal(request)
        client_name = request.path_params["client_name"]
        user_id = validate_user_id(request.path_params["user_id"])
        if not CLIENT_NAME_PATTERN.match(client_name):
            raise BadInput(
                f"invalid client name {client_name!r}: use 1-64 letters, digits, '.', '_', '@' or '-', "
                "starting with a letter or digit"
            )
        # An alias (the local mode's OpenMemory default names) acts as the principal's user.
        return Caller(user_id=principal.resolve(user_id), client_name=client_name), _owner(principal)

    async def _require_scope(self, request: Request, body: bytes | None) -> None:
        """An OAuth access token must carry the scope the message needs (the tools' table,
        auth/oauth/route_scopes.py). Other tokens have every right."""
        principal = await self._principal(request)
        if not _scoped(principal):
            return
        from ..auth.oauth import route_scopes

        needed = route_scopes.for_messages(_messages(body) if body is not None else [])
        request.app.state.oauth.resource.require(principal, needed)

    # -- SSE --------------------------------------------------------------------------------
    async def _sse_connect(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if request.method != "GET":
            return await _method_not_allowed("GET")(scope, receive, send)
        try:
            caller, owner = await self._admit(request)
            name, dialect = await self._dialect(request)
            await self._require_scope(request, None)
        except MemoryStackError as error:
            return await _error_response(error)(scope, receive, send)

        session_ids: list[str] = []
        response_open = False

        async def register_session(message: Message) -> None:
            nonlocal response_open
            if message["type"] == "http.response.start":
                response_open = True
            elif message["type"] == "http.response.body":
                response_open = bool(message.get("more_body"))
                # The SDK picks the session id and announces it in the first event; learn it
                # there, before the client can see it, to know whose session a POST names.
                if not session_ids:
                    found = _SESSION_IN_ENDPOINT_EVENT.search(message.get("body", b""))
                    if found:
                        session_id = found.group(1).decode()
                        session_ids.append(session_id)
                        self._sse_sessions[session_id] = _SseSession(
                            caller, owner, request.path_params["user_id"], name
                        )
            await send(message)

        try:
            async with self._sse.connect_sse(scope, receive, register_session) as (read_stream, write_stream):
                await dialect.lowlevel.run(read_stream, write_stream, dialect.init_options)
            if response_open:
                # The stream stopped because the server is shutting down: end the response
                # properly rather than leave uvicorn to log an incomplete one.
                with suppress(OSError):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            for session_id in session_ids:
                self._sse_sessions.pop(session_id, None)

    async def _sse_message(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if request.method != "POST":
            return await _method_not_allowed("POST")(scope, receive, send)
        try:
            principal = await self._principal(request)
            session = self._session_for(request)
            if _owner(principal) != session.owner:
                raise Forbidden("this SSE session was opened with another token's identity")
            # Checked here because the SDK answers a bad message with a logged traceback.
            body = await _read_body(receive, self._max_body_bytes)
            _check_message(body)
            await self._require_scope(request, body)
        except MemoryStackError as error:
            return await _error_response(error)(scope, receive, send)
        with bind_caller(session.caller):
            await self._sse.handle_post_message(scope, _replay(body, receive), send)

    def _session_for(self, request: Request) -> _SseSession:
        raw = request.query_params.get("session_id")
        if not raw:
            raise BadInput("session_id is required: POST to the path the SSE endpoint event announced")
        try:
            session_id = uuid.UUID(hex=raw).hex
        except ValueError:
            raise BadInput(f"invalid session_id {raw!r}") from None
        session = self._sse_sessions.get(session_id)
        path = request.path_params
        if session is None or (
            "user_id" in path
            and (path["user_id"], path["client_name"]) != (session.path_user, session.caller.client_name)
        ):
            raise NotFound(f"no open SSE session {session_id}: connect to GET {SSE_PATH} first")
        return session

    # -- Streamable HTTP --------------------------------------------------------------------
    async def _streamable_http(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            caller, _ = await self._admit(request)
            _, dialect = await self._dialect(request)
            http = dialect.http
            if http is None:
                raise Unavailable("the MCP endpoint is not running (McpEndpoint.run() was not entered)")
            if request.method == "POST" and _scoped(await self._principal(request)):
                body = await _read_body(receive, self._max_body_bytes)
                await self._require_scope(request, body)
                receive = _replay(body, receive)
        except MemoryStackError as error:
            return await _error_response(error)(scope, receive, send)
        if request.method != "POST":
            # Stateless: no server-initiated stream for GET, no session for DELETE to end. 405 is
            # the answer the protocol defines for both; clients carry on with POSTs alone.
            return await _method_not_allowed("POST")(scope, receive, send)
        with bind_caller(caller):
            await http.handle_request(scope, receive, send)


def _served(server: MCPServer) -> _Dialect:
    # MCPServer has no public handle on the low-level server the transports drive; the SDK's
    # own in-process Client reaches it the same way.
    lowlevel = server._lowlevel_server  # noqa: SLF001
    return _Dialect(server, lowlevel, lowlevel.create_initialization_options())


async def _serve_http(
    manager: StreamableHTTPSessionManager, *, task_status: Any = anyio.TASK_STATUS_IGNORED
) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()


async def _read_body(receive: Receive, limit: int) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BadInput("the client disconnected before sending the whole body")
        body.extend(message.get("body", b""))
        if len(body) > limit:
            raise TooLarge(f"the message is larger than {limit} bytes")
        if not message.get("more_body"):
            return bytes(body)


def _scoped(principal: Any) -> bool:
    return getattr(principal, "scopes", None) is not None


def _messages(body: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a body (one or a batch); [] when it is not JSON."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return []
    items = parsed if isinstance(parsed, list) else [parsed]
    return [item for item in items if isinstance(item, dict)]


def _check_message(body: bytes) -> None:
    try:
        jsonrpc_message_adapter.validate_json(body, by_name=False)
    except ValidationError as error:
        problem = error.errors()[0]["msg"] if error.errors() else str(error)
        raise MalformedMessage(f"the body is not a JSON-RPC message: {problem}") from None


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body, already read, delivered again first."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _owner(principal: Any) -> str:
    return "admin" if principal.is_admin else f"user:{principal.user_id}"


def _error_response(error: MemoryStackError) -> JSONResponse:
    return JSONResponse(
        {"detail": error.message, "error": error.code}, status_code=error.status, headers=dict(error.headers)
    )


def _method_not_allowed(allow: str) -> JSONResponse:
    return JSONResponse(
        {"detail": f"method not allowed here; use {allow}", "error": "method_not_allowed"},
        status_code=405,
        headers={"Allow": allow},
    )


class _Asgi:
    """Hands Starlette a plain ASGI app (a bound method would be wrapped as request → response)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def _json_errors(app: ASGIApp) -> ASGIApp:
    """Rewrite the SDK's plain-text 4xx answers ("Could not parse message") as our JSON errors."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        start: Message | None = None
        body = bytearray()

        async def send_json_errors(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                content_type = dict(message.get("headers", [])).get(b"content-type", b"")
                if message["status"] >= 400 and not content_type.startswith(b"application/json"):
                    start = message
                    return
            elif message["type"] == "http.response.body" and start is not None:
                body.extend(message.get("body", b""))
                if message.get("more_body"):
                    return
                status = start["status"]
                detail = body.decode("utf-8", "replace").strip() or "request refused"
                payload = json.dumps({"detail": detail, "error": _ERROR_CODES.get(status, "bad_request")})
                encoded = payload.encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(encoded)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": encoded})
                return
            await send(message)

        await app(scope, receive, send_json_errors)

    return wrapped


_ERROR_CODES = {
    400: "bad_input",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    421: "bad_request",
}
