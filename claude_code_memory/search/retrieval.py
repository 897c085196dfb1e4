"""The two retrievers of a search, side by side: the dense half and the keyword half.

    Retrieval(...).retrieve(plan) -> Retrieved

The dense half embeds the query and asks the vector store, in the caller's thread; the keyword
half runs beside it on one of this module's threads: it looks up the user and the app (a paused
app is refused), asks the keyword index (:mod:`.keyword`), makes the times the query names
concrete (:mod:`.temporal`) and reads ahead what the ranking will read about its candidates
(:func:`.ranking.read_ahead`), while the dense half still runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import ParamSpec, TypeVar

from ..config import Settings
from ..db.database import Database
from ..store.owners import Owners
from ..store.vectors import Vectors
from .keyword import KeywordIndex
from .planning import SearchPlan
from .ranking import Candidates, ReadAhead, read_ahead
from .temporal import ReferenceTimes, Scope, TimeWindow

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class Retrieved:
    """What both halves found for one search."""

    candidates: Candidates
    #: The dense half's cosine similarity to the query, by memory id.
    similarity: dict[str, float]
    #: The time windows the query names, made concrete against the store.
    named: list[TimeWindow]
    #: The key of the app the search reads through; None when it does not exist (a search
    #: creates no app, and an app that does not exist has no access log).
    app_pk: uuid.UUID | None


@dataclass(frozen=True)
class _KeywordHalf:
    app_pk: uuid.UUID | None
    keyword: list[str]
    named: list[TimeWindow]
    ahead: ReadAhead | None


class Retrieval:
    def __init__(
        self,
        database: Database,
        settings: Settings,
        owners: Owners,
        vectors: Vectors,
        clock: Callable[[], datetime],
    ) -> None:
        self.database = database
        self.settings = settings
        self.owners = owners
        self.vectors = vectors
        self.clock = clock
        self.keywords = KeywordIndex(database)
        self.references = ReferenceTimes()
        self.threads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="keyword-search")

    def retrieve(self, plan: SearchPlan) -> Retrieved:
        """Both halves of the search ``plan`` describes; raises when the app is paused."""
        # The keyword half runs beside the dense half, which starts at once in this thread:
        # the query's embedding is the longest step, and a worker thread is slow to get going
        # while this one holds the interpreter. Both release the GIL (onnxruntime, SQLite).
        # A paused app is refused before any result is used.
        keyword_future = self.threads.submit(self._keyword_half, plan)
        nearest = self.vectors.search(plan.request.query, filters=plan.filters, limit=plan.depth)
        dense = [item["id"] for item in nearest]
        similarity = {item["id"]: float(item["score"]) for item in nearest}
        half = keyword_future.result()
        return Retrieved(Candidates(dense, half.keyword, half.ahead), similarity, half.named, half.app_pk)

    def beside(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """``work`` on one of the search's threads, for a caller that needs it beside a search
        (the teams' search reads the user's teams there while the user's own search runs)."""
        return self.threads.submit(work, *args, **kwargs)

    def _keyword_half(self, plan: SearchPlan) -> _KeywordHalf:
        """The app a search reads through (refused when paused; None when it does not exist,
        as a search creates no app), the keyword candidates, the time windows the query
        names (:mod:`.temporal`: relative ones need the newest memory's time, events their
        memories' times), and what the ranking reads about the first ``candidates`` keyword
        candidates (read here, while the dense half still runs)."""
        request = plan.request
        user_pk, app_pk = request.reader or self.owners.reader(
            request.user_id, request.app_name, "read memories"
        )
        if user_pk is None:  # a user with no memories yet; the search does not create them
            return _KeywordHalf(app_pk, [], list(plan.temporal.explicit), None)
        keyword = self.keywords.search(
            user_pk,
            request.query,
            limit=plan.depth,
            app_id=request.app_filter,
            project=request.project,
            created_from=request.created_from,
            created_to=request.created_to,
            scope=plan.scope,
            exclude=plan.excluded_inside,
        )
        temporal = plan.temporal
        named = list(temporal.explicit)
        if temporal.relative or temporal.events:
            with self.database.engine.connect() as connection:
                where = Scope(user_pk, request.app_filter, request.project)
                named = temporal.resolve(
                    connection, self.keywords, where, self.clock, self.references, as_of=request.now
                )
        ahead = None
        if keyword:
            with self.database.session() as session:
                ahead = read_ahead(
                    session, keyword[: plan.candidates], query=request.query, settings=self.settings.search
                )
        return _KeywordHalf(app_pk, keyword, named, ahead)

    def close(self) -> None:
        """Stop the search threads (before the engine they use is closed)."""
        self.threads.shutdown(wait=True)
