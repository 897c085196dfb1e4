"""What a person needs to curate their memories:

    GET /api/v1/insights                     dashboard: totals by state, app and project,
                                             memories per day, pending count, hygiene
    GET /api/v1/memories/{id}/history        a memory's status changes, oldest first
    GET /api/v1/insights/reflection          patterns across conversations (MCP
                                             analyze_conversations)
    GET /api/v1/insights/next-actions        what to pick up next (MCP suggest_next_actions)

The figures and the hygiene lists are described in :mod:`claude_code_memory.memories.read_model.insights`,
the reflection in :mod:`claude_code_memory.memories.reflection.analysis`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

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
    return service.insights.report(acting_user(principal, user_id), days, expiring_within_days)


@router.get("/memories/{memory_id}/history", summary="A memory's status changes, oldest first")
def status_history(memory_id: str, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    memory = service.reads.get(memory_id, None if principal.is_admin else principal.user_id)
    return service.queries.status_history(memory)


@router.get("/insights/reflection", summary="Recurring topics and problems, decisions, files, open questions")
def conversation_analysis(
    principal: PrincipalDep,
    service: ServiceDep,
    user_id: str | None = None,
    since: str | None = Query(None, max_length=40, description="7d, 24h, 2w or an ISO date (default: all)"),
    project: str | None = Query(None, max_length=512, description="only this project's memories"),
) -> dict[str, Any]:
    return service.reflection.analyze_conversations(acting_user(principal, user_id), since, project)


@router.get("/insights/next-actions", summary="What to pick up next, each with its reason")
def next_actions(
    principal: PrincipalDep,
    service: ServiceDep,
    user_id: str | None = None,
    project: str | None = Query(None, max_length=512, description="only this project's memories"),
) -> dict[str, Any]:
    return service.reflection.suggest_next_actions(acting_user(principal, user_id), project)
