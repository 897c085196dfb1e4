"""Storage: where the bytes are, giving space back after deletes, and the quota warning.

    GET  /api/v1/storage             bytes per store, users' memories and quota, growth per day
    POST /api/v1/storage/reclaim     vacuum SQLite and compact the vector store now (admin token)

Writes (``POST /api/v1/memories``, ``/memories/batch``, ``/capture``) carry the quota warning
once the user's text reaches ``performance.quota_warning_ratio`` of the quota: a
``X-Memory-Quota-Warning`` header and a ``quota_warning`` key in the body
(:func:`with_quota_warning`). See memories/lifecycle/storage.py and memories/lifecycle/reclaim.py.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict

from ...errors import Forbidden
from ...memories.service import MemoryService
from ..deps import PrincipalDep, ServiceDep, acting_user

router = APIRouter(prefix="/api/v1/storage", tags=["storage"])

QUOTA_HEADER = "X-Memory-Quota-Warning"


class ReclaimRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    force: bool = False


@router.get("", summary="Bytes per store, memories and quota per user, growth per day")
def storage_view(
    principal: PrincipalDep,
    service: ServiceDep,
    user_id: str | None = Query(
        None, description="a user token sees its own user; the admin token every user"
    ),
    days: int = Query(30, ge=1, le=366, description="how many days the growth series covers"),
) -> dict[str, Any]:
    scope = None if principal.is_admin and user_id is None else acting_user(principal, user_id)
    return service.storage.report(scope, days)


@router.post("/reclaim", summary="Give deleted data's space back to the disk now (admin token)")
async def reclaim(
    principal: PrincipalDep, service: ServiceDep, body: ReclaimRequest | None = None
) -> dict[str, Any]:
    """VACUUM the SQLite files and compact the vector store when enough of each is reclaimable
    (``storage.reclaim_threshold``), or all of them with ``force``. Answers the bytes before and
    after per store."""
    if not principal.is_admin:
        raise Forbidden("reclaiming rewrites every user's stores: it needs the admin token")
    force = bool(body and body.force)
    report: dict[str, Any] = await anyio.to_thread.run_sync(lambda: service.reclaim.run(force=force))
    return report


def with_quota_warning(
    response: Response, service: MemoryService, user_id: str, body: Any, user_pk: uuid.UUID | None = None
) -> Any:
    """``body`` with the user's quota warning added (and the header set), when there is one.
    ``user_pk``: the user's key when the caller has it (saves looking the user up)."""
    response.headers.update(quota_warned(service, user_id, body, user_pk))
    return body


def quota_warned(
    service: MemoryService, user_id: str, body: Any, user_pk: uuid.UUID | None = None
) -> dict[str, str]:
    """The response headers of the user's quota warning (none when there is none); a dict
    ``body`` gets the warning's ``quota_warning`` key. For a route that builds its own response."""
    warning = service.storage.quota_warning(user_id, user_pk)
    if warning is None:
        return {}
    if isinstance(body, dict):
        body["quota_warning"] = warning
    return {QUOTA_HEADER: warning["warning"]}
