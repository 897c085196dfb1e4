"""Pages over memories: the list (search, filters, sort, pages, bulk actions) and one memory
(content, provenance, history, access log, links and related; edit, state changes, scope, delete)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import Response

from .links import RELATIONS
from .scopes import SCOPE_FILTERS, matches_scope, move_memories
from .trash import trash_days
from .web import CheckedDep, SessionDep, redirect, render, ui_of

router = APIRouter()

#: The app name the UI reads through (its searches are logged as this app's reads).
UI_APP = "ui"
PAGE_SIZE = 20
SEMANTIC_LIMIT = 50
STATES = ("active", "paused", "archived")
BULK_ACTIONS = {
    "pause": ("paused", "Pause"),
    "resume": ("active", "Resume"),
    "archive": ("archived", "Archive"),
    "delete": ("deleted", "Delete"),
}
#: The project filter's value for memories without a project.
NO_PROJECT = "-"
SORTS = {"created_at": "Created", "updated_at": "Updated", "content": "Text", "app": "App"}


def _clean(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


@router.get("/memories")
def list_memories(
    request: Request,
    session: SessionDep,
    q: str | None = None,
    mode: str = "semantic",
    app: str | None = None,
    project: str | None = None,
    task: str | None = None,
    scope: str | None = None,
    category: str | None = None,
    state: str | None = None,
    date_from: Annotated[str | None, Query(alias="from")] = None,
    date_to: Annotated[str | None, Query(alias="to")] = None,
    sort: str = "created_at",
    direction: Annotated[str, Query(alias="dir")] = "desc",
    page: Annotated[int, Query(ge=1)] = 1,
) -> Response:
    api = ui_of(request).api
    q, app, project, category, state = map(_clean, (q, app, project, category, state))
    task, scope = _clean(task), _clean(scope)
    scope = scope if scope in SCOPE_FILTERS else None
    date_from, date_to = _clean(date_from), _clean(date_to)
    sort = sort if sort in SORTS else "created_at"
    direction = "asc" if direction == "asc" else "desc"
    states = list(STATES) if state == "all" else [state] if state in STATES else None
    browse: dict[str, Any] = {
        "apps": [app] if app else None,
        "projects": None if project is None else [""] if project == NO_PROJECT else [project],
        "tasks": [task] if task else None,
        "scope": scope,
        "categories": [category] if category else None,
        "states": states,
        "from_date": date_from,
        "to_date": date_to,
        "sort": sort,
        "direction": direction,
        "page": page,
        "size": PAGE_SIZE,
    }
    semantic = bool(q) and mode == "semantic"
    if semantic:
        facets = api.post("/api/v1/memories/browse", session.token, json={**browse, "page": 1, "size": 1})
        hits = api.post(
            "/api/v1/memories/search",
            session.token,
            json={"query": q, "limit": SEMANTIC_LIMIT, "app": UI_APP},
        )["results"]
        items = [
            _from_hit(hit)
            for hit in hits
            if _matches(hit, app, project, category, state) and matches_scope(hit, scope, task)
        ]
        result = {"items": items, "total": len(items), "page": 1, "pages": 1, "facets": facets["facets"]}
    else:
        result = api.post("/api/v1/memories/browse", session.token, json={**browse, "search_query": q})
    filters = {
        "q": q or "",
        "mode": "semantic" if mode == "semantic" else "text",
        "app": app or "",
        "project": project or "",
        "task": task or "",
        "scope": scope or "",
        "category": category or "",
        "state": state or "",
        "from": date_from or "",
        "to": date_to or "",
        "sort": sort,
        "dir": direction,
    }
    return render(
        request,
        "memories.html",
        nav="memories",
        result=result,
        filters=filters,
        semantic=semantic,
        sorts=SORTS,
        no_project=NO_PROJECT,
        actions=BULK_ACTIONS,
        here=request.url.path + ("?" + request.url.query if request.url.query else ""),
        page_link=lambda number: "/memories?" + urlencode({**filters, "page": number}),
        scope_filters=SCOPE_FILTERS,
        filtered=any(
            filters[k] for k in ("q", "app", "project", "task", "scope", "category", "state", "from", "to")
        ),
    )


def _matches(
    hit: dict[str, Any], app: str | None, project: str | None, category: str | None, state: str | None
) -> bool:
    provenance = hit.get("provenance") or {}
    return (
        (app is None or hit.get("app") == app)
        and (project is None or provenance.get("project") == (None if project == NO_PROJECT else project))
        and (category is None or category.lower() in hit.get("categories", []))
        and state in (None, "all", "active")
    )


def _from_hit(hit: dict[str, Any]) -> dict[str, Any]:
    provenance = hit.get("provenance") or {}
    return {
        "id": hit["id"],
        "content": hit["content"],
        "app_name": hit.get("app"),
        "project": provenance.get("project"),
        "task": provenance.get("task"),
        "state": "active",
        "categories": hit.get("categories", []),
        "created_at": hit.get("created_at"),
        "score": hit.get("score"),
        "redactions": provenance.get("redactions", 0),
    }


@router.post("/memories/bulk")
def bulk(
    request: Request,
    session: CheckedDep,
    action: Annotated[str, Form()],
    ids: Annotated[list[str] | None, Form()] = None,
    confirmed: Annotated[str | None, Form()] = None,
    back: Annotated[str, Form()] = "/memories",
    target_project: Annotated[str, Form()] = "",
    target_task: Annotated[str, Form()] = "",
) -> Response:
    back = back if back.startswith("/memories") else "/memories"
    if action not in BULK_ACTIONS and action != "move":
        return redirect(back, request, f"Unknown action {action!r}.", "error")
    if not ids:
        return redirect(back, request, "Select at least one memory first.", "error")
    if action == "move":  # no confirmation: a move is undone by moving back
        kind, message = move_memories(ui_of(request).api, session, ids, target_project, target_task)
        return redirect(back, request, message, kind)
    state, label = BULK_ACTIONS[action]
    api = ui_of(request).api
    if confirmed != "yes":
        days = trash_days(api, session) if action == "delete" else 0
        preview = [api.get(f"/api/v1/memories/{memory_id}", session.token) for memory_id in ids[:20]]
        return render(
            request,
            "confirm_bulk.html",
            nav="memories",
            action=action,
            label=label,
            ids=ids,
            preview=preview,
            back=back,
            trash_days=days,
        )
    if action == "delete":
        message = api.delete("/api/v1/memories", session.token, json={"memory_ids": ids})["message"]
    else:
        message = api.post(
            "/api/v1/memories/actions/pause", session.token, json={"memory_ids": ids, "state": state}
        )["message"]
    return redirect(back, request, message + ".")


@router.get("/memories/{memory_id}")
def detail(request: Request, session: SessionDep, memory_id: str) -> Response:
    api = ui_of(request).api
    memory = api.get(f"/api/v1/memories/{memory_id}", session.token)
    history = api.get(f"/api/v1/memories/{memory_id}/history", session.token)
    access = api.get(f"/api/v1/memories/{memory_id}/access-log", session.token, params={"page_size": 20})
    pending = memory["state"] == "pending"
    related = {"items": []} if pending else api.get(f"/api/v1/memories/{memory_id}/related", session.token)
    links = [] if pending else api.get(f"/api/v1/memories/{memory_id}/links", session.token)["links"]
    return render(
        request,
        "memory.html",
        nav="memories",
        memory=memory,
        history=history["history"],
        access=access,
        links=links,
        # Linked memories lead the related list; they are shown with their links above.
        related=[item for item in related["items"] if "link" not in item],
        relations=RELATIONS,
    )


@router.post("/memories/{memory_id}/edit")
def edit(request: Request, session: CheckedDep, memory_id: str, text: Annotated[str, Form()]) -> Response:
    if not text.strip():
        return redirect(
            f"/memories/{memory_id}", request, "The text cannot be empty; nothing was changed.", "error"
        )
    ui_of(request).api.put(f"/api/v1/memories/{memory_id}", session.token, json={"memory_content": text})
    return redirect(f"/memories/{memory_id}", request, "Saved. The memory was re-embedded for search.")


@router.post("/memories/{memory_id}/state")
def change_state(
    request: Request, session: CheckedDep, memory_id: str, state: Annotated[str, Form()]
) -> Response:
    if state not in STATES:
        return redirect(f"/memories/{memory_id}", request, f"Unknown state {state!r}.", "error")
    api = ui_of(request).api
    api.get(f"/api/v1/memories/{memory_id}", session.token)  # 404 for a memory not the caller's
    message = api.post(
        "/api/v1/memories/actions/pause", session.token, json={"memory_ids": [memory_id], "state": state}
    )["message"]
    return redirect(f"/memories/{memory_id}", request, message + ".")


@router.get("/memories/{memory_id}/delete")
def confirm_delete(request: Request, session: SessionDep, memory_id: str) -> Response:
    api = ui_of(request).api
    memory = api.get(f"/api/v1/memories/{memory_id}", session.token)
    days = trash_days(api, session)
    return render(request, "confirm_delete.html", nav="memories", memory=memory, trash_days=days)


@router.post("/memories/{memory_id}/delete")
def delete(request: Request, session: CheckedDep, memory_id: str) -> Response:
    api = ui_of(request).api
    # The bulk delete skips ids that are not the caller's; one named memory must say why instead.
    api.get(f"/api/v1/memories/{memory_id}", session.token)
    api.delete("/api/v1/memories", session.token, json={"memory_ids": [memory_id]})
    if trash_days(api, session):
        return redirect(
            "/memories", request, "The memory was moved to the trash; restore it from the Trash page."
        )
    return redirect("/memories", request, "The memory was deleted from every store.")
