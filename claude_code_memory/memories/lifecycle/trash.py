"""The trash: deleted memories that can still be restored, for ``privacy.trash_days``.

    Trash(...).list(user_id, page, size)            what is in the user's trash, newest first
    Trash(...).restore(memory_ids, user_id=...)     back to the state each had before
    Trash(...).purge(memory_ids, user_id=...)       deleted for real now (states.py's delete)

With ``privacy.trash_days`` > 0 a delete (REST, MCP, the UI) moves memories here
(``States._to_trash``): state ``trashed``, out of every search and list, **the text and the
vector kept** until the memory is restored or purged. Its profile facts are kept too, and say
nothing meanwhile (profile/facts.py). The retention sweep purges what has been
in the trash longer than ``trash_days`` (retention.py), as it purges expired memories: the row,
the vector and mem0's history go, and erasure rewrites the files. Forget and retention never
pass through the trash. With ``trash_days: 0`` (the default) nothing ever comes here and a
delete erases at once, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import func, select

from ...db.database import Database
from ...db.models import App, Memory, MemoryStatusHistory, User
from ...domain.memory_state import MemoryState
from ...errors import Conflict
from ...policy.gate import content_hash
from ...store.owners import Owners
from ...store.values import iso, parse_memory_id
from ...store.vectors import Vectors
from ..read_model.shapes import memory_response
from ..write.usage import Usage
from .states import States

RESTORABLE = (MemoryState.active, MemoryState.paused, MemoryState.archived)


class Trash:
    def __init__(
        self, database: Database, owners: Owners, vectors: Vectors, usage: Usage, states: States
    ) -> None:
        self.database = database
        self.owners = owners
        self.vectors = vectors
        self.usage = usage
        self.states = states

    def list(self, user_id: str, *, page: int = 1, size: int = 50) -> dict[str, Any]:
        with self.database.session() as session:
            user = session.scalar(select(User).where(User.user_id == user_id))
            if user is None:
                return {"items": [], "total": 0, "page": page, "size": size, "pages": 1, "trash_days": 0}
            mine = (Memory.user_id == user.id, Memory.state == MemoryState.trashed)
            total = session.scalar(select(func.count()).select_from(Memory).where(*mine)) or 0
            rows = session.execute(
                select(Memory, App.name)
                .join(App, Memory.app_id == App.id)
                .where(*mine)
                .order_by(Memory.deleted_at.desc())
                .offset((page - 1) * size)
                .limit(size)
            )
            items = [memory_response(m, name) | {"deleted_at": iso(m.deleted_at)} for m, name in rows]
        return {
            "items": items,
            "total": total,
            "page": page,
            "size": size,
            "pages": max(1, -(-total // size)),
            "trash_days": self.states.trash_days,
        }

    def restore(self, memory_ids: Iterable[object], *, user_id: str) -> dict[str, Any]:
        """Put trashed memories back in the state they had; one whose text was written again
        meanwhile stays in the trash and is reported in ``conflicts``."""
        ids = [parse_memory_id(m) for m in memory_ids]
        restored: list[str] = []
        conflicts: list[dict[str, str]] = []
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            rows = session.scalars(
                select(Memory).where(
                    Memory.id.in_(ids), Memory.user_id == user.id, Memory.state == MemoryState.trashed
                )
            )
            for memory in list(rows):
                digest = content_hash(memory.content)
                twin = session.scalar(
                    select(Memory.id).where(Memory.user_id == user.id, Memory.content_hash == digest)
                )
                if twin is not None:
                    conflicts.append({"id": str(memory.id), "error": f"memory {twin} already says this"})
                    continue
                before = session.scalar(
                    select(MemoryStatusHistory.old_state)
                    .where(
                        MemoryStatusHistory.memory_id == memory.id,
                        MemoryStatusHistory.new_state == MemoryState.trashed.value,
                    )
                    .order_by(MemoryStatusHistory.changed_at.desc())
                    .limit(1)
                )
                state = MemoryState(before) if before in {s.value for s in RESTORABLE} else MemoryState.active
                self.states.record_state(session, memory, state, user.id)
                memory.deleted_at = None
                memory.content_hash = digest
                session.flush()
                self.vectors.set_payload(str(memory.id), {"state": state.value})
                self.usage.forget(memory.user_id)
                restored.append(str(memory.id))
        return {"restored": restored, "conflicts": conflicts}

    def purge(self, memory_ids: Iterable[object], *, user_id: str) -> int:
        """Delete trashed memories for real now (the tombstone and erasure of any delete)."""
        ids = [parse_memory_id(m) for m in memory_ids]
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            trashed = list(
                session.scalars(
                    select(Memory.id).where(
                        Memory.id.in_(ids), Memory.user_id == user.id, Memory.state == MemoryState.trashed
                    )
                )
            )
        if not trashed:
            raise Conflict("none of these memories is in the trash")
        return self.states.delete_memories(trashed, user_id=user_id, changed_by=user_id, permanent=True)
