"""How a search runs: plan, retrieve, rank, shape.

    Search(...).search(SearchRequest(user_id=..., app_name=..., query=...)) -> [Hit]

Each stage is a module of its own: :mod:`.planning` checks the request and says what it asks
of the retrievers (filters, scope, date windows, depths); :mod:`.retrieval` runs the dense and
keyword halves side by side; :func:`.ranking.rank` fuses and re-ranks their candidates; and
:mod:`.shaping` joins the ranked ids with their SQL rows, which decide, and logs the reads.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from datetime import datetime
from typing import ParamSpec, TypeVar

from ..config import Settings
from ..db.database import Database
from ..store.access_log import AccessLog
from ..store.owners import Owners
from ..store.vectors import Vectors
from .planning import plan
from .ranking import rank
from .request import SearchRequest
from .retrieval import Retrieval
from .shaping import Hit, hits, log_reads

P = ParamSpec("P")
T = TypeVar("T")


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
        self.vectors = vectors
        self.access_log = access_log
        self.clock = clock
        self.retrieval = Retrieval(database, settings, owners, vectors, clock)

    def search(self, request: SearchRequest) -> list[Hit]:
        """Hybrid search over the user's active memories: dense vectors and keyword relevance,
        fused by reciprocal rank; logs each hit as accessed by the app. ``score`` is the fused
        score (higher is better; comparable within one result list).

        A query that names a date ("in July 2023", "on 13 October 2023", see :mod:`.dates`)
        adds a third ranking to the fusion: the candidates of both retrievers, looked for
        deeper, that happened inside that window (``captured_at``, else ``created_at``). Then
        each candidate passes a share of its score to its neighbouring turns in the same
        conversation (:func:`.conversation.propagate`), every candidate gains a share of the
        best score in its conversation (:func:`.conversation.lift`), and with
        ``search.recency_weight`` or ``search.recall_weight`` set, recent or often-recalled
        candidates are boosted (:mod:`.boosts`). What each field of the request asks:
        :class:`.request.SearchRequest`.

        A project's scope is a filter inside both retrievers when the vector store reads it
        (:meth:`Vectors.scope_condition`); the other scopes, and a project's on a Qdrant server,
        drop candidates after them and so look deeper (:data:`.planning.SCOPE_CANDIDATES`).
        Ids to ``exclude`` are left out by both retrievers when the vector store reads the
        condition; elsewhere each looks that much deeper and they are dropped after the
        ranking."""
        if request.teams_only:  # the user's own memories are outside the teams' scope
            return []
        planned = plan(request, self.settings.search, self.vectors)
        request = planned.request
        found = self.retrieval.retrieve(planned)
        # One session for everything after the retrievers: the window, the neighbours, the
        # rows and the access log.
        with self.database.session() as session:
            fused = rank(
                session,
                found.candidates,
                query=request.query,
                named=found.named,
                order=planned.temporal.order,
                candidates=planned.candidates,
                settings=self.settings.search,
                clock=self.clock if request.now is None else _as_of(request.now),
                project=planned.ranking_project,
            )
            dropped = planned.drop_after
            if dropped:
                fused = [(memory_id, score) for memory_id, score in fused if memory_id not in dropped]
            scored = fused[: request.limit]
            if not scored:
                return []
            shaped = hits(session, planned, scored, found.similarity)
        log_reads(self.access_log, found.app_pk, request, shaped)
        return shaped

    def beside(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """``work`` on one of the search's threads, beside a search this thread runs (the teams'
        search reads the user's teams there while the user's own search runs)."""
        return self.retrieval.beside(work, *args, **kwargs)

    def close(self) -> None:
        """Stop the search threads (before the engine they use is closed)."""
        self.retrieval.close()


def _as_of(now: datetime) -> Callable[[], datetime]:
    """A clock that reads ``now``: the present of a search asked as of then."""
    return lambda: now
