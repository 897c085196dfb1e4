"""`/api/v1/profile`: the user's long-term profile and the assistant's knowledge, which the
user reads, corrects and deletes (docs/profile.md). A deleted fact stays deleted: extracting
it again finds its tombstone. Reading the profile first brings it up to date
(``refresh=false`` skips that)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from ...memories.profile.memoryos import profile_summary
from ...memories.profile.tiers import refreshed_json
from ..deps import PrincipalDep, ServiceDep, acting_user

router = APIRouter(prefix="/api/v1/profile", tags=["profile"])

UserQuery = Query(None, description="whose profile (only with the admin token)")


class FactEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, description="the corrected fact (at most 300 characters)")
    category: str | None = Field(
        None, description="identity, preference, tools, project, working_style (user); knowledge"
    )


@router.get("", summary="The profile: facts about the user and the assistant's knowledge")
def get_profile(
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = UserQuery,
    subject: str | None = Query(None, description="user or assistant"),
    category: str | None = Query(None),
    refresh: bool = Query(True, description="bring the profile up to date first"),
) -> dict[str, Any]:
    uid = acting_user(principal, user_id)
    if refresh:
        service.tiers.refresh(uid)
    facts = service.profile.facts(uid, subject=subject, category=category)
    user_facts = [f for f in facts if f["subject"] == "user"]
    return {"user_id": uid, "summary": profile_summary(user_facts), "facts": facts, "total": len(facts)}


@router.patch("/facts/{fact_id}", summary="Correct a fact (its old wording is never extracted again)")
def edit_fact(
    fact_id: str,
    body: FactEdit,
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = UserQuery,
) -> dict[str, Any]:
    uid = acting_user(principal, user_id)
    return service.profile.edit(uid, fact_id, text=body.text, category=body.category)


@router.delete("/facts/{fact_id}", status_code=204, summary="Delete a fact; it stays deleted")
def delete_fact(
    fact_id: str, service: ServiceDep, principal: PrincipalDep, user_id: str | None = UserQuery
) -> Response:
    uid = acting_user(principal, user_id)
    service.profile.delete(uid, fact_id)
    return Response(status_code=204)


@router.post("/refresh", summary="Segment new turns, recompute heat, archive, promote, extract")
def refresh(service: ServiceDep, principal: PrincipalDep, user_id: str | None = UserQuery) -> dict[str, int]:
    return refreshed_json(service.tiers.refresh(acting_user(principal, user_id)))
