"""Where search ranking is: the retrievers' candidates fused, then moved by time and conversation.

    rank(session, Candidates(dense, keyword, ahead), ...) -> [(memory id, score)], best first

The steps, each its own module: reciprocal-rank fusion of the dense and keyword rankings
(:func:`.keyword.fuse`), plus a third ranking of the candidates inside a date the query names
(:mod:`.dates`); each candidate passes a share of its score to its neighbouring turns (more to
the turn after one that asks a question) and gains a share of the best score in its
conversation (:mod:`.conversation`); short memories move down, a named speaker's turns, the
role a question asks about and the candidates holding more of its words up (:mod:`.priors`);
for a question
about the present, of two close candidates the newer ranks first (:func:`.boosts.newer_first`); with
``search.recency_weight`` or ``search.recall_weight`` set, recent or often-recalled candidates
are boosted (:mod:`.boosts`); a search from a known project keeps that project's and global
memories only, the project's ranked up (:func:`in_scope`, ``search.scope_ranking``). This
module reads from SQL only what those pure steps need.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..config import SearchSettings
from ..db.models import Memory, MemoryAccessLog
from ..store.values import hex_id
from .boosts import PRESENT_DEPTH, Weights, boost, newer_first
from .conversation import Neighbourhood, adjacent, lift, propagate
from .keyword import fuse, terms
from .priors import (
    SPEAKER_LABEL_CHARS,
    asked_role,
    asks,
    asks_about_present,
    asks_when,
    coverage_first,
    length_prior,
    named_speakers,
    role,
    role_first,
    speaker,
    speaker_first,
    stems,
    time_boost,
)
from .temporal import TimeWindow


@dataclass(frozen=True)
class Candidates:
    """What the retrievers found, as the ranking reads it: each retriever's ids, best first
    (looked for deeper than the ranking's ``candidates`` when the query names a date), and what
    :func:`read_ahead` read already about some of them (the same answer, fewer reads in
    :func:`rank`)."""

    dense: list[str]
    keyword: list[str]
    ahead: ReadAhead | None = None


def rank(
    session: Session,
    found: Candidates,
    *,
    query: str = "",
    named: list[TimeWindow],
    candidates: int,
    order: str | None = None,
    settings: SearchSettings,
    clock: Callable[[], datetime],
    project: str | None = None,
) -> list[tuple[str, float]]:
    """The fused, re-ranked candidates of both retrievers. ``project``: the searcher's
    current project (see :func:`in_scope`). ``order`` "first" adds a ranking of the best
    candidates earliest first, "last" latest first. ``query``: the search's text, for the
    priors that depend on what it asks (:func:`.priors.asks_when`)."""
    k = settings.rrf_k
    dense, keyword = found.dense, found.keyword
    ahead = found.ahead or ReadAhead()
    rankings = [dense[:candidates], keyword[:candidates]]
    if named:
        rankings.append(in_windows(session, fuse([dense, keyword], k), named)[:candidates])
    if order is not None:
        rankings.append(in_order(session, fuse(rankings, k)[:candidates], latest_first=order == "last"))
    fused = fuse(rankings, k)
    when = _boosts_when(settings, query)
    prefixes = _coverage_prefixes(settings, query)
    full = when or bool(prefixes)
    shapes: dict[str, Shape] = {}
    reads_shapes = _reads_shapes(settings, when)
    if fused and (settings.neighbour_share or settings.conversation_share):
        nearby = ahead.adjacent(session, [memory_id for memory_id, _ in fused])
        answers: dict[str, str] = {}
        if reads_shapes or (settings.answer_share and nearby.following):
            # One read for all: the candidates' texts, and their neighbours' for the lengths.
            shapes = ahead.shapes(
                session, {memory_id for memory_id, _ in fused} | set(nearby.conversation), full
            )
        if settings.answer_share:
            # A turn of the role the question asks about holds the answer itself, question
            # mark or not ("Can you suggest a hotel? I like rooftop pools."): the reply after it
            # is the other role's, which the roles step ranks down anyway.
            wanted = asked_role(query) if settings.role_boost else None
            answers = {
                asker: answer
                for asker, answer in nearby.following.items()
                if asker in shapes
                and asks(shapes[asker].text or "")
                and (wanted is None or shapes[asker].role != wanted)
            }
        fused = propagate(
            fused,
            nearby.neighbours,
            settings.neighbour_share,
            answers=answers,
            answer_share=settings.answer_share,
        )
        fused = lift(fused, nearby.conversation, settings.conversation_share)
    if reads_shapes and fused:
        if not shapes:
            shapes = ahead.shapes(session, {memory_id for memory_id, _ in fused}, full)
        if when:
            texts = {memory_id: shape.text or "" for memory_id, shape in shapes.items()}
            fused = time_boost(fused, texts, settings.when_boost)
        if settings.length_prior:
            lengths = {memory_id: shape.length for memory_id, shape in shapes.items()}
            fused = length_prior(fused, lengths, settings.length_prior, settings.length_reference_max)
        if settings.speaker_boost:
            speakers = {memory_id: shapes[memory_id].speaker for memory_id, _ in fused if memory_id in shapes}
            people = named_speakers(query, speakers.values())
            fused = speaker_first(fused, speakers, people, settings.speaker_boost)
        if settings.role_boost:
            roles = {memory_id: shapes[memory_id].role for memory_id, _ in fused if memory_id in shapes}
            fused = role_first(fused, roles, asked_role(query), settings.role_boost)
    if prefixes and fused:
        fused = _covered_first(session, fused, prefixes, settings.coverage_share, shapes)
    if settings.present_margin and fused and asks_about_present(query, settings.present_tense):
        fused = newer_first(fused, moments_of(session, fused[:PRESENT_DEPTH]), settings.present_margin)
    if project is not None and settings.scope_ranking and fused:
        fused = in_scope(fused, projects_of(session, fused), project, settings.project_boost)
    weights = boost_weights(settings)
    if weights.enabled and fused:
        fused = boosted(session, fused[:candidates], weights, clock)
    return fused


#: How many of the best candidates the coverage step reads and may reorder: past them a
#: candidate's share of the query's words does not bring it to the top.
COVERAGE_DEPTH = 20


def _covered_first(
    session: Session,
    fused: list[tuple[str, float]],
    prefixes: list[str],
    share: float,
    shapes: Mapping[str, Shape],
) -> list[tuple[str, float]]:
    """The first :data:`COVERAGE_DEPTH` candidates reordered by :func:`.priors.coverage_first`
    of the query's word ``prefixes``, the rest after them as they were. Their texts are those
    of ``shapes`` (read in full for this step, :func:`_coverage_prefixes`), read here only for
    a candidate without one (where no prior read the shapes)."""
    head = fused[:COVERAGE_DEPTH]
    unread = {memory_id for memory_id, _ in head if memory_id not in shapes}
    read = {**shapes, **shapes_of(session, unread, full=True)} if unread else shapes
    texts = {memory_id: read[memory_id].text or "" for memory_id, _ in head if memory_id in read}
    return coverage_first(head, texts, prefixes, share) + fused[COVERAGE_DEPTH:]


def _coverage_prefixes(settings: SearchSettings, query: str) -> list[str]:
    """The query's word prefixes the coverage step looks for (:func:`.priors.stems`), or none
    when the step is off or has nothing to tell apart (fewer than two words): with some, the
    candidates' shapes are read with their full texts, so the step reads nothing more."""
    if not settings.coverage_share:
        return []
    prefixes = stems(terms(query))
    return prefixes if len(prefixes) >= 2 else []


def _boosts_when(settings: SearchSettings, query: str) -> bool:
    """Whether the "when" prior applies to this query (its shapes then carry full texts, as for
    the coverage step: :func:`_coverage_prefixes`)."""
    return bool(settings.when_boost) and asks_when(query)


def _reads_shapes(settings: SearchSettings, when: bool) -> bool:
    """Whether a prior reads the candidates' shapes whatever their neighbours."""
    return bool(settings.length_prior or when or settings.speaker_boost or settings.role_boost)


def in_scope(
    fused: list[tuple[str, float]], projects: dict[str, str | None], project: str, boost: float
) -> list[tuple[str, float]]:
    """The candidates a search from ``project`` sees: that project's memories, their score
    raised by ``boost`` (a share of it), and global memories (no project); another project's
    are left out. ``projects``: each candidate's project (a candidate without a row is left
    out too). Best first."""
    kept = [
        (memory_id, score * (1 + boost) if projects[memory_id] == project else score)
        for memory_id, score in fused
        if memory_id in projects and projects[memory_id] in (project, None)
    ]
    return sorted(kept, key=lambda item: item[1], reverse=True)


#: :func:`projects_of` for SQLite's driver: a scoped search (the hooks' recall) reads up to
#: ~120 candidates' projects, which through the ORM was a tenth of a hook's time
#: (bench/results/profile_paths_10k_quiet.json).
_PROJECTS_SQLITE = """
SELECT m.id, m.project FROM memories m WHERE m.id IN (SELECT value FROM json_each(?))
"""


def _sqlite_rows(session: Session, sql: str, ids: list[str], *before: object) -> list[tuple[Any, ...]] | None:
    """The rows of ``sql`` through SQLite's driver, its last parameter the ids as a JSON list of
    the hex form SQLite stores (``before``: the parameters ahead of it), each row's first
    column put back as the id asked for; None on another database (the caller asks the ORM).
    Ids are canonical UUID strings: their hex form is the dashes dropped, and the rows map back
    through it (parsing ~100 UUIDs both ways was much of these reads)."""
    raw = session.connection().connection.driver_connection
    if not isinstance(raw, sqlite3.Connection):
        return None
    by_hex = {hex_id(memory_id): memory_id for memory_id in ids}
    rows = raw.execute(sql, (*before, json.dumps(list(by_hex))))
    return [(by_hex[row[0]], *row[1:]) for row in rows]


def projects_of(session: Session, fused: list[tuple[str, float]]) -> dict[str, str | None]:
    """Each candidate's project (None: no project); ids without a row are left out."""
    if not fused:
        return {}
    rows = _sqlite_rows(session, _PROJECTS_SQLITE, [memory_id for memory_id, _ in fused])
    if rows is not None:
        return dict(rows)
    keys = [uuid.UUID(memory_id) for memory_id, _ in fused]
    return {
        str(mid): project
        for mid, project in session.execute(select(Memory.id, Memory.project).where(Memory.id.in_(keys)))
    }


def boost_weights(settings: SearchSettings) -> Weights:
    return Weights(settings.recency_weight, settings.recency_half_life_days, settings.recall_weight)


def boosted(
    session: Session, fused: list[tuple[str, float]], weights: Weights, clock: Callable[[], datetime]
) -> list[tuple[str, float]]:
    """The candidates re-ranked by :func:`.boosts.boost`: when each happened, and how many
    searches returned it (from the access log; the latest searches may not be in it yet)."""
    keys = [uuid.UUID(memory_id) for memory_id, _ in fused]
    moments: dict[str, datetime] = {}
    if weights.recency_weight:
        rows = session.execute(
            select(Memory.id, Memory.captured_at, Memory.created_at).where(Memory.id.in_(keys))
        )
        moments = {str(memory_id): captured or created for memory_id, captured, created in rows}
    recalls: dict[str, int] = {}
    if weights.recall_weight:
        counts = session.execute(
            select(MemoryAccessLog.memory_id, func.count())
            .where(MemoryAccessLog.memory_id.in_(keys), MemoryAccessLog.access_type == "search")
            .group_by(MemoryAccessLog.memory_id)
        )
        recalls = {str(memory_id): count for memory_id, count in counts}
    return boost(fused, moments, recalls, clock(), weights)


@dataclass(frozen=True)
class Shape:
    """What the priors read of a memory's text (:mod:`.priors`)."""

    #: its length in characters
    length: int
    #: the text itself when it may ask a question (it holds a question mark), or when asked
    #: for in full; else None: most texts need not leave the database
    text: str | None
    #: the person who says it, when it opens with a speaker label (:func:`.priors.speaker`)
    speaker: str | None
    #: its role in a chat, "user" or "assistant", from its metadata (:func:`.priors.role`)
    role: str | None = None


@dataclass(frozen=True)
class ReadAhead:
    """What :func:`rank` reads about candidates, read before it for some of them: the keyword
    half's candidates, on its thread while the dense half still runs (the keyword half ends
    first), so that :func:`rank` reads only the others' after both. Each id's neighbours and
    shape are its own whatever other ids are read with it, so the ranking is the same."""

    #: the ids :func:`.conversation.adjacent` was asked for (an id in no conversation has no entry)
    asked: frozenset[str] = frozenset()
    nearby: Neighbourhood = field(default_factory=Neighbourhood)
    #: the ids whose shapes were read, with ``full`` texts or not (:func:`shapes_of`)
    shaped: frozenset[str] = frozenset()
    full: bool = False
    shape: dict[str, Shape] = field(default_factory=dict)

    def adjacent(self, session: Session, ids: list[str]) -> Neighbourhood:
        """:func:`.conversation.adjacent` of ``ids``, reading only the ids not read ahead."""
        missing = [memory_id for memory_id in ids if memory_id not in self.asked]
        if len(missing) == len(ids):
            return adjacent(session, ids)
        found = adjacent(session, missing)
        wanted = set(ids)
        for memory_id, neighbours in self.nearby.neighbours.items():
            if memory_id in wanted:
                found.neighbours[memory_id] = neighbours
                if memory_id in self.nearby.following:
                    found.following[memory_id] = self.nearby.following[memory_id]
                for member in (memory_id, *neighbours):
                    found.conversation[member] = self.nearby.conversation[member]
        return found

    def shapes(self, session: Session, ids: set[str], full: bool) -> dict[str, Shape]:
        """:func:`shapes_of` of ``ids``, reading only those not read ahead with the same ``full``."""
        if full != self.full or not self.shaped:
            return shapes_of(session, ids, full)
        found = shapes_of(session, ids - self.shaped, full)
        found.update((memory_id, shape) for memory_id, shape in self.shape.items() if memory_id in ids)
        return found


def read_ahead(session: Session, ids: list[str], *, query: str, settings: SearchSettings) -> ReadAhead:
    """What :func:`rank` will read about the candidates ``ids`` with these settings and query:
    their neighbouring turns, and the shapes of them and of those turns."""
    if not ids or not (settings.neighbour_share or settings.conversation_share):
        return ReadAhead()
    nearby = adjacent(session, ids)
    when = _boosts_when(settings, query)
    if not (_reads_shapes(settings, when) or settings.answer_share):
        return ReadAhead(frozenset(ids), nearby)
    full = when or bool(_coverage_prefixes(settings, query))
    shaped = frozenset(ids) | frozenset(nearby.conversation)
    return ReadAhead(frozenset(ids), nearby, shaped, full, shapes_of(session, set(shaped), full))


#: :func:`shapes_of` for SQLite's driver (ids as 32 hex characters, one JSON array): through
#: the ORM, reading the ~100 texts of a search's candidates and neighbours cost every search
#: more (docs/search.md, "Measurements behind the code's choices").
_SHAPES_SQLITE = """
SELECT m.id, length(m.content),
  CASE WHEN ? OR instr(m.content, '?') > 0 OR instr(m.content, '？') > 0 THEN m.content END,
  substr(m.content, 1, ?),
  CASE WHEN json_valid(m.metadata) THEN json_extract(m.metadata, '$.role') END
FROM memories m WHERE m.id IN (SELECT value FROM json_each(?))
"""


def shapes_of(session: Session, ids: set[str], full: bool = False) -> dict[str, Shape]:
    """Each memory's :class:`Shape` by id (ids without a row are left out); ``full``: every
    text, not only those that may ask a question."""
    if not ids:
        return {}
    # (docs/search.md, "Answers, short memories and the fusion constant")
    rows = _sqlite_rows(session, _SHAPES_SQLITE, list(ids), int(full), SPEAKER_LABEL_CHARS)
    if rows is not None:
        return {
            memory_id: Shape(length, text, speaker(head), role(said_by))
            for memory_id, length, text, head, said_by in rows
        }
    keys = [uuid.UUID(memory_id) for memory_id in ids]
    found = session.execute(select(Memory.id, Memory.content, Memory.metadata_).where(Memory.id.in_(keys)))
    return {
        str(memory_id): Shape(
            len(content),
            content if full or "?" in content or "？" in content else None,
            speaker(content[:SPEAKER_LABEL_CHARS]),
            role(metadata.get("role") if isinstance(metadata, dict) else None),
        )
        for memory_id, content, metadata in found
    }


#: :func:`moments_of` for SQLite's driver, where times are stored as ISO text: a query that
#: names a time reads ~400 candidates' moments, which through the ORM cost far more
#: (docs/search.md, "Answers, short memories and the fusion constant").
_MOMENTS_SQLITE = """
SELECT m.id, coalesce(m.captured_at, m.created_at) FROM memories m
WHERE m.id IN (SELECT value FROM json_each(?))
"""


def moments_of(session: Session, fused: list[tuple[str, float]]) -> dict[str, datetime]:
    """When each candidate happened: ``captured_at``, else when it was stored."""
    if not fused:
        return {}
    rows = _sqlite_rows(session, _MOMENTS_SQLITE, [memory_id for memory_id, _ in fused])
    if rows is not None:
        return {memory_id: datetime.fromisoformat(moment) for memory_id, moment in rows}
    return {
        str(mid): captured or created
        for mid, captured, created in session.execute(
            select(Memory.id, Memory.captured_at, Memory.created_at).where(
                Memory.id.in_([uuid.UUID(memory_id) for memory_id, _ in fused])
            )
        )
    }


def in_order(session: Session, fused: list[tuple[str, float]], *, latest_first: bool) -> list[str]:
    """The candidates by when they happened, earliest first (or latest first)."""
    moments = moments_of(session, fused)
    known = [memory_id for memory_id, _ in fused if memory_id in moments]
    return sorted(known, key=lambda memory_id: moments[memory_id], reverse=latest_first)


def in_windows(session: Session, fused: list[tuple[str, float]], named: list[TimeWindow]) -> list[str]:
    """The fused candidates (best first) that happened inside one of the windows."""
    if not fused:
        return []
    moments = moments_of(session, fused)
    return [
        memory_id
        for memory_id, _ in fused
        if memory_id in moments and any(w.contains(moments[memory_id]) for w in named)
    ]
