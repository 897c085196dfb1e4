"""The MCP server: OpenMemory's five memory tools and two resources over the memory service.

Tools and resources act for the *caller* of the current request: the user and client named
in the URL the client connected to, checked against its bearer token by the transport
(`transport.py`), which binds them with :func:`bind_caller` before the SDK dispatches the
message. The SDK runs each handler in the context of the HTTP request that carried the
message, so a context variable reaches the handler on SSE and Streamable HTTP alike.

Failures are raised, never returned: our typed errors become ``ToolError`` (the client sees
``isError: true`` and the message) or ``ResourceError`` (a JSON-RPC error).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from .. import __version__
from ..errors import MemoryStackError
from ..memories.lifecycle import storage
from ..memories.organise.scopes import search_scope
from . import reflection_tools

#: OpenMemory's server name; some clients show it.
SERVER_NAME = "mem0-mcp-server"
CHANNEL = "mcp"
MAX_SEARCH_LIMIT = 100
MAX_CONTEXT = 5  # neighbouring turns per side; the service checks the same bound
RECENT_LIMIT = 20

ADD_DESCRIPTION = (
    "Add a new memory. This method is called everytime the user informs anything about themselves, "
    "their preferences, or anything that has any relevant information which can be useful in the "
    "future conversation. This can also be called when the user asks you to remember something. "
    "The text is stored verbatim by default (infer=false); set infer to true for LLM fact "
    "extraction, which works only when the server has an LLM configured."
)
SEARCH_DESCRIPTION = "Search through stored memories. This method is called EVERYTIME the user asks anything."
LIST_DESCRIPTION = "List all memories in the user's memory"
DELETE_DESCRIPTION = "Delete specific memories by their IDs"
DELETE_ALL_DESCRIPTION = "Delete all memories in the user's memory"
# Hints for clients that auto-approve safe tools; OpenMemory sends none, so they only add.
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
INSTRUCTIONS = (
    "Long-term memory for this user. Call search_memory with the user's question before answering, "
    "and add_memories when the user shares something worth remembering."
)


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


def build_server(get_service: Callable[[], Any]) -> MCPServer:
    """Build the MCP server once; every connection and request shares it."""
    from . import scope_tools  # noqa: PLC0415 - it imports this module's helpers

    server = _quiet(
        lambda: MCPServer(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    )

    async def call(method: str, /, **kwargs: Any) -> Any:
        """Run a blocking service method on a worker thread; typed errors become tool errors."""
        try:
            return await anyio.to_thread.run_sync(partial(getattr(get_service(), method), **kwargs))
        except MemoryStackError as error:
            raise ToolError(error.message) from error

    @server.tool(description=ADD_DESCRIPTION, annotations=ADDITIVE)
    async def add_memories(
        text: Annotated[str, Field(description="The text to remember")],
        ctx: Context,
        infer: Annotated[
            bool,
            Field(description="Extract facts with the server's LLM instead of storing the text verbatim"),
        ] = False,
        scope: Annotated[
            Literal["default", "global", "project", "task"],
            Field(description="global: for every project; default: the current project's when one is set"),
        ] = "default",
        project: Annotated[str | None, Field(description="The project (default: the current one)")] = None,
        task: Annotated[str | None, Field(description="A task within the project")] = None,
    ) -> str:
        caller = current_caller()
        _require_text(text, "text")
        named = None if scope == "global" else scope_tools.resolve_project(ctx, project)
        if scope in ("project", "task") and named is None:
            raise ToolError(f"scope {scope!r} needs a project: pass project or call set_project first")
        if scope == "task" and not task:
            raise ToolError("scope 'task' needs a task")
        results = await call(
            "add_memory",
            user_id=caller.user_id,
            app_name=caller.client_name,
            text=text,
            infer=infer,
            metadata=None,
            channel=CHANNEL,
            project=named,
            task=task,
        )
        answer: dict[str, Any] = {"results": results}
        warning = await anyio.to_thread.run_sync(storage.quota_warning, get_service(), caller.user_id)
        if warning is not None:  # near the quota: the client (and the model) hear it before a refusal
            answer["quota_warning"] = warning
        return json.dumps(answer, default=str)

    @server.tool(description=SEARCH_DESCRIPTION, annotations=READ_ONLY)
    async def search_memory(
        query: Annotated[str, Field(description="The search query")],
        ctx: Context,
        limit: Annotated[
            int,
            Field(
                description=f"Maximum number of results (1-{MAX_SEARCH_LIMIT})",
                json_schema_extra={"minimum": 1, "maximum": MAX_SEARCH_LIMIT},
            ),
        ] = 10,
        context: Annotated[
            int,
            Field(
                description=f"Neighbouring turns of the same conversation to include on each side "
                f"of every result (0-{MAX_CONTEXT})",
                json_schema_extra={"minimum": 0, "maximum": MAX_CONTEXT},
            ),
        ] = 0,
        scope: Annotated[
            Literal["default", "project", "task", "global", "all"],
            Field(
                description="default: the current project's memories first, with global ones "
                "(everything when no project is set); project/task/global: only those; all: everything"
            ),
        ] = "default",
        project: Annotated[str | None, Field(description="The project (default: the current one)")] = None,
        task: Annotated[str | None, Field(description="A task within the project")] = None,
    ) -> str:
        caller = current_caller()
        _require_text(query, "query")
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ToolError(f"limit must be between 1 and {MAX_SEARCH_LIMIT}, got {limit}")
        if not 0 <= context <= MAX_CONTEXT:
            raise ToolError(f"context must be between 0 and {MAX_CONTEXT}, got {context}")
        results = await call(
            "search",
            user_id=caller.user_id,
            app_name=caller.client_name,
            query=query,
            limit=limit,
            channel=CHANNEL,
            context=context,
            scope=await _scope_filters(scope, scope_tools.resolve_project(ctx, project), task),
        )
        return json.dumps({"results": results}, indent=2, default=str)

    @server.tool(description=LIST_DESCRIPTION, annotations=READ_ONLY)
    async def list_memories() -> str:
        caller = current_caller()
        items = await call(
            "list_memories", user_id=caller.user_id, app_name=caller.client_name, channel=CHANNEL
        )
        return json.dumps(items, indent=2, default=str)

    @server.tool(description=DELETE_DESCRIPTION, annotations=DESTRUCTIVE)
    async def delete_memories(
        memory_ids: Annotated[list[str], Field(description="The ids of the memories to delete")],
    ) -> str:
        caller = current_caller()
        if not memory_ids:
            raise ToolError("memory_ids must list at least one memory id")
        deleted = await call(
            "delete_memories", user_id=caller.user_id, app_name=caller.client_name, memory_ids=memory_ids
        )
        if not deleted:
            raise ToolError("No accessible memories found with provided IDs")
        return f"Successfully deleted {deleted} memories"

    @server.tool(description=DELETE_ALL_DESCRIPTION, annotations=DESTRUCTIVE)
    async def delete_all_memories() -> str:
        caller = current_caller()
        await call("delete_all", user_id=caller.user_id, app_name=caller.client_name)
        return "Successfully deleted all memories"

    scope_tools.register(server, call)
    from .memory_tool import register as register_memory_tool  # it imports this module

    register_memory_tool(server, call)

    from . import memoryos_tools  # here: it imports this module's names

    memoryos_tools.register(server, call)

    async def read(method: str, /, **kwargs: Any) -> str:
        try:
            result = await anyio.to_thread.run_sync(partial(getattr(get_service(), method), **kwargs))
        except MemoryStackError as error:
            raise ResourceError(error.message) from error
        return json.dumps(result, indent=2, default=str)

    # Registered before the template so that memory://recent is not read as a user called "recent".
    @server.resource(
        "memory://recent",
        name="recent_memories",
        description="The most recent memories of the connected user",
        mime_type="application/json",
    )
    async def recent_memories() -> str:
        caller = _caller.get()
        if caller is None:
            raise ResourceError("no user bound to this connection")
        return await read("recent", user_id=caller.user_id, limit=RECENT_LIMIT)

    @server.resource(
        "memory://{user_id}",
        name="user_memories",
        description="All memories of a user (only the user of this connection)",
        mime_type="application/json",
    )
    async def user_memories(user_id: str) -> str:
        caller = _caller.get()
        if caller is None or caller.user_id != user_id:
            raise ResourceError(f"this connection cannot read the memories of user {user_id!r}")
        return await read("list_memories", user_id=user_id, app_name=caller.client_name, channel=CHANNEL)

    reflection_tools.register(server, get_service)
    return server


async def _scope_filters(scope: str, project: str | None, task: str | None) -> dict[str, Any]:
    try:
        return search_scope(scope, project, task)
    except MemoryStackError as error:
        raise ToolError(error.message) from error


def _require_text(value: str, name: str) -> None:
    if not value.strip():
        raise ToolError(f"{name} must be a non-empty string")


def _quiet(factory: Callable[[], MCPServer]) -> MCPServer:
    """Construct an MCPServer without letting it configure logging.

    ``MCPServer.__init__`` calls ``logging.basicConfig`` with a Rich handler, which would take
    over the root logger of the whole process when it is built before the app configures its
    own logging. ``basicConfig`` does nothing when the root logger has a handler, so give it one
    for the duration.
    """
    root = logging.getLogger()
    guard = logging.NullHandler()
    root.addHandler(guard)
    try:
        return factory()
    finally:
        root.removeHandler(guard)
