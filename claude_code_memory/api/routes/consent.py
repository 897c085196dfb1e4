"""`/api/v1/consent`: the pending queue, approve / reject (one or many), rules and decisions.

A pending item's text is visible only to its owner: the admin token gets 403 on
``GET /pending`` and reads ``GET /pending/count`` instead. Every decision is logged with who
made it (``user:<id>``, ``admin``, or ``rule:<id>`` for captures a standing rule let through).
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from ...memories.consent import Outcome
from ...memories.read_model.shapes import iso, page
from ..deps import PrincipalDep, ServiceDep
from ..paging import MAX_PAGE, SizeQuery

router = APIRouter(prefix="/api/v1/consent", tags=["consent"])


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ApproveBody(_Body):
    text: str | None = Field(None, description="edited text to store instead (passes the policy gate again)")


class BulkBody(_Body):
    ids: list[str] = Field(description="pending item ids; each is decided on its own")


class RuleBody(_Body):
    user_id: str | None = None
    app_pattern: str | None = Field(None, description="shell glob over app names (default *)")
    project_pattern: str | None = Field(
        None, description='shell glob over project paths (default *; "" matches captures without one)'
    )
    effect: Literal["allow", "deny"]
    from_item: str | None = Field(None, description="a pending item whose app and project fill the patterns")


def _json(view: Any) -> dict[str, Any]:
    return {k: iso(v) if isinstance(v, datetime) else v for k, v in asdict(view).items()}


def _outcome(outcome: Outcome, success: dict[str, Any]) -> dict[str, Any]:
    if outcome.error is not None:
        error = outcome.error
        return {
            "id": outcome.id,
            "ok": False,
            "http_status": error.status,
            "error": error.code,
            "detail": error.message,
        }
    return {"id": outcome.id, "ok": True, **success}


def _approval(result: Any) -> dict[str, Any]:
    """A bulk approval's success fields: the pending id stays ``id``; the memory is ``new_id``."""
    if result is None:
        return {}
    body = _json(result)
    body.pop("previous_id", None)
    return {"status": "approved", "new_id": body.pop("id"), **body}


def _bulk(results: list[dict[str, Any]]) -> dict[str, Any]:
    succeeded = sum(1 for r in results if r["ok"])
    return {"results": results, "succeeded": succeeded, "failed": len(results) - succeeded}


@router.get("/pending", summary="The caller's pending items (owner only; the admin token gets 403)")
def list_pending(
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = None,
    app: str | None = None,
    project: str | None = None,
    page_number: Annotated[int, Query(ge=1, le=MAX_PAGE, alias="page")] = 1,
    size: SizeQuery = 50,
) -> dict[str, Any]:
    items, total = service.consent.pending(
        principal, user_id=user_id, app=app, project=project, page=page_number, size=size
    )
    return page([_json(item) for item in items], total, page_number, size)


@router.get("/pending/count", summary="How many items wait, by app (no text; the admin may read it)")
def count_pending(service: ServiceDep, principal: PrincipalDep, user_id: str | None = None) -> dict[str, Any]:
    return service.consent.pending_count(principal, user_id)


@router.post("/approve", summary="Approve several pending items; each id gets its own result")
def approve_many(body: BulkBody, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    outcomes = service.consent.approve_many(principal, body.ids)
    return _bulk([_outcome(o, _approval(o.result)) for o in outcomes])


@router.post("/reject", summary="Reject several pending items; each id gets its own result")
def reject_many(body: BulkBody, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    outcomes = service.consent.reject_many(principal, body.ids)
    return _bulk([_outcome(o, {"status": "rejected"}) for o in outcomes])


@router.get("/rules", summary="Standing consent rules, in the order they are checked (deny first)")
def list_rules(service: ServiceDep, principal: PrincipalDep, user_id: str | None = None) -> dict[str, Any]:
    rules = service.consent.rules(principal, user_id)
    return {"rules": [_json(rule) for rule in rules], "total": len(rules)}


@router.post("/rules", summary="Add a standing rule (allow or deny future captures)", status_code=201)
def add_rule(
    body: RuleBody, response: Response, service: ServiceDep, principal: PrincipalDep
) -> dict[str, Any]:
    rule, created = service.consent.add_rule(
        principal,
        effect=body.effect,
        user_id=body.user_id,
        app_pattern=body.app_pattern,
        project_pattern=body.project_pattern,
        from_item=body.from_item,
    )
    if not created:
        response.status_code = 200  # the identical rule already existed
    return {**_json(rule), "created": created}


@router.delete("/rules/{rule_id}", summary="Remove a standing rule")
def remove_rule(rule_id: str, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    return {"id": service.consent.remove_rule(principal, rule_id), "status": "deleted"}


@router.get("/decisions", summary="Who decided what, when, and by which rule")
def list_decisions(
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = None,
    page_number: Annotated[int, Query(ge=1, le=MAX_PAGE, alias="page")] = 1,
    size: SizeQuery = 50,
) -> dict[str, Any]:
    decisions, total = service.consent.decisions(principal, user_id=user_id, page=page_number, size=size)
    return page([_json(d) for d in decisions], total, page_number, size)


@router.post("/{memory_id}/approve", summary="Approve a pending item, optionally with edited text")
def approve(
    memory_id: str,
    service: ServiceDep,
    principal: PrincipalDep,
    body: ApproveBody | None = None,
) -> dict[str, Any]:
    approval = service.consent.approve(principal, memory_id, body.text if body else None)
    return _json(approval)


@router.post("/{memory_id}/reject", summary="Reject a pending item: its text is deleted for good")
def reject(memory_id: str, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    return {"id": service.consent.reject(principal, memory_id), "status": "rejected"}
