"""`/api/v1/tiers`: the short-term turns of a conversation and the mid-term segments with
their heat (docs/profile.md)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from ..deps import PrincipalDep, ServiceDep, acting_user

router = APIRouter(prefix="/api/v1/tiers", tags=["tiers"])

UserQuery = Query(None, description="whose memory (only with the admin token)")


@router.get("/short-term", summary="The newest turns of a conversation (no vector search)")
def short_term(
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = UserQuery,
    conversation_id: str | None = Query(None, max_length=128, description="default: the newest"),
) -> dict[str, Any]:
    uid = acting_user(principal, user_id)
    turns = service.tiers.short_term(uid, conversation_id=conversation_id)
    return {"turns": turns, "total": len(turns)}


@router.get("/segments", summary="Mid-term segments, hottest first")
def segments(
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = UserQuery,
    state: str | None = Query(None, description="active or archived"),
    limit: int = Query(100, ge=1, le=1000),
) -> dict[str, Any]:
    uid = acting_user(principal, user_id)
    items = service.tiers.segments(uid, state=state, limit=limit)
    return {"items": items, "total": len(items)}
