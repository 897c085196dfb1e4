"""Retention and forgetting over REST: forget by scope, the purge schedule, a purge now.

    POST /api/v1/forget               a user's memories by app / project / conversation / since
    GET  /api/v1/retention            the policy, the next scheduled sweep and the last one
    POST /api/v1/retention/purge      sweep now (admin: it spans every user)

Each deleting call answers with a receipt (counts per store); ``dry_run`` counts and lists
what would go and changes nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...errors import Forbidden
from ...memories.lifecycle.retention import parse_since
from ...store.values import iso
from ..deps import PrincipalDep, RetentionDep, acting_user

router = APIRouter(prefix="/api/v1", tags=["retention"])


class ForgetRequest(BaseModel):
    # A misspelt criterion must fail, not widen the delete to everything the others match.
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    app: str | None = Field(None, min_length=1, max_length=64)
    project: str | None = Field(None, min_length=1, max_length=512)
    conversation_id: str | None = Field(None, min_length=1, max_length=128)
    since: datetime | None = Field(None, description="epoch seconds or an ISO date / date-time (UTC)")
    everything: bool = False
    dry_run: bool = False

    @field_validator("since", mode="before")
    @classmethod
    def _since(cls, value: object) -> datetime | None:
        return parse_since(value)


@router.post("/forget", summary="Hard-delete a user's memories by app, project, conversation or date")
def forget(body: ForgetRequest, retention: RetentionDep, principal: PrincipalDep) -> dict[str, Any]:
    """Every memory of the user matching all the given criteria leaves every store (SQL row
    and its dependents, vector point, mem0 history). Without criteria, `everything: true` is
    required. A user token forgets its own memories; the admin token names `user_id`."""
    uid = acting_user(principal, body.user_id)
    receipt = retention.forget(
        uid,
        app=body.app,
        project=body.project,
        conversation_id=body.conversation_id,
        since=body.since,
        everything=body.everything,
        dry_run=body.dry_run,
    )
    return receipt.to_dict()


@router.get("/retention", summary="Retention policy, next scheduled purge and the last purge's receipt")
def retention_status(retention: RetentionDep, principal: PrincipalDep) -> dict[str, Any]:
    privacy = retention.privacy
    last = retention.last_run
    return {
        "auto_delete_after_days": privacy.auto_delete_after_days,
        "pending_expire_days": privacy.pending_expire_days,
        "interval_minutes": privacy.purge_interval_minutes,
        "next_run_at": iso(retention.next_run_at),
        # The last sweep spans every user: only the admin sees which memories it took.
        "last_run": last.to_dict(with_ids=principal.is_admin) if last is not None else None,
    }


@router.post("/retention/purge", summary="Run the retention sweep now (admin token)")
def purge(
    retention: RetentionDep,
    principal: PrincipalDep,
    dry_run: bool = Query(False, description="count and list what would go; change nothing"),
) -> dict[str, Any]:
    if not principal.is_admin:
        raise Forbidden("purging spans every user's memories: it needs the admin token")
    return retention.sweep(dry_run=dry_run).to_dict()
