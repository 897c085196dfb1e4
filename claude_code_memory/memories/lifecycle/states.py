"""A memory's state after it is written: active, paused, archived, deleted; pending items rejected.

Every change is recorded in ``memory_status_history`` and mirrored into the vector payload, so
searches filter on state inside the vector store. Deleting is for real: the vector point, mem0's
history rows and the text go; a content-less tombstone row stays.

A delete commits the tombstones first and removes the vectors after: a crash in between leaves
vectors whose rows are deleted, which searches never return (every hit is checked against its
row) and the start-up reconciliation (reconcile.py) removes. The other order left rows listed
as active whose vectors were gone.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from ...db.batches import slices
from ...db.database import Database
from ...db.models import ConsentDecision, Memory, MemoryCategory, MemoryStatusHistory, User, utcnow
from ...domain.memory_state import MemoryState
from ...errors import Conflict
from ...store.owners import Owners, owned
from ...store.values import parse_memory_id
from ...store.vectors import Vectors
from ..write.usage import Usage
from .erasure import Erasure


class States:
    def __init__(
        self,
        database: Database,
        owners: Owners,
        vectors: Vectors,
        usage: Usage,
        erasure: Erasure,
        trash_days: int = 0,
        on_delete: Callable[[set[uuid.UUID]], object] | None = None,
    ) -> None:
        #: ``privacy.trash_days``: > 0 makes a delete move memories to the trash (trash.py).
        self.trash_days = trash_days
        #: Told which users lost memories, before the erasure (the profile drops their facts).
        self.on_delete = on_delete
        self.database = database
        self.owners = owners
        self.vectors = vectors
        self.usage = usage
        self.erasure = erasure

    def change_state(
        self,
        memory_ids: Iterable[object],
        new_state: MemoryState,
        *,
        user_id: str | None,
        changed_by: str | None,
    ) -> int:
        """Move memories to ``new_state``; ``user_id`` restricts to that owner (None = admin)."""
        if new_state == MemoryState.deleted:
            return self.delete_memories(memory_ids, user_id=user_id, changed_by=changed_by)
        ids = [parse_memory_id(m) for m in memory_ids]
        changed = 0
        with self.database.session() as session:
            actor = self._actor(session, changed_by)
            for memory in self._rows(session, ids, user_id):
                if memory.state in (new_state, MemoryState.deleted, MemoryState.trashed):
                    continue
                self.record_state(session, memory, new_state, actor)
                self.vectors.set_payload(str(memory.id), {"state": new_state.value})
                changed += 1
        return changed

    def delete_memories(
        self,
        memory_ids: Iterable[object],
        *,
        user_id: str | None,
        changed_by: str | None = None,
        app_name: str | None = None,
        permanent: bool = False,
    ) -> int:
        """Delete for real: the vector point and the text go; a content-less tombstone stays.

        ``user_id`` restricts to that owner's memories (None: any, for the admin); ids of
        other users' memories are ignored. ``app_name``, when given, must not be paused.
        With ``trash_days`` > 0 (and not ``permanent``) memories go to the trash instead
        (:meth:`_to_trash`); pending items, never embedded, are deleted for real all the same.
        """
        ids = [parse_memory_id(m) for m in memory_ids]
        embedded: list[str] = []
        owners: set[uuid.UUID] = set()
        deleted = tombstones = 0
        with self.database.session() as session:
            if app_name is not None and user_id is not None:
                self.owners.require_active(
                    self.owners.app(session, self.owners.user(session, user_id), app_name), "delete memories"
                )
            actor = self._actor(session, changed_by or user_id)
            for memory in self._rows(session, ids, user_id):
                if memory.state == MemoryState.deleted:
                    continue
                if self.trash_days and not permanent and memory.state != MemoryState.pending:
                    deleted += self._to_trash(session, memory, actor)
                    continue
                if memory.state != MemoryState.pending:  # pending items were never embedded
                    embedded.append(str(memory.id))
                self.usage.forget(memory.user_id)
                owners.add(memory.user_id)
                self.record_state(session, memory, MemoryState.deleted, actor)
                memory.content = ""
                memory.content_hash = None
                memory.path = None  # a file's name may say what it held
                session.execute(delete(MemoryCategory).where(MemoryCategory.memory_id == memory.id))
                deleted += 1
                tombstones += 1
        for memory_id in embedded:  # after the tombstones are committed (see the module's docstring)
            self.vectors.delete(memory_id)
        if tombstones and self.on_delete is not None:
            self.on_delete(owners)
        if tombstones:
            self.erasure.erase()  # once per request: the old bytes leave the files
        return deleted

    def _to_trash(self, session: Session, memory: Memory, actor: uuid.UUID | None) -> int:
        """Move one memory to the trash: out of every search and list, text and vector kept
        until it is restored or purged (trash.py). Its hash is cleared, so the same text can
        be written again meanwhile; a restore checks for that twin."""
        if memory.state == MemoryState.trashed:
            return 0
        self.usage.forget(memory.user_id)
        self.record_state(session, memory, MemoryState.trashed, actor)
        memory.deleted_at = memory.updated_at
        memory.content_hash = None
        self.vectors.set_payload(str(memory.id), {"state": MemoryState.trashed.value})
        return 1

    def delete_all(self, *, user_id: str, app_name: str | None = None) -> int:
        with self.database.session() as session:
            user = self.owners.user(session, user_id)
            gone = [MemoryState.deleted, MemoryState.trashed]
            query = select(Memory.id).where(Memory.user_id == user.id, Memory.state.notin_(gone))
            ids = list(session.scalars(query))
        return self.delete_memories(ids, user_id=user_id, changed_by=user_id, app_name=app_name)

    def reject(self, memory_id: object, *, user_id: str, decided_by: str, erase: bool = True) -> None:
        """Reject a pending item: its text is gone for good; the decision is recorded. A bulk
        rejection passes ``erase=False`` and erases once for the whole batch."""
        mid = parse_memory_id(memory_id)
        with self.database.session() as session:
            pending = owned(session, mid, user_id)
            if pending.state != MemoryState.pending:
                raise Conflict(f"memory {mid} is not pending (state {pending.state.value})")
            session.add(
                ConsentDecision(
                    memory_id=mid, user_id=pending.user_id, decision="rejected", decided_by=decided_by
                )
            )
            self.usage.forget(pending.user_id)
            session.delete(pending)
        if erase:
            self.erasure.erase()

    def _rows(self, session: Session, ids: Sequence[uuid.UUID], user_id: str | None) -> list[Memory]:
        rows: list[Memory] = []
        for some in slices(ids):  # a deletion of a whole store passes every id (db/batches.py)
            query = select(Memory).where(Memory.id.in_(some))
            if user_id is not None:
                query = query.join(User, Memory.user_id == User.id).where(User.user_id == user_id)
            rows.extend(session.scalars(query))
        return rows

    def _actor(self, session: Session, changed_by: str | None) -> uuid.UUID | None:
        if changed_by is None:
            return None
        user = session.scalar(select(User).where(User.user_id == changed_by))
        return user.id if user else None

    @staticmethod
    def record_state(
        session: Session, memory: Memory, new_state: MemoryState, actor: uuid.UUID | None
    ) -> None:
        """Move a memory to ``new_state`` and write the change into its history (the trash's
        restore records its moves here too)."""
        now = utcnow()
        session.add(
            MemoryStatusHistory(
                memory_id=memory.id,
                changed_by=actor,
                old_state=memory.state.value,
                new_state=new_state.value,
                changed_at=now,
            )
        )
        memory.state = new_state
        memory.updated_at = now
        if new_state == MemoryState.archived:
            memory.archived_at = now
        elif new_state == MemoryState.deleted:
            memory.deleted_at = now
