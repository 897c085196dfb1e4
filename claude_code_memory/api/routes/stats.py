"""Stats: one user's memory and app counts (`/api/v1/stats`), as OpenMemory's dashboard reads them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from sqlalchemy import func, select

from ...db.models import App, Memory, MemoryState
from ..deps import PrincipalDep, ServiceDep, acting_user
from ...memories.shapes import app_row

router = APIRouter(prefix="/api/v1/stats", tags=["stats"])


@router.get("")
def get_stats(
    principal: PrincipalDep,
    service: ServiceDep,
    user_id: str | None = Query(
        None, description="Defaults to the token's user; the admin token must name one"
    ),
) -> dict[str, Any]:
    """``{total_memories, total_apps, apps}``: memories not deleted, and the user's apps."""
    owner = acting_user(principal, user_id)
    with service.database.session() as session:
        user = service.find_user(session, owner)
        total_memories = session.scalar(
            select(func.count(Memory.id)).where(
                Memory.user_id == user.id, Memory.state != MemoryState.deleted
            )
        )
        apps = session.scalars(select(App).where(App.owner_id == user.id).order_by(App.name)).all()
        return {
            "total_memories": int(total_memories or 0),
            "total_apps": len(apps),
            "apps": [app_row(app) for app in apps],
        }
