"""Apps: the MCP clients and REST callers that write and read memories (`/api/v1/apps`).

Same paths, parameters and shapes as OpenMemory's apps router, with one fix: apps belong to a
user. A user token sees and changes only its own apps (another user's app id is 404, as an
unknown one is); the admin token sees every app and may narrow the list with ``user_id``.

Pausing an app (``PUT /{app_id}?is_active=false``) changes no memory; the service refuses
adds and reads made through a paused app.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query

from ..deps import PrincipalDep, ServiceDep, acting_user
from ..paging import PageQuery, SizeQuery

router = APIRouter(prefix="/api/v1/apps", tags=["apps"])


@router.get("")
def list_apps(
    principal: PrincipalDep,
    service: ServiceDep,
    user_id: str | None = Query(None, description="Only this user's apps (a user token: its own)"),
    name: str | None = Query(None, max_length=64, description="Case-insensitive substring of the name"),
    is_active: bool | None = None,
    sort_by: Literal["name", "memories", "memories_accessed"] = "name",
    sort_direction: Literal["asc", "desc"] = "asc",
    page: PageQuery = 1,
    page_size: SizeQuery = 10,
) -> dict[str, Any]:
    """The caller's apps with how many memories each created and how many distinct memories
    it read; the admin token lists every user's apps unless ``user_id`` is given."""
    owner = acting_user(principal, user_id) if (user_id is not None or not principal.is_admin) else None
    return service.apps.app_page(
        owner=owner,
        name=name,
        is_active=is_active,
        sort_by=sort_by,
        sort_direction=sort_direction,
        page=page,
        page_size=page_size,
    )


@router.get("/{app_id}")
def get_app(app_id: str, principal: PrincipalDep, service: ServiceDep) -> dict[str, Any]:
    """One app: whether it is active, its memory counts and when it first and last read one."""
    return service.apps.app_detail(app_id, principal)


@router.get("/{app_id}/memories")
def list_app_memories(
    app_id: str,
    principal: PrincipalDep,
    service: ServiceDep,
    page: PageQuery = 1,
    page_size: SizeQuery = 10,
) -> dict[str, Any]:
    """Memories the app created (active, paused and archived), newest first."""
    return service.apps.created_page(app_id, principal, page, page_size)


@router.get("/{app_id}/accessed")
def list_app_accessed(
    app_id: str,
    principal: PrincipalDep,
    service: ServiceDep,
    page: PageQuery = 1,
    page_size: SizeQuery = 10,
) -> dict[str, Any]:
    """Memories the app has read (searches, lists), most read first, with the read count."""
    return service.apps.accessed_page(app_id, principal, page, page_size)


@router.put("/{app_id}")
def update_app(
    app_id: str,
    principal: PrincipalDep,
    service: ServiceDep,
    is_active: bool = Query(..., description="false pauses the app, true resumes it"),
) -> dict[str, Any]:
    """Pause or resume an app. A paused app can neither add nor read memories."""
    service.apps.set_active(app_id, principal, is_active)
    return {"status": "success", "message": "Updated app details successfully", "is_active": is_active}
