"""Which categories a memory is in: each written memory is categorised (memories/write/categories.py)
and linked to its categories, which are created on first use and never deleted."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import delete, event, insert
from sqlalchemy.orm import Session

from ...db.get_or_create import get_or_create
from ...db.models import Category, Memory, MemoryCategory
from .categories import Categoriser


class CategoryLinks:
    def __init__(self, categoriser: Categoriser) -> None:
        self.categoriser = categoriser
        self._ids: dict[str, uuid.UUID] = {}

    def link_new(
        self, session: Session, memories: Sequence[tuple[uuid.UUID, str, Sequence[float]]]
    ) -> list[list[str]]:
        """Categorise new memories (id, text, vector) and link each to its categories, in one
        INSERT for all of them; answers each one's category names, sorted."""
        named = [self._names(vector, text) for _, text, vector in memories]
        # Missing categories are created in one order across the whole batch (see _names).
        ids = {name: self._id(session, name) for name in sorted({n for names in named for n in names})}
        links = [
            {"memory_id": memory_id, "category_id": ids[name]}
            for (memory_id, _, _), names in zip(memories, named, strict=True)
            for name in names
        ]
        if links:
            session.execute(insert(MemoryCategory), links)
        return named

    def relink(self, session: Session, memory: Memory, vector: Sequence[float]) -> None:
        """Categorise a stored memory again (its text changed) and link it to its categories
        instead of the ones it had."""
        names = self._names(vector, memory.content)
        session.execute(delete(MemoryCategory).where(MemoryCategory.memory_id == memory.id))
        for name in names:
            session.add(MemoryCategory(memory_id=memory.id, category_id=self._id(session, name)))
        session.flush()
        session.expire(memory, ["categories"])

    def _names(self, vector: Sequence[float], text: str) -> list[str]:
        # Sorted: every writer creates missing categories in one order. Two transactions that
        # each create categories the other needs would otherwise wait for each other (a
        # deadlock on PostgreSQL).
        return sorted(set(self.categoriser.categorise(vector, text)))

    def _id(self, session: Session, name: str) -> uuid.UUID:
        # Categories are a small fixed-ish set and never deleted: remember their ids, but only
        # once this transaction commits. Before that, a category it inserted is invisible to
        # other writers (their link to it fails the foreign key), and if it rolls back (its
        # memory lost a race to the same text) the id names no category at all.
        cached = self._ids.get(name)
        if cached is not None:
            return cached
        category_id = get_or_create(
            session, Category, {"name": name}, {"description": f"Automatically created category for {name}"}
        ).id

        def remember(_: Session) -> None:
            self._ids[name] = category_id

        event.listen(session, "after_commit", remember, once=True)
        return category_id
