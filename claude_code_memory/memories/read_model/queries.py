"""The read model of one user's memories: list, filter and browse pages, categories, related
memories, a memory's access log and status history, and the stats counts.

Each method of :class:`Queries` takes a user the caller has already authorised (or a memory the service handed
out) and returns the JSON-ready shape of the OpenMemory contract.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import Select, and_, func, or_, select
from sqlalchemy.orm import Session

from ...db.database import Database
from ...db.models import App, Category, Memory, MemoryAccessLog, MemoryCategory, MemoryStatusHistory, User
from ...domain.memory_state import MemoryState
from ...errors import BadInput, NotFound
from ...store.access_log import AccessLog
from ...store.owners import Owners
from ..organise.links import Links
from . import facets
from .reads import Reads
from .shapes import app_row, epoch, iso, memory_response, naive_iso, page

#: What OpenMemory's list and filter calls may sort by.
SORT_COLUMNS = {
    "memory": Memory.content,
    "content": Memory.content,
    "app_name": App.name,
    "created_at": Memory.created_at,
}
#: What the web UI's browse call may sort by.
BROWSE_SORTS = {
    "created_at": Memory.created_at,
    "updated_at": Memory.updated_at,
    "content": Memory.content,
    "app": App.name,
}
BROWSABLE = (MemoryState.active, MemoryState.paused, MemoryState.archived)
LISTED = (MemoryState.active, MemoryState.paused)
#: OpenMemory forces this page size on related memories.
RELATED_PAGE_SIZE = 5


def from_epoch(value: int | None) -> datetime | None:
    """Epoch seconds from a request as the naive UTC the database stores."""
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value, UTC).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError):
        raise BadInput(f"invalid timestamp {value!r}: expected epoch seconds") from None


#: The longest text a substring filter (SQL ``LIKE``) accepts. SQLite refuses a pattern over
#: 50,000 bytes ("LIKE or GLOB pattern too complex"); escaping at most doubles the text.
MAX_SUBSTRING_CHARS = 1_000


def escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def contains(column: Any, text: str, field: str = "search_query") -> Any:
    """Case-insensitive substring match of ``text`` (``%`` and ``_`` match themselves)."""
    if len(text) > MAX_SUBSTRING_CHARS:
        raise BadInput(f"{field} is {len(text)} characters; the maximum is {MAX_SUBSTRING_CHARS}")
    return column.ilike(f"%{escape_like(text)}%", escape="\\")


@dataclass(frozen=True)
class Listing:
    """A filtered, sorted page of OpenMemory's list (``GET /``) or filter (``POST /filter``)."""

    page: int
    size: int
    show_archived: bool = False
    app_ids: list[uuid.UUID] | None = None
    category_ids: list[uuid.UUID] | None = None
    category_names: list[str] | None = None
    search_query: str | None = None
    from_date: int | None = None
    to_date: int | None = None
    sort_column: str | None = None
    sort_direction: str | None = None
    #: Scope filters (scopes.py): one project, one task of it, or global memories only.
    project: str | None = None
    task: str | None = None
    global_only: bool = False


def _listing(user_pk: uuid.UUID, listing: Listing) -> list[Any]:
    """The conditions on ``memories`` that select a listing's memories."""
    states = [*LISTED, *([MemoryState.archived] if listing.show_archived else [])]
    where: list[Any] = [Memory.user_id == user_pk, Memory.state.in_(states)]
    if listing.app_ids:
        where.append(Memory.app_id.in_(listing.app_ids))
    if listing.category_ids or listing.category_names:
        in_category = select(MemoryCategory.memory_id).join(Category)
        in_category = in_category.where(
            Category.id.in_(listing.category_ids)
            if listing.category_ids
            else Category.name.in_(listing.category_names or [])
        )
        where.append(Memory.id.in_(in_category))
    if listing.search_query:
        where.append(contains(Memory.content, listing.search_query))
    if (start := from_epoch(listing.from_date)) is not None:
        where.append(Memory.created_at >= start)
    if (end := from_epoch(listing.to_date)) is not None:
        where.append(Memory.created_at <= end)
    if listing.project is not None:
        where.append(Memory.project == listing.project)
    if listing.task is not None:
        where.append(Memory.task == listing.task)
    if listing.global_only:
        where.append(Memory.project.is_(None))
    return where


