"""Memory in three tiers, after MemoryOS, on our one store of memories:

- **short-term**: the newest ``tiers.short_term_turns`` turns of a conversation, read by SQL on
  ``(user_id, conversation_id, captured_at)`` (an index seek): no vector search;
- **mid-term**: segments, runs of one conversation's turns (:mod:`.heat`), each with a heat
  from its visits, length and recency. Beyond ``tiers.mid_term_capacity`` active segments the
  coldest are archived with their turns (state ``archived``, restorable; never deleted);
- **long-term**: the profile and the assistant's knowledge (:mod:`.facts`). A segment at
  least ``tiers.promote_threshold`` hot is promoted: its turns' facts go into the profile.
  Memories of no conversation (notes the user asked to keep) go into it directly.

    Tiers(...).short_term(user_id, conversation_id=None)   -> [turn]  (None: the newest conversation)
    Tiers(...).refresh(user_id)                            -> what changed
    Tiers(...).segments(user_id, state=None)               -> [segment]

:meth:`Tiers.refresh` groups new turns into segments, recomputes heat, archives and promotes.
It runs before the profile is read (REST, ``get_user_profile``), and in the background after
a session starts and after a ``retrieve_memory`` (which answers from the tiers as they are: a
retrieval does not pay for the bookkeeping; at most one such refresh per user every
:data:`RETRIEVAL_REFRESH_SECONDS`); one refresh per user at a time.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from ...auth.identity import validate_user_id
from ...config import Settings
from ...db.batches import slices
from ...db.database import Database
from ...db.models import Memory, ProfileMark, Segment, User
from ...domain.memory_state import MemoryState
from ...errors import BadInput
from ...store.owners import Owners
from ..lifecycle.states import States
from ..read_model.shapes import iso
from .facts import Profile
from .heat import Span, Turn, assign, segment_heat
from .rules import spoken_parts

log = logging.getLogger(__name__)

#: After a retrieval, the tiers are refreshed in the background at most this often per user: a
#: refresh reads every recalled memory of the user, and a client retrieving in a loop would keep
#: one running beside its own requests.
RETRIEVAL_REFRESH_SECONDS = 30.0
ACTIVE = "active"
ARCHIVED = "archived"
SEGMENT_STATES = (ACTIVE, ARCHIVED)


@dataclass(frozen=True)
class Refreshed:
    segmented_turns: int = 0
    new_segments: int = 0
    archived_segments: int = 0
    promoted_segments: int = 0
    new_facts: int = 0
    dropped_facts: int = 0


class Tiers:
    def __init__(
        self,
        database: Database,
        settings: Settings,
        owners: Owners,
        states: States,
        profile: Profile,
        clock: Callable[[], datetime],
    ) -> None:
        self.database = database
        self.settings = settings.tiers
        self.profile_enabled = settings.profile.enabled
        self.owners = owners
        self.states = states
        self.profile = profile
        self.clock = clock
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._queued: set[str] = set()
        self._refreshed_at: dict[str, float] = {}
        self.background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tiers-refresh")

    # -- short-term -----------------------------------------------------------------------
    def short_term(
        self, user_id: str, *, conversation_id: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The newest turns of a conversation, oldest first (the newest conversation when none
        is named). SQL only: this never reaches the vector store."""
        limit = limit or self.settings.short_term_turns
        with self.database.session() as session:
            user_pk = _user_pk(session, user_id)
            if user_pk is None:
                return []
            live = (Memory.user_id == user_pk, Memory.state == MemoryState.active)
            if conversation_id is None:
                conversation_id = session.scalar(
                    select(Memory.conversation_id)
                    .where(*live, Memory.conversation_id.is_not(None))
                    .order_by(Memory.captured_at.desc(), Memory.created_at.desc())
                    .limit(1)
                )
                if conversation_id is None:
                    return []
            rows = session.execute(
                select(
                    Memory.id,
                    Memory.content,
                    Memory.captured_at,
                    Memory.created_at,
                    Memory.conversation_id,
                    Memory.segment_id,
                )
                .where(*live, Memory.conversation_id == conversation_id)
                .order_by(Memory.captured_at.desc(), Memory.created_at.desc())
                .limit(limit)
            ).all()
        return [
            turn_json(row.id, row.content, row.captured_at or row.created_at, row) for row in reversed(rows)
        ]

    # -- mid-term -------------------------------------------------------------------------
    def segments(self, user_id: str, *, state: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The user's segments, hottest first."""
        if state is not None and state not in SEGMENT_STATES:
            raise BadInput(f"state must be one of {', '.join(SEGMENT_STATES)}, got {state!r}")
        with self.database.session() as session:
            user_pk = _user_pk(session, user_id)
            if user_pk is None:
                return []
            query = select(Segment).where(Segment.user_id == user_pk)
            if state is not None:
                query = query.where(Segment.state == state)
            rows = session.scalars(query.order_by(Segment.heat.desc(), Segment.ended_at.desc()).limit(limit))
            return [segment_json(row) for row in rows]

    def heat_of(self, session: Session, segment_ids: set[uuid.UUID]) -> dict[uuid.UUID, float]:
        if not segment_ids:
            return {}
        rows = session.execute(select(Segment.id, Segment.heat).where(Segment.id.in_(segment_ids)))
        return {segment_id: heat for segment_id, heat in rows}

    # -- refresh --------------------------------------------------------------------------
    def schedule_refresh(self, user_id: str, *, unless_within: float = 0.0) -> None:
        """Refresh in the background (after a session starts, after a retrieval: neither waits
        for it). A user already waiting for a refresh is not queued twice, nor one refreshed
        less than ``unless_within`` seconds ago."""
        with self._locks_guard:
            last = self._refreshed_at.get(user_id)
            if user_id in self._queued or (last is not None and time.monotonic() - last < unless_within):
                return
            self._queued.add(user_id)

        def run() -> None:
            with self._locks_guard:
                self._queued.discard(user_id)
            try:
                self.refresh(user_id)
            except Exception:  # noqa: BLE001 - bookkeeping must not take the server down; it is logged
                log.exception("tiers refresh failed for a user")

        self.background.submit(run)

    def flush(self) -> None:
        """Wait until every refresh scheduled so far has run."""
        self.background.submit(lambda: None).result()

    def refresh(self, user_id: str) -> Refreshed:
        """Group new turns into segments, recompute heat, archive the coldest beyond capacity,
        promote the hot segments' facts and the new notes' facts into the profile."""
        with self._lock(user_id):
            with self.database.session() as session:
                user_pk = _user_pk(session, user_id)
                if user_pk is None:
                    return Refreshed()
                segmented, created = self._segment(session, user_pk)
                active = list(
                    session.scalars(
                        select(Segment).where(Segment.user_id == user_pk, Segment.state == ACTIVE)
                    )
                )
                self._heat(session, user_pk, active)
                to_archive = self._evict(active)
                active_turn = Memory.state == MemoryState.active
                archived_turns = [
                    memory_id
                    for some in slices([s.id for s in to_archive])  # a store's first refresh: many
                    for memory_id in session.scalars(
                        select(Memory.id).where(Memory.segment_id.in_(some), active_turn)
                    )
                ]
                promoted = new_facts = dropped = 0
                if self.profile_enabled:
                    promoted, new_facts = self._promote(
                        session, user_pk, [s for s in active if s not in to_archive]
                    )
                    new_facts += self._notes(session, user_pk)
                    dropped = self.profile.prune(session, user_pk)
            with self._locks_guard:
                self._refreshed_at[user_id] = time.monotonic()
            if archived_turns:  # through the state change every archive takes (vector payload too)
                self.states.change_state(
                    archived_turns, MemoryState.archived, user_id=user_id, changed_by=None
                )
            return Refreshed(segmented, created, len(to_archive), promoted, new_facts, dropped)

    def _segment(self, session: Session, user_pk: uuid.UUID) -> tuple[int, int]:
        rows = session.execute(
            select(
                Memory.id, Memory.conversation_id, Memory.captured_at, Memory.created_at, Memory.project
            ).where(
                Memory.user_id == user_pk,
                Memory.state == MemoryState.active,
                Memory.conversation_id.is_not(None),
                Memory.segment_id.is_(None),
            )
        ).all()
        if not rows:
            return 0, 0
        turns = [Turn(r.id, r.conversation_id, r.captured_at or r.created_at) for r in rows]
        project = {r.id: r.project for r in rows}
        conversations = {t.conversation_id for t in turns}
        open_segments: dict[str, Span] = {}
        existing: dict[uuid.UUID, Segment] = {}
        for segment in session.scalars(
            select(Segment)
            .where(
                Segment.user_id == user_pk,
                Segment.state == ACTIVE,
                Segment.conversation_id.in_(conversations),
            )
            .order_by(Segment.ended_at)
        ):
            existing[segment.id] = segment  # the newest of each conversation wins (ordered)
            open_segments[segment.conversation_id] = Span(
                segment.conversation_id, segment.started_at, segment.ended_at, segment.turns, segment.id
            )
        plan = assign(
            turns,
            open_segments,
            timedelta(minutes=self.settings.segment_gap_minutes),
            self.settings.segment_max_turns,
        )
        now = self.clock()
        for span in plan.grown:
            assert span.id is not None
            segment = existing[span.id]
            segment.started_at, segment.ended_at, segment.turns = span.started_at, span.ended_at, span.turns
            _link(session, span.id, span.members)
        for span in plan.new:
            segment = Segment(
                id=uuid.uuid4(),
                user_id=user_pk,
                conversation_id=span.conversation_id,
                project=project.get(span.members[0]),
                started_at=span.started_at,
                ended_at=span.ended_at,
                turns=span.turns,
                visits=0,
                heat=0.0,
                state=ACTIVE,
                promoted_turns=0,
                created_at=now,
                updated_at=now,
            )
            session.add(segment)
            session.flush()
            _link(session, segment.id, span.members)
        return len(turns), len(plan.new)

    def _heat(self, session: Session, user_pk: uuid.UUID, active: list[Segment]) -> None:
        # A visit to a segment is a recall of one of its turns (a search returned it, a hook
        # injected it): its turns' own counts, summed (store/access_log.py keeps them as it
        # writes); counting the access log instead read every recall of the user each refresh.
        visits = {
            row.segment_id: (int(row.visits), row.last_visit)
            for row in session.execute(
                select(
                    Memory.segment_id,
                    func.sum(Memory.recalls).label("visits"),
                    func.max(Memory.recalled_at).label("last_visit"),
                )
                .where(Memory.user_id == user_pk, Memory.recalls > 0, Memory.segment_id.is_not(None))
                .group_by(Memory.segment_id)
            )
        }
        now = self.clock()
        for segment in active:
            count, last_visit = visits.get(segment.id, (0, None))
            last = max(segment.ended_at, last_visit) if last_visit else segment.ended_at
            hours_idle = (now - last).total_seconds() / 3600
            heat = round(segment_heat(count, segment.turns, hours_idle, self.settings.heat), 4)
            if (segment.visits, segment.last_visit_at, segment.heat) != (count, last_visit, heat):
                segment.visits, segment.last_visit_at, segment.heat = count, last_visit, heat

    def _evict(self, active: list[Segment]) -> list[Segment]:
        excess = len(active) - self.settings.mid_term_capacity
        if excess <= 0:
            return []
        coldest = sorted(active, key=lambda s: (s.heat, s.ended_at))[:excess]
        for segment in coldest:
            segment.state = ARCHIVED
        return coldest

    def _promote(self, session: Session, user_pk: uuid.UUID, active: list[Segment]) -> tuple[int, int]:
        hot = [s for s in active if s.heat >= self.settings.promote_threshold and s.turns > s.promoted_turns]
        if not hot:
            return 0, 0
        turns = session.execute(
            select(Memory.id, Memory.content)
            .where(Memory.segment_id.in_([s.id for s in hot]), Memory.state == MemoryState.active)
            .order_by(Memory.captured_at)
        ).all()
        added = self.profile.learn(session, user_pk, [(row.id, row.content) for row in turns])
        now = self.clock()
        for segment in hot:
            segment.promoted_turns, segment.promoted_at = segment.turns, now
        return len(hot), added

    def _notes(self, session: Session, user_pk: uuid.UUID) -> int:
        """The facts of memories of no conversation written since the last refresh."""
        mark = session.get(ProfileMark, user_pk)
        query = select(Memory.id, Memory.content, Memory.created_at).where(
            Memory.user_id == user_pk,
            Memory.state == MemoryState.active,
            Memory.conversation_id.is_(None),
        )
        if mark is not None:
            query = query.where(Memory.created_at >= mark.extracted_until)
        rows = session.execute(query.order_by(Memory.created_at)).all()
        if mark is not None:
            seen = set(mark.extracted_ids)
            rows = [r for r in rows if r.created_at > mark.extracted_until or str(r.id) not in seen]
        if not rows:
            return 0
        added = self.profile.learn(session, user_pk, [(row.id, row.content) for row in rows])
        newest = rows[-1].created_at
        at_newest = [str(r.id) for r in rows if r.created_at == newest]
        if mark is None:
            session.add(ProfileMark(user_id=user_pk, extracted_until=newest, extracted_ids=at_newest))
        elif newest == mark.extracted_until:
            mark.extracted_ids = [*mark.extracted_ids, *at_newest]
        else:
            mark.extracted_until, mark.extracted_ids = newest, at_newest
        return added

    def _lock(self, user_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(user_id, threading.Lock())

    def close(self) -> None:
        self.background.shutdown(wait=True)


def _user_pk(session: Session, user_id: str) -> uuid.UUID | None:
    validate_user_id(user_id)
    return session.scalar(select(User.id).where(User.user_id == user_id))


def _link(session: Session, segment_id: uuid.UUID, members: list[uuid.UUID]) -> None:
    for some in slices(members):
        session.execute(update(Memory).where(Memory.id.in_(some)).values(segment_id=segment_id))


def turn_json(memory_id: uuid.UUID, content: str, when: datetime, row: Any = None) -> dict[str, Any]:
    """A stored turn in MemoryOS's page shape (``user_input``, ``agent_response``, ``timestamp``),
    with its memory id. A memory that is no turn is all ``user_input``."""
    said: dict[str, list[str]] = {"user": [], "assistant": []}
    for speaker, text in spoken_parts(content):
        said[speaker].append(text)
    turn: dict[str, Any] = {
        "user_input": "\n\n".join(said["user"]),
        "agent_response": "\n\n".join(said["assistant"]),
        "timestamp": when.strftime("%Y-%m-%d %H:%M:%S"),
        "memory_id": str(memory_id),
    }
    if row is not None:
        turn["conversation_id"] = row.conversation_id
        turn["segment_id"] = str(row.segment_id) if row.segment_id else None
    return turn


def segment_json(segment: Segment) -> dict[str, Any]:
    return {
        "id": str(segment.id),
        "conversation_id": segment.conversation_id,
        "project": segment.project,
        "started_at": iso(segment.started_at),
        "ended_at": iso(segment.ended_at),
        "turns": segment.turns,
        "visits": segment.visits,
        "last_visit_at": iso(segment.last_visit_at),
        "heat": segment.heat,
        "state": segment.state,
        "promoted_at": iso(segment.promoted_at),
    }


def refreshed_json(refreshed: Refreshed) -> dict[str, int]:
    return asdict(refreshed)
