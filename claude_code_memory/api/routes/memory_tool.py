"""`POST /api/v1/memory-tool`: one command of Anthropic's memory tool for the token's user.

The body is the tool's input as the model sends it (``{"command": "view", "path":
"/memories"}``, see docs/memory-tool.md); the answer is ``{"result": text}``, the text the model
should read. A command that fails answers 4xx with the usual error shape, whose ``detail`` is
the reference's error text (404 a path that does not exist, 409 one that does, 413 a cap,
422 anything else), and changes nothing. The work is :meth:`MemoryService.memory_tool`; the
package's ``client.memory_tool.RemoteMemoryTool`` is its client for the ``anthropic`` SDK.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Query
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from ..deps import PrincipalDep, ServiceDep, acting_user

router = APIRouter(prefix="/api/v1", tags=["memory-tool"])

DEFAULT_APP = "memory-tool"


class MemoryToolResult(BaseModel):
    result: str


@router.post(
    "/memory-tool",
    summary="Run one command of Anthropic's memory tool (memory_20250818) on the user's files",
    response_model=MemoryToolResult,
)
async def run_memory_tool(
    service: ServiceDep,
    principal: PrincipalDep,
    command: dict[str, Any] = Body(
        ...,
        description="The memory tool's input: command, path, file_text, old_str, new_str, "
        "insert_line, insert_text, view_range, old_path, new_path",
        examples=[{"command": "view", "path": "/memories"}],
    ),
    user_id: str | None = Query(None, description="whose files (only with the admin token)"),
    app: str = Query(DEFAULT_APP, description="the app recorded on new files"),
) -> MemoryToolResult:
    uid = acting_user(principal, user_id)
    text = await run_in_threadpool(service.memory_tool, user_id=uid, app_name=app, command=command)
    return MemoryToolResult(result=text)