def _rows(conditions: list[Any]) -> Select[Memory, str]:
    """The memories under ``conditions``, each with its app's name."""
    return select(Memory, App.name).join(App, Memory.app_id == App.id).where(*conditions)


def _count(session: Session, conditions: list[Any]) -> int:
    """How many memories ``conditions`` select: counted in ``memories`` alone (an index-only
    count where the conditions allow; joining each to its app made it 3x slower at 1M)."""
    return session.scalar(select(func.count()).select_from(Memory).where(*conditions)) or 0


# -- the web UI's browse call -------------------------------------------------------------------
@dataclass(frozen=True)
class Browse:
    """Filters of the web UI's list; ``projects`` may hold "" for memories without one."""

    page: int = 1
    size: int = 20
    search_query: str | None = None
    apps: list[str] | None = None
    projects: list[str] | None = None
    tasks: list[str] | None = None
    #: ``global`` (no project), ``project`` (a project, no task) or ``task`` (any task).
    scope: str | None = None
    categories: list[str] | None = None
    states: list[str] | None = None
    from_date: date | None = None
    to_date: date | None = None
    sort: str = "created_at"
    direction: str = "desc"


def _browsed(user_pk: uuid.UUID, browse: Browse) -> list[Any]:
    """The conditions on ``memories`` that select a browse page's memories."""
    states = [MemoryState(s) for s in browse.states] if browse.states else list(LISTED)
    where: list[Any] = [Memory.user_id == user_pk, Memory.state.in_(states)]
    if browse.search_query:
        where.append(contains(Memory.content, browse.search_query))
    if browse.apps:
        where.append(Memory.app_id.in_(select(App.id).where(App.name.in_(browse.apps))))
    if browse.projects:
        named = [p for p in browse.projects if p]
        either = [Memory.project.in_(named)] if named else []
        if "" in browse.projects:
            either.append(Memory.project.is_(None))
        where.append(or_(*either))
    if browse.tasks:
        named = [t for t in browse.tasks if t]
        either = [Memory.task.in_(named)] if named else []
        if "" in browse.tasks:
            either.append(Memory.task.is_(None))
        where.append(or_(*either))
    if browse.scope == "global":
        where.append(Memory.project.is_(None))
    elif browse.scope == "project":
        where += [Memory.project.is_not(None), Memory.task.is_(None)]
    elif browse.scope == "task":
        where.append(Memory.task.is_not(None))
    if browse.categories:
        in_category = (
            select(MemoryCategory.memory_id)
            .join(Category, MemoryCategory.category_id == Category.id)
            .where(Category.name.in_([c.lower() for c in browse.categories]))
        )
        where.append(Memory.id.in_(in_category))
    if browse.from_date is not None:
        where.append(Memory.created_at >= datetime.combine(browse.from_date, time.min))
    if browse.to_date is not None:
        where.append(Memory.created_at < datetime.combine(browse.to_date + timedelta(days=1), time.min))
    return where


# -- one memory's neighbours and records ----------------------------------------------------------
# -- selections for state changes -----------------------------------------------------------------


