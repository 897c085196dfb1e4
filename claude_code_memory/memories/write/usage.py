"""How many bytes of memory text each user stores: the quota the policy gate checks.

The sum of a user's texts is counted once, then kept up to date as memories are written; a
delete or a state change drops it, to be counted again at the next write. One server keeps it
in its memory. Replicas (several API processes on one database) keep it in the shared state
(store/shared_state.py), where every replica's writes add to it: before, each write of a
replica counted all of the user's texts again, a read that grows with the store. A replica that
dies between storing a memory and adding its bytes leaves the count short by them; the shared
count expires after ``SHARED_TTL`` and is counted afresh.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ...db.models import Memory
from ...domain.memory_state import MemoryState
from ...store.shared_state import SharedState

#: The shared state's scope of the replicas' counts, and how long a count lives.
SHARED_SCOPE = "usage:text-bytes"
SHARED_TTL = timedelta(minutes=10)


class Usage:
    """Bytes of memory text each user stores (the quota the gate checks), counted once and then
    kept: in this process, or with ``shared`` in the state every replica sees."""

    def __init__(self, shared: SharedState | None = None) -> None:
        self._bytes: dict[uuid.UUID, int] = {}
        self.shared = shared

    def used(self, session: Session, user_pk: uuid.UUID) -> int:
        used = self.known(user_pk)
        if used is None:
            used = int(
                session.scalar(
                    select(func.coalesce(func.sum(func.length(Memory.content)), 0)).where(
                        Memory.user_id == user_pk, Memory.state != MemoryState.deleted
                    )
                )
                or 0
            )
            if self.shared is not None:
                self.shared.set_count(SHARED_SCOPE, str(user_pk), used, ttl=SHARED_TTL)
            else:
                self._bytes[user_pk] = used
        return used

    def known(self, user_pk: uuid.UUID) -> int | None:
        """The user's bytes if counted already (no count of their memories), else None."""
        if self.shared is not None:
            return self.shared.counted(SHARED_SCOPE, str(user_pk))
        return self._bytes.get(user_pk)

    def add(self, user_pk: uuid.UUID, text: str) -> None:
        size = len(text.encode("utf-8"))
        if self.shared is not None:
            self.shared.add_to(SHARED_SCOPE, str(user_pk), size)
        elif user_pk in self._bytes:
            self._bytes[user_pk] += size

    def forget(self, user_pk: uuid.UUID | None = None) -> None:
        """Drop the count (after deletes); it is counted again at the next write."""
        if self.shared is not None:
            if user_pk is None:
                self.shared.drop(SHARED_SCOPE)
            else:
                self.shared.forget(SHARED_SCOPE, str(user_pk))
        elif user_pk is None:
            self._bytes.clear()
        else:
            self._bytes.pop(user_pk, None)
