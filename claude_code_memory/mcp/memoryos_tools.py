"""MCP tools of two systems this product grew from, over our tiers and store (docs/profile.md):

- MemoryOS (BAI-LAB/MemoryOS): ``add_memory``, ``retrieve_memory``, ``get_user_profile``, with
  its argument names and result objects;
- min-memory: ``store_memory``, ``retrieve_context``, ``fetch``, ``get_context_info``, where
  they map onto ours (its ``scope``, ``memory_type``, ``entity`` and ``tags`` are kept in the
  memory's metadata; ``scope: project`` sets the memory's project).

Every write goes through the service's write path (the policy gate, consent, quota). Unlike
MemoryOS, which answers ``{"status": "error"}``, a failure is raised: the client sees
``isError`` and the message, as with our other tools.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from ..search.request import SearchRequest
from .caller import (
    ADDITIVE,
    CHANNEL,
    NOW_DESCRIPTION,
    READ_ONLY,
    GetService,
    current_caller,
    hiding,
    parse_now,
    run,
)

MemoryType = Literal["core_identity", "project_context", "task_instruction", "episodic"]
Scope = Literal["global", "project", "task"]
MAX_RESULTS = 50


def register(server: MCPServer, get_service: GetService, *, as_of: bool = False) -> None:
    """Add the MemoryOS and min-memory tools to ``server``; with ``as_of``, ``retrieve_context``
    takes ``now`` (the default list keeps it without)."""

    # -- MemoryOS -------------------------------------------------------------------------
    @server.tool(
        description="Add a conversation pair (the user's input and the assistant's response) to "
        "memory. It becomes a turn of the short-term memory, then of a mid-term segment, and "
        "its facts reach the user's profile when the segment is hot.",
        annotations=ADDITIVE,
    )
    async def add_memory(
        user_input: Annotated[str, Field(description="The user's input or question")],
        agent_response: Annotated[str, Field(description="The assistant's response")],
        timestamp: Annotated[
            str | None, Field(description="When it was said: YYYY-MM-DD HH:MM:SS (UTC) or ISO 8601")
        ] = None,
        meta_data: Annotated[
            dict[str, Any] | None,
            Field(description="Optional metadata; conversation_id and project are used"),
        ] = None,
    ) -> dict[str, Any]:
        caller = current_caller()
        answer: dict[str, Any] = await run(
            get_service().memoryos.add_pair,
            user_id=caller.user_id,
            app_name=caller.client_name,
            user_input=user_input,
            agent_response=agent_response,
            timestamp=timestamp,
            meta_data=meta_data,
            channel=CHANNEL,
        )
        return answer

    @server.tool(
        description="Retrieve memories relevant to a query from all tiers: the short-term turns "
        "of the current conversation, mid-term pages, and the user's and the assistant's "
        "long-term knowledge.",
        annotations=READ_ONLY,
    )
    async def retrieve_memory(
        query: Annotated[str, Field(description="What to look for")],
        relationship_with_user: Annotated[
            str, Field(description="Accepted for MemoryOS compatibility (friend, assistant, ...)")
        ] = "friend",
        style_hint: Annotated[str, Field(description="Accepted for MemoryOS compatibility")] = "",
        max_results: Annotated[
            int,
            Field(
                description=f"Most pages and knowledge entries each (1-{MAX_RESULTS})",
                json_schema_extra={"minimum": 1, "maximum": MAX_RESULTS},
            ),
        ] = 10,
    ) -> dict[str, Any]:
        caller = current_caller()
        if not query.strip():
            raise ToolError("query must be a non-empty string")
        if not 1 <= max_results <= MAX_RESULTS:
            raise ToolError(f"max_results must be between 1 and {MAX_RESULTS}, got {max_results}")
        answer: dict[str, Any] = await run(
            get_service().memoryos.retrieve,
            user_id=caller.user_id,
            app_name=caller.client_name,
            query=query,
            max_results=max_results,
        )
        return answer

    @server.tool(
        description="The user's profile (identity, preferences, tools, projects, working style), "
        "optionally with the user's knowledge entries and the assistant's knowledge.",
        annotations=READ_ONLY,
    )
    async def get_user_profile(
        include_knowledge: Annotated[bool, Field(description="Include the user's knowledge entries")] = True,
        include_assistant_knowledge: Annotated[
            bool, Field(description="Include the assistant's knowledge")
        ] = False,
    ) -> dict[str, Any]:
        caller = current_caller()
        answer: dict[str, Any] = await run(
            get_service().memoryos.user_profile,
            user_id=caller.user_id,
            include_knowledge=include_knowledge,
            include_assistant_knowledge=include_assistant_knowledge,
        )
        return answer

    # -- min-memory -----------------------------------------------------------------------
    @server.tool(description="Store a memory with its type and scope", annotations=ADDITIVE)
    async def store_memory(
        text: Annotated[str, Field(description="The text to remember")],
        memory_type: MemoryType = "episodic",
        scope: Scope = "global",
        entity: str | None = None,
        project: str | None = None,
        task_id: str | None = None,
        tags: list[str] | None = None,
        status: str | None = None,
        priority: int | None = None,
    ) -> str:
        caller = current_caller()
        if not text.strip():
            raise ToolError("text must be a non-empty string")
        if scope in ("project", "task") and not project:
            raise ToolError("project is required when scope is 'project' or 'task'")
        if scope == "task" and not task_id:
            raise ToolError("task_id is required when scope is 'task'")
        metadata = {
            key: value
            for key, value in {
                "memory_type": memory_type,
                "scope": scope,
                "entity": entity,
                "task_id": task_id,
                "tags": tags,
                "status": status,
                "priority": priority,
            }.items()
            if value is not None
        }
        results = await run(
            get_service().writes.add_memory,
            user_id=caller.user_id,
            app_name=caller.client_name,
            text=text,
            metadata=metadata,
            channel=CHANNEL,
            project=project if scope != "global" else None,
        )
        [result] = results[:1] or [{}]
        status_word = {"ADD": "stored", "PENDING": "pending", "NONE": "already_existed"}.get(
            result.get("event", ""), "stored"
        )
        return json.dumps({"memory_id": result.get("id"), "status": status_word})

    async def retrieve_context(
        query: Annotated[str, Field(description="What to look for")],
        scope: Scope | None = None,
        memory_type: list[str] | None = None,
        project: Annotated[
            str | None, Field(description="This project's memories and the global ones")
        ] = None,
        task_id: str | None = None,
        include_related: Annotated[bool, Field(description="Accepted for compatibility")] = True,
        limit: Annotated[int, Field(json_schema_extra={"minimum": 1, "maximum": 100})] = 10,
        score_threshold: float = 0.0,
        recency_weight: Annotated[float, Field(description="Accepted for compatibility")] = 0.3,
        status_filter: Annotated[list[str] | None, Field(description="Accepted for compatibility")] = None,
        now: Annotated[str | None, Field(description=NOW_DESCRIPTION)] = None,
    ) -> str:
        caller = current_caller()
        if not query.strip():
            raise ToolError("query must be a non-empty string")
        if not 1 <= limit <= 100:
            raise ToolError(f"limit must be between 1 and 100, got {limit}")
        asked = SearchRequest(
            user_id=caller.user_id,
            app_name=caller.client_name,
            query=query,
            limit=min(100, limit * 3),
            with_categories=False,
            now=parse_now(now),
        )
        hits = await run(get_service().pipeline.search, asked)
        context = []
        for hit in hits:
            memory = hit.memory
            meta = memory.metadata_ or {}
            memory_scope = meta.get("scope") or ("project" if memory.project else "global")
            if project is not None and memory.project not in (project, None):
                continue
            if scope is not None and memory_scope != scope:
                continue
            if memory_type and meta.get("memory_type", "episodic") not in memory_type:
                continue
            if task_id is not None and meta.get("task_id") != task_id:
                continue
            if hit.score < score_threshold:
                continue
            context.append(
                {
                    "id": str(memory.id),
                    "text": memory.content,
                    "memory_type": meta.get("memory_type", "episodic"),
                    "scope": memory_scope,
                    "entity": meta.get("entity"),
                    "project": memory.project,
                    "score": hit.score,
                    "created_at": memory.created_at.isoformat(),
                    "tags": meta.get("tags", []),
                }
            )
            if len(context) == limit:
                break
        return json.dumps(context, indent=2)

    server.tool(description="Retrieve context relevant to a query, scoped", annotations=READ_ONLY)(
        hiding(retrieve_context, *(() if as_of else ("now",)))
    )

    @server.tool(description="Fetch a specific memory by its ID", annotations=READ_ONLY)
    async def fetch(id: Annotated[str, Field(description="The memory's id")]) -> str:  # noqa: A002 - min-memory's name
        caller = current_caller()
        memory = await run(get_service().reads.get, id, caller.user_id)
        return str(memory.content)

    @server.tool(description="Information about this connection (project detection)", annotations=READ_ONLY)
    async def get_context_info() -> str:
        caller = current_caller()
        # The server's own working directory says nothing about the client's project: null.
        return json.dumps(
            {
                "platform": "http",
                "user": caller.user_id,
                "client": caller.client_name,
                "pwd": None,
                "git_info": None,
                "timestamp": datetime.now(UTC).isoformat(),
            }
        )
