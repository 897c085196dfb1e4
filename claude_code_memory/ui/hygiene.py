"""The Hygiene page: the job's proposals (merge duplicates, archive superseded, junk and stale
memories) reviewed as the consent queue is — approve (editing a merge's kept text), reject,
bulk — plus undo within the window, standing rules per kind, "run now" and the capture filter's
counts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import Response

from .api import ApiError
from .web import CheckedDep, SessionDep, redirect, refused, render, ui_of

router = APIRouter()

PAGE_SIZE = 25
KINDS = {
    "duplicate": "Duplicates",
    "superseded": "Superseded",
    "junk": "Junk",
    "stale": "Stale",
}
#: What a standing rule of each kind does, in the words of the page.
RULE_EFFECTS = {
    "duplicate": "merge near-duplicates without asking",
    "superseded": "archive superseded facts without asking",
    "junk": "archive junk without asking, and keep junk captures out of the consent queue",
    "stale": "archive memories nobody recalls without asking",
}
STATUSES = {
    "open": "Open",
    "applied": "Applied",
    "rejected": "Rejected",
    "undone": "Undone",
    "void": "Void",
    "all": "All",
}


def _moment(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def undoable(proposal: dict[str, Any], now: datetime) -> bool:
    """An applied proposal whose undo window is still open."""
    until = _moment(proposal.get("undo_until"))
    return proposal.get("status") == "applied" and (until is None or now <= until)


def run_summary(report: dict[str, Any]) -> str:
    """The flash message after "Run now": what the job proposed and what rules applied."""
    proposed = {kind: n for kind, n in (report.get("proposed") or {}).items() if n}
    looked = report.get("memories", 0)
    if not proposed:
        return f"Looked at {looked} memories: nothing new to propose."
    found = ", ".join(f"{n} {kind}" for kind, n in proposed.items())
    message = f"Looked at {looked} memories and proposed: {found}."
    if report.get("auto_applied"):
        message += f" Your standing rules applied {report['auto_applied']} of them (undoable)."
    return message


def decided_message(verb: str, result: dict[str, Any]) -> tuple[str, str]:
    """A bulk decision's flash message and kind: how many succeeded, why the others failed."""
    message = f"{verb} {result['succeeded']} proposal(s)."
    failures = [r for r in result["results"] if not r["ok"]]
    if failures:
        message += " Failed: " + "; ".join(f"{r['id'][:8]}: {r['error']}" for r in failures[:3])
    return message, "error" if failures else "ok"


def _back(value: str | None) -> str:
    return value if value and value.startswith("/hygiene") else "/hygiene"


@router.get("/hygiene")
def review(
    request: Request,
    session: SessionDep,
    status: str = "open",
    kind: str | None = None,
    page: Annotated[int, Query(ge=1)] = 1,
) -> Response:
    api = ui_of(request).api
    status = status if status in STATUSES else "open"
    kind = kind if kind in KINDS else None
    params: dict[str, Any] = {"status": status, "page": page, "size": PAGE_SIZE}
    if kind:
        params["kind"] = kind
    proposals = api.get("/api/v1/hygiene/proposals", session.token, params=params)
    summary = api.get("/api/v1/hygiene", session.token)
    rules = api.get("/api/v1/hygiene/rules", session.token)["rules"]
    now = datetime.now(UTC)
    for proposal in proposals["items"]:
        proposal["undoable"] = undoable(proposal, now)
    filters = {"status": status, "kind": kind or ""}
    ruled = {rule["kind"] for rule in rules}
    return render(
        request,
        "hygiene.html",
        nav="hygiene",
        proposals=proposals,
        summary=summary,
        rules=rules,
        unruled=[k for k in KINDS if k not in ruled],
        kinds=KINDS,
        rule_effects=RULE_EFFECTS,
        statuses=STATUSES,
        filters=filters,
        here="/hygiene?" + urlencode({**filters, "page": page}),
        page_link=lambda number: "/hygiene?" + urlencode({**filters, "page": number}),
    )


@router.post("/hygiene/run")
def run_now(request: Request, session: CheckedDep, back: Annotated[str, Form()] = "/hygiene") -> Response:
    report = ui_of(request).api.post("/api/v1/hygiene/run", session.token, json={})
    return redirect(_back(back), request, run_summary(report))


@router.post("/hygiene/decide")
def decide(
    request: Request,
    session: CheckedDep,
    decision: Annotated[str, Form()],
    ids: Annotated[list[str] | None, Form()] = None,
    back: Annotated[str, Form()] = "/hygiene",
) -> Response:
    back = _back(back)
    if decision not in ("approve", "reject"):
        return redirect(back, request, f"Unknown decision {decision!r}.", "error")
    if not ids:
        return redirect(back, request, "Select at least one proposal first.", "error")
    result = ui_of(request).api.post(f"/api/v1/hygiene/{decision}", session.token, json={"ids": ids})
    message, kind = decided_message("Applied" if decision == "approve" else "Rejected", result)
    return redirect(back, request, message, kind)


@router.post("/hygiene/{proposal_id}/approve")
def approve(
    request: Request,
    session: CheckedDep,
    proposal_id: str,
    text: Annotated[str | None, Form()] = None,
    back: Annotated[str, Form()] = "/hygiene",
) -> Response:
    back = _back(back)
    if text is not None and not text.strip():
        return redirect(back, request, "The kept text cannot be empty; nothing was applied.", "error")
    body = {"text": text} if text is not None else None
    try:
        ui_of(request).api.post(f"/api/v1/hygiene/proposals/{proposal_id}/approve", session.token, json=body)
    except ApiError as exc:  # not open any more, its memories changed (void), the text refused
        return refused(request, back, exc)
    edited = " with your edited text" if text is not None else ""
    return redirect(back, request, f"Applied{edited}. You can undo it from the Applied list.")


@router.post("/hygiene/{proposal_id}/reject")
def reject(
    request: Request, session: CheckedDep, proposal_id: str, back: Annotated[str, Form()] = "/hygiene"
) -> Response:
    try:
        ui_of(request).api.post(f"/api/v1/hygiene/proposals/{proposal_id}/reject", session.token)
    except ApiError as exc:
        return refused(request, _back(back), exc)
    return redirect(_back(back), request, "Rejected: nothing changed, and it will not be proposed again.")


@router.post("/hygiene/{proposal_id}/undo")
def undo(
    request: Request, session: CheckedDep, proposal_id: str, back: Annotated[str, Form()] = "/hygiene"
) -> Response:
    try:
        ui_of(request).api.post(f"/api/v1/hygiene/proposals/{proposal_id}/undo", session.token)
    except ApiError as exc:  # the window closed, or its memories changed since
        return refused(request, _back(back), exc)
    return redirect(_back(back), request, "Undone: the memories are as they were before.")


@router.post("/hygiene/rules")
def add_rule(request: Request, session: CheckedDep, kind: Annotated[str, Form()]) -> Response:
    if kind not in KINDS:
        return redirect("/hygiene", request, f"Unknown kind {kind!r}.", "error")
    ui_of(request).api.post("/api/v1/hygiene/rules", session.token, json={"kind": kind})
    return redirect("/hygiene", request, f"From the next run on, the job will {RULE_EFFECTS[kind]}.")


@router.post("/hygiene/rules/{rule_id}/delete")
def remove_rule(request: Request, session: CheckedDep, rule_id: str) -> Response:
    ui_of(request).api.delete(f"/api/v1/hygiene/rules/{rule_id}", session.token)
    return redirect("/hygiene", request, "The rule was removed: those proposals wait for you again.")
