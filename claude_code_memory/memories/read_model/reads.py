"""Reading memories: one by id, a user's active memories, and search results in mem0's shape.

The search itself is :class:`claude_code_memory.search.pipeline.Search`; this module gives its
hits the ``{id, memory, hash, ..., score}`` items OpenMemory's MCP tools return. Reads through
an app are refused while the app is paused, and recorded in the access log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sqlalchemy import select

from ...auth.identity import validate_user_id
from ...db.database import Database
from ...db.models import App, Memory, User
from ...domain.memory_state import MemoryState
from ...errors import Forbidden, NotFound
from ...search.pipeline import Search
from ...search.request import SearchRequest
from ...search.shaping import Hit
from ...store.access_log import AccessLog
from ...store.owners import Owners, owned
from ...store.values import mem0_item, parse_memory_id


class Reads:
    def __init__(
        self,
        database: Database,
        owners: Owners,
        access_log: AccessLog,
        pipeline: Search,
        search: Callable[[SearchRequest], list[Hit]] | None = None,
    ) -> None:
        """``search``: the search :meth:`search` runs (the teams' merged one,
        memories/teams/search.py); default the pipeline's own."""
        self.run_search = search or pipeline.search
        self.database = database
        self.owners = owners
        self.access_log = access_log
        self.pipeline = pipeline

    def get(self, memory_id: object, principal_user: str | None) -> Memory:
        """One memory for its owner (``principal_user``) or the admin (None). Pending items
        are visible only to their owner: the admin gets Forbidden."""
        mid = parse_memory_id(memory_id)
        with self.database.session() as session:
            memory = owned(session, mid, principal_user)
            if memory.state == MemoryState.deleted:
                raise NotFound(f"memory {mid} not found")
            if memory.state == MemoryState.pending and principal_user is None:
                raise Forbidden(f"memory {mid} is pending consent: only its owner can read it")
            _ = memory.app.name, memory.user.user_id, [c.name for c in memory.categories]
            return memory

    def list_active(
        self, *, user_id: str, app_name: str, access_type: str = "list"
    ) -> list[tuple[Memory, str]]:
        # A read creates neither the user nor the app (writes do): an unknown user has nothing
        # to list, and a read through an unknown app has no access log to write to.
        user_pk, app_pk = self.owners.reader(user_id, app_name, "read memories")
        if user_pk is None:
            return []
        with self.database.session() as session:
            rows = list(
                session.execute(
                    select(Memory, App.name)
                    .join(App, Memory.app_id == App.id)
                    .where(Memory.user_id == user_pk, Memory.state == MemoryState.active)
                    .order_by(Memory.created_at.desc())
                )
            )
        if app_pk is not None:
            self.access_log.record(app_pk, [(m.id, {}) for m, _ in rows], access_type)
        return [(m, name) for m, name in rows]

    def list_memories(self, *, user_id: str, app_name: str, channel: str = "mcp") -> list[dict[str, Any]]:
        return [mem0_item(m, name) for m, name in self.list_active(user_id=user_id, app_name=app_name)]

    def recent(self, *, user_id: str, limit: int = 20) -> list[dict[str, Any]]:
        validate_user_id(user_id)
        with self.database.session() as session:
            rows = session.execute(
                select(Memory, App.name)
                .join(App, Memory.app_id == App.id)
                .join(User, Memory.user_id == User.id)
                .where(User.user_id == user_id, Memory.state == MemoryState.active)
                .order_by(Memory.created_at.desc())
                .limit(limit)
            )
            return [mem0_item(m, name) for m, name in rows]

    def search(self, request: SearchRequest) -> list[dict[str, Any]]:
        """The hits of ``request`` as mem0's items (with ``team`` for a team's memory, and
        ``context`` when the request asks for neighbouring turns)."""
        hits = self.run_search(replace(request, with_categories=False))  # mem0's shape has none
        items = []
        for hit in hits:
            item = mem0_item(hit.memory, hit.app_name, score=hit.score)
            if hit.team is not None:
                item["team"] = hit.team
            if request.context:
                item["context"] = {
                    "before": [mem0_item(m, hit.app_name) for m in hit.before],
                    "after": [mem0_item(m, hit.app_name) for m in hit.after],
                }
            items.append(item)
        return items
