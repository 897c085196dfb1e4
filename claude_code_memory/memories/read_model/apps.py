"""Apps (the MCP clients and REST callers that write and read memories) as OpenMemory's apps
router shows them: listed with their counts, one app's detail, the memories it created or
read, and pausing or resuming it.

Apps belong to a user: a principal sees only its own (another user's app is NotFound, as an
unknown one is, so an id's existence does not leak); the admin sees every app.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Select, desc, func, select
from sqlalchemy.orm import Session

from ...auth.identity import Principal
from ...db.database import Database
from ...db.models import App, Memory, MemoryAccessLog, User
from ...domain.memory_state import MemoryState
from ...errors import BadInput, NotFound
from ...store.access_log import AccessLog
from .queries import contains
from .shapes import category_names, iso, naive_iso

LISTED_STATES = (MemoryState.active, MemoryState.paused, MemoryState.archived)


def parse_app_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise BadInput(f"invalid app id {value!r}: expected a UUID") from None


def owned_app(session: Session, app_id: str, principal: Principal) -> App:
    """The app ``app_id`` if the principal may see it: NotFound when unknown or not theirs (one
    answer for both)."""
    app = session.get(App, parse_app_id(app_id))
    if app is None or not (principal.is_admin or app.owner.user_id == principal.user_id):
        raise NotFound(f"app {app_id} not found")
    return app


def _created_count() -> Any:
    """How many memories the app of the row created (active, paused, archived): a range of
    the index on ``(app_id, state)`` per app listed, not a grouping of every app's."""
    return (
        select(func.count(Memory.id))
        .where(Memory.app_id == App.id, Memory.state.in_(LISTED_STATES))
        .scalar_subquery()
    )


def _accessed_count() -> Any:
    """How many distinct memories the app of the row read: read from the index on
    ``(app_id, memory_id)`` alone (migration 0019)."""
    return (
        select(func.count(func.distinct(MemoryAccessLog.memory_id)))
        .where(MemoryAccessLog.app_id == App.id)
        .scalar_subquery()
    )


def _memory_item(memory: Memory, app_name: str) -> dict[str, Any]:
    return {
        "id": str(memory.id),
        "content": memory.content,
        "created_at": naive_iso(memory.created_at),  # the OpenMemory UI appends the "Z"
        "state": memory.state.value,
        "app_id": str(memory.app_id),
        "app_name": app_name,
        "categories": category_names(memory),
        "metadata_": memory.metadata_ or {},
    }


