"""MCP tools that look back over the caller's stored conversations (memories/reflection/analysis.py):

    analyze_conversations(since?, project?)   recurring topics and problems, decisions, files and
                                              commands most touched, questions left open
    suggest_next_actions(project?)            what to pick up next, each with its reason

Both read stored memories only and answer JSON; a prose ``summary`` is added when the server
has ``reflection.llm`` configured. Registered by :func:`claude_code_memory.mcp.server.build_server`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from .caller import READ_ONLY, GetService, current_caller, run

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


def _json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, default=str, ensure_ascii=False)


def register(server: MCPServer, get_service: GetService) -> None:
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
        caller = current_caller()
        return _json(
            await run(
                get_service().reflection.analyze_conversations,
                user_id=caller.user_id,
                since=since,
                project=project,
            )
        )

    @server.tool(description=SUGGEST_DESCRIPTION, annotations=READ_ONLY)
    async def suggest_next_actions(
        project: Annotated[
            str | None, Field(description="Only memories of this project (a repository's name)")
        ] = None,
    ) -> str:
        caller = current_caller()
        return _json(
            await run(get_service().reflection.suggest_next_actions, user_id=caller.user_id, project=project)
        )
