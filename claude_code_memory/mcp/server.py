"""The MCP server: OpenMemory's five memory tools and two resources over the memory service,
and the server of each tool set by dialect (``?tools=``, :mod:`.dialects`, docs/mcp.md).

Who a request acts for, and how a tool calls the service, is ``caller.py``'s; the other tools
are registered from their own modules (scopes, the memory tool, MemoryOS and min-memory,
reflection). Failures are raised, never returned: our typed errors become ``ToolError`` (the
client sees ``isError: true`` and the message) or ``ResourceError`` (a JSON-RPC error).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import Field

from .. import __version__
from ..search.planning import MAX_CONTEXT, MAX_SEARCH_LIMIT
from ..search.request import SearchRequest
from . import (
    claude_code_tools,
    dialects,
    memory_tool,
    memoryos_tools,
    mitm_tools,
    reflection_tools,
    scope_tools,
)
from .caller import (
    ADDITIVE,
    CHANNEL,
    DESTRUCTIVE,
    NOW_DESCRIPTION,
    READ_ONLY,
    Caller,
    GetService,
    bind_caller,
    bound_caller,
    current_caller,
    hiding,
    own_memories,
    parse_now,
    read,
    require_text,
    run,
)

__all__ = ["Caller", "bind_caller", "build_server", "current_caller"]

#: OpenMemory's server name; some clients show it.
SERVER_NAME = "mem0-mcp-server"
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
INSTRUCTIONS = (
    "Long-term memory for this user. Call search_memory with the user's question before answering, "
    "and add_memories when the user shares something worth remembering."
)
#: What a dialect's own tools are called, where its instructions must name others.
DIALECT_INSTRUCTIONS = {
    "mitm-mem0": "Long-term memory for this user. Call search_memories with the user's question before "
    "answering, and add_memory when the user shares something worth remembering.",
    "memoryos": "Long-term memory for this user. Call retrieve_memory with the user's question before "
    "answering, and add_memory with each exchange worth keeping.",
    "min-memory": "Long-term memory for this user. Call retrieve_context with the user's question before "
    "answering, and store_memory when the user shares something worth remembering.",
    "memory-tool": "Long-term memory for this user, as the /memories directory of memory_20250818: view "
    "it before starting a task, and record what you learn as you go.",
}


def build_server(get_service: GetService, dialect: str = dialects.DEFAULT) -> MCPServer:
    """Build the MCP server of one dialect (:mod:`.dialects`) once; every connection and request
    of that dialect shares it. ``get_service()`` is called on every tool call."""
    instructions = DIALECT_INSTRUCTIONS.get(dialect, INSTRUCTIONS)
    server = _quiet(
        lambda: MCPServer(SERVER_NAME, version=__version__, instructions=instructions, log_level="WARNING")
    )
    if dialect == "mitm-mem0":
        mitm_tools.register(server, get_service)
        return server
    if dialect in ("claude-code", "memory-tool"):
        if dialect == "claude-code":
            claude_code_tools.register(server, get_service)
        memory_tool.register(server, get_service, structured=True)
        _json_resources(server, get_service)
        return server
    _register_all(server, get_service, as_of=dialect not in (dialects.DEFAULT, "openmemory"))
    if dialect == "all":
        mitm_tools.register(server, get_service, names=frozenset({"search_memories", "delete_memory"}))
    keep = set(dialects.TOOLS[dialect])
    for name in dialects.TOOLS[dialects.DEFAULT]:
        if name not in keep:
            server.remove_tool(name)
    return server


def _register_all(server: MCPServer, get_service: GetService, *, as_of: bool) -> None:
    """Every tool of the default list, in its order, as it has always been registered; with
    ``as_of`` the search tools also take ``now`` (not in the frozen lists)."""

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
        require_text(text, "text")
        named = None if scope == "global" else scope_tools.resolve_project(ctx, project)
        if scope in ("project", "task") and named is None:
            raise ToolError(f"scope {scope!r} needs a project: pass project or call set_project first")
        if scope == "task" and not task:
            raise ToolError("scope 'task' needs a task")
        results = await run(
            get_service().writes.add_memory,
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
        warning = await run(get_service().storage.quota_warning, caller.user_id)
        if warning is not None:  # near the quota: the client (and the model) hear it before a refusal
            answer["quota_warning"] = warning
        return json.dumps(answer, default=str)

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
            Literal["default", "project", "task", "global", "all", "team"],
            Field(
                description="default: the current project's memories first, with global ones "
                "(everything when no project is set); project/task/global: only those; all: everything; "
                "team: only your teams' memories"
            ),
        ] = "default",
        project: Annotated[str | None, Field(description="The project (default: the current one)")] = None,
        task: Annotated[str | None, Field(description="A task within the project")] = None,
        now: Annotated[str | None, Field(description=NOW_DESCRIPTION)] = None,
    ) -> str:
        caller = current_caller()
        require_text(query, "query")
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ToolError(f"limit must be between 1 and {MAX_SEARCH_LIMIT}, got {limit}")
        if not 0 <= context <= MAX_CONTEXT:
            raise ToolError(f"context must be between 0 and {MAX_CONTEXT}, got {context}")
        asked = SearchRequest(
            user_id=caller.user_id,
            app_name=caller.client_name,
            query=query,
            limit=limit,
            context=context,
            now=parse_now(now),
            **scope_tools.search_filters(ctx, scope, project, task),
        )
        results = await run(get_service().reads.search, asked)
        return json.dumps({"results": results}, indent=2, default=str)

    # The default list's search_memory is frozen as it was (no ``now``); other dialects take it.
    frozen = () if as_of else ("now",)
    server.tool(description=SEARCH_DESCRIPTION, annotations=READ_ONLY)(hiding(search_memory, *frozen))

    @server.tool(description=LIST_DESCRIPTION, annotations=READ_ONLY)
    async def list_memories() -> str:
        caller = current_caller()
        items = await run(
            get_service().reads.list_memories,
            user_id=caller.user_id,
            app_name=caller.client_name,
            channel=CHANNEL,
        )
        return json.dumps(items, indent=2, default=str)

    @server.tool(description=DELETE_DESCRIPTION, annotations=DESTRUCTIVE)
    async def delete_memories(
        memory_ids: Annotated[list[str], Field(description="The ids of the memories to delete")],
    ) -> str:
        caller = current_caller()
        if not memory_ids:
            raise ToolError("memory_ids must list at least one memory id")
        deleted = await run(
            get_service().states.delete_memories,
            memory_ids,
            user_id=caller.user_id,
            app_name=caller.client_name,
        )
        if not deleted:
            raise ToolError("No accessible memories found with provided IDs")
        return f"Successfully deleted {deleted} memories"

    @server.tool(description=DELETE_ALL_DESCRIPTION, annotations=DESTRUCTIVE)
    async def delete_all_memories() -> str:
        caller = current_caller()
        await run(get_service().states.delete_all, user_id=caller.user_id, app_name=caller.client_name)
        return "Successfully deleted all memories"

    scope_tools.register(server, get_service)
    memory_tool.register(server, get_service)
    memoryos_tools.register(server, get_service, as_of=as_of)
    _json_resources(server, get_service)
    reflection_tools.register(server, get_service)


def _json_resources(server: MCPServer, get_service: GetService) -> None:
    """OpenMemory's two resources, JSON."""

    # Registered before the template so that memory://recent is not read as a user called "recent".
    @server.resource(
        "memory://recent",
        name="recent_memories",
        description="The most recent memories of the connected user",
        mime_type="application/json",
    )
    async def recent_memories() -> str:
        caller = bound_caller()
        if caller is None:
            raise ResourceError("no user bound to this connection")
        recent = await read(get_service().reads.recent, user_id=caller.user_id, limit=RECENT_LIMIT)
        return json.dumps(recent, indent=2, default=str)

    @server.resource(
        "memory://{user_id}",
        name="user_memories",
        description="All memories of a user (only the user of this connection)",
        mime_type="application/json",
    )
    async def user_memories(user_id: str) -> str:
        items = await own_memories(get_service, user_id)
        return json.dumps(items, indent=2, default=str)


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
