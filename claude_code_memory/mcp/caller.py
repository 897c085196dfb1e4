"""What every MCP tool module shares: who the request acts for, and the one way to call the service.

Tools and resources act for the *caller* of the current request: the user and client named
in the URL the client connected to, checked against its bearer token by the transport
(`transport.py`), which binds them with :func:`bind_caller` before the SDK dispatches the
message. The SDK runs each handler in the context of the HTTP request that carried the
message, so a context variable reaches the handler on SSE and Streamable HTTP alike.

A tool calls the service with :func:`run` (a resource with :func:`read`): the call names a
real method, so mypy checks its arguments, and it runs on a worker thread because the service
blocks. Our typed errors are translated here, once: ``ToolError`` (the client sees
``isError: true`` and the message) or ``ResourceError`` (a JSON-RPC error).

``server.py`` imports the tool modules and they import this one; none imports ``server.py``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import ToolAnnotations

from ..errors import MemoryStackError

if TYPE_CHECKING:
    from ..memories.service import MemoryService

#: How the service is reached: the app's one service, looked up on every call.
GetService = Callable[[], "MemoryService"]

CHANNEL = "mcp"
# Hints for clients that auto-approve safe tools; OpenMemory sends none, so they only add.
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

P = ParamSpec("P")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Caller:
    """Who a request acts for: the user and client (app) from the URL path."""

    user_id: str
    client_name: str


_caller: ContextVar[Caller | None] = ContextVar("ccmem_mcp_caller", default=None)


@contextmanager
def bind_caller(caller: Caller) -> Iterator[None]:
    token = _caller.set(caller)
    try:
        yield
    finally:
        _caller.reset(token)


def current_caller() -> Caller:
    caller = _caller.get()
    if caller is None:
        # Only reachable if a transport forgot to bind: a bug, but not the model's to fix.
        raise ToolError("Error: user_id not provided")
    return caller


def bound_caller() -> Caller | None:
    """The caller of this request, or None (a resource answers that with its own error)."""
    return _caller.get()


async def own_memories(get_service: GetService, user_id: str) -> list[dict[str, Any]]:
    """The memories of ``user_id`` for the ``memory://{user_id}`` resources: only this
    connection's own user's."""
    caller = bound_caller()
    if caller is None or caller.user_id != user_id:
        raise ResourceError(f"this connection cannot read the memories of user {user_id!r}")
    return await read(
        get_service().reads.list_memories, user_id=user_id, app_name=caller.client_name, channel=CHANNEL
    )


async def run(function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``function(*args, **kwargs)`` on a worker thread; our typed errors become ``ToolError``."""
    try:
        return await anyio.to_thread.run_sync(partial(function, *args, **kwargs))
    except MemoryStackError as error:
        raise ToolError(error.message) from error


async def read(function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """As :func:`run`, for a resource: our typed errors become ``ResourceError``."""
    try:
        return await anyio.to_thread.run_sync(partial(function, *args, **kwargs))
    except MemoryStackError as error:
        raise ResourceError(error.message) from error


def require_text(value: str, name: str) -> None:
    if not value.strip():
        raise ToolError(f"{name} must be a non-empty string")


NOW_DESCRIPTION = (
    "When the question is asked, ISO 8601 (e.g. 2026-07-28T09:30:00Z): 'yesterday' or 'last "
    "week' in the query are read against it (default: the server's clock)"
)


def hiding(function: F, *names: str) -> F:
    """``function`` as a tool that does not declare ``names`` (they keep their defaults): how a
    list frozen byte for byte (the default one, :mod:`.dialects`) keeps a tool's old schema while
    the same tool in another dialect takes an argument more."""
    if names:
        signature = inspect.signature(function, eval_str=True)
        kept = [parameter for parameter in signature.parameters.values() if parameter.name not in names]
        function.__signature__ = signature.replace(parameters=kept)  # type: ignore[attr-defined]
    return function


def parse_now(value: str | None) -> datetime | None:
    """A tool's ``now`` argument (ISO 8601; no zone: UTC) as an aware datetime; None: the clock."""
    if value is None or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(
            f"now must be an ISO 8601 date-time such as 2026-07-28T09:30:00Z, got {value!r}"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def not_another_user(user_id: str | None) -> None:
    """A tool's ``user_id`` argument (mcp-mitm-mem0's) may only name the connection's own user:
    the token decides whose memories a call reaches, never an argument."""
    caller = current_caller()
    if user_id is not None and user_id not in ("", caller.user_id):
        raise ToolError(
            f"user_id {user_id!r} is not the user of this connection ({caller.user_id!r}): omit "
            "user_id, or connect with that user's token and URL to reach their memories"
        )
