"""The Insights page: what the stored conversations show (reflection), what to do next, and
where the bytes are (storage). Three REST calls, rendered; nothing computed here."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from .charts import Point, bar_chart
from .web import SessionDep, render, ui_of

router = APIRouter()

GROWTH_DAYS = 30


def _clean(value: str | None) -> str | None:
    return value.strip() or None if value is not None else None


@router.get("/insights")
def insights(
    request: Request,
    session: SessionDep,
    project: Annotated[str | None, Query(max_length=512)] = None,
    since: Annotated[str | None, Query(max_length=40)] = None,
) -> Response:
    api = ui_of(request).api
    scope = {k: v for k, v in (("project", _clean(project)), ("since", _clean(since))) if v}
    analysis = api.get("/api/v1/insights/reflection", session.token, params=scope)
    in_project = {k: v for k, v in scope.items() if k == "project"}
    actions = api.get("/api/v1/insights/next-actions", session.token, params=in_project)
    storage = api.get("/api/v1/storage", session.token, params={"days": GROWTH_DAYS})
    points = [
        Point(date.fromisoformat(day["date"]).strftime("%d %b"), day["created"]) for day in storage["growth"]
    ]
    chart = bar_chart(points, title=f"Memories stored per day, last {GROWTH_DAYS} days")
    return render(
        request,
        "insights.html",
        nav="insights",
        analysis=analysis,
        actions=actions,
        storage=storage,
        chart=chart,
        scope={"project": scope.get("project", ""), "since": scope.get("since", "")},
    )
