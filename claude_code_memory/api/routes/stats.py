"""Stats: one user's memory and app counts (`/api/v1/stats`), as OpenMemory's dashboard reads them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from ..deps import PrincipalDep, ServiceDep, acting_user

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
    return service.queries.stats(acting_user(principal, user_id))
