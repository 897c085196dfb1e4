"""The ``mitm-mem0`` dialect (``?tools=mitm-mem0``): mcp-mitm-mem0's tools and resources as it named them.

    search_memories(query, user_id?, limit?)        a list of mem0 memory items
    list_memories(user_id?)                         a list of mem0 memory items
    add_memory(messages, user_id?, metadata?)       mem0's add result: {"results": [...]}
    delete_memory(memory_id)                        {"status": "deleted", "memory_id": ...}
    analyze_conversations(user_id?, limit?)         our analysis (memories/reflection), over the
                                                    ``limit`` newest memories' time span
    suggest_next_actions(user_id?)                  a list of suggestion strings
    memory://{user_id}, memory://recent             Markdown, as mcp-mitm-mem0 renders them

``user_id`` is accepted for the system's own signatures, but the connection's token decides
whose memories a call reaches: a ``user_id`` naming anyone else is an error result that says so
(:func:`.caller.not_another_user`), and nothing is read or written. Every write goes through
the service's write path (the policy gate, consent, quota).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ..search.request import SearchRequest
from .caller import (
    CHANNEL,
    GetService,
    bound_caller,
    current_caller,
    not_another_user,
    own_memories,
    parse_now,
    read,
    require_text,
    run,
)

MAX_LIMIT = 100
RECENT = 10
USER_ID = "Accepted for mcp-mitm-mem0's signature; only the connection's own user"
READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
ADD = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
DELETE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


class Message(BaseModel):
    role: str
    content: str


class Items(BaseModel):
    """A list of mem0 memory items (id, memory, hash, created_at, metadata, ...), under ``result``
    as the SDK wraps a list result: structuredContent is an object."""

    result: list[dict[str, Any]]


class AddOutput(BaseModel):
    results: list[dict[str, Any]]


class DeleteOutput(BaseModel):
    status: str
    memory_id: str


class Suggestions(BaseModel):
    """Suggested next steps, most pressing first, under ``result``."""

    result: list[str]


def answer(data: Any, *, indent: int | None = 2) -> CallToolResult:
    plain = json.loads(json.dumps(data, default=str))
    # A list cannot be structuredContent (an object); the schema of a list is the SDK's wrapper.
    structured = plain if isinstance(plain, dict) else {"result": plain}
    return CallToolResult(
        content=[TextContent(text=json.dumps(plain, indent=indent, ensure_ascii=False))],
        structured_content=structured,
    )


def register(server: MCPServer, get_service: GetService, names: frozenset[str] | None = None) -> None:
    """Add the dialect's tools (only ``names`` when given) and, with every tool, its resources."""

    def wanted(name: str) -> bool:
        return names is None or name in names

    if wanted("search_memories"):

        @server.tool(description="Search memories using a natural-language query.", annotations=READ)
        async def search_memories(
            query: Annotated[str, Field(description="Search query")],
            user_id: Annotated[str | None, Field(description=USER_ID)] = None,
            limit: Annotated[
                int, Field(description=f"Maximum results (1-{MAX_LIMIT})", ge=1, le=MAX_LIMIT)
            ] = 10,
            now: Annotated[
                str | None, Field(description="When the question is asked, ISO 8601 (default: now)")
            ] = None,
        ) -> Annotated[CallToolResult, Items]:
            not_another_user(user_id)
            require_text(query, "query")
            caller = current_caller()
            asked = SearchRequest(
                user_id=caller.user_id,
                app_name=caller.client_name,
                query=query,
                limit=limit,
                now=parse_now(now),
            )
            results = await run(get_service().reads.search, asked)
            return answer(results)

    if wanted("list_memories"):

        @server.tool(description="List all memories for a user.", annotations=READ)
        async def list_memories(
            user_id: Annotated[str | None, Field(description=USER_ID)] = None,
        ) -> Annotated[CallToolResult, Items]:
            not_another_user(user_id)
            caller = current_caller()
            items = await run(
                get_service().reads.list_memories,
                user_id=caller.user_id,
                app_name=caller.client_name,
                channel=CHANNEL,
            )
            return answer(items)

    if wanted("add_memory"):

        @server.tool(
            description="Add a new memory from messages (each with a role and its content).",
            annotations=ADD,
        )
        async def add_memory(
            messages: Annotated[
                list[Message], Field(description="Messages with 'role' and 'content'", min_length=1)
            ],
            user_id: Annotated[str | None, Field(description=USER_ID)] = None,
            metadata: Annotated[dict[str, Any] | None, Field(description="Optional metadata")] = None,
        ) -> Annotated[CallToolResult, AddOutput]:
            not_another_user(user_id)
            caller = current_caller()
            text = _conversation(messages)
            require_text(text, "messages' content")
            results = await run(
                get_service().writes.add_memory,
                user_id=caller.user_id,
                app_name=caller.client_name,
                text=text,
                metadata=metadata,
                channel=CHANNEL,
            )
            return answer({"results": results})

    if wanted("delete_memory"):

        @server.tool(description="Delete a specific memory by its id.", annotations=DELETE)
        async def delete_memory(
            memory_id: Annotated[str, Field(description="Memory ID to delete")],
        ) -> Annotated[CallToolResult, DeleteOutput]:
            caller = current_caller()
            deleted = await run(
                get_service().states.delete_memories,
                [memory_id],
                user_id=caller.user_id,
                app_name=caller.client_name,
            )
            if not deleted:
                raise ToolError(
                    f"no memory {memory_id!r} of this user to delete: search_memories or list_memories "
                    "gives the ids"
                )
            return answer({"status": "deleted", "memory_id": memory_id})

    if wanted("analyze_conversations"):

        @server.tool(
            description="Analyze recent conversations to identify patterns and generate insights.",
            annotations=READ,
        )
        async def analyze_conversations(
            user_id: Annotated[str | None, Field(description=USER_ID)] = None,
            limit: Annotated[
                int, Field(description="Number of recent memories to analyze", ge=1, le=1000)
            ] = 20,
        ) -> Annotated[CallToolResult, dict[str, Any]]:
            not_another_user(user_id)
            caller = current_caller()
            service = get_service()
            recent = await run(service.reads.recent, user_id=caller.user_id, limit=limit)
            since = min((item["created_at"] for item in recent), default=None)
            result = await run(
                service.reflection.analyze_conversations,
                user_id=caller.user_id,
                since=str(since) if since is not None else None,
            )
            return answer(result)

    if wanted("suggest_next_actions"):

        @server.tool(
            description="Get suggestions for next steps based on conversation history.",
            annotations=READ,
        )
        async def suggest_next_actions(
            user_id: Annotated[str | None, Field(description=USER_ID)] = None,
        ) -> Annotated[CallToolResult, Suggestions]:
            not_another_user(user_id)
            caller = current_caller()
            result = await run(get_service().reflection.suggest_next_actions, user_id=caller.user_id)
            return answer([f"{item['action']} ({item['reason']})" for item in result["actions"]])

    if names is not None:
        return

    @server.resource(
        "memory://recent",
        name="recent_memories",
        description="Most recent memories of the connected user",
        mime_type="text/markdown",
    )
    async def recent_memories() -> str:
        caller = bound_caller()
        if caller is None:
            raise ResourceError("no user bound to this connection")
        items = await read(get_service().reads.recent, user_id=caller.user_id, limit=RECENT)
        lines = ["# Recent Memories", "", f"Showing {len(items)} most recent memories", ""]
        for number, item in enumerate(items, 1):
            lines += [
                f"## {number}. {item.get('created_at')}",
                f"- ID: {item.get('id')}",
                f"- Content: {item.get('memory')}",
                "",
            ]
        return "\n".join(lines)

    @server.resource(
        "memory://{user_id}",
        name="user_memories",
        description="All memories of a user (only the user of this connection)",
        mime_type="text/markdown",
    )
    async def user_memories(user_id: str) -> str:
        items = await own_memories(get_service, user_id)
        lines = [f"# Memories for user: {user_id}", "", f"Total memories: {len(items)}", ""]
        for number, item in enumerate(items, 1):
            lines += [
                f"## Memory {number}",
                f"- ID: {item.get('id')}",
                f"- Created: {item.get('created_at')}",
                f"- Content: {item.get('memory')}",
            ]
            if item.get("metadata"):
                lines.append(f"- Metadata: {item['metadata']}")
            lines.append("")
        return "\n".join(lines)


def _conversation(messages: list[Message]) -> str:
    """One message is stored as its content; several as ``role: content`` lines."""
    if len(messages) == 1:
        return messages[0].content
    return "\n".join(f"{message.role}: {message.content}" for message in messages)
