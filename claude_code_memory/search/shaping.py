"""The ranking's output as hits: each ranked id joined with its SQL row, then the access log.

    hits(session, plan, scored, similarity) -> [Hit]
    log_reads(access_log, app_pk, request, hits)

The SQL rows decide: a vector whose row is gone, inactive or outside the request's filters (a
neighbouring turn the ranking brought may be) is not returned.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from ..db.models import MEMORY_COLUMNS, App, Category, Memory, MemoryCategory, MemoryFields
from ..domain.memory_state import MemoryState
from ..store.access_log import AccessLog
from .conversation import around
from .planning import SearchPlan
from .request import SearchRequest

#: The rows of search hits (``ids``), with their app's name.
_HIT_ROWS = (
    select(*MEMORY_COLUMNS, App.name.label("app_name"))
    .join(App, Memory.app_id == App.id)
    .where(Memory.id.in_(bindparam("ids", expanding=True)))
)
#: (memory key, category name) of search hits (``ids``), names in order.
_HIT_CATEGORIES = (
    select(MemoryCategory.memory_id, Category.name)
    .join(Category, Category.id == MemoryCategory.category_id)
    .where(MemoryCategory.memory_id.in_(bindparam("ids", expanding=True)))
    .order_by(Category.name)
)


@dataclass(frozen=True)
class Hit:
    """One search result, joined with its SQL row."""

    memory: MemoryFields
    score: float
    app_name: str
    #: The memory's category names (``with_categories``).
    categories: list[str] = field(default_factory=list)
    #: Neighbouring memories of the same conversation, oldest first (``context`` > 0).
    before: list[Memory] = field(default_factory=list)
    after: list[Memory] = field(default_factory=list)
    #: The dense retriever's cosine similarity to the query; None when only the keyword
    #: retriever (or a neighbour's share) brought the memory.
    similarity: float | None = None
    #: The team whose shared memory this is (memories/teams/); None: the searcher's own.
    team: str | None = None


def hits(
    session: Session, plan: SearchPlan, scored: Sequence[tuple[str, float]], similarity: Mapping[str, float]
) -> list[Hit]:
    """The ranked ids ``scored`` (best first, at most the request's limit) as hits, in order,
    leaving out those the request's filters refuse on their rows."""
    request = plan.request
    keys = {"ids": [uuid.UUID(memory_id) for memory_id, _ in scored]}
    # Rows through the session's connection, not ORM objects: building Memory and
    # Category objects it only reads was a noticeable share of a search.
    connection = session.connection()
    rows = {row.id: row for row in connection.execute(_HIT_ROWS, keys)}
    names: dict[uuid.UUID, list[str]] = {}
    if request.with_categories:
        for memory_pk, name in connection.execute(_HIT_CATEGORIES, keys):
            names.setdefault(memory_pk, []).append(name)
    found = []
    for memory_id, score in scored:
        row = rows.get(uuid.UUID(memory_id))
        if row is None or not passes(row, request):
            continue
        found.append(
            Hit(
                row,
                float(score),
                row.app_name,
                categories=names.get(row.id, []),
                similarity=similarity.get(memory_id),
            )
        )
    if request.context:
        found = [_with_context(session, hit, request.context) for hit in found]
    return found


def passes(memory: MemoryFields, request: SearchRequest) -> bool:
    """Whether a row is one the request may return: active, and inside its filters and scope."""
    return (
        memory.state == MemoryState.active
        and (request.app_filter is None or memory.app_id == request.app_filter)
        and (request.project is None or memory.project == request.project)
        and (request.created_from is None or memory.created_at >= request.created_from)
        and (request.created_to is None or memory.created_at <= request.created_to)
        and (
            request.task is None
            or (memory.task, memory.project) == (request.task, request.project or request.current_project)
        )
        and not (request.global_only and memory.project is not None)
    )


def log_reads(
    access_log: AccessLog, app_pk: uuid.UUID | None, request: SearchRequest, found: list[Hit]
) -> None:
    """Each hit logged as read by the app the search went through (in the background)."""
    if app_pk is None:  # an app that does not exist has no log to write to
        return
    entries = [
        (hit.memory.id, {"query": request.query, "score": hit.score, "hash": hit.memory.content_hash})
        for hit in found
    ]
    access_log.record(app_pk, entries, request.access_type)


def _with_context(session: Session, hit: Hit, count: int) -> Hit:
    neighbours = around(session, hit.memory, count)
    return replace(hit, before=neighbours["before"], after=neighbours["after"])
