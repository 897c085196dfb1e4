"""The trash over REST (``privacy.trash_days`` > 0; see memories/lifecycle/trash.py).

GET  /api/v1/trash            the user's deleted memories still restorable, newest first
POST /api/v1/trash/restore    {memory_ids} back to the state each had
POST /api/v1/trash/purge      {memory_ids} deleted for real now
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from ..deps import PrincipalDep, ServiceDep, acting_user
from ..paging import PageQuery, SizeQuery

router = APIRouter(prefix="/api/v1/trash", tags=["trash"])


class TrashRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    memory_ids: list[uuid.UUID] = Field(min_length=1, max_length=1000)


@router.get("", summary="Deleted memories that can still be restored")
def trash(
    service: ServiceDep,
    principal: PrincipalDep,
    user_id: str | None = None,
    page: PageQuery = 1,
    size: SizeQuery = 50,
) -> dict[str, Any]:
    return service.trash.list(acting_user(principal, user_id), page=page, size=size)


@router.post("/restore", summary="Restore memories from the trash")
def restore(body: TrashRequest, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    return service.restore_memories(user_id=acting_user(principal, body.user_id), memory_ids=body.memory_ids)


@router.post("/purge", summary="Delete memories in the trash for real now")
def purge(body: TrashRequest, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    uid = acting_user(principal, body.user_id)
    return {"purged": service.trash.purge(body.memory_ids, user_id=uid)}
