"""MCP tools that look back over the caller's stored conversations (memories/reflection/analysis.py):

    analyze_conversations(since?, project?)   recurring topics and problems, decisions, files and
                                              commands most touched, questions left open
    suggest_next_actions(project?)            what to pick up next, each with its reason

Both read stored memories only and answer JSON; a prose ``summary`` is added when the server
has ``reflection.llm`` configured. Registered by :func:`claude_code_memory.mcp.server.build_server`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from ..errors import MemoryStackError
from ..memories.reflection import analysis as reflection
from . import server as mcp_server  # a module: server.py imports this one while it loads

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ANALYZE_DESCRIPTION = (
    "Look back over the user's stored conversations: recurring topics (labelled by their key "
    "terms), problems that recur across sessions (the same error or failing command), decisions "
    "made, the files and commands most touched, and questions or TODOs left open. Read-only."
)
SUGGEST_DESCRIPTION = (
    "Suggest what to do next, from the user's stored conversations: where the last session "
    "stopped, unresolved problems, open TODOs and unanswered questions, each with its reason "
    "and the memories it comes from. Read-only."
)


def register(server: MCPServer, get_service: Callable[[], Any]) -> None:
    async def run(function: Callable[..., dict[str, Any]], /, **kwargs: Any) -> str:
        try:
            result = await anyio.to_thread.run_sync(partial(function, get_service(), **kwargs))
        except MemoryStackError as error:
            raise ToolError(error.message) from error
        return json.dumps(result, indent=2, default=str, ensure_ascii=False)

    @server.tool(description=ANALYZE_DESCRIPTION, annotations=READ_ONLY)
    async def analyze_conversations(
        since: Annotated[
            str | None,
            Field(description="Only memories stored since then: 7d, 24h, 2w, or an ISO date (default: all)"),
        ] = None,
        project: Annotated[
            str | None, Field(description="Only memories of this project (a repository's name)")
        ] = None,
    ) -> str:
        caller = mcp_server.current_caller()
        return await run(
            reflection.analyze_conversations, user_id=caller.user_id, since=since, project=project
        )

    @server.tool(description=SUGGEST_DESCRIPTION, annotations=READ_ONLY)
    async def suggest_next_actions(
        project: Annotated[
            str | None, Field(description="Only memories of this project (a repository's name)")
        ] = None,
    ) -> str:
        caller = mcp_server.current_caller()
        return await run(reflection.suggest_next_actions, user_id=caller.user_id, project=project)
