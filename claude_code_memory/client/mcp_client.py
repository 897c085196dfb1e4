"""`Mem0MCPClient`: a synchronous client for the memory server's MCP endpoint.

Python integrations call it without asyncio::

    with Mem0MCPClient("http://127.0.0.1:8765", "alice", token) as memory:
        memory.add("I prefer tabs over spaces")
        hits = memory.search("indentation preferences", limit=3)

Underneath it speaks real MCP through the official SDK (``mcp.ClientSession`` over the
Streamable HTTP or SSE transport). A private event-loop thread (an anyio blocking portal)
owns one session for the client's lifetime, so a call costs one request, not a new
connection and handshake. When the connection has dropped (the server restarted, an SSE
stream ended) the next call reconnects once, transparently.

Failures raise the library's typed errors (`errors.py`), never an empty result:

* ``Unavailable``: nothing listens at the URL, a connect or call timed out, the connection
  broke and reconnecting failed, or the server answered something that is not the tool's
  documented output. The message names the URL and says whether anything answered.
* ``Unauthorised`` (HTTP 401): no token, or one the server does not know.
* ``Forbidden`` (HTTP 403): the token belongs to another user; or the tool refused because
  the app (client name) is paused.
* ``NotFound``: ``delete`` of an id this user has no memory under.
* ``BadInput``: any other tool error (empty text, a limit out of range), carrying the
  server's message.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

import anyio
import anyio.from_thread
import httpx
import httpx2
from anyio.abc import TaskStatus
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from ..errors import (
    BadInput,
    Forbidden,
    MemoryStackError,
    NotFound,
    Unauthorised,
    Unavailable,
    error_for_status,
)
from .connection import when_down

if TYPE_CHECKING:
    from concurrent.futures import Future

    from anyio.from_thread import BlockingPortal

    from ..config import Settings

Transport = Literal["http", "sse"]
TRANSPORTS: tuple[Transport, ...] = ("http", "sse")
Memories = list[dict[str, Any]]
"""Memories as the server's tools return them: dicts with at least ``id`` and ``memory``."""

#: How long an SSE stream may stay silent before the SDK gives up on it (the server pings).
SSE_READ_TIMEOUT = 300.0

_TOOL_ERROR_PREFIX = re.compile(r"^Error executing tool [\w.-]+: ")
_PAUSED = re.compile(r"\bis currently paused\b")
_DELETED = re.compile(r"^Successfully deleted (\d+) memor(?:y|ies)$")


