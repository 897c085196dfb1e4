"""What a search request asks of the retrievers: checked, then made into filters and depths.

    plan(request, settings, vectors) -> SearchPlan

The request's values are checked here (``BadInput``, ``TooLarge``). The plan says which
filters the dense half hands the vector store (user, state, app, project, creation range, the
current project's scope and the ids left out, when the store reads them), what the keyword half
keeps inside its own query, how many candidates the ranking reads (``candidates``) and how deep
each retriever looks (``depth``: deeper for a query naming a date, for a scope or ids dropped
after the retrievers). Pure but for asking the vector store which conditions it reads.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import UTC
from typing import Any

from ..auth.identity import validate_user_id
from ..config import SearchSettings
from ..domain.memory_state import MemoryState
from ..errors import BadInput, TooLarge
from ..store.values import epoch_seconds, validate_text
from ..store.vectors import Vectors
from .request import SearchRequest
from .temporal import TemporalPlan

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


@dataclass(frozen=True)
class SearchPlan:
    #: The request as checked: ``now`` in naive UTC.
    request: SearchRequest
    #: The dense half's filters, as the vector store reads them.
    filters: dict[str, Any]
    #: A project whose memories the keyword half keeps with those of no project (a scope the
    #: vector store reads too); None: no scope inside the retrievers.
    scope: str | None
    #: Ids both retrievers leave out themselves; the others of ``request.exclude`` are
    #: dropped after the ranking (:attr:`drop_after`).
    excluded_inside: Collection[str]
    #: Candidates of each retriever the ranking reads.
    candidates: int
    #: How deep each retriever looks (at least ``candidates``).
    depth: int
    #: The times the query names.
    temporal: TemporalPlan

    @property
    def drop_after(self) -> Collection[str]:
        """Ids left out after the ranking: those the retrievers could not leave out."""
        return () if self.excluded_inside else self.request.exclude

    @property
    def ranking_project(self) -> str | None:
        """The searcher's project for the ranking's scope step; None when the request names a
        project (its filter keeps that project's memories only)."""
        return self.request.current_project if self.request.project is None else None


def check(request: SearchRequest) -> SearchRequest:
    """``request`` with its values checked (``BadInput``, ``TooLarge``) and ``now`` in naive UTC."""
    validate_text(request.query, "query")
    if len(request.query) > MAX_QUERY_CHARS:
        raise TooLarge(f"query is {len(request.query)} characters; the maximum is {MAX_QUERY_CHARS}")
    limit, context = request.limit, request.context
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise BadInput(f"limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
    if not isinstance(context, int) or isinstance(context, bool) or not 0 <= context <= MAX_CONTEXT:
        raise BadInput(f"context must be an integer from 0 to {MAX_CONTEXT}")
    validate_user_id(request.user_id)
    if request.task is not None and (request.project or request.current_project) is None:
        raise BadInput("a task belongs to a project: name the project too")
    now = request.now
    if now is not None and now.tzinfo is not None:
        return replace(request, now=now.astimezone(UTC).replace(tzinfo=None))
    return request


def plan(request: SearchRequest, settings: SearchSettings, vectors: Vectors) -> SearchPlan:
    """The plan of a search (see the module's docstring); raises on a request that is wrong."""
    request = check(request)
    filters: dict[str, Any] = {"user_id": request.user_id, "state": MemoryState.active.value}
    if request.app_filter is not None:
        filters["app_id"] = str(request.app_filter)
    if request.project is not None:
        filters["project"] = request.project
    if request.created_from is not None or request.created_to is not None:
        # Both ends, always: mem0's stock qdrant store reads a range only with both.
        filters["created_ts"] = {
            "gte": epoch_seconds(request.created_from) if request.created_from is not None else 0.0,
            "lte": epoch_seconds(request.created_to) if request.created_to is not None else 1e11,
        }
    current_project = request.current_project
    scoped = current_project is not None and settings.scope_ranking
    # A scope keeps the project's memories and those of no project. Both retrievers leave
    # the others out themselves when the vector store reads the condition, and then look no
    # deeper than an unscoped search: filtered afterwards, three times as deep, the ranking
    # read three times the rows (a third of a hook's search; docs/performance.md).
    in_store = (
        vectors.scope_condition(current_project)
        if current_project is not None and scoped and request.project is None
        else None
    )
    scope = current_project if in_store is not None else None
    if in_store is not None:
        filters["project"] = in_store
    wide = (scoped and scope is None) or bool(request.task) or request.global_only
    candidates = max(request.limit, settings.candidates, SCOPE_CANDIDATES if wide else 0)
    exclude = request.exclude
    excluded = vectors.exclusion(exclude) if exclude else None
    if excluded is not None:
        filters.update(excluded)
    elif exclude:
        candidates = min(candidates + len(exclude), MAX_EXCLUDED_DEPTH)
    temporal = TemporalPlan.read(request.query, settings)
    depth = max(candidates, WINDOW_CANDIDATES) if temporal.looks_deeper else candidates
    return SearchPlan(
        request=request,
        filters=filters,
        scope=scope,
        excluded_inside=exclude if excluded is not None else (),
        candidates=candidates,
        depth=depth,
        temporal=temporal,
    )
