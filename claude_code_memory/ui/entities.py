"""The Entities page: people, projects, tools, files and identifiers the memories mention, most
mentioned first, and a search by name that shows the memories mentioning each."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from .web import SessionDep, render, ui_of

router = APIRouter()

KINDS = {
    "person": "People",
    "project": "Projects",
    "tool": "Tools",
    "file": "Files",
    "identifier": "Identifiers",
}
LIST_LIMIT = 200
SEARCH_LIMIT = 20


@router.get("/entities")
def entities(
    request: Request, session: SessionDep, q: str | None = None, kind: str | None = None
) -> Response:
    api = ui_of(request).api
    query = (q or "").strip()[:256]
    kind = kind if kind in KINDS else None
    params: dict[str, str | int] = {"kind": kind} if kind else {}
    if query:
        found = api.get(
            "/api/v1/entities/search", session.token, params={**params, "q": query, "limit": SEARCH_LIMIT}
        )["entities"]
    else:
        found = api.get("/api/v1/entities", session.token, params={**params, "limit": LIST_LIMIT})["entities"]
    return render(
        request, "entities.html", nav="entities", entities=found, q=query, kind=kind or "", kinds=KINDS
    )
