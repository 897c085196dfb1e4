"""Order within a conversation: a memory's neighbouring turns.

    propagate(fused, adjacency, share)   neighbours of strong hits move up, answers more (pure)
    lift(scored, conversation_of, share) a conversation's candidates move up towards its best (pure)
    adjacent(session, ids)               the turns just before and after each id, and its conversation (SQL)
    around(session, memory, count)       up to ``count`` turns on each side, in order (SQL)

A conversation's memories are ordered by ``(captured_at, created_at)``: every memory with a
``conversation_id`` has a ``captured_at`` (migration 0004 and
:meth:`claude_code_memory.memories.write.writes.Writes._store`), and the index
``(user_id, conversation_id, captured_at, created_at)`` makes each step an index seek
(migration 0014). Only the owner's
active memories are neighbours.

Why neighbours rank: in a conversation the turn that answers a question is often next to the
turn that matches its words ("What breed is it?" / "A greyhound."). On the LoCoMo development
split, giving each turn a share of its neighbours' fused scores raised recall_any@10 from 0.749
to 0.770 and MRR from 0.443 to 0.455 (bench/quality/locomo.py); the gain was smooth over shares of
0.05-0.3, not a tuned peak.

Why a conversation's candidates rank together: the turns a question is about were mostly said in
one conversation, and the conversation that holds the best candidate is the likeliest to hold
the evidence. On the same split, side by side in one run, giving every candidate half the best
score of its conversation raised recall_any@10 from 0.765 to 0.809 and MRR from 0.450 to 0.463,
on each of the three conversations (0.713 → 0.760, 0.716 → 0.765, 0.842 → 0.882), with a
plateau over shares of 0.25-1.0 (0.789-0.809); half is the middle of it (docs/search.md).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, select, tuple_
from sqlalchemy.orm import Session, aliased

from ..db.models import Memory, MemoryFields
from ..domain.memory_state import MemoryState
from ..store.values import dashed_id, hex_id


@dataclass(frozen=True)
class Neighbourhood:
    """What :func:`adjacent` finds for a list of candidates."""

    #: candidate id -> the ids of the active turns right before and after it
    neighbours: dict[str, list[str]] = field(default_factory=dict)
    #: conversation id of every candidate in one, and of those neighbouring turns
    conversation: dict[str, str] = field(default_factory=dict)
    #: candidate id -> the id of the active turn right after it
    following: dict[str, str] = field(default_factory=dict)


def propagate(
    fused: Sequence[tuple[str, float]],
    adjacency: Mapping[str, list[str]],
    share: float,
    *,
    answers: Mapping[str, str] | None = None,
    answer_share: float = 0.0,
) -> list[tuple[str, float]]:
    """Add ``share`` of each candidate's score to its neighbours (candidates or not); best first.
    Scores are propagated from the fused scores only, never from propagated ones.

    ``answers`` maps a candidate that asks a question to the turn right after it, which gains
    ``answer_share`` of its score instead (when ``answer_share`` is not 0): the answer follows
    the question, which is the turn holding the query's words."""
    scores = dict(fused)
    asked: Mapping[str, str] = answers if answers and answer_share else {}
    for memory_id, score in fused:
        answer = asked.get(memory_id)
        for neighbour in adjacency.get(memory_id, ()):
            gained = answer_share if neighbour == answer else share
            scores[neighbour] = scores.get(neighbour, 0.0) + gained * score
    return sorted(scores.items(), key=lambda pair: pair[1], reverse=True)


def lift(
    scored: Sequence[tuple[str, float]], conversation_of: Mapping[str, str], share: float
) -> list[tuple[str, float]]:
    """Add to each score ``share`` of the best score in its conversation; best first.

    A memory in no conversation counts as a conversation of its own, so it gains ``share`` of
    its own score, as the best of each conversation does: their order among themselves stays,
    and only the other candidates of a conversation move up towards its best."""
    best: dict[str, float] = {}
    for memory_id, score in scored:
        conversation = conversation_of.get(memory_id)
        if conversation is not None and score > best.get(conversation, float("-inf")):
            best[conversation] = score
    lifted = []
    for memory_id, score in scored:
        conversation = conversation_of.get(memory_id)
        top = best[conversation] if conversation is not None else score
        lifted.append((memory_id, score + share * top))
    return sorted(lifted, key=lambda pair: pair[1], reverse=True)


# The order as one row-value comparison, not ``a < b OR (a = b AND c < d)``: with the OR the
# database read every turn of the conversation to find one neighbour; this is a seek in the
# index on (user_id, conversation_id, captured_at, created_at), on SQLite and PostgreSQL alike.
def _earlier(other: type[Memory], memory: type[Memory] | MemoryFields) -> ColumnElement[bool]:
    return tuple_(other.captured_at, other.created_at) < tuple_(memory.captured_at, memory.created_at)