def response_detail(content: bytes) -> str:
    """The ``detail`` of one of our JSON error bodies, or the body itself."""
    text = content.decode("utf-8", "replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text or "no detail"
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return body["detail"]
    return text


def unreachable_error(base_url: str, timeout: float, exc: BaseException) -> Unavailable:
    """The ``Unavailable`` for a request that got no answer, saying why in plain words."""
    if isinstance(exc, httpx2.ConnectError | httpx.ConnectError):
        return Unavailable(
            f"cannot connect to the memory server at {base_url}: it is not running "
            f"(or not on that address); {when_down(base_url)} ({exc})"
        )
    if isinstance(exc, TimeoutError | httpx2.TimeoutException | httpx.TimeoutException):
        return Unavailable(
            f"the memory server at {base_url} did not answer within {timeout:g} s; "
            "it may be down, overloaded or behind a firewall"
        )
    return Unavailable(f"lost the connection to the memory server at {base_url}: {exc!r}")


def parse_tool_output(tool: str, text: str) -> Any:
    """The payload of a successful tool result, checked against the shape the tool documents.

    ``add_memories`` / ``search_memory``: the ``results`` list of ``{"results": [...]}``;
    ``list_memories``: a JSON array of memories; ``delete_memories``: the number deleted;
    ``delete_all_memories``: ``None``. Raises ``ValueError`` for anything else.
    """
    if tool == "delete_all_memories":
        return None
    if tool == "delete_memories":
        matched = _DELETED.match(text.strip())
        if matched is None:
            raise ValueError("not 'Successfully deleted N memories'")
        return int(matched.group(1))
    try:
        body = json.loads(text)
    except ValueError:
        raise ValueError("not JSON") from None
    if tool != "list_memories":
        if not isinstance(body, dict) or not isinstance(body.get("results"), list):
            raise ValueError("no 'results' list")
        body = body["results"]
    if not isinstance(body, list):
        raise ValueError("not a list of memories")
    items: list[Any] = body
    if not all(isinstance(item, dict) and isinstance(item.get("id"), str) for item in items):
        raise ValueError("a memory without a string 'id'")
    return items


@dataclass
class _Connection:
    """One open MCP session and the task in the portal that holds it open."""

    session: ClientSession
    stop: anyio.Event
    holder: Future[None]

    @property
    def alive(self) -> bool:
        return not self.holder.done()


class Mem0MCPClient:
    """A synchronous MCP client for one user of the memory server; see the module docstring.

    ``base_url`` is the server's root (``http://127.0.0.1:8765``); the MCP endpoint is
    ``{base_url}/mcp/{client_name}/{transport}/{user_id}``. ``timeout`` (seconds) bounds the
    connect-and-handshake and each call separately. Nothing touches the network until the
    first call (or :meth:`connect`). Safe to share between threads.
    """

    def __init__(
        self,
        base_url: str,
        user_id: str,
        token: str,
        *,
        client_name: str = "claude-code",
        transport: Transport = "http",
        timeout: float = 10.0,
    ) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.base_url = base_url.rstrip("/")
        self.user_id = user_id
        self.token = token
        self.client_name = client_name
        self.transport: Transport = transport
        self.timeout = float(timeout)
        self.url = f"{self.base_url}/mcp/{quote(client_name, safe='')}/{transport}/{quote(user_id, safe='')}"
        self._headers = {"Authorization": f"Bearer {token}"}
        self._lock = threading.Lock()
        self._connecting = threading.Lock()
        self._portal_context: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._connection: _Connection | None = None
        self._connection_count = 0
        self._http: httpx.Client | None = None
        # The last HTTP refusal the MCP transport saw: the SDK turns a 401 on a Streamable HTTP
        # POST into a generic JSON-RPC error, so the status is read off the wire instead.
        self._refusal: tuple[int, str] | None = None
        self._closed = False

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        user_id: str,
        token: str,
        *,
        transport: Transport = "http",
        timeout: float = 10.0,
    ) -> Mem0MCPClient:
        """A client for ``mem0.mcp.base_url`` under the app name ``mem0.mcp.client_name``."""
        mcp = settings.mem0.mcp
        return cls(
            mcp.base_url, user_id, token, client_name=mcp.client_name, transport=transport, timeout=timeout
        )

    def __repr__(self) -> str:
        return f"Mem0MCPClient({self.url!r}, transport={self.transport!r})"

    # -- the tools ----------------------------------------------------------------------------
    def add(self, text: str, infer: bool = False) -> Memories:
        """Store ``text`` (verbatim unless ``infer``); returns ``[{id, memory, event}]``.

        ``event`` is ``ADD``, or ``PENDING`` when the server asks consent for the ``mcp`` channel.
        """
        return self._call("add_memories", {"text": text, "infer": infer})

    def search(self, query: str, limit: int = 10) -> Memories:
        """Up to ``limit`` (1-100) memories most relevant to ``query``, best first, each with a
        ``score``."""
        return self._call("search_memory", {"query": query, "limit": limit})

    def list(self) -> Memories:
        """Every memory of this user that this client (app) may read."""
        return self._call("list_memories", {})

    def delete(self, memory_id: str) -> int:
        """Delete one memory; returns how many were deleted (1). ``NotFound`` if there is none."""
        return self._call("delete_memories", {"memory_ids": [memory_id]})

    def delete_all(self) -> None:
        """Delete every memory of this user."""
        self._call("delete_all_memories", {})

    @property
    def connection_count(self) -> int:
        """How many MCP sessions this client has opened: 1, plus one per reconnect."""
        return self._connection_count

    # -- plain HTTP -----------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """``GET /health`` (no token needed): ``{"status": "ok", "version", ...}``.

        ``Unavailable`` when nothing answers or the server reports itself degraded (503).
        """
        http = self._http_client()
        try:
            response = http.get("/health")
        except httpx.HTTPError as exc:
            raise unreachable_error(self.base_url, self.timeout, exc) from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code == 503 and isinstance(body, dict):
            failing = ", ".join(f"{key}: {value}" for key, value in body.items() if key != "version")
            raise Unavailable(f"the memory server at {self.base_url} is degraded ({failing})")
        if response.status_code != 200 or not isinstance(body, dict):
            raise Unavailable(
                f"{self.base_url}/health answered HTTP {response.status_code}, not the memory server's "
                "health report; is the base URL right?"
            )
        return body

    # -- lifecycle ------------------------------------------------------------------------------
    def connect(self) -> None:
        """Open the MCP session now rather than on the first call."""
        self._session()

    def close(self) -> None:
        """End the session and the event-loop thread. Idempotent."""
        with self._lock:
            self._closed = True
            connection, self._connection = self._connection, None
            portal, portal_context = self._portal, self._portal_context
            self._portal = self._portal_context = None
            http, self._http = self._http, None
        if portal is not None:
            if connection is not None:
                self._shut(connection, portal)
            # Sessions discarded earlier may still be unwinding against a dead peer: cancel them.
            with suppress(RuntimeError):
                portal.call(portal.stop, True)
        if portal_context is not None:
            portal_context.__exit__(None, None, None)
        if http is not None:
            http.close()

    def __enter__(self) -> Mem0MCPClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- calls ----------------------------------------------------------------------------------
    def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call ``tool`` and return its parsed output; reconnect once if the connection dropped."""
        for attempt in (1, 2):
            connection = self._session()
            self._refusal = None
            future = self._running_portal().start_task_soon(
                connection.session.call_tool, tool, arguments, name=f"mcp call {tool}"
            )
            try:
                # Waited for here, not inside the loop: cancelling a call blocked on a dead peer
                # can itself take seconds, and the caller was promised `timeout`.
                result = future.result(timeout=self.timeout)
            except TimeoutError:
                future.cancel()
                # The session may be wedged (a half-open stream): start afresh next time. No
                # retry: the server may have done the work, and adding twice is worse than failing.
                self._discard(connection)
                raise Unavailable(
                    f"the memory server at {self.url} did not answer {tool} within {self.timeout:g} s"
                ) from None
            except Exception as exc:  # noqa: BLE001 - translated into our typed errors below
                error = self._translate(exc)
                if attempt == 1 and isinstance(error, Unavailable) and self._dropped(connection, exc):
                    self._discard(connection)
                    continue
                raise error from exc
            text = self._text_of(tool, result)
            try:
                return parse_tool_output(tool, text)
            except ValueError as exc:
                shown = text if len(text) <= 200 else text[:200] + "…"
                raise Unavailable(
                    f"{tool} at {self.url} returned output this client does not understand ({exc}): {shown!r}"
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _text_of(self, tool: str, result: Any) -> str:
        texts = [getattr(block, "text", None) for block in result.content or []]
        text = "\n".join(t for t in texts if isinstance(t, str))
        if result.is_error:
            message = _TOOL_ERROR_PREFIX.sub("", text).strip() or f"{tool} failed without a message"
            if _PAUSED.search(message):
                raise Forbidden(message)
            if message.startswith("No accessible memories"):
                raise NotFound(message)
            raise BadInput(message)
        return text

    # -- the session ----------------------------------------------------------------------------
    def _session(self) -> _Connection:
        """The open session, connecting first if there is none or it has dropped."""
        with self._connecting:  # one thread connects; the others then share its session
            with self._lock:
                if self._closed:
                    raise RuntimeError("this Mem0MCPClient is closed")
                if self._connection is not None and self._connection.alive:
                    return self._connection
                self._connection = None
                portal = self._start_portal()
            self._refusal = None
            try:
                holder, (session, stop) = portal.start_task(self._hold_session, name=f"mcp {self.url}")
            except Exception as exc:  # noqa: BLE001 - translated into our typed errors
                raise self._translate(exc, connecting=True) from exc
            connection = _Connection(session=session, stop=stop, holder=holder)
            with self._lock:
                if not self._closed:
                    self._connection = connection
                    self._connection_count += 1
                    return connection
            self._shut(connection, portal, wait=False)
            raise RuntimeError("this Mem0MCPClient is closed")

    async def _hold_session(self, *, task_status: TaskStatus[tuple[ClientSession, anyio.Event]]) -> None:
        """Open the transport and session, report them, and hold them open until told to stop.

        Runs as one task in the portal because the SDK's context managers own task groups,
        which must be entered and left by the same task.
        """
        stop = anyio.Event()
        with anyio.CancelScope(deadline=anyio.current_time() + self.timeout) as connecting:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._open_transport())
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                connecting.deadline = math.inf
                task_status.started((session, stop))
                await stop.wait()
        if connecting.cancelled_caught:
            raise TimeoutError

    @asynccontextmanager
    async def _open_transport(self) -> AsyncIterator[Any]:
        hooks = {"response": [self._note_refusal]}
        if self.transport == "sse":

            def factory(
                headers: dict[str, str] | None = None,
                timeout: httpx2.Timeout | None = None,
                auth: httpx2.Auth | None = None,
            ) -> httpx2.AsyncClient:
                return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, event_hooks=hooks)

            async with sse_client(
                self.url,
                headers=self._headers,
                timeout=self.timeout,
                sse_read_timeout=SSE_READ_TIMEOUT,
                httpx_client_factory=factory,
            ) as streams:
                yield streams
        else:
            async with (
                httpx2.AsyncClient(headers=self._headers, timeout=self.timeout, event_hooks=hooks) as http,
                # The server is stateless: there is no session to end with a DELETE.
                streamable_http_client(self.url, http_client=http, terminate_on_close=False) as streams,
            ):
                yield streams[0], streams[1]

    async def _note_refusal(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            await response.aread()
            self._refusal = (response.status_code, response_detail(response.content))

    def _shut(
        self, connection: _Connection, portal: BlockingPortal | None = None, *, wait: bool = True
    ) -> None:
        """Tell a session's holder task to close the session; ``wait`` (briefly) for it to go."""
        portal = portal or self._portal
        if portal is None or not connection.alive:
            return
        try:
            portal.call(connection.stop.set)
            if wait:
                connection.holder.result(timeout=self.timeout)
        except Exception:  # noqa: BLE001, S110 - a dying connection may fail as it goes; it is gone either way
            pass

    def _discard(self, connection: _Connection) -> None:
        """Forget a broken session; it unwinds in the background while the caller moves on."""
        with self._lock:
            if self._connection is connection:
                self._connection = None
        self._shut(connection, wait=False)

    def _start_portal(self) -> BlockingPortal:
        """The event-loop thread, started on first use. Call with ``self._lock`` held."""
        if self._portal is None:
            context = anyio.from_thread.start_blocking_portal(name="ccmem-mcp-client")
            self._portal = context.__enter__()
            self._portal_context = context
        return self._portal

    def _running_portal(self) -> BlockingPortal:
        portal = self._portal
        if portal is None:
            raise RuntimeError("this Mem0MCPClient is closed")
        return portal

    def _http_client(self) -> httpx.Client:
        with self._lock:
            if self._closed:
                raise RuntimeError("this Mem0MCPClient is closed")
            if self._http is None:
                self._http = httpx.Client(base_url=self.base_url, timeout=self.timeout)
            return self._http

    # -- errors ---------------------------------------------------------------------------------
    def _dropped(self, connection: _Connection, exc: BaseException) -> bool:
        """Whether a failed call found the connection broken (worth one reconnect)."""
        if not connection.alive:
            return True
        return any(
            isinstance(leaf, _CONNECTION_ERRORS)
            or (isinstance(leaf, MCPError) and leaf.error.code == CONNECTION_CLOSED)
            for leaf in _leaves(exc)
        )

    def _translate(self, exc: BaseException, *, connecting: bool = False) -> MemoryStackError:
        leaves = _leaves(exc)
        for leaf in leaves:
            if isinstance(leaf, MemoryStackError):
                return leaf
        for leaf in leaves:
            if isinstance(leaf, httpx2.HTTPStatusError):
                response = leaf.response
                detail = self._refusal[1] if self._refusal else response.reason_phrase
                return self._refused(response.status_code, detail)
        if self._refusal is not None:
            return self._refused(*self._refusal)
        for leaf in leaves:
            if isinstance(leaf, httpx2.TransportError | TimeoutError):
                return unreachable_error(self.base_url, self.timeout, leaf)
        for leaf in leaves:
            if isinstance(leaf, MCPError) and leaf.error.code != CONNECTION_CLOSED:
                return Unavailable(f"the memory server at {self.url} answered with an MCP error: {leaf}")
        first = leaves[0] if leaves else exc
        doing = "connecting to" if connecting else "talking to"
        return Unavailable(
            f"lost the connection while {doing} the memory server at {self.url}: "
            f"{first.__class__.__name__}: {first}"
        )

    def _refused(self, status: int, detail: str) -> MemoryStackError:
        if status == 401:
            return Unauthorised(
                f"the memory server at {self.base_url} refused the token: {detail} (HTTP 401)"
            )
        if status == 404:
            return Unavailable(f"{self.url} is not an MCP endpoint of the memory server: {detail} (HTTP 404)")
        return error_for_status(status, detail)


_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    httpx2.TransportError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
)


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, in order; ``[exc]`` for a plain one."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


class _TeardownNoise(logging.Filter):
    """Drops the SDK's traceback for a message that arrives after its session was closed.

    When a call times out the client discards the session; on SSE the server's late answer
    then meets a closed stream, and the SDK logs that at ERROR with a traceback. It is the
    expected end of a session we gave up on, not a fault anyone can act on.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, anyio.BrokenResourceError | anyio.ClosedResourceError)


logging.getLogger("mcp.client.sse").addFilter(_TeardownNoise())
