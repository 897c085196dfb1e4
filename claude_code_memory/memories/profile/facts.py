"""The long-term profile: facts about the user and the assistant's knowledge, each linked to
the memories it came from, readable and correctable by the user.

    Profile(...).learn(session, user_pk, [(memory_id, text)])   facts of memories, stored
    Profile(...).facts(user_id, subject=, category=)              the profile, as JSON-able dicts
    Profile(...).edit(user_id, fact_id, text=, category=)         the user's correction
    Profile(...).delete(user_id, fact_id)                         gone, and stays gone
    Profile(...).briefing_lines(user_pk, limit)                   what SessionStart is given

Facts are extracted by rules (:mod:`.rules`), or by the LLM ``profile.llm`` names
(:mod:`.llm`; on its failure, by the rules). A fact is keyed by the hash of its
normalised text: extracting it again only links one more memory to it. Deleting a fact leaves
a tombstone (its hash, no text), so that no later extraction brings it back; an edit
tombstones the old wording the same way. Facts whose memories are all gone (deleted,
forgotten) are dropped, unless the user wrote them.

A memory in the trash (``privacy.trash_days``) is deleted for every reader until it is
restored: a fact only it says is kept, so that a restore brings it back without extracting it
again, but it is silent (:meth:`Profile.facts` and :meth:`Profile.briefing_lines` leave it
out, and no fact lists a trashed memory among its sources). A purge drops it as any delete.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...config import ProfileSettings
from ...db.database import Database
from ...db.models import Memory, ProfileFact
from ...domain.memory_state import MemoryState
from ...errors import BadInput, Conflict, MemoryStackError, NotFound
from ...policy.redact import redact
from ...store.owners import Owners
from ..read_model.shapes import iso
from .llm import LlmExtractor
from .rules import ASSISTANT, CATEGORIES, MAX_FACT_CHARS, USER, Fact, fact_hash, facts_of

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+")
ACTIVE = "active"
DELETED = "deleted"
SUBJECTS = (USER, ASSISTANT)
#: States of a memory that no longer speaks through its facts: deleted, or in the trash.
SILENT = (MemoryState.deleted, MemoryState.trashed)


class Profile:
    def __init__(
        self,
        database: Database,
        owners: Owners,
        settings: ProfileSettings,
        clock: Callable[[], datetime],
        llm: LlmExtractor | None = None,
    ) -> None:
        self.database = database
        self.owners = owners
        self.settings = settings
        self.clock = clock
        if llm is None and settings.llm.base_url and settings.llm.model:
            llm = LlmExtractor(settings.llm)
        self.llm = llm

    # -- learning -------------------------------------------------------------------------
    def extract(self, text: str) -> tuple[list[Fact], str]:
        """The facts of one memory's text and who found them ("llm" or "rules")."""
        if self.llm is not None:
            try:
                return self.llm.facts_of(text), "llm"
            except MemoryStackError as exc:
                log.warning("profile LLM failed, using the rules for this memory: %s", exc.message)
        return facts_of(text), "rules"

    def learn(self, session: Session, user_pk: uuid.UUID, memories: Iterable[tuple[uuid.UUID, str]]) -> int:
        """Store the facts of these memories; answers how many facts are new. A fact deleted
        by the user (a tombstone) is not stored again."""
        known = {
            (row.subject, row.fact_hash): row
            for row in session.scalars(select(ProfileFact).where(ProfileFact.user_id == user_pk))
        }
        added = 0
        now = self.clock()
        for memory_id, text in memories:
            facts, source = self.extract(text)
            for fact in facts:
                key = (fact.subject, fact_hash(fact.text))
                row = known.get(key)
                if row is None:
                    row = ProfileFact(
                        id=uuid.uuid4(),
                        user_id=user_pk,
                        subject=fact.subject,
                        category=fact.category,
                        text=fact.text,
                        fact_hash=key[1],
                        source=source,
                        memory_ids=[str(memory_id)],
                        state=ACTIVE,
                        created_at=now,
                        updated_at=now,
                    )
                    session.add(row)
                    known[key] = row
                    added += 1
                elif row.state == ACTIVE and str(memory_id) not in row.memory_ids:
                    row.memory_ids = [*row.memory_ids, str(memory_id)]
        session.flush()
        return added

    def prune(self, session: Session, user_pk: uuid.UUID) -> int:
        """Drop extracted facts none of whose memories is still there (deleted or forgotten):
        a fact must not outlive the text it came from. The user's own facts stay."""
        rows = list(
            session.scalars(
                select(ProfileFact).where(
                    ProfileFact.user_id == user_pk, ProfileFact.state == ACTIVE, ProfileFact.source != "user"
                )
            )
        )
        linked = {uuid.UUID(mid) for row in rows for mid in row.memory_ids}
        if not linked:
            return 0
        alive = {
            str(mid)
            for mid in session.scalars(
                select(Memory.id).where(Memory.id.in_(linked), Memory.state != MemoryState.deleted)
            )
        }
        dropped = 0
        for row in rows:
            kept = [mid for mid in row.memory_ids if mid in alive]
            if not kept:
                session.delete(row)
                dropped += 1
            elif len(kept) != len(row.memory_ids):
                row.memory_ids = kept
        return dropped

    def prune_users(self, user_pks: Iterable[uuid.UUID]) -> int:
        """:meth:`prune` for these users, at once (after their memories were deleted)."""
        with self.database.session() as session:
            return sum(self.prune(session, user_pk) for user_pk in user_pks)

    # -- reading --------------------------------------------------------------------------
    def facts(
        self, user_id: str, *, subject: str | None = None, category: str | None = None
    ) -> list[dict[str, Any]]:
        if subject is not None and subject not in SUBJECTS:
            raise BadInput(f"subject must be one of {', '.join(SUBJECTS)}, got {subject!r}")
        if category is not None and category not in CATEGORIES:
            raise BadInput(f"category must be one of {', '.join(CATEGORIES)}, got {category!r}")
        with self.database.session() as session:
            try:
                user = self.owners.find_user(session, user_id)
            except NotFound:
                return []  # a user who never wrote has an empty profile
            query = select(ProfileFact).where(ProfileFact.user_id == user.id, ProfileFact.state == ACTIVE)
            if subject is not None:
                query = query.where(ProfileFact.subject == subject)
            if category is not None:
                query = query.where(ProfileFact.category == category)
            rows = list(session.scalars(query.order_by(ProfileFact.category, ProfileFact.created_at)))
            live = _live_sources(session, rows)
            return [fact_json(row, sources) for row, sources in _speaking(rows, live)]

    def briefing_lines(self, user_pk: uuid.UUID, limit: int, project: str | None = None) -> list[str]:
        """The user's facts for SessionStart: identity, working style and preferences first,
        the most corroborated (most source memories) first within each. Only facts a global
        memory or one of ``project`` (the session's) says, or the user wrote from scratch:
        another project's memories stay out of this project's sessions (docs/scopes.md), and a
        memory deleted or in the trash says nothing."""
        if limit <= 0:
            return []
        order = {"identity": 0, "working_style": 1, "preference": 2, "tools": 3, "project": 4}
        with self.database.session() as session:
            rows = list(
                session.scalars(
                    select(ProfileFact).where(
                        ProfileFact.user_id == user_pk,
                        ProfileFact.state == ACTIVE,
                        ProfileFact.subject == USER,
                    )
                )
            )
            live = _live_sources(session, rows)
        shown = [
            (row, sources)
            for row, sources in _speaking(rows, live)
            if not row.memory_ids or any(live[i] is None or live[i] == project for i in sources)
        ]
        shown.sort(key=lambda pair: (order.get(pair[0].category, 9), -len(pair[1]), pair[0].created_at))
        return [row.text for row, _ in shown[:limit]]

    # -- the user's corrections -----------------------------------------------------------
    def edit(
        self, user_id: str, fact_id: object, *, text: str | None = None, category: str | None = None
    ) -> dict[str, Any]:
        """Correct a fact's text and/or category; the old wording is never extracted again."""
        if text is None and category is None:
            raise BadInput("give text and/or category to change")
        with self.database.session() as session:
            row = self._owned(session, user_id, fact_id)
            if category is not None:
                allowed = (
                    ("knowledge",) if row.subject == ASSISTANT else tuple(set(CATEGORIES) - {"knowledge"})
                )
                if category not in allowed:
                    raise BadInput(f"category must be one of {', '.join(sorted(allowed))}, got {category!r}")
                row.category = category
            if text is not None:
                new_text = _fact_text(text)
                new_hash = fact_hash(new_text)
                if new_hash != row.fact_hash:
                    twin = session.scalar(
                        select(ProfileFact).where(
                            ProfileFact.user_id == row.user_id,
                            ProfileFact.subject == row.subject,
                            ProfileFact.fact_hash == new_hash,
                        )
                    )
                    if twin is not None and twin.state == ACTIVE:
                        raise Conflict(f"fact {twin.id} already says this; edit or delete that one")
                    if twin is not None:  # the user restores a wording they had deleted
                        session.delete(twin)
                        session.flush()
                    old_hash = row.fact_hash
                    row.fact_hash = new_hash
                    session.flush()
                    session.add(_tombstone(row.user_id, row.subject, row.category, old_hash, self.clock()))
                row.text = new_text
            row.source = "user"
            row.updated_at = self.clock()
            session.flush()
            return fact_json(row, _speaking([row], _live_sources(session, [row]))[0][1])

    def delete(self, user_id: str, fact_id: object) -> None:
        """Delete a fact: its text goes, its hash stays so that it is never extracted again."""
        with self.database.session() as session:
            row = self._owned(session, user_id, fact_id)
            row.state = DELETED
            row.text = ""
            row.memory_ids = []
            row.updated_at = self.clock()

    def _owned(self, session: Session, user_id: str, fact_id: object) -> ProfileFact:
        try:
            key = uuid.UUID(str(fact_id))
        except ValueError:
            raise BadInput(f"invalid fact id {fact_id!r}") from None
        user = self.owners.find_user(session, user_id)
        row = session.get(ProfileFact, key)
        if row is None or row.user_id != user.id or row.state != ACTIVE:
            raise NotFound(f"fact {key} not found")
        if not _speaking([row], _live_sources(session, [row])):  # only trashed memories say it
            raise NotFound(f"fact {key} not found")
        return row


