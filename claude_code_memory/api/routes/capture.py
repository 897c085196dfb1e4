"""`POST /api/v1/capture`: one captured conversation turn, from the capture proxy, or one
captured note (``text``: a Claude Code auto-memory file, from the client's sync).

The turn becomes one memory (``User: …`` / ``Assistant: …``), a note its text, through the same
service call and policy gate as every other write, on the ``capture`` channel: redacted, capped
(truncated with a marker or refused, by ``performance.capture_oversize``), and with consent on,
parked as a pending item until its owner approves it or a standing rule decides.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...memories.read_model.shapes import naive_utc
from ...memories.recall.hook_events import turn_text as stored_turn_text
from ..deps import PrincipalDep, ServiceDep, acting_user
from .storage import with_quota_warning

router = APIRouter(prefix="/api/v1", tags=["capture"])


class CapturedMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["user", "assistant"]
    content: str = Field(min_length=1)


class CaptureRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    user_id: str | None = None
    app: str = Field("claude-code", min_length=1, max_length=64)
    project: str | None = Field(None, max_length=512)
    conversation_id: str | None = Field(None, max_length=128)
    model: str | None = Field(None, max_length=128)
    #: A turn's messages, or ``text``: one of the two.
    messages: list[CapturedMessage] | None = Field(None, min_length=1, max_length=200)
    text: str | None = Field(None, min_length=1)
    captured_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: How many secrets the sender (the capture proxy) already masked; older proxies send none.
    redactions: int = Field(0, ge=0, le=1_000_000)

    @field_validator("captured_at")
    @classmethod
    def _naive_utc(cls, value: datetime | None) -> datetime | None:
        return naive_utc(value)

    @model_validator(mode="after")
    def _one_of(self) -> CaptureRequest:
        if (self.messages is None) == (self.text is None):
            raise ValueError("send either messages (a turn) or text (a note), not both")
        return self


def turn_text(messages: list[CapturedMessage]) -> str:
    # The hooks' Stop capture stores a turn the same way, so a turn both see is stored once.
    return stored_turn_text((m.role, m.content) for m in messages)


@router.post("/capture", summary="Store one captured conversation turn (through the policy gate)")
def capture(
    body: CaptureRequest, response: Response, service: ServiceDep, principal: PrincipalDep
) -> dict[str, Any]:
    uid = acting_user(principal, body.user_id)
    results = service.writes.add_memory(
        user_id=uid,
        app_name=body.app,
        text=turn_text(body.messages) if body.messages is not None else body.text or "",
        metadata=body.metadata,
        channel="capture",
        project=body.project,
        conversation_id=body.conversation_id,
        model=body.model,
        captured_at=body.captured_at,
        redacted_upstream=body.redactions,
    )
    first = results[0] if results else {}
    status = {"ADD": "stored", "PENDING": "pending", "NONE": "duplicate", "FILTERED": "filtered"}.get(
        first.get("event", ""), "stored"
    )
    answer: dict[str, Any] = {
        "status": status,
        "id": first.get("id"),
        "ids": [r["id"] for r in results if r.get("id")],
        "state": first.get("state"),
        "memory": first.get("memory"),
    }
    if first.get("reason"):
        answer["reason"] = first["reason"]  # why the capture filter dropped it (docs/hygiene.md)
    return with_quota_warning(response, service, uid, answer)
