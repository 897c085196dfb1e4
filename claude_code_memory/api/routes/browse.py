"""`POST /api/v1/memories/browse`: the web UI's list call — filter by app, project, category,
state and creation date, sort, page; the answer also carries the filter options (facets).

OpenMemory's ``/filter`` has no project or state filter; this is the superset a person
curating their memories needs. Pending items are not listed here (the consent queue owns them).
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Select, func, or_, select

from ...db.models import App, Category, Memory, MemoryCategory, MemoryState
from ..deps import PrincipalDep, ServiceDep, acting_user
from ...memories.shapes import epoch, memory_response, page

router = APIRouter(prefix="/api/v1/memories", tags=["memories"])

BROWSABLE = (MemoryState.active, MemoryState.paused, MemoryState.archived)
SORTS = {
    "created_at": Memory.created_at,
    "updated_at": Memory.updated_at,
    "content": Memory.content,
    "app": App.name,
}


class BrowseRequest(BaseModel):
    # A misspelt filter must fail rather than silently list everything.
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    search_query: str | None = Field(None, max_length=500, description="case-insensitive substring")
    apps: list[str] | None = None
    projects: list[str] | None = Field(None, description='"" selects memories without a project')
    categories: list[str] | None = None
    states: list[Literal["active", "paused", "archived"]] | None = Field(
        None, description="default: active and paused"
    )
    from_date: date | None = Field(None, description="created on or after this day (UTC)")
    to_date: date | None = Field(None, description="created on or before this day (UTC)")
    sort: Literal["created_at", "updated_at", "content", "app"] = "created_at"
    direction: Literal["asc", "desc"] = "desc"
    page: int = Field(1, ge=1)
    size: int = Field(20, ge=1, le=100)


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _filtered(user_pk: Any, body: BrowseRequest) -> Select[Any]:
    states = (
        [MemoryState(s) for s in body.states] if body.states else [MemoryState.active, MemoryState.paused]
    )
    query = (
        select(Memory, App.name)
        .join(App, Memory.app_id == App.id)
        .where(Memory.user_id == user_pk, Memory.state.in_(states))
    )
    if body.search_query:
        query = query.where(Memory.content.ilike(f"%{_escape_like(body.search_query)}%", escape="\\"))
    if body.apps:
        query = query.where(App.name.in_(body.apps))
    if body.projects is not None and body.projects:
        named = [p for p in body.projects if p]
        conditions = [Memory.project.in_(named)] if named else []
        if "" in body.projects:
            conditions.append(Memory.project.is_(None))
        query = query.where(or_(*conditions))
    if body.categories:
        in_category = (
            select(MemoryCategory.memory_id)
            .join(Category, MemoryCategory.category_id == Category.id)
            .where(Category.name.in_([c.lower() for c in body.categories]))
        )
        query = query.where(Memory.id.in_(in_category))
    if body.from_date is not None:
        query = query.where(Memory.created_at >= datetime.combine(body.from_date, time.min))
    if body.to_date is not None:
        query = query.where(Memory.created_at < datetime.combine(body.to_date + timedelta(days=1), time.min))
    return query


def _facets(session: Any, user_pk: Any) -> dict[str, list[str]]:
    kept = (Memory.user_id == user_pk, Memory.state.in_(BROWSABLE))
    apps = session.scalars(select(App.name).where(App.owner_id == user_pk).order_by(App.name)).all()
    projects = session.scalars(
        select(Memory.project).where(*kept, Memory.project.is_not(None)).distinct().order_by(Memory.project)
    ).all()
    categories = session.scalars(
        select(Category.name)
        .join(MemoryCategory, MemoryCategory.category_id == Category.id)
        .join(Memory, Memory.id == MemoryCategory.memory_id)
        .where(*kept)
        .distinct()
        .order_by(Category.name)
    ).all()
    return {"apps": list(apps), "projects": list(projects), "categories": list(categories)}


@router.post("/browse", summary="Filter, sort and page memories, with the filter options (the web UI's list)")
def browse(body: BrowseRequest, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    uid = acting_user(principal, body.user_id)
    with service.database.session() as session:
        user = service.find_user(session, uid)
        query = _filtered(user.id, body)
        total = session.scalar(select(func.count()).select_from(query.order_by(None).subquery())) or 0
        column = SORTS[body.sort]
        order = column.asc() if body.direction == "asc" else column.desc()
        rows = session.execute(
            query.order_by(order, Memory.id).offset((body.page - 1) * body.size).limit(body.size)
        )
        items = [
            {
                **memory_response(memory, app_name),
                "project": memory.project,
                "updated_at": epoch(memory.updated_at),
                "redactions": memory.redactions or 0,
            }
            for memory, app_name in rows
        ]
        result = page(items, total, body.page, body.size)
        result["facets"] = _facets(session, user.id)
    return result
