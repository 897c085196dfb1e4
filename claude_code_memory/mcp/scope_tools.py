"""MCP tools for scopes, links, entities and the trash (min-memory's organisation of memory).

    set_project(project)                the caller's current project for later calls
    complete_task(task, promote?)       a task's memories archived, or promoted to its project
    move_memories(memory_ids, project?, task?)   into another scope (no project: global)
    link_memories(a, b, relation)       a typed link between two memories
    list_entities(kind?, limit?)        people, projects, tools, files, identifiers mentioned
    search_entities(query, kind?)       entities by name, with the memories that mention them
    restore_memories(memory_ids)        back from the trash (privacy.trash_days > 0)

Where the current project lives: in this process's memory, under the MCP session (an SSE
connection keeps one session for all its messages) and under the caller (user and client name
from the URL) — the Streamable HTTP transport is stateless, so each of its requests is a new
session and only the caller's entry carries over. A session's own ``set_project`` wins over
its caller's. Nothing is stored: after a restart no project is set until ``set_project`` (or
an explicit ``project``) names one. Two clients connected under one client name share the
caller's entry; a client that works in several projects at once passes ``project`` per call.

API replicas (``server.replicas`` > 1): a Streamable HTTP request may reach any replica, so the
caller's entry is kept in the database (``service.shared``, store/shared_state.py) for
:data:`CALLER_TTL` and every replica reads the same one. A session's entry stays in the process:
an SSE session is one connection, held by one replica (docs/team.md).
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from ..errors import MemoryStackError
from ..memories.organise.scopes import MAX_PROJECT, clean_name, search_scope
from .caller import ADDITIVE, DESTRUCTIVE, READ_ONLY, GetService, current_caller, run

if TYPE_CHECKING:
    from ..store.shared_state import SharedState

#: How long a caller's current project is kept in the shared state after it was set.
CALLER_TTL = timedelta(days=30)


def _caller_scope(user_id: str, client_name: str) -> str:
    return "mcp-project:" + hashlib.sha256(f"{user_id}\x1f{client_name}".encode()).hexdigest()


class CurrentProjects:
    """The current project of each MCP session and each caller (see the module docstring)."""

    def __init__(self) -> None:
        self._sessions: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()
        self._callers: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()
        self.shared: Callable[[], SharedState | None] = lambda: None

    def set(self, ctx: Context | None, user_id: str, client_name: str, project: str | None) -> None:
        shared = self.shared()
        if shared is not None:
            shared.put(_caller_scope(user_id, client_name), "project", project, ttl=CALLER_TTL)
        with self._lock:
            if shared is None:
                self._callers[(user_id, client_name)] = project
            session = _session(ctx)
            if session is not None:
                self._sessions[session] = project

    def get(self, ctx: Context | None, user_id: str, client_name: str) -> str | None:
        with self._lock:
            session = _session(ctx)
            if session is not None and session in self._sessions:
                return self._sessions[session]
        shared = self.shared()
        if shared is not None:
            project = shared.get(_caller_scope(user_id, client_name), "project")
            return project if isinstance(project, str) else None
        with self._lock:
            return self._callers.get((user_id, client_name))


def _session(ctx: Context | None) -> Any:
    try:
        return ctx.session if ctx is not None else None
    except (AttributeError, ValueError, TypeError):  # no request in flight
        return None


CURRENT = CurrentProjects()


def resolve_project(ctx: Context | None, project: str | None) -> str | None:
    """The project a call names, else the caller's current project (None: not known)."""
    caller = current_caller()
    try:
        named = clean_name(project, "project", MAX_PROJECT)
    except MemoryStackError as error:
        raise ToolError(error.message) from error
    return named if named is not None else CURRENT.get(ctx, caller.user_id, caller.client_name)


def search_filters(
    ctx: Context | None, scope: str | None, project: str | None, task: str | None
) -> dict[str, Any]:
    """A search tool's ``scope`` as the search's filters (memories/organise/scopes.py), the
    project resolved as :func:`resolve_project` does; a bad scope is a ToolError that says why."""
    try:
        return search_scope(scope, resolve_project(ctx, project), task)
    except MemoryStackError as error:
        raise ToolError(error.message) from error


