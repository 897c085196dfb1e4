"""`POST /api/v1/hooks/claude-code`: the target of Claude Code's hooks (docs/hooks.md).

Claude Code posts a hook's input (a JSON object naming ``hook_event_name``) and reads the
answer as the hook's output: ``{}`` or ``{"hookSpecificOutput": {"hookEventName": ...,
"additionalContext": ...}}``. The work is :meth:`MemoryService.handle_hook`. A bad token is
refused (401) like on every route; anything else that goes wrong answers 200 with ``{}``, so a
hook never stands in the session's way.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ...memories.service import MemoryService
from ..deps import BearerDep, ServiceDep, acting_user, authenticate

log = logging.getLogger(__name__)

router = APIRouter(prefix="/api/v1/hooks", tags=["hooks"])


@router.post(
    "/claude-code",
    summary="Answer one Claude Code hook (recall at SessionStart and prompts, capture at Stop)",
)
async def claude_code_hook(
    request: Request,
    service: ServiceDep,
    _: BearerDep,
    user_id: str | None = Query(None, description="whose memory (only with the admin token)"),
) -> JSONResponse:
    raw = await request.body()
    try:
        hook_input = json.loads(raw) if raw else {}
    except ValueError:
        log.warning("hook input is not JSON (%d bytes): answered nothing", len(raw))
        hook_input = {}
    return JSONResponse(await run_in_threadpool(_answer, request, service, user_id, hook_input))


def _answer(request: Request, service: MemoryService, user_id: str | None, hook_input: Any) -> dict[str, Any]:
    uid = acting_user(authenticate(request), user_id)
    return service.handle_hook(uid, hook_input)
