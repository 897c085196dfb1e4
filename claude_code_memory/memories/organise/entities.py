"""Entities, stored and browsable: what :mod:`.entity_rules` finds in a user's memories.

    Entities(...).listing(user_id, kind=None, limit=100)      names with how many memories mention each
    Entities(...).search(user_id, query, kind=None, ...)   names containing ``query``, with their memories

Memories are read lazily: a memory whose ``entities_indexed`` is false (new, edited, or written
before entities existed) is read by the rules on the next list or search of its owner's
entities, so the write path pays nothing. Only memories that are listed (active or paused) or
archived count; trashed and deleted ones never show.

A call reads at most ``INDEX_PER_CALL`` memories itself and leaves the rest to a background
thread, so the first call after a large import or an upgrade answers in about a second with the
entities of the memories read so far (at 1M memories the whole reading takes minutes); the next
calls show more. The unread memories are found in a partial index (migration 0018): before it,
each batch walked past the memories already read, and reading 1M memories took over 10 minutes.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import delete, false, func, select, update
from sqlalchemy.orm import Session

from ...db.database import Database
from ...db.models import Entity, Memory, MemoryEntity, User
from ...domain.memory_state import MemoryState
from ...errors import BadInput
from ...store.owners import Owners
from .entity_rules import KINDS, extract

SHOWN = (MemoryState.active, MemoryState.paused, MemoryState.archived)
MAX_LIMIT = 500
#: Memories read per transaction while indexing.
INDEX_BATCH = 500
#: Memories a list or search call reads itself before it answers; the rest are read in the
#: background (~0.4 s of the rules' work at 10,000).
INDEX_PER_CALL = 10_000

log = logging.getLogger(__name__)


def _kind(kind: object) -> str | None:
    if kind is None:
        return None
    if kind not in KINDS:
        raise BadInput(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return str(kind)


def _limit(limit: object) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise BadInput(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return limit


class Entities:
    def __init__(self, database: Database, owners: Owners) -> None:
        self.database = database
        self.owners = owners
        #: Reads what a call left unread, one user after another.
        self.background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="entities-index")
        self._locks: dict[uuid.UUID, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._closing = threading.Event()

    def listing(self, user_id: str, *, kind: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        kind, limit = _kind(kind), _limit(limit)
        user_pk = self.index(user_id)
        if user_pk is None:
            return []
        with self.database.session() as session:
            return self._counted(session, user_pk, kind, limit, None)

    def search(
        self, user_id: str, query: str, *, kind: str | None = None, limit: int = 20, memories: int = 5
    ) -> list[dict[str, Any]]:
        """Entities whose name contains ``query`` (case-insensitive), each with up to
        ``memories`` of the memories that mention it, newest first."""
        if not isinstance(query, str) or not query.strip():
            raise BadInput("query must be a non-empty string")
        kind, limit = _kind(kind), _limit(limit)
        user_pk = self.index(user_id)
        if user_pk is None:
            return []
        with self.database.session() as session:
            found = self._counted(session, user_pk, kind, limit, query.strip())
            for item in found:
                rows = session.execute(
                    select(Memory.id, Memory.content, Memory.project, Memory.task)
                    .join(MemoryEntity, MemoryEntity.memory_id == Memory.id)
                    .where(MemoryEntity.entity_id == uuid.UUID(item["id"]), Memory.state.in_(SHOWN))
                    .order_by(Memory.created_at.desc())
                    .limit(memories)
                )
                item["memories"] = [
                    {"id": str(mid), "content": content, "project": project, "task": task}
                    for mid, content, project, task in rows
                ]
            return found

    def _counted(
        self, session: Session, user_pk: uuid.UUID, kind: str | None, limit: int, query: str | None
    ) -> list[dict[str, Any]]:
        count = func.count(Memory.id).label("memories")
        statement = (
            select(Entity.id, Entity.kind, Entity.name, count)
            .join(MemoryEntity, MemoryEntity.entity_id == Entity.id)
            .join(Memory, Memory.id == MemoryEntity.memory_id)
            .where(Entity.user_id == user_pk, Memory.state.in_(SHOWN))
            .group_by(Entity.id, Entity.kind, Entity.name)
            .order_by(count.desc(), Entity.name)
            .limit(limit)
        )
        if kind is not None:
            statement = statement.where(Entity.kind == kind)
        if query is not None:
            statement = statement.where(func.lower(Entity.name).contains(query.lower(), autoescape=True))
        return [
            {"id": str(eid), "kind": k, "name": name, "memories": n}
            for eid, k, name, n in session.execute(statement)
        ]

    def index(self, user_id: str) -> uuid.UUID | None:
        """Read up to ``INDEX_PER_CALL`` of the user's unread memories with the rules, and leave
        the rest to the background; the user's key (None: no such user). When the background is
        reading this user's memories already, the call reads none itself."""
        with self.database.session() as session:
            user_pk = session.scalar(select(User.id).where(User.user_id == user_id))
        if user_pk is None:
            return None
        lock = self._lock(user_pk)
        if lock.acquire(blocking=False):
            try:
                done = self._read(user_pk, INDEX_PER_CALL)
            finally:
                lock.release()
            if not done and not self._closing.is_set():
                self.background.submit(self._read_the_rest, user_pk)
        return user_pk

    def settle(self) -> None:
        """Wait until the background has read what the calls so far left to it."""
        self.background.submit(lambda: None).result()

    def close(self) -> None:
        """Stop the background after the batch it is reading."""
        self._closing.set()
        self.background.shutdown(wait=True, cancel_futures=True)

    def _lock(self, user_pk: uuid.UUID) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(user_pk, threading.Lock())

    def _read_the_rest(self, user_pk: uuid.UUID) -> None:
        try:
            with self._lock(user_pk):
                self._read(user_pk, None)
        except Exception:  # noqa: BLE001 - the next call reads again; a background error is logged
            log.exception("reading a user's memories for entities failed")

    def _read(self, user_pk: uuid.UUID, budget: int | None) -> bool:
        """Read unread memories in batches, up to ``budget`` (None: all, unless the server is
        closing); True when none is left unread."""
        read = 0
        known: dict[tuple[str, str], uuid.UUID] | None = None  # the user's entities, read once
        while budget is None or read < budget:
            if budget is None and self._closing.is_set():
                return False
            with self.database.session() as session:
                rows = session.execute(
                    select(Memory.id, Memory.content, Memory.project)
                    .where(
                        Memory.user_id == user_pk,
                        # The partial index's own term (migration 0018): a seek to the unread.
                        Memory.entities_indexed == false(),
                        Memory.state.in_(SHOWN),
                    )
                    .limit(INDEX_BATCH if budget is None else min(INDEX_BATCH, budget - read))
                ).all()
                if not rows:
                    return True
                if known is None:
                    known = {
                        (kind, name.casefold()): eid
                        for eid, kind, name in session.execute(
                            select(Entity.id, Entity.kind, Entity.name).where(Entity.user_id == user_pk)
                        )
                    }
                self._link(session, user_pk, rows, known)
                read += len(rows)
        return False

    def _link(
        self,
        session: Session,
        user_pk: uuid.UUID,
        rows: Sequence[Any],
        known: dict[tuple[str, str], uuid.UUID],
    ) -> None:
        """The entities of ``rows`` (id, content, project), linked, new ones added to ``known``
        (kind and folded name → id); the rows marked read."""
        ids = [memory_id for memory_id, _, _ in rows]
        session.execute(delete(MemoryEntity).where(MemoryEntity.memory_id.in_(ids)))
        for memory_id, content, project in rows:
            for found in extract(content, project):
                key = (found.kind, found.name.casefold())
                if key not in known:
                    entity = Entity(user_id=user_pk, kind=found.kind, name=found.name)
                    session.add(entity)
                    session.flush()
                    known[key] = entity.id
                session.add(MemoryEntity(memory_id=memory_id, entity_id=known[key]))
            session.flush()
        session.execute(update(Memory).where(Memory.id.in_(ids)).values(entities_indexed=True))
