"""Moving in from OpenMemory: ``POST /api/v1/import/openmemory``.

``ccmem import openmemory PATH`` reads the OpenMemory database on the user's machine and posts
its memories here in batches. Each memory names the local user it goes to (``user_id``; none:
the token's user); a user token may only import into its own user, the admin token into any.
Every target is checked before anything is written. What happens to each memory is described
in :mod:`claude_code_memory.memories.portability.openmemory_import`. A memory of the batch that
is not valid (empty content, an id that is not a UUID, an unknown state...) is skipped and named
in the answer's ``bad_rows`` (``{"openmemory_id", "reason"}``); the rest are imported.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...domain.memory_state import MemoryState
from ...memories.portability import openmemory_import as om
from ..deps import PrincipalDep, ServiceDep, acting_user
from ..errors import item_error

router = APIRouter(prefix="/api/v1/import", tags=["import"])

OpenMemoryState = Literal["active", "paused", "archived", "deleted"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AppIn(_Strict):
    name: str = Field(min_length=1, max_length=64)
    is_active: bool = True
    description: str | None = Field(None, max_length=10_000)
    created_at: datetime | None = None


class AccessIn(_Strict):
    app: str = Field(min_length=1, max_length=64)
    accessed_at: datetime | None = None
    access_type: str = Field(min_length=1, max_length=32)
    metadata: dict[str, Any] = Field(default_factory=dict)


class StateChangeIn(_Strict):
    old_state: OpenMemoryState
    new_state: OpenMemoryState
    changed_at: datetime | None = None


class OpenMemoryIn(_Strict):
    openmemory_id: uuid.UUID
    openmemory_user: str | None = Field(None, description="The OpenMemory user it belonged to")
    user_id: str | None = Field(None, description="The local user it goes to; default the token's user")
    app: AppIn
    content: str = Field(min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)
    state: Literal["active", "paused", "archived"]
    created_at: datetime | None = None
    updated_at: datetime | None = None
    archived_at: datetime | None = None
    categories: list[str] = Field(default_factory=list, max_length=100)
    access_logs: list[AccessIn] = Field(default_factory=list, max_length=1000)
    status_history: list[StateChangeIn] = Field(default_factory=list, max_length=1000)


class OpenMemoryBatch(_Strict):
    #: Each validated on its own (:class:`OpenMemoryIn`): one bad memory does not refuse the batch.
    memories: list[Any] = Field(
        max_length=500, description="OpenMemoryIn objects; an invalid one is skipped and named in bad_rows"
    )


def _valid(items: list[Any]) -> tuple[list[OpenMemoryIn], list[dict[str, str | None]]]:
    """The memories that are valid, and each one that is not, with its id (when it has one)
    and why."""
    valid: list[OpenMemoryIn] = []
    bad: list[dict[str, str | None]] = []
    for item in items:
        try:
            valid.append(OpenMemoryIn.model_validate(item))
        except ValidationError as exc:
            named = item.get("openmemory_id") if isinstance(item, dict) else None
            bad.append(
                {
                    "openmemory_id": str(named) if named is not None else None,
                    "reason": item_error(exc)["error"],
                }
            )
    return valid, bad


def _utc(moment: datetime | None) -> datetime | None:
    """Naive UTC, as the database keeps times."""
    if moment is None or moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


@router.post(
    "/openmemory", summary="Import memories read from an OpenMemory database (ccmem import openmemory)"
)
def import_openmemory(body: OpenMemoryBatch, principal: PrincipalDep, service: ServiceDep) -> dict[str, Any]:
    """Each memory passes the policy gate, is embedded again and keeps its state, app, categories,
    dates and access log; one imported before, or a duplicate of one the user has, is skipped."""
    valid, bad_rows = _valid(body.memories)
    targets = {m.user_id: acting_user(principal, m.user_id) for m in valid}  # all, before writing
    memories = [
        om.SourceMemory(
            openmemory_id=str(m.openmemory_id),
            user_id=targets[m.user_id],
            app=om.SourceApp(m.app.name, m.app.is_active, m.app.description, _utc(m.app.created_at)),
            content=m.content,
            state=MemoryState(m.state),
            metadata=m.metadata,
            created_at=_utc(m.created_at),
            updated_at=_utc(m.updated_at),
            archived_at=_utc(m.archived_at),
            categories=tuple(m.categories),
            access_logs=tuple(
                om.Access(a.app, _utc(a.accessed_at), a.access_type, a.metadata) for a in m.access_logs
            ),
            status_history=tuple(
                om.StateChange(h.old_state, h.new_state, _utc(h.changed_at)) for h in m.status_history
            ),
        )
        for m in valid
    ]
    report = service.openmemory_import.import_memories(memories).to_dict()
    return report | {"received": len(body.memories), "bad_rows": bad_rows}
