"""`POST /api/v1/memories/browse`: the web UI's list call — filter by app, project, category,
state and creation date, sort, page; the answer also carries the filter options (facets).

OpenMemory's ``/filter`` has no project or state filter; this is the superset a person
curating their memories needs. Pending items are not listed here (the consent queue owns them).
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from ...memories.read_model import queries
from ..deps import PrincipalDep, ServiceDep, acting_user
from ..paging import PageField, SizeField

router = APIRouter(prefix="/api/v1/memories", tags=["memories"])


class BrowseRequest(BaseModel):
    # A misspelt filter must fail rather than silently list everything.
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    search_query: str | None = Field(None, max_length=500, description="case-insensitive substring")
    apps: list[str] | None = None
    projects: list[str] | None = Field(None, description='"" selects memories without a project')
    tasks: list[str] | None = Field(None, description='"" selects memories without a task')
    scope: Literal["global", "project", "task"] | None = Field(
        None, description="global: no project; project: a project's own (no task); task: of any task"
    )
    categories: list[str] | None = None
    states: list[Literal["active", "paused", "archived", "trashed"]] | None = Field(
        None, description="default: active and paused"
    )
    from_date: date | None = Field(None, description="created on or after this day (UTC)")
    to_date: date | None = Field(None, description="created on or before this day (UTC)")
    sort: Literal["created_at", "updated_at", "content", "app"] = "created_at"
    direction: Literal["asc", "desc"] = "desc"
    page: PageField = 1
    size: SizeField = 20


@router.post("/browse", summary="Filter, sort and page memories, with the filter options (the web UI's list)")
def browse(body: BrowseRequest, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    uid = acting_user(principal, body.user_id)
    return service.queries.browse_page(uid, queries.Browse(**body.model_dump(exclude={"user_id"})))
