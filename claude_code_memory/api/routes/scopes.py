"""Scopes over REST: which projects and tasks are in use, moving memories, ending a task.

    GET  /api/v1/scopes                      the user's projects and tasks, with counts
    POST /api/v1/memories/actions/move       memories into a project, a task or global
    POST /api/v1/tasks/complete              a task's memories archived, or promoted

Listing and search filter by scope through their own routes (``project``, ``task``, ``scope``
on ``GET /api/v1/memories``, ``POST /filter``, ``POST /search``, ``tasks`` on ``/browse``).
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from ..deps import PrincipalDep, ServiceDep, acting_user

router = APIRouter(prefix="/api/v1", tags=["scopes"])


class MoveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    memory_ids: list[uuid.UUID] = Field(min_length=1, max_length=1000)
    project: str | None = Field(None, max_length=512, description="the target project; null: global")
    task: str | None = Field(None, max_length=256, description="a task of the target project")


class CompleteTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    project: str = Field(min_length=1, max_length=512)
    task: str = Field(min_length=1, max_length=256)
    promote: bool = Field(False, description="keep the memories as project memories instead of archiving")


@router.get("/scopes", summary="The user's projects and tasks, with how many memories each holds")
def scopes(service: ServiceDep, principal: PrincipalDep, user_id: str | None = None) -> dict[str, Any]:
    return {"scopes": service.scopes.scopes_in_use(acting_user(principal, user_id))}


@router.post("/memories/actions/move", summary="Move memories to a project, a task or global")
def move(body: MoveRequest, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    uid = acting_user(principal, body.user_id)
    moved = service.move_memories(
        user_id=uid, memory_ids=body.memory_ids, project=body.project, task=body.task
    )
    return {"moved": moved, "project": body.project, "task": body.task}


@router.post("/tasks/complete", summary="End a task: its memories archived, or promoted to the project")
def complete(body: CompleteTask, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    uid = acting_user(principal, body.user_id)
    result = service.scopes.complete_task(
        user_id=uid, project=body.project, task=body.task, promote=body.promote
    )
    return {"project": body.project, "task": body.task, **result}