class Apps:
    """A user's apps: their pages, detail and the pause switch."""

    def __init__(self, database: Database, access_log: AccessLog) -> None:
        self.database = database
        self.access_log = access_log

    def app_page(
        self,
        *,
        owner: str | None,
        name: str | None = None,
        is_active: bool | None = None,
        sort_by: str = "name",
        sort_direction: str = "asc",
        page: int = 1,
        page_size: int = 10,
    ) -> dict[str, Any]:
        """Apps (``owner``'s, or everyone's for None) with how many memories each created and how
        many distinct memories it read."""
        self.access_log.flush()
        conditions: list[Any] = []
        if owner is not None:
            conditions.append(User.user_id == owner)
        if name:
            conditions.append(contains(App.name, name, "name"))
        if is_active is not None:
            conditions.append(App.is_active == is_active)
        # The total counts the apps alone; the counts are read for the apps listed only. Both
        # were joined to groupings of every app's memories and accesses, done twice a call.
        matching = (
            select(func.count()).select_from(App).join(User, App.owner_id == User.id).where(*conditions)
        )
        created_n, accessed_n = _created_count(), _accessed_count()
        query: Select[Any] = (
            select(App, User.user_id, created_n.label("created"), accessed_n.label("accessed"))
            .join(User, App.owner_id == User.id)
            .where(*conditions)
        )
        sort_field = {"name": App.name, "memories": created_n, "memories_accessed": accessed_n}[sort_by]
        ordered = query.order_by(
            desc(sort_field) if sort_direction == "desc" else sort_field, App.name, App.id
        )

        with self.database.session() as session:
            total = session.scalar(matching) or 0
            rows = session.execute(ordered.offset((page - 1) * page_size).limit(page_size)).all()
            apps = [
                {
                    "id": str(app.id),
                    "name": app.name,
                    "is_active": app.is_active,
                    "total_memories_created": int(created_count),
                    "total_memories_accessed": int(accessed_count),
                    "user_id": owner_user_id,
                }
                for app, owner_user_id, created_count, accessed_count in rows
            ]
        return {"total": total, "page": page, "page_size": page_size, "apps": apps}

    def app_detail(self, app_id: str, principal: Principal) -> dict[str, Any]:
        """Whether the app is active, its memory counts and when it first and last read one."""
        self.access_log.flush()
        with self.database.session() as session:
            app = owned_app(session, app_id, principal)
            created = session.scalar(
                select(func.count(Memory.id)).where(Memory.app_id == app.id, Memory.state.in_(LISTED_STATES))
            )
            accessed, first, last = session.execute(
                select(
                    func.count(func.distinct(MemoryAccessLog.memory_id)),
                    func.min(MemoryAccessLog.accessed_at),
                    func.max(MemoryAccessLog.accessed_at),
                ).where(MemoryAccessLog.app_id == app.id)
            ).one()
            return {
                "id": str(app.id),
                "name": app.name,
                "user_id": app.owner.user_id,
                "is_active": app.is_active,
                "total_memories_created": int(created or 0),
                "total_memories_accessed": int(accessed or 0),
                "first_accessed": iso(first),
                "last_accessed": iso(last),
            }

    def created_page(self, app_id: str, principal: Principal, page: int, page_size: int) -> dict[str, Any]:
        """Memories the app created (active, paused and archived), newest first."""
        with self.database.session() as session:
            app = owned_app(session, app_id, principal)
            where = (Memory.app_id == app.id, Memory.state.in_(LISTED_STATES))
            total = session.scalar(select(func.count(Memory.id)).where(*where)) or 0
            memories = session.scalars(
                select(Memory)
                .where(*where)
                .order_by(Memory.created_at.desc(), Memory.id)
                .offset((page - 1) * page_size)
                .limit(page_size)
            ).all()
            items = [_memory_item(memory, app.name) for memory in memories]
        return {"total": total, "page": page, "page_size": page_size, "memories": items}

    def accessed_page(self, app_id: str, principal: Principal, page: int, page_size: int) -> dict[str, Any]:
        """Memories the app has read (searches, lists), most read first, with the read count."""
        self.access_log.flush()
        with self.database.session() as session:
            app = owned_app(session, app_id, principal)
            access_count = func.count(MemoryAccessLog.id).label("access_count")
            query = (
                select(Memory, App.name, access_count)
                .join(MemoryAccessLog, MemoryAccessLog.memory_id == Memory.id)
                .join(App, Memory.app_id == App.id)
                # A deleted memory has no text left to show.
                .where(MemoryAccessLog.app_id == app.id, Memory.state != MemoryState.deleted)
                .group_by(Memory.id, App.name)
            )
            total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
            rows = session.execute(
                query.order_by(desc("access_count"), Memory.id)
                .offset((page - 1) * page_size)
                .limit(page_size)
            ).all()
            items = [
                {"memory": _memory_item(memory, name), "access_count": int(count)}
                for memory, name, count in rows
            ]
        return {"total": total, "page": page, "page_size": page_size, "memories": items}

    def set_active(self, app_id: str, principal: Principal, is_active: bool) -> None:
        """Pause (False) or resume the app. No memory changes; the service refuses a paused app's
        adds and reads."""
        with self.database.session() as session:
            owned_app(session, app_id, principal).is_active = is_active
