"""Mid-term segments and their heat, pure: no I/O.

    segment_heat(visits, turns, hours_idle, weights) -> float
    assign(turns, open_segments, gap, max_turns)     -> Assignment

A segment is a run of one conversation's turns with no pause longer than ``gap`` between two
of them (and at most ``max_turns``). Its heat, after MemoryOS's::

    heat = visit_weight * visits + length_weight * turns + recency_weight * exp(-hours_idle / tau)

``visits`` counts the times retrieval returned one of its turns (the access log), ``turns`` its
length, ``hours_idle`` the hours since its last turn or visit. The constants are
``tiers.heat`` in config.yaml (docs/profile.md).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ...config import HeatSettings


def segment_heat(visits: int, turns: int, hours_idle: float, weights: HeatSettings) -> float:
    recency = math.exp(-max(0.0, hours_idle) / weights.recency_tau_hours)
    return weights.visit_weight * visits + weights.length_weight * turns + weights.recency_weight * recency


@dataclass(frozen=True)
class Turn:
    id: uuid.UUID
    conversation_id: str
    at: datetime


@dataclass
class Span:
    """A segment's extent: an existing one (``id``) or one to create (``id`` None)."""

    conversation_id: str
    started_at: datetime
    ended_at: datetime
    turns: int
    id: uuid.UUID | None = None
    members: list[uuid.UUID] = field(default_factory=list)


@dataclass(frozen=True)
class Assignment:
    #: Existing segments that gained turns.
    grown: list[Span]
    #: Segments to create.
    new: list[Span]


def assign(
    turns: Sequence[Turn], open_segments: Mapping[str, Span], gap: timedelta, max_turns: int
) -> Assignment:
    """Put each unsegmented turn (any order) into the newest segment of its conversation when
    it falls within ``gap`` of it and the segment has room, else into a new segment."""
    latest = dict(open_segments)
    grown: dict[uuid.UUID, Span] = {}
    new: list[Span] = []
    for turn in sorted(turns, key=lambda t: (t.conversation_id, t.at, str(t.id))):
        span = latest.get(turn.conversation_id)
        fits = (
            span is not None
            and span.turns < max_turns
            and span.started_at - gap <= turn.at <= span.ended_at + gap
        )
        if span is None or not fits:
            span = Span(turn.conversation_id, turn.at, turn.at, 0)
            new.append(span)
            latest[turn.conversation_id] = span
        span.started_at = min(span.started_at, turn.at)
        span.ended_at = max(span.ended_at, turn.at)
        span.turns += 1
        span.members.append(turn.id)
        if span.id is not None:
            grown[span.id] = span
    return Assignment(grown=list(grown.values()), new=new)
