"""`POST /api/v1/hooks/claude-code`: the target of Claude Code's hooks (docs/hooks.md), and
`POST /api/v1/hooks/recall`: the same recall for a client that is not Claude Code's hooks
(the client's ``ClaudeCodeMemoryManager``), as JSON with the memories.

Claude Code posts a hook's input (a JSON object naming ``hook_event_name``) and reads the
answer as the hook's output: ``{}`` or ``{"hookSpecificOutput": {"hookEventName": ...,
"additionalContext": ...}}``. The work is :meth:`ClaudeCodeHooks.handle` (``service.hooks``). A bad token is
refused (401) like on every route; anything else that goes wrong answers 200 with ``{}``, so a
hook never stands in the session's way. The recall route is a plain API route: its errors
are the usual JSON errors.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from ...memories.read_model.shapes import iso, naive_utc
from ...memories.recall.context import HOOK_APP
from ...memories.recall.hook_events import MAX_PROJECT, MAX_SESSION_ID
from ...memories.service import MemoryService
from ..deps import BearerDep, PrincipalDep, ServiceDep, acting_user, authenticate

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
    now: datetime | None = Query(
        None,
        description="when the prompt was made (ISO-8601; the plugin's hook command stamps it): relative "
        "dates in the prompt count back from it; default: the server's clock",
    ),
) -> JSONResponse:
    raw = await request.body()
    try:
        hook_input = json.loads(raw) if raw else {}
    except (ValueError, RecursionError):  # nested too deep: a body JsonDepthLimit did not read
        log.warning("hook input is not JSON (%d bytes): answered nothing", len(raw))
        hook_input = {}
    return JSONResponse(
        await run_in_threadpool(_answer, request, service, user_id, hook_input, naive_utc(now))
    )


def _answer(
    request: Request, service: MemoryService, user_id: str | None, hook_input: Any, now: datetime | None
) -> dict[str, Any]:
    uid = acting_user(authenticate(request), user_id)
    return service.hooks.handle(uid, hook_input, now=now or service.now())


class RecallRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    query: str = Field(min_length=1, max_length=100_000)
    #: The conversation: a memory is given once per session. None: a session of its own.
    session_id: str | None = Field(None, min_length=1, max_length=MAX_SESSION_ID)
    project: str | None = Field(None, max_length=MAX_PROJECT)
    app: str = Field(HOOK_APP, pattern=r"^[A-Za-z0-9._-]{1,64}$")
    limit: int | None = Field(None, ge=1, le=50)
    user_id: str | None = None
    now: datetime | None = Field(
        None, description="when the prompt was made (ISO-8601; as-of); default: the server's clock"
    )


@router.post(
    "/recall",
    summary="The memories a hook would inject for a prompt: above the relevance floor, once per session",
)
def recall(body: RecallRequest, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    uid = acting_user(principal, body.user_id)
    given = service.recall.recall_prompt(
        uid,
        session_id=body.session_id or str(uuid.uuid4()),
        project=body.project,
        prompt=body.query,
        app=body.app,
        limit=body.limit,
        now=naive_utc(body.now) or service.now(),
    )
    return {
        "context": given.block,
        "memories": [
            {
                "id": memory.id,
                "memory": memory.text,
                "created_at": iso(memory.when),
                "project": memory.project,
                "score": memory.similarity,
            }
            for memory in given.memories
        ],
    }
