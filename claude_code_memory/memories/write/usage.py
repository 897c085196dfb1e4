"""How many bytes of memory text each user stores: the quota the policy gate checks."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ...db.models import Memory, MemoryState


class Usage:
    """Bytes of memory text each user stores (the quota the gate checks): counted once, then
    kept up to date in process. ``shared``: other processes (API replicas) write to the same
    database, so a count kept here would go stale: every check counts again."""

    def __init__(self, *, shared: bool = False) -> None:
        self._bytes: dict[uuid.UUID, int] = {}
        self.shared = shared

    def used(self, session: Session, user_pk: uuid.UUID) -> int:
        used = None if self.shared else self._bytes.get(user_pk)
        if used is None:
            used = int(
                session.scalar(
                    select(func.coalesce(func.sum(func.length(Memory.content)), 0)).where(
                        Memory.user_id == user_pk, Memory.state != MemoryState.deleted
                    )
                )
                or 0
            )
            if not self.shared:
                self._bytes[user_pk] = used
        return used

    def known(self, user_pk: uuid.UUID) -> int | None:
        """The user's bytes if counted already (no query), else None."""
        return self._bytes.get(user_pk)

    def add(self, user_pk: uuid.UUID, text: str) -> None:
        if user_pk in self._bytes:
            self._bytes[user_pk] += len(text.encode("utf-8"))

    def forget(self, user_pk: uuid.UUID | None = None) -> None:
        """Drop cached usage (after deletes); it is recounted on the next write."""
        if user_pk is None:
            self._bytes.clear()
        else:
            self._bytes.pop(user_pk, None)