def register(server: MCPServer, get_service: GetService) -> None:
    CURRENT.shared = lambda: get_service().shared

    @server.tool(
        description="Set the current project: later add_memories and search_memory calls without an "
        "explicit project use it (search shows its memories first, with global ones). Pass an empty "
        "string to clear it.",
        annotations=ADDITIVE,
    )
    async def set_project(
        project: Annotated[str, Field(description="The project's name (e.g. the repository's name)")],
        ctx: Context,
    ) -> str:
        caller = current_caller()
        name = None if not project.strip() else resolve_project(ctx, project)
        CURRENT.set(ctx, caller.user_id, caller.client_name, name)
        return json.dumps({"project": name})

    @server.tool(
        description="Finish a task: its memories are archived, or promoted to the project when "
        "promote is true.",
        annotations=DESTRUCTIVE,
    )
    async def complete_task(
        task: Annotated[str, Field(description="The task's name")],
        ctx: Context,
        promote: Annotated[bool, Field(description="Keep the memories as project memories")] = False,
        project: Annotated[str | None, Field(description="The task's project (default: current)")] = None,
    ) -> str:
        caller = current_caller()
        name = resolve_project(ctx, project)
        if name is None:
            raise ToolError("no project: pass project or call set_project first")
        result = await run(
            get_service().scopes.complete_task,
            user_id=caller.user_id,
            project=name,
            task=task,
            promote=promote,
        )
        return json.dumps({"project": name, "task": task, **result})

    @server.tool(
        description="Move memories to another scope: a project, a task of a project, or global (no project).",
        annotations=ADDITIVE,
    )
    async def move_memories(
        memory_ids: Annotated[list[str], Field(description="The ids of the memories to move")],
        project: Annotated[str | None, Field(description="The target project; omit for global")] = None,
        task: Annotated[str | None, Field(description="The target task within the project")] = None,
    ) -> str:
        caller = current_caller()
        moved = await run(
            get_service().move_memories,
            user_id=caller.user_id,
            memory_ids=memory_ids,
            project=project,
            task=task,
        )
        return json.dumps({"moved": moved})

    @server.tool(
        description="Link two memories with a relation (e.g. 'depends on', 'supersedes').",
        annotations=ADDITIVE,
    )
    async def link_memories(
        a: Annotated[str, Field(description="The first memory's id (the link's source)")],
        b: Annotated[str, Field(description="The second memory's id (the link's target)")],
        relation: Annotated[
            str, Field(description="How a relates to b, a short lower-case phrase")
        ] = "related",
    ) -> str:
        caller = current_caller()
        link = await run(get_service().links.link, caller.user_id, a, b, relation)
        return json.dumps(link)

    @server.tool(
        description="List the people, projects, tools, files and identifiers the memories mention, "
        "most mentioned first.",
        annotations=READ_ONLY,
    )
    async def list_entities(
        kind: Annotated[
            str | None, Field(description="Only this kind: person, project, tool, file or identifier")
        ] = None,
        limit: Annotated[int, Field(description="Most entities to return (1-500)")] = 50,
    ) -> str:
        caller = current_caller()
        items = await run(get_service().entities.listing, caller.user_id, kind=kind, limit=limit)
        return json.dumps({"entities": items})

    @server.tool(
        description="Find entities (people, projects, tools, files, identifiers) by name, with the "
        "memories that mention each.",
        annotations=READ_ONLY,
    )
    async def search_entities(
        query: Annotated[str, Field(description="Part of the entity's name")],
        kind: Annotated[str | None, Field(description="Only this kind")] = None,
        limit: Annotated[int, Field(description="Most entities to return (1-500)")] = 20,
    ) -> str:
        caller = current_caller()
        items = await run(get_service().entities.search, caller.user_id, query, kind=kind, limit=limit)
        return json.dumps({"entities": items})

    @server.tool(description="Restore deleted memories from the trash.", annotations=ADDITIVE)
    async def restore_memories(
        memory_ids: Annotated[list[str], Field(description="The ids of the deleted memories")],
    ) -> str:
        caller = current_caller()
        result = await run(get_service().restore_memories, user_id=caller.user_id, memory_ids=memory_ids)
        return json.dumps(result)
