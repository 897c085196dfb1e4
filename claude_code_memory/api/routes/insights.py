"""What a person needs to curate their memories:

    GET /api/v1/insights                     dashboard: totals by state, app and project,
                                             memories per day, pending count, hygiene
    GET /api/v1/memories/{id}/history        a memory's status changes, oldest first

The figures and the hygiene lists are described in :mod:`claude_code_memory.memories.insights`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from ...memories import insights as dashboard
from ...memories import queries
from ..deps import PrincipalDep, ServiceDep, acting_user

router = APIRouter(prefix="/api/v1", tags=["insights"])


@router.get("/insights", summary="Dashboard figures and hygiene for one user")
def insights(
    principal: PrincipalDep,
    service: ServiceDep,
    user_id: str | None = None,
    days: int = Query(30, ge=1, le=366, description="how many days the memories-per-day series covers"),
    expiring_within_days: int = Query(7, ge=1, le=365),
) -> dict[str, Any]:
    return dashboard.insights(service, acting_user(principal, user_id), days, expiring_within_days)


@router.get("/memories/{memory_id}/history", summary="A memory's status changes, oldest first")
def status_history(memory_id: str, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    memory = service.get(memory_id, None if principal.is_admin else principal.user_id)
    return queries.status_history(service, memory)
