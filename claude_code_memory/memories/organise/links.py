"""Links between memories: ``link_memories(a, b, relation)``, stored once, read from both ends.

    Links(...).link(user_id, a, b, relation)   -> the link (the same one when it exists)
    Links(...).unlink(user_id, link_id)
    Links(...).of(user_id, memory_id)          -> the memory's links, each with the other memory

A link joins two memories of one user; ``relation`` is a short lower-case word or phrase
("depends on", "supersedes", "see also"). The related-memories route lists linked memories
first (queries.py). Deleting a memory for real removes its links (the foreign keys cascade).
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError

from ...db.database import Database
from ...db.models import Memory, MemoryLink
from ...domain.memory_state import MemoryState
from ...errors import BadInput, NotFound
from ...store.owners import Owners, owned
from ...store.values import iso, parse_memory_id

RELATION = re.compile(r"^[a-z][a-z0-9_ -]{0,63}$")
#: States whose links are shown (a trashed or deleted memory's links are not).
SHOWN = (MemoryState.active, MemoryState.paused, MemoryState.archived)


def relation_of(value: object) -> str:
    relation = value.strip().lower() if isinstance(value, str) else ""
    if not RELATION.match(relation):
        raise BadInput(
            "relation must be 1-64 characters: lower-case letters, digits, spaces, '_' or '-', "
            f"starting with a letter; got {value!r}"
        )
    return relation


def link_dict(link: MemoryLink) -> dict[str, Any]:
    return {
        "id": str(link.id),
        "source_id": str(link.source_id),
        "target_id": str(link.target_id),
        "relation": link.relation,
        "created_at": iso(link.created_at),
    }


class Links:
    def __init__(self, database: Database, owners: Owners) -> None:
        self.database = database
        self.owners = owners

    def link(self, user_id: str, source: object, target: object, relation: object) -> dict[str, Any]:
        source_id, target_id = parse_memory_id(source), parse_memory_id(target)
        if source_id == target_id:
            raise BadInput("a memory cannot be linked to itself")
        name = relation_of(relation)
        with self.database.session() as session:
            for memory_id in (source_id, target_id):
                memory = owned(session, memory_id, user_id)
                if memory.state not in SHOWN:
                    raise NotFound(f"memory {memory_id} not found")
            user_pk = memory.user_id
            existing = session.scalar(
                select(MemoryLink).where(
                    MemoryLink.source_id == source_id,
                    MemoryLink.target_id == target_id,
                    MemoryLink.relation == name,
                )
            )
            if existing is not None:
                return link_dict(existing) | {"created": False}
            link = MemoryLink(user_id=user_pk, source_id=source_id, target_id=target_id, relation=name)
            session.add(link)
            try:
                session.flush()
            except IntegrityError:  # a racing twin: the same link exists now
                session.rollback()
                return self.link(user_id, source_id, target_id, name)
            return link_dict(link) | {"created": True}

    def unlink(self, user_id: str, link_id: object) -> None:
        key = parse_memory_id(link_id)
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            link = session.get(MemoryLink, key)
            if link is None or link.user_id != user.id:
                raise NotFound(f"link {key} not found")
            session.delete(link)

    def of(self, user_id: str | None, memory_id: object) -> list[dict[str, Any]]:
        """The memory's links, newest first, each with the other memory (shown states only)."""
        key = parse_memory_id(memory_id)
        with self.database.session() as session:
            owned(session, key, user_id)
            rows = session.scalars(
                select(MemoryLink)
                .where(or_(MemoryLink.source_id == key, MemoryLink.target_id == key))
                .order_by(MemoryLink.created_at.desc())
            ).all()
            others = {link.target_id if link.source_id == key else link.source_id for link in rows}
            memories = {
                m.id: m
                for m in session.scalars(select(Memory).where(Memory.id.in_(others), Memory.state.in_(SHOWN)))
            }
            result = []
            for link in rows:
                other = link.target_id if link.source_id == key else link.source_id
                if other not in memories:
                    continue
                result.append(
                    link_dict(link)
                    | {
                        "direction": "outgoing" if link.source_id == key else "incoming",
                        "memory": {"id": str(other), "content": memories[other].content},
                    }
                )
            return result
