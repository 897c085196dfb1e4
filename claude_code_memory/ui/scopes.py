"""Pages over scopes (global, a project, a task of a project): the projects and tasks in use,
ending a task, and moving memories between scopes (from the list or one memory's page)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response

from .api import Api, ApiError
from .session import Session
from .web import CheckedDep, SessionDep, redirect, refused, render, ui_of

router = APIRouter()

#: The memory list's scope filter: value -> label (the browse call's ``scope``).
SCOPE_FILTERS = {"global": "Global", "project": "Project (no task)", "task": "Task"}


class BadScope(ValueError):
    """A move target the API would refuse (a task without its project)."""


def memories(count: int) -> str:
    """``1 memory``, ``2 memories``."""
    return f"{count} memor{'y' if count == 1 else 'ies'}"


def scope_label(project: str | None, task: str | None) -> str:
    """How a scope reads on a page: ``global``, ``shop`` or ``shop / checkout``."""
    if not project:
        return "global"
    return f"{project} / {task}" if task else project


def move_target(project: str | None, task: str | None) -> tuple[str | None, str | None]:
    """A move form's fields as the move call's ``project`` and ``task``: blank project means
    global; a task needs its project."""
    project = (project or "").strip() or None
    task = (task or "").strip() or None
    if task is not None and project is None:
        raise BadScope("A task belongs to a project: name the project too.")
    return project, task


def matches_scope(hit: dict[str, Any], scope: str | None, task: str | None) -> bool:
    """A search hit (its ``provenance``) against the list's scope and task filters."""
    provenance = hit.get("provenance") or {}
    project, hit_task = provenance.get("project"), provenance.get("task")
    if task is not None and hit_task != task:
        return False
    if scope == "global":
        return project is None
    if scope == "project":
        return project is not None and hit_task is None
    if scope == "task":
        return hit_task is not None
    return True


def move_memories(
    api: Api, session: Session, ids: list[str], project: str | None, task: str | None
) -> tuple[str, str]:
    """Move the memories; the flash message's kind and text."""
    try:
        target_project, target_task = move_target(project, task)
    except BadScope as exc:
        return "error", f"{exc} Nothing was moved."
    result = api.post(
        "/api/v1/memories/actions/move",
        session.token,
        json={"memory_ids": ids, "project": target_project, "task": target_task},
    )
    return "ok", f"Moved {memories(result['moved'])} to {scope_label(target_project, target_task)}."


@router.get("/scopes")
def scopes(request: Request, session: SessionDep) -> Response:
    listed = ui_of(request).api.get("/api/v1/scopes", session.token)["scopes"]
    projects = sorted({s["project"] for s in listed if s["project"]})
    return render(request, "scopes.html", nav="scopes", scopes=listed, projects=projects)


@router.post("/scopes/complete")
def complete_task(
    request: Request,
    session: CheckedDep,
    project: Annotated[str, Form()],
    task: Annotated[str, Form()],
    outcome: Annotated[str, Form()],
) -> Response:
    if outcome not in ("archive", "promote"):
        return redirect("/scopes", request, f"Unknown outcome {outcome!r}.", "error")
    try:
        result = ui_of(request).api.post(
            "/api/v1/tasks/complete",
            session.token,
            json={"project": project, "task": task, "promote": outcome == "promote"},
        )
    except ApiError as exc:
        return refused(request, "/scopes", exc)
    if outcome == "promote":
        message = f"Task {task!r} completed: {memories(result['promoted'])} kept in {project}."
    else:
        message = f"Task {task!r} completed: {memories(result['archived'])} archived (kept as its record)."
    return redirect("/scopes", request, message)


@router.post("/memories/{memory_id}/move")
def move_one(
    request: Request,
    session: CheckedDep,
    memory_id: str,
    project: Annotated[str, Form()] = "",
    task: Annotated[str, Form()] = "",
) -> Response:
    api = ui_of(request).api
    api.get(f"/api/v1/memories/{memory_id}", session.token)  # 404 for a memory not the caller's
    kind, message = move_memories(api, session, [memory_id], project, task)
    return redirect(f"/memories/{memory_id}", request, message, kind)
