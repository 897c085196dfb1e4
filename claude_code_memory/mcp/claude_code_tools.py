"""The ``claude-code`` dialect (``?tools=claude-code``): the few tools a model needs beside the hooks.

    search_memory(query, limit?, scope?, project?, now?)   OpenMemory's search, fewer arguments
    add_memories(text, scope?, project?)                   remember something now
    delete_memories(memory_ids)                            forget what the user asks to forget
    memory_20250818                                        Anthropic's memory tool (memory_tool.py)

The hooks already recall before every prompt and capture every turn, so the model needs to
search only for what recall missed, to add only what the user asks it to remember, and to
delete on request (docs/mcp.md argues the choice). OpenMemory's names and text results, so a
CLAUDE.md that names ``search_memory`` keeps working; each tool also declares its
``outputSchema`` and answers ``structuredContent``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ..search.request import SearchRequest
from . import scope_tools
from .caller import CHANNEL, NOW_DESCRIPTION, GetService, current_caller, parse_now, require_text, run

MAX_LIMIT = 100

SEARCH = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
ADD = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
# Deleting the same ids twice leaves the store as once: idempotent, though the second call errs.
DELETE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


class Hit(BaseModel, extra="allow"):
    id: str
    memory: str
    score: float | None = None
    created_at: str | None = None


class SearchOutput(BaseModel):
    results: list[Hit]


class AddOutput(BaseModel):
    results: list[dict[str, Any]] = Field(description="One entry per memory written: id, memory, event")
    quota_warning: dict[str, Any] | None = None


class DeleteOutput(BaseModel):
    deleted: int = Field(description="How many memories were deleted")


def structured(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], structured_content=data)


def register(server: MCPServer, get_service: GetService) -> None:
    @server.tool(
        description="Search the user's long-term memory for what the automatic recall did not bring.",
        annotations=SEARCH,
    )
    async def search_memory(
        query: Annotated[str, Field(description="What to look for")],
        ctx: Context,
        limit: Annotated[int, Field(description=f"Most results (1-{MAX_LIMIT})", ge=1, le=MAX_LIMIT)] = 10,
        scope: Annotated[
            Literal["default", "project", "global", "all", "team"],
            Field(
                description="default: the current project's first, with global ones; team: your teams' only"
            ),
        ] = "default",
        project: Annotated[str | None, Field(description="The project (default: the current one)")] = None,
        now: Annotated[str | None, Field(description=NOW_DESCRIPTION)] = None,
    ) -> Annotated[CallToolResult, SearchOutput]:
        caller = current_caller()
        require_text(query, "query")
        filters = scope_tools.search_filters(ctx, scope, project, None)
        asked = SearchRequest(
            user_id=caller.user_id,
            app_name=caller.client_name,
            query=query,
            limit=limit,
            now=parse_now(now),
            **filters,
        )
        results = await run(get_service().reads.search, asked)
        answer = {"results": json.loads(json.dumps(results, default=str))}
        return structured(json.dumps(answer, indent=2), answer)

    @server.tool(
        description="Remember something the user asked you to remember (the hooks keep the rest).",
        annotations=ADD,
    )
    async def add_memories(
        text: Annotated[str, Field(description="The text to remember")],
        ctx: Context,
        scope: Annotated[
            Literal["default", "global", "project"],
            Field(description="global: for every project; default: the current project's when one is set"),
        ] = "default",
        project: Annotated[str | None, Field(description="The project (default: the current one)")] = None,
    ) -> Annotated[CallToolResult, AddOutput]:
        caller = current_caller()
        require_text(text, "text")
        named = None if scope == "global" else scope_tools.resolve_project(ctx, project)
        if scope == "project" and named is None:
            raise ToolError("scope 'project' needs a project: pass project")
        results = await run(
            get_service().writes.add_memory,
            user_id=caller.user_id,
            app_name=caller.client_name,
            text=text,
            channel=CHANNEL,
            project=named,
        )
        answer: dict[str, Any] = {"results": json.loads(json.dumps(results, default=str))}
        warning = await run(get_service().storage.quota_warning, caller.user_id)
        if warning is not None:
            answer["quota_warning"] = warning
        return structured(json.dumps(answer, default=str), answer)

    @server.tool(description="Delete memories by their ids.", annotations=DELETE)
    async def delete_memories(
        memory_ids: Annotated[
            list[str], Field(description="The ids of the memories to delete", min_length=1)
        ],
    ) -> Annotated[CallToolResult, DeleteOutput]:
        caller = current_caller()
        deleted = await run(
            get_service().states.delete_memories,
            memory_ids,
            user_id=caller.user_id,
            app_name=caller.client_name,
        )
        if not deleted:
            raise ToolError("No accessible memories found with provided IDs: search_memory gives the ids")
        return structured(f"Successfully deleted {deleted} memories", {"deleted": deleted})
