"""Pages for deciding what stays: the dashboard, the consent queue and the apps."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import Response

from .charts import Point, bar_chart
from .web import CheckedDep, SessionDep, redirect, render, ui_of

router = APIRouter()

CHART_DAYS = 30


@router.api_route("/", methods=["GET", "HEAD"])  # HEAD: what uptime checks and curl -I send
def dashboard(request: Request, session: SessionDep) -> Response:
    figures = ui_of(request).api.get("/api/v1/insights", session.token, params={"days": CHART_DAYS})
    points = [
        Point(date.fromisoformat(d["date"]).strftime("%d %b"), d["count"]) for d in figures["over_time"]
    ]
    chart = bar_chart(points, title=f"Memories created per day, last {CHART_DAYS} days")
    return render(request, "dashboard.html", nav="dashboard", figures=figures, chart=chart)


# -- consent -----------------------------------------------------------------------------------
@router.get("/consent")
def consent_queue(request: Request, session: SessionDep, page: Annotated[int, Query(ge=1)] = 1) -> Response:
    api = ui_of(request).api
    pending = api.get("/api/v1/consent/pending", session.token, params={"page": page, "size": 25})
    rules = api.get("/api/v1/consent/rules", session.token)["rules"]
    return render(request, "consent.html", nav="consent", pending=pending, rules=rules)


@router.post("/consent/decide")
def decide(
    request: Request,
    session: CheckedDep,
    decision: Annotated[str, Form()],
    ids: Annotated[list[str] | None, Form()] = None,
) -> Response:
    if decision not in ("approve", "reject"):
        return redirect("/consent", request, f"Unknown decision {decision!r}.", "error")
    if not ids:
        return redirect("/consent", request, "Select at least one item first.", "error")
    result = ui_of(request).api.post(f"/api/v1/consent/{decision}", session.token, json={"ids": ids})
    verb = "Approved" if decision == "approve" else "Rejected"
    message = f"{verb} {result['succeeded']} item(s)."
    failures = [r for r in result["results"] if not r["ok"]]
    if failures:
        message += " Failed: " + "; ".join(f"{r['id'][:8]}: {r['detail']}" for r in failures[:3])
    return redirect("/consent", request, message, "error" if failures else "ok")


@router.post("/consent/{item_id}/approve")
def approve_edited(
    request: Request, session: CheckedDep, item_id: str, text: Annotated[str, Form()]
) -> Response:
    if not text.strip():
        return redirect("/consent", request, "The text cannot be empty; nothing was approved.", "error")
    approval = ui_of(request).api.post(
        f"/api/v1/consent/{item_id}/approve", session.token, json={"text": text}
    )
    return redirect("/consent", request, f"Approved with your edits as memory {approval['id'][:8]}.")


@router.post("/consent/{item_id}/rule")
def rule_from_item(
    request: Request, session: CheckedDep, item_id: str, effect: Annotated[str, Form()]
) -> Response:
    if effect not in ("allow", "deny"):
        return redirect("/consent", request, f"Unknown rule effect {effect!r}.", "error")
    rule = ui_of(request).api.post(
        "/api/v1/consent/rules", session.token, json={"effect": effect, "from_item": item_id}
    )
    scope = f"app {rule['app_pattern']!r}, project {rule['project_pattern']!r}"
    word = "approved" if effect == "allow" else "refused"
    return redirect("/consent", request, f"From now on, captures from {scope} are {word} automatically.")


@router.post("/consent/rules/{rule_id}/delete")
def remove_rule(request: Request, session: CheckedDep, rule_id: str) -> Response:
    ui_of(request).api.delete(f"/api/v1/consent/rules/{rule_id}", session.token)
    return redirect("/consent", request, "The rule was removed.")


# -- apps --------------------------------------------------------------------------------------
@router.get("/apps")
def apps(request: Request, session: SessionDep) -> Response:
    listing = ui_of(request).api.get(
        "/api/v1/apps",
        session.token,
        params={"page_size": 100, "sort_by": "memories", "sort_direction": "desc"},
    )
    return render(request, "apps.html", nav="apps", apps=listing["apps"], total=listing["total"])


@router.post("/apps/{app_id}/access")
def set_access(
    request: Request, session: CheckedDep, app_id: str, active: Annotated[str, Form()]
) -> Response:
    is_active = active == "true"
    ui_of(request).api.put(
        f"/api/v1/apps/{app_id}", session.token, params={"is_active": "true" if is_active else "false"}
    )
    return redirect(
        "/apps",
        request,
        "Access resumed." if is_active else "Access paused: the app can no longer read or add memories.",
    )
