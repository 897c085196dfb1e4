"""The times a query names, made concrete against the store: its windows and its order.

    plan = TemporalPlan.read(query, settings)        pure: what the query says
    plan.resolve(connection, keywords, scope)   ->   windows (explicit, relative, around events)

Explicit dates (:mod:`.dates`) need nothing from the store. Relative ones
(:mod:`.relative_dates`) need the reference time: the newest ``captured_at`` (else creation
time) among the memories the search may return, never later than now. An event ("before the
move") needs its time: the ``captured_at`` of the memories the keyword index ranks first for
its words (:data:`ANCHOR_HITS` of them), each giving a window. A query asking for the first or
the latest of something (:func:`.relative_dates.order`) is answered by :func:`.ranking.rank`.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from sqlalchemy import Connection, Uuid, bindparam, select, text

from ..config import SearchSettings
from ..db.models import Memory
from ..domain.memory_state import MemoryState
from .dates import windows
from .keyword import KeywordIndex
from .relative_dates import Anchor, anchors, order, spans

#: How many of an event's best keyword matches place it in time.
ANCHOR_HITS = 2
#: Seconds a scope's reference time is reused: a minute does not move a day, and reading it
#: costs the memories of the scope written without a ``captured_at`` (:func:`reference_time`).
REFERENCE_TTL = 60.0


class TimeWindow(Protocol):
    @property
    def text(self) -> str: ...

    def contains(self, moment: datetime) -> bool: ...


@dataclass(frozen=True)
class Scope:
    """Which memories a search may return: whose, and within which app and project."""

    user_pk: uuid.UUID
    app_id: uuid.UUID | None = None
    project: str | None = None


@dataclass(frozen=True)
class TemporalPlan:
    query: str
    explicit: list[TimeWindow] = field(default_factory=list)
    relative: bool = False
    events: list[Anchor] = field(default_factory=list)
    order: Literal["first", "last"] | None = None

    @classmethod
    def read(cls, query: str, settings: SearchSettings) -> TemporalPlan:
        """What the query says about time, with the steps ``settings`` turns off left out."""
        return cls(
            query=query,
            explicit=list(windows(query)),
            # Any reference finds the phrases; the real one is read only when there are some.
            relative=settings.relative_dates and bool(spans(query, datetime(2000, 1, 1))),
            events=anchors(query) if settings.event_dates else [],
            order=order(query) if settings.order_ranking else None,
        )

    @property
    def looks_deeper(self) -> bool:
        """Whether the retrievers should look deep for memories inside a window."""
        return bool(self.explicit or self.relative or self.events)

    def resolve(
        self,
        connection: Connection,
        keywords: KeywordIndex,
        scope: Scope,
        clock: Callable[[], datetime],
        references: ReferenceTimes | None = None,
        as_of: datetime | None = None,
    ) -> list[TimeWindow]:
        """Every window the query names, relative ones resolved against the reference time and
        events placed at their memories' times. ``as_of``: when the query is asked; it is then
        the reference time itself (a "last Saturday" counts back from the day it is asked)."""
        found: list[TimeWindow] = list(self.explicit)
        if self.relative:
            reference = (
                as_of
                if as_of is not None
                else (references or ReferenceTimes()).get(connection, scope, clock())
            )
            if reference is not None:
                found.extend(spans(self.query, reference))
        for event in self.events:
            for moment in event_times(connection, keywords, scope, event.phrase):
                found.append(event.span(moment))
        return found


class ReferenceTimes:
    """Each scope's reference time (:func:`reference_time`), kept :data:`REFERENCE_TTL` seconds."""

    def __init__(self, ttl: float = REFERENCE_TTL) -> None:
        self.ttl = ttl
        self._kept: dict[Scope, tuple[float, datetime | None]] = {}
        self._lock = threading.Lock()

    def get(self, connection: Connection, scope: Scope, now: datetime) -> datetime | None:
        with self._lock:
            kept = self._kept.get(scope)
        if kept is not None and time.monotonic() - kept[0] < self.ttl:
            return None if kept[1] is None else min(kept[1], now)
        value = reference_time(connection, scope, now)
        with self._lock:
            if len(self._kept) > 10_000:
                self._kept.clear()
            self._kept[scope] = (time.monotonic(), value)
        return value


def reference_time(connection: Connection, scope: Scope, now: datetime) -> datetime | None:
    """The newest time among the memories in scope (``captured_at``, else creation), at most
    ``now``; None when the scope holds none.

    Two reads of the index ``(user_id, captured_at)`` rather than one over every memory of the
    scope: the newest ``captured_at`` is the first active row walking it from the top, and the
    memories without one (OpenMemory's clients write none; every conversation turn has one)
    are the index's range of nulls, the only rows whose creation time is read. Over every row,
    finding the reference took a time that grew with the store (see docs/search.md)."""
    params: dict[str, object] = {"user": scope.user_pk, "state": MemoryState.active.value}
    filters = ""
    if scope.app_id is not None:
        filters += " AND app_id = :app"
        params["app"] = scope.app_id
    if scope.project is not None:
        filters += " AND project = :project"
        params["project"] = scope.project
    # SQLite's planner, which keeps no statistics here, picks (user_id, state) for the nulls.
    table = (
        "memories INDEXED BY ix_memories_user_captured" if connection.dialect.name == "sqlite" else "memories"
    )
    types = [bindparam("user", type_=Uuid()), bindparam("app", type_=Uuid())]
    captured = text(
        f"SELECT captured_at FROM {table} WHERE user_id = :user AND captured_at IS NOT NULL "
        f"AND state = :state{filters} ORDER BY captured_at DESC LIMIT 1"
    ).bindparams(*types[: 2 if "app" in params else 1])
    stored = text(
        f"SELECT max(created_at) FROM {table} WHERE user_id = :user AND captured_at IS NULL "
        f"AND state = :state{filters}"
    ).bindparams(*types[: 2 if "app" in params else 1])
    moments = [_moment(connection.execute(statement, params).scalar()) for statement in (captured, stored)]
    known = [moment for moment in moments if moment is not None]
    return min(max(known), now) if known else None


def _moment(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):  # SQLite hands back DateTime columns of a text() query as text
        return datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value


def event_times(connection: Connection, keywords: KeywordIndex, scope: Scope, phrase: str) -> list[datetime]:
    """When the memories that best match an event's words happened."""
    ids = keywords.search(
        scope.user_pk, phrase, limit=ANCHOR_HITS, app_id=scope.app_id, project=scope.project
    )
    if not ids:
        return []
    rows = connection.execute(
        select(Memory.captured_at, Memory.created_at).where(Memory.id.in_([uuid.UUID(i) for i in ids]))
    )
    return [captured or created for captured, created in rows]
