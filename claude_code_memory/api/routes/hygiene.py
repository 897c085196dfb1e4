"""`/api/v1/hygiene`: proposals to merge duplicates and archive superseded, junk and stale
memories; their review (approve, edit, reject, bulk), undo, standing rules, and the job.

    GET  /api/v1/hygiene                          open proposals by kind, captures filtered, the schedule
    POST /api/v1/hygiene/run                      run the job now (a user: their memories; admin: all)
    GET  /api/v1/hygiene/proposals                the caller's proposals (?status=open&kind=duplicate)
    GET  /api/v1/hygiene/proposals/{id}           one proposal
    POST /api/v1/hygiene/proposals/{id}/approve   apply it ({"text": ...} edits the kept memory)
    POST /api/v1/hygiene/proposals/{id}/reject    nothing changes; it is not proposed again
    POST /api/v1/hygiene/proposals/{id}/undo      within hygiene.undo_days: everything as it was
    POST /api/v1/hygiene/approve | /reject        several ids, each decided on its own
    GET|POST /api/v1/hygiene/rules, DELETE /api/v1/hygiene/rules/{id}   standing rules

Proposals show memory texts, so only their owner lists them (the admin token gets 403 there
and reads the counts of ``GET /api/v1/hygiene``). See docs/hygiene.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from ...memories.read_model.shapes import iso, page
from ..deps import HygieneDep, PrincipalDep, acting_user
from ..paging import MAX_PAGE, SizeQuery

router = APIRouter(prefix="/api/v1/hygiene", tags=["hygiene"])


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunBody(_Body):
    user_id: str | None = Field(None, description="whose memories (admin: omit for every user)")


class ApproveBody(_Body):
    text: str | None = Field(None, description="the kept memory's text, edited (passes the policy gate)")


class BulkBody(_Body):
    ids: list[str] = Field(description="proposal ids; each is decided on its own")


class RuleBody(_Body):
    user_id: str | None = None
    kind: Literal["junk", "duplicate", "superseded", "stale"] = Field(
        description="proposals of this kind are applied without asking (junk: junk captures are filtered too)"
    )


@router.get("", summary="Open proposals by kind, captures the filter kept out, the schedule")
def status(hygiene: HygieneDep, principal: PrincipalDep, user_id: str | None = None) -> dict[str, Any]:
    settings = hygiene.settings
    last = hygiene.last_run
    return {
        **hygiene.counts(principal, user_id),
        "schedule_hours": settings.schedule_hours,
        "undo_days": settings.undo_days,
        "filter_captures": settings.filter_captures,
        "next_run_at": iso(hygiene.next_run_at),
        "last_run": last.to_dict() if last is not None and principal.is_admin else None,
    }


@router.post("/run", summary="Run the hygiene job now and store what it proposes")
async def run(body: RunBody, hygiene: HygieneDep, principal: PrincipalDep) -> dict[str, Any]:
    uid = None if principal.is_admin and body.user_id is None else acting_user(principal, body.user_id)
    report = await anyio.to_thread.run_sync(lambda: hygiene.run(uid))
    return report.to_dict()


@router.get("/proposals", summary="The caller's proposals, newest first (owner only)")
def list_proposals(
    hygiene: HygieneDep,
    principal: PrincipalDep,
    user_id: str | None = None,
    status: Annotated[
        Literal["open", "applied", "rejected", "undone", "void", "all"], Query(description="all: any status")
    ] = "open",
    kind: Literal["junk", "duplicate", "superseded", "stale"] | None = None,
    page_number: Annotated[int, Query(ge=1, le=MAX_PAGE, alias="page")] = 1,
    size: SizeQuery = 50,
) -> dict[str, Any]:
    items, total = hygiene.proposals(
        principal,
        user_id=user_id,
        status=None if status == "all" else status,
        kind=kind,
        page=page_number,
        size=size,
    )
    return page(items, total, page_number, size)


@router.get("/proposals/{proposal_id}", summary="One proposal")
def get_proposal(proposal_id: str, hygiene: HygieneDep, principal: PrincipalDep) -> dict[str, Any]:
    return hygiene.get(principal, proposal_id)


@router.post("/proposals/{proposal_id}/approve", summary="Apply a proposal (optionally with an edited text)")
def approve(
    proposal_id: str, hygiene: HygieneDep, principal: PrincipalDep, body: ApproveBody | None = None
) -> dict[str, Any]:
    return hygiene.approve(principal, proposal_id, text=body.text if body else None)


@router.post("/proposals/{proposal_id}/reject", summary="Reject a proposal: nothing changes")
def reject(proposal_id: str, hygiene: HygieneDep, principal: PrincipalDep) -> dict[str, Any]:
    return hygiene.reject(principal, proposal_id)


@router.post("/proposals/{proposal_id}/undo", summary="Undo an applied proposal (within the undo window)")
def undo(proposal_id: str, hygiene: HygieneDep, principal: PrincipalDep) -> dict[str, Any]:
    return hygiene.undo(principal, proposal_id)


def _bulk(results: list[dict[str, Any]]) -> dict[str, Any]:
    succeeded = sum(1 for r in results if r["ok"])
    return {"results": results, "succeeded": succeeded, "failed": len(results) - succeeded}


@router.post("/approve", summary="Apply several proposals; each id gets its own result")
def approve_many(body: BulkBody, hygiene: HygieneDep, principal: PrincipalDep) -> dict[str, Any]:
    return _bulk(hygiene.decide_many(principal, body.ids, "approve"))


@router.post("/reject", summary="Reject several proposals; each id gets its own result")
def reject_many(body: BulkBody, hygiene: HygieneDep, principal: PrincipalDep) -> dict[str, Any]:
    return _bulk(hygiene.decide_many(principal, body.ids, "reject"))


@router.get("/rules", summary="Standing hygiene rules: kinds applied without asking")
def list_rules(hygiene: HygieneDep, principal: PrincipalDep, user_id: str | None = None) -> dict[str, Any]:
    rules = hygiene.rules(principal, user_id)
    return {"rules": rules, "total": len(rules)}


@router.post("/rules", summary="Add a standing rule: apply this kind without asking", status_code=201)
def add_rule(
    body: RuleBody, hygiene: HygieneDep, response: Response, principal: PrincipalDep
) -> dict[str, Any]:
    rule, created = hygiene.add_rule(principal, body.kind, body.user_id)
    if not created:
        response.status_code = 200
    return rule


@router.delete("/rules/{rule_id}", summary="Remove a standing hygiene rule")
def remove_rule(rule_id: str, hygiene: HygieneDep, principal: PrincipalDep) -> dict[str, Any]:
    return {"id": hygiene.remove_rule(principal, rule_id), "removed": True}