def _live_sources(session: Session, rows: Sequence[ProfileFact]) -> dict[str, str | None]:
    """The memories these facts came from that still speak (neither deleted nor in the
    trash), by id, with their project."""
    linked = {uuid.UUID(i) for row in rows for i in row.memory_ids or () if _is_uuid(i)}
    if not linked:
        return {}
    return {
        str(memory_id): memory_project
        for memory_id, memory_project in session.execute(
            select(Memory.id, Memory.project).where(Memory.id.in_(linked), Memory.state.notin_(SILENT))
        )
    }


def _speaking(
    rows: Iterable[ProfileFact], live: dict[str, str | None]
) -> list[tuple[ProfileFact, list[str]]]:
    """The facts a reader is shown, each with the sources it may name: a fact the user wrote,
    one with no sources, or one at least one of whose memories still speaks (``live``)."""
    shown = []
    for row in rows:
        sources = [str(i) for i in row.memory_ids or () if str(i) in live]
        if sources or not row.memory_ids or row.source == "user":
            shown.append((row, sources))
    return shown


def fact_json(row: ProfileFact, sources: Sequence[str] | None = None) -> dict[str, Any]:
    """A fact as the API shows it; ``sources``: the memory ids it may name (default: all)."""
    return {
        "id": str(row.id),
        "subject": row.subject,
        "category": row.category,
        "text": row.text,
        "source": row.source,
        "memory_ids": list(row.memory_ids if sources is None else sources),
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
    }


def rank_facts(facts: Sequence[dict[str, Any]], query: str, limit: int) -> list[dict[str, Any]]:
    """Facts by the words they share with the query (ties: newest first); without shared words,
    the newest. A profile holds few short facts: words rank them well enough, and without the
    vector store (a fact has no vector)."""
    words = _words(query)
    scored = sorted(
        facts,
        key=lambda fact: (len(words & _words(fact["text"])), fact["updated_at"] or ""),
        reverse=True,
    )
    return scored[:limit]


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if len(word) > 2}


def _fact_text(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise BadInput("text must be a non-empty string")
    text = " ".join(text.split())
    if len(text) > MAX_FACT_CHARS:
        raise BadInput(f"text is {len(text)} characters; a fact has at most {MAX_FACT_CHARS}")
    return redact(text).text


def _tombstone(user_pk: uuid.UUID, subject: str, category: str, digest: str, now: datetime) -> ProfileFact:
    return ProfileFact(
        id=uuid.uuid4(),
        user_id=user_pk,
        subject=subject,
        category=category,
        text="",
        fact_hash=digest,
        source="user",
        memory_ids=[],
        state=DELETED,
        created_at=now,
        updated_at=now,
    )


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
