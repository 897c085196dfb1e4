"""How a search runs: validate, retrieve (dense and keyword, side by side), rank, join the rows.

    Search(...).search_hits(user_id=..., app_name=..., query=...) -> [Hit]

The ranking itself is :func:`.ranking.rank`; this module feeds it the two retrievers'
candidates and turns the ranked ids into :class:`Hit` values from their SQL rows, which decide:
a vector whose row is gone, inactive or outside the filters is not returned.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from ..auth.identity import validate_user_id
from ..config import Settings
from ..db.database import Database
from ..db.models import MEMORY_COLUMNS, App, Category, Memory, MemoryCategory, MemoryFields, MemoryState
from ..errors import BadInput, TooLarge
from ..store.access_log import AccessLog
from ..store.owners import Owners
from ..store.values import epoch_seconds, validate_text
from ..store.vectors import Vectors
from .conversation import around
from .keyword import KeywordIndex
from .ranking import ReadAhead, rank, read_ahead
from .temporal import ReferenceTimes, Scope, TemporalPlan, TimeWindow

MAX_QUERY_CHARS = 10_000
#: Candidates each retriever contributes when a scope leaves some out after it (a task, global;
#: a project when the vector store cannot filter by it).
SCOPE_CANDIDATES = 60
#: When a query names a date, each retriever looks this deep for memories from that time.
WINDOW_CANDIDATES = 200
#: Most neighbouring turns a search result may bring on each side.
MAX_CONTEXT = 5
MAX_SEARCH_LIMIT = 100
#: Deepest a retriever looks for a search that drops ``exclude`` ids after it (a Qdrant server).
MAX_EXCLUDED_DEPTH = 200

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


class Search:
    def __init__(
        self,
        database: Database,
        settings: Settings,
        owners: Owners,
        vectors: Vectors,
        access_log: AccessLog,
        clock: Callable[[], datetime],
    ) -> None:
        self.database = database
        self.settings = settings
        self.owners = owners
        self.vectors = vectors
        self.access_log = access_log
        self.clock = clock
        self.keywords = KeywordIndex(database)
        self.references = ReferenceTimes()
        self.retrievers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="keyword-search")

    def search_hits(
        self,
        *,
        user_id: str,
        app_name: str,
        query: str,
        limit: int = 10,
        app_filter: uuid.UUID | None = None,
        access_type: str = "search",
        context: int = 0,
        project: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        with_categories: bool = True,
        current_project: str | None = None,
        task: str | None = None,
        global_only: bool = False,
        reader: tuple[uuid.UUID, uuid.UUID] | None = None,
        now: datetime | None = None,
        exclude: Collection[str] = (),
    ) -> list[Hit]:
        """Hybrid search over the user's active memories: dense vectors and keyword relevance,
        fused by reciprocal rank; logs each hit as accessed by the app. ``score`` is the fused
        score (higher is better; comparable within one result list).

        A query that names a date ("in July 2023", "on 13 October 2023", see :mod:`.dates`)
        adds a third ranking to the fusion: the candidates of both retrievers, looked for
        deeper, that happened inside that window (``captured_at``, else ``created_at``). Then
        each candidate passes a share of its score to its neighbouring turns in the same
        conversation (:func:`.conversation.propagate`), every candidate gains a share of the
        best score in its conversation (:func:`.conversation.lift`), and with ``search.recency_weight`` or
        ``search.recall_weight`` set, recent or often-recalled candidates are boosted
        (:mod:`.boosts`).
        ``context`` > 0 brings up to that many neighbouring memories of the same conversation
        on each side of every hit (:attr:`Hit.before`, :attr:`Hit.after`). ``project`` and
        the ``created_from``/``created_to`` range (naive UTC, inclusive) filter inside both
        retrievers (payload indexes in the vector store, SQL in the keyword index).
        ``with_categories=False`` leaves :attr:`Hit.categories` empty (one query less, for
        callers that do not show them).

        Scopes (scopes.py): ``current_project`` is the searcher's project: with
        ``search.scope_ranking`` on, only its memories and global ones are returned, its own
        ranked up (:func:`.ranking.in_scope`). ``task`` keeps one task's memories (of
        ``project`` or ``current_project``); ``global_only`` keeps memories of no project.
        A project's scope is a filter inside both retrievers when the vector store reads it
        (:meth:`Vectors.scope_condition`); the other scopes, and a project's on a Qdrant server,
        drop candidates after them and so look deeper (:data:`SCOPE_CANDIDATES`).

        ``reader``: the keys of the user and of the app named ``app_name``, when the caller has
        already looked them up (and refused a paused app): the search then does not look them
        up again. None: the search looks them up itself, and creates neither.

        ``now``: when the search is asked (naive UTC; as-of). Relative dates in the query ("last
        Saturday", "two weeks ago") resolve against it, and the boosts read it as the present.
        None: relative dates resolve against the newest memory in scope (never later than the
        service's clock), as before.

        ``exclude``: ids of memories to leave out (those the hooks gave the session already).
        Both retrievers leave them out when the vector store reads the condition; elsewhere
        each looks that much deeper and they are dropped after the ranking."""
        query = validate_text(query, "query")
        if len(query) > MAX_QUERY_CHARS:
            raise TooLarge(f"query is {len(query)} characters; the maximum is {MAX_QUERY_CHARS}")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise BadInput(f"limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
        if not isinstance(context, int) or isinstance(context, bool) or not 0 <= context <= MAX_CONTEXT:
            raise BadInput(f"context must be an integer from 0 to {MAX_CONTEXT}")
        validate_user_id(user_id)
        if now is not None and now.tzinfo is not None:
            now = now.astimezone(UTC).replace(tzinfo=None)
        filters: dict[str, Any] = {"user_id": user_id, "state": MemoryState.active.value}
        if app_filter is not None:
            filters["app_id"] = str(app_filter)
        if project is not None:
            filters["project"] = project
        if created_from is not None or created_to is not None:
            # Both ends, always: mem0's stock qdrant store reads a range only with both.
            filters["created_ts"] = {
                "gte": epoch_seconds(created_from) if created_from is not None else 0.0,
                "lte": epoch_seconds(created_to) if created_to is not None else 1e11,
            }
        if task is not None and (project or current_project) is None:
            raise BadInput("a task belongs to a project: name the project too")
        scoped = current_project is not None and self.settings.search.scope_ranking
        # A scope keeps the project's memories and those of no project. Both retrievers leave
        # the others out themselves when the vector store reads the condition, and then look no
        # deeper than an unscoped search: filtered afterwards, three times as deep, the ranking
        # read three times the rows (a third of a hook's search; docs/performance.md).
        in_store = (
            self.vectors.scope_condition(current_project)
            if current_project is not None and scoped and project is None
            else None
        )
        scope = current_project if in_store is not None else None
        if in_store is not None:
            filters["project"] = in_store
        wide = (scoped and scope is None) or bool(task) or global_only
        candidates = max(limit, self.settings.search.candidates, SCOPE_CANDIDATES if wide else 0)
        excluded = self.vectors.exclusion(exclude) if exclude else None
        if excluded is not None:
            filters.update(excluded)
        elif exclude:
            candidates = min(candidates + len(exclude), MAX_EXCLUDED_DEPTH)
        plan = TemporalPlan.read(query, self.settings.search)
        depth = max(candidates, WINDOW_CANDIDATES) if plan.looks_deeper else candidates
        # The keyword half runs beside the dense half, which starts at once in this thread:
        # the query's embedding is the longest step, and a worker thread is slow to get going
        # while this one holds the interpreter. Both release the GIL (onnxruntime, SQLite).
        # A paused app is refused before any result is used.
        keyword_future = self.retrievers.submit(
            self._keyword_half,
            user_id,
            app_name,
            query,
            plan,
            limit=depth,
            candidates=candidates,
            app_filter=app_filter,
            project=project,
            created_from=created_from,
            created_to=created_to,
            scope=scope,
            exclude=exclude if excluded is not None else (),
            reader=reader,
            now=now,
        )
        nearest = self.vectors.search(query, filters=filters, limit=depth)
        dense = [item["id"] for item in nearest]
        similarity = {item["id"]: float(item["score"]) for item in nearest}
        app_pk, keyword, named, ahead = keyword_future.result()
        # One session for everything after the retrievers: the window, the neighbours, the
        # rows and the access log.
        with self.database.session() as session:
            fused = rank(
                session,
                dense,
                keyword,
                query=query,
                named=named,
                order=plan.order,
                candidates=candidates,
                settings=self.settings.search,
                clock=self.clock if now is None else (lambda: now),
                project=current_project if project is None else None,
                ahead=ahead,
            )
            if exclude and excluded is None:
                fused = [(memory_id, score) for memory_id, score in fused if memory_id not in exclude]
            scored = fused[:limit]
            if not scored:
                return []
            keys = {"ids": [uuid.UUID(memory_id) for memory_id, _ in scored]}
            # Rows through the session's connection, not ORM objects: building Memory and
            # Category objects it only reads was a noticeable share of a search.
            connection = session.connection()
            rows = {row.id: row for row in connection.execute(_HIT_ROWS, keys)}
            names: dict[uuid.UUID, list[str]] = {}
            if with_categories:
                for memory_pk, name in connection.execute(_HIT_CATEGORIES, keys):
                    names.setdefault(memory_pk, []).append(name)
            hits = []
            for memory_id, score in scored:
                row = rows.get(uuid.UUID(memory_id))
                # The SQL row decides: a vector whose row is gone, inactive or outside the
                # filters (a neighbouring turn may be) is not returned.
                if row is None or not _passes(row, app_filter, project, created_from, created_to):
                    continue
                if task is not None and (row.task, row.project) != (task, project or current_project):
                    continue
                if global_only and row.project is not None:
                    continue
                hits.append(
                    Hit(
                        row,
                        float(score),
                        row.app_name,
                        categories=names.get(row.id, []),
                        similarity=similarity.get(memory_id),
                    )
                )
            if context:
                hits = [_with_context(session, hit, context) for hit in hits]
        if app_pk is not None:  # an app that does not exist has no log to write to
            entries = [
                (h.memory.id, {"query": query, "score": h.score, "hash": h.memory.content_hash}) for h in hits
            ]
            self.access_log.record(app_pk, entries, access_type)
        return hits

    def _keyword_half(
        self,
        user_id: str,
        app_name: str,
        query: str,
        plan: TemporalPlan,
        *,
        limit: int,
        candidates: int,
        app_filter: uuid.UUID | None,
        project: str | None,
        created_from: datetime | None,
        created_to: datetime | None,
        scope: str | None = None,
        exclude: Collection[str] = (),
        reader: tuple[uuid.UUID, uuid.UUID] | None = None,
        now: datetime | None = None,
    ) -> tuple[uuid.UUID | None, list[str], list[TimeWindow], ReadAhead | None]:
        """The app a search reads through (refused when paused; None when it does not exist,
        as a search creates no app), the keyword candidates, the time windows the query
        names (:mod:`.temporal`: relative ones need the newest memory's time, events their
        memories' times), and what the ranking reads about the first ``candidates`` keyword
        candidates (:func:`.ranking.read_ahead`: read here, while the dense half still runs).
        ``reader``: the user's and the app's keys, already looked up. ``now``: when
        the search is asked, the reference of relative dates (None: the newest memory's time)."""
        user_pk, app_pk = reader or self.owners.reader(user_id, app_name, "read memories")
        if user_pk is None:  # a user with no memories yet; the search does not create them
            return app_pk, [], list(plan.explicit), None
        keyword = self.keywords.search(
            user_pk,
            query,
            limit=limit,
            app_id=app_filter,
            project=project,
            created_from=created_from,
            created_to=created_to,
            scope=scope,
            exclude=exclude,
        )
        named = list(plan.explicit)
        if plan.relative or plan.events:
            with self.database.engine.connect() as connection:
                where = Scope(user_pk, app_filter, project)
                named = plan.resolve(connection, self.keywords, where, self.clock, self.references, as_of=now)
        ahead = None
        if keyword:
            with self.database.session() as session:
                ahead = read_ahead(session, keyword[:candidates], query=query, settings=self.settings.search)
        return app_pk, keyword, named, ahead

    def close(self) -> None:
        """Stop the search threads (before the engine they use is closed)."""
        self.retrievers.shutdown(wait=True)


def _passes(
    memory: MemoryFields,
    app_id: uuid.UUID | None,
    project: str | None,
    created_from: datetime | None,
    created_to: datetime | None,
) -> bool:
    return (
        memory.state == MemoryState.active
        and (app_id is None or memory.app_id == app_id)
        and (project is None or memory.project == project)
        and (created_from is None or memory.created_at >= created_from)
        and (created_to is None or memory.created_at <= created_to)
    )


def _with_context(session: Session, hit: Hit, count: int) -> Hit:
    neighbours = around(session, hit.memory, count)
    return replace(hit, before=neighbours["before"], after=neighbours["after"])