class Queries:
    """The read model's queries, over the database and the parts that own users, links and reads."""

    def __init__(
        self, database: Database, owners: Owners, access_log: AccessLog, links: Links, reads: Reads
    ) -> None:
        self.database = database
        self.owners = owners
        self.access_log = access_log
        self.links = links
        self.reads = reads

    def memory_page(self, user_id: str, listing: Listing) -> dict[str, Any]:
        """A page of the user's memories (fastapi-pagination's shape), newest first by default."""
        target = SORT_COLUMNS[listing.sort_column or "created_at"]
        order = target.asc() if listing.sort_direction == "asc" else target.desc()
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            conditions = _listing(user.id, listing)
            total = _count(session, conditions)
            rows = session.execute(
                _rows(conditions)
                .order_by(order, Memory.id)
                .offset((listing.page - 1) * listing.size)
                .limit(listing.size)
            )
            return page([memory_response(m, name) for m, name in rows], total, listing.page, listing.size)

    def categories(self, user_id: str) -> dict[str, Any]:
        """The categories of the user's listed (active and paused) memories, by name."""
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            rows = facets.categories(session, user.id, LISTED)
            items = [
                {
                    "id": str(c.id),
                    "name": c.name,
                    "description": c.description,
                    "created_at": iso(c.created_at),
                    "updated_at": iso(c.updated_at),
                }
                for c in rows
            ]
        return {"categories": items, "total": len(items)}

    def browse_page(self, user_id: str, browse: Browse) -> dict[str, Any]:
        """A page of the user's memories with project and redactions, and the filter options."""
        column = BROWSE_SORTS[browse.sort]
        order = column.asc() if browse.direction == "asc" else column.desc()
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            conditions = _browsed(user.id, browse)
            total = _count(session, conditions)
            rows = session.execute(
                _rows(conditions)
                .order_by(order, Memory.id)
                .offset((browse.page - 1) * browse.size)
                .limit(browse.size)
            )
            items = [
                {
                    **memory_response(memory, app_name),
                    "project": memory.project,
                    "task": memory.task,
                    "updated_at": epoch(memory.updated_at),
                    "redactions": memory.redactions or 0,
                }
                for memory, app_name in rows
            ]
            result = page(items, total, browse.page, browse.size)
            result["facets"] = facets.facets(session, user.id, BROWSABLE)
        return result

    def related_page(self, memory: Memory, page_number: int) -> dict[str, Any]:
        """The memories linked to ``memory`` (links.py), newest link first, each with its ``link``;
        then the owner's listed memories sharing a category with it, most shared first."""
        size = RELATED_PAGE_SIZE
        linked = []
        for link in self.links.of(None, memory.id):
            other = self.reads.get(link["memory"]["id"], None)
            linked.append(
                memory_response(other) | {"link": {k: link[k] for k in ("id", "relation", "direction")}}
            )
        seen = {uuid.UUID(item["id"]) for item in linked}
        start = (page_number - 1) * size
        shown_links = linked[start : start + size]
        category_ids = [c.id for c in memory.categories]
        if not category_ids:
            return page(shown_links, len(linked), page_number, size)
        overlap = func.count(MemoryCategory.category_id).label("overlap")
        query = (
            select(Memory, App.name, overlap)
            .join(App, Memory.app_id == App.id)
            .join(MemoryCategory, MemoryCategory.memory_id == Memory.id)
            .where(
                and_(
                    Memory.user_id == memory.user_id,
                    Memory.id != memory.id,
                    Memory.state.in_(LISTED),
                    MemoryCategory.category_id.in_(category_ids),
                    Memory.id.notin_(seen),
                )
            )
            .group_by(Memory.id, App.name)
        )
        with self.database.session() as session:
            total = (session.scalar(select(func.count()).select_from(query.subquery())) or 0) + len(linked)
            rows = session.execute(
                query.order_by(overlap.desc(), Memory.created_at.desc())
                .offset(max(0, start - len(linked)))
                .limit(size - len(shown_links))
            )
            return {
                "items": shown_links + [memory_response(m, name) for m, name, _ in rows],
                "total": total,
                "page": page_number,
                "size": size,
                "pages": max(1, -(-total // size)),
            }

    def access_log_page(self, memory: Memory, page_number: int, page_size: int) -> dict[str, Any]:
        """Who read ``memory`` and when, newest first, including reads still being recorded."""
        self.access_log.flush()
        base = select(MemoryAccessLog, App.name).join(App).where(MemoryAccessLog.memory_id == memory.id)
        with self.database.session() as session:
            total = session.scalar(select(func.count()).select_from(base.subquery())) or 0
            rows = session.execute(
                base.order_by(MemoryAccessLog.accessed_at.desc())
                .offset((page_number - 1) * page_size)
                .limit(page_size)
            )
            logs = [
                {
                    "id": str(entry.id),
                    "memory_id": str(entry.memory_id),
                    "app_id": str(entry.app_id),
                    "accessed_at": naive_iso(entry.accessed_at),
                    "access_type": entry.access_type,
                    "metadata_": entry.metadata_ or {},
                    "app_name": app_name,
                }
                for entry, app_name in rows
            ]
        return {"total": total, "page": page_number, "page_size": page_size, "logs": logs}

    def status_history(self, memory: Memory) -> dict[str, Any]:
        """``memory``'s state changes, oldest first, with who made each."""
        with self.database.session() as session:
            rows = session.execute(
                select(MemoryStatusHistory, User.user_id)
                .outerjoin(User, MemoryStatusHistory.changed_by == User.id)
                .where(MemoryStatusHistory.memory_id == memory.id)
                .order_by(MemoryStatusHistory.changed_at, MemoryStatusHistory.id)
            )
            history = [
                {
                    "old_state": entry.old_state,
                    "new_state": entry.new_state,
                    "changed_at": iso(entry.changed_at),
                    "changed_by": changed_by,
                }
                for entry, changed_by in rows
            ]
        return {"memory_id": str(memory.id), "created_at": iso(memory.created_at), "history": history}

    def pause_targets(
        self,
        user_id: str,
        *,
        global_pause: bool = False,
        app_id: uuid.UUID | None = None,
        memory_ids: list[uuid.UUID] | None = None,
        category_ids: list[uuid.UUID] | None = None,
    ) -> list[uuid.UUID]:
        """The memories OpenMemory's pause call names, its branches checked in its order."""
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            mine = select(Memory.id).where(Memory.user_id == user.id, Memory.state != MemoryState.deleted)
            if global_pause:
                # OpenMemory paused every user's memories here; we scope it to the caller's user.
                return list(session.scalars(mine))
            if app_id:
                app = session.get(App, app_id)
                if app is None or app.owner_id != user.id:
                    raise NotFound(f"app {app_id} not found")
                return list(session.scalars(mine.where(Memory.app_id == app_id)))
            if memory_ids:
                return list(memory_ids)
            if category_ids:
                in_category = select(MemoryCategory.memory_id).where(
                    MemoryCategory.category_id.in_(category_ids)
                )
                return list(session.scalars(mine.where(Memory.id.in_(in_category))))
        raise BadInput("give memory_ids, category_ids, app_id or global_pause")

    def user_id_of(self, reference: str) -> str:
        """The ``user_id`` a reference names: OpenMemory's archive call takes the internal key
        (users.id, a UUID); anything else is a ``user_id`` already."""
        try:
            internal = uuid.UUID(reference)
        except ValueError:
            return reference
        with self.database.session() as session:
            user = session.get(User, internal)
            if user is None:
                raise NotFound(f"user {reference} not found")
            return user.user_id

    def stats(self, user_id: str) -> dict[str, Any]:
        """``{total_memories, total_apps, apps}``: memories not deleted, and the user's apps."""
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            total_memories = session.scalar(
                select(func.count(Memory.id)).where(
                    Memory.user_id == user.id, Memory.state != MemoryState.deleted
                )
            )
            apps = session.scalars(select(App).where(App.owner_id == user.id).order_by(App.name)).all()
            return {
                "total_memories": int(total_memories or 0),
                "total_apps": len(apps),
                "apps": [app_row(app) for app in apps],
            }