def _later(other: type[Memory], memory: type[Memory] | MemoryFields) -> ColumnElement[bool]:
    return tuple_(other.captured_at, other.created_at) > tuple_(memory.captured_at, memory.created_at)


def _adjacent_statement() -> Select[Any]:
    other = aliased(Memory)

    def step(condition: Any, *order: Any) -> Any:
        return (
            select(other.id)
            .where(
                other.user_id == Memory.user_id,
                other.conversation_id == Memory.conversation_id,
                other.state == MemoryState.active,
                condition,
            )
            .order_by(*order)
            .limit(1)
            .correlate(Memory)
            .scalar_subquery()
        )

    before = step(_earlier(other, Memory), other.captured_at.desc(), other.created_at.desc())
    after = step(_later(other, Memory), other.captured_at, other.created_at)
    return select(Memory.id, before, after, Memory.conversation_id).where(
        Memory.id.in_(bindparam("ids", expanding=True)), Memory.conversation_id.is_not(None)
    )


#: Built once: constructing it took longer than running it (search runs it every time).
_ADJACENT = _adjacent_statement()


#: :data:`_ADJACENT` for SQLite's driver, where ids are 32 hex characters and the ids come as
#: one JSON array. Every search runs it for ~100 candidates: through the ORM it cost
#: more, with the GIL held for more of it while the other retriever waits
#: (docs/search.md, "Measurements behind the code's choices").
_ADJACENT_SQLITE = """
SELECT m.id,
  (SELECT o.id FROM memories o
    WHERE o.user_id = m.user_id AND o.conversation_id = m.conversation_id AND o.state = 'active'
      AND (o.captured_at, o.created_at) < (m.captured_at, m.created_at)
    ORDER BY o.captured_at DESC, o.created_at DESC LIMIT 1),
  (SELECT o.id FROM memories o
    WHERE o.user_id = m.user_id AND o.conversation_id = m.conversation_id AND o.state = 'active'
      AND (o.captured_at, o.created_at) > (m.captured_at, m.created_at)
    ORDER BY o.captured_at, o.created_at LIMIT 1),
  m.conversation_id
FROM memories m
WHERE m.id IN (SELECT value FROM json_each(?)) AND m.conversation_id IS NOT NULL
"""


def adjacent(session: Session, ids: Sequence[str]) -> Neighbourhood:
    """For each id that belongs to a conversation, the ids of the active turns right before and
    after it, and the conversation (one query; two index seeks per id)."""
    found = Neighbourhood()
    if not ids:
        return found
    connection = session.connection()
    raw = connection.connection.driver_connection
    if isinstance(raw, sqlite3.Connection):
        # Ids are canonical UUID strings, stored as their hex: the dashes dropped and put back
        # by slicing (parsing every id as a UUID both ways took a third of this step).
        by_hex = {hex_id(memory_id): memory_id for memory_id in ids}
        rows = [
            (
                by_hex[memory_id],
                None if previous is None else dashed_id(previous),
                None if following is None else dashed_id(following),
                conversation,
            )
            for memory_id, previous, following, conversation in raw.execute(
                _ADJACENT_SQLITE, (json.dumps(list(by_hex)),)
            )
        ]
    else:
        keys = [uuid.UUID(i) for i in ids]
        rows = [
            (
                str(memory_id),
                None if previous is None else str(previous),
                None if following is None else str(following),
                conversation,
            )
            for memory_id, previous, following, conversation in session.execute(_ADJACENT, {"ids": keys})
        ]
    for memory_id, previous, following, conversation in rows:
        neighbours = [n for n in (previous, following) if n is not None]
        found.neighbours[memory_id] = neighbours
        if following is not None:
            found.following[memory_id] = following
        for member in (memory_id, *neighbours):
            found.conversation[member] = conversation
    return found


def around(session: Session, memory: MemoryFields, count: int) -> dict[str, list[Memory]]:
    """Up to ``count`` active turns of the memory's conversation on each side, oldest first."""
    if not memory.conversation_id or memory.captured_at is None or count < 1:
        return {"before": [], "after": []}
    same = select(Memory).where(
        Memory.user_id == memory.user_id,
        Memory.conversation_id == memory.conversation_id,
        Memory.state == MemoryState.active,
        Memory.id != memory.id,
    )
    before = session.scalars(
        same.where(_earlier(Memory, memory))
        .order_by(Memory.captured_at.desc(), Memory.created_at.desc())
        .limit(count)
    ).all()
    after = session.scalars(
        same.where(_later(Memory, memory)).order_by(Memory.captured_at, Memory.created_at).limit(count)
    ).all()
    return {"before": list(reversed(before)), "after": list(after)}
