"""Entities, stored and browsable: what :mod:`.entity_rules` finds in a user's memories.

    Entities(...).listing(user_id, kind=None, limit=100)      names with how many memories mention each
    Entities(...).search(user_id, query, kind=None, ...)   names containing ``query``, with their memories

Memories are read lazily: a memory whose ``entities_indexed`` is false (new, edited, or written
before entities existed) is read by the rules on the next list or search of its owner's
entities, so the write path pays nothing. Only memories that are listed (active or paused) or
archived count; trashed and deleted ones never show.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from ...db.database import Database
from ...db.models import Entity, Memory, MemoryEntity, MemoryState, User
from ...errors import BadInput
from ...store.owners import Owners
from .entity_rules import KINDS, extract

SHOWN = (MemoryState.active, MemoryState.paused, MemoryState.archived)
MAX_LIMIT = 500
#: Memories read per transaction while indexing.
INDEX_BATCH = 500


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
        """Read the user's unread memories with the rules; the user's key (None: no such user)."""
        with self.database.session() as session:
            user_pk = session.scalar(select(User.id).where(User.user_id == user_id))
        if user_pk is None:
            return None
        while True:
            with self.database.session() as session:
                rows = session.execute(
                    select(Memory.id, Memory.content, Memory.project)
                    .where(
                        Memory.user_id == user_pk,
                        Memory.entities_indexed.is_(False),
                        Memory.state.in_(SHOWN),
                    )
                    .limit(INDEX_BATCH)
                ).all()
                if not rows:
                    return user_pk
                known = {
                    (kind, name.casefold()): eid
                    for eid, kind, name in session.execute(
                        select(Entity.id, Entity.kind, Entity.name).where(Entity.user_id == user_pk)
                    )
                }
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
