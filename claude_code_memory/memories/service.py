"""The memory service: every read and write of memories goes through here.

REST routes and MCP tools are thin edges over this class. It keeps SQL (the source of truth
for ownership, state and categories) and the vector store (mem0's engine) in step: a memory's
SQL id is its vector id, its state is mirrored into the vector payload so searches filter in
the store, and a failed SQL write removes the vector it just added.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, joinedload

from ..auth.identity import get_or_create, get_or_create_user, validate_user_id
from ..db.database import Database
from ..db.models import (
    MEMORY_COLUMNS,
    App,
    Category,
    ConsentDecision,
    ConsentRule,
    Memory,
    MemoryAccessLog,
    MemoryCategory,
    MemoryFields,
    MemoryState,
    MemoryStatusHistory,
    User,
    utcnow,
)
from ..errors import BadInput, Conflict, Forbidden, MemoryError_, NotFound, TooLarge, Unavailable
from ..policy.gate import Admitted, Facts, Policy, Rule, Write, admit, approved, content_hash
from ..policy.redact import redact
from ..search.boosts import Weights, boost
from ..search.categories import Categoriser
from ..search.conversation import adjacent, around, lift, propagate
from ..search.dates import Window, windows
from ..search.keyword import KeywordIndex, fuse

log = logging.getLogger(__name__)

APP_NAME_MAX = 64
MAX_QUERY_CHARS = 10_000
#: Candidates each retriever (dense, keyword) contributes before fusion.
SEARCH_CANDIDATES = 20
#: When a query names a date, each retriever looks this deep for memories from that time.
WINDOW_CANDIDATES = 200
#: Most neighbouring turns a search result may bring on each side.
MAX_CONTEXT = 5
MAX_SEARCH_LIMIT = 100
#: The app REST writes go to when the caller names none (OpenMemory's default).
DEFAULT_APP = "openmemory"


def parse_memory_id(value: object) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        raise BadInput(f"invalid memory id {value!r}: expected a UUID") from None


def iso(value: datetime | None) -> str | None:
    return value.isoformat() + "Z" if value else None


def validate_app_name(app_name: object) -> str:
    if not isinstance(app_name, str) or not app_name.strip() or len(app_name) > APP_NAME_MAX:
        raise BadInput(f"invalid app name {app_name!r}: 1-{APP_NAME_MAX} characters")
    return app_name.strip()


def validate_text(text: object, what: str = "text") -> str:
    """Non-empty text. Length caps are policy (performance.max_memory_chars), applied by the gate."""
    if not isinstance(text, str) or not text.strip():
        raise BadInput(f"{what} must be a non-empty string")
    return text


def mem0_item(memory: MemoryFields, app_name: str, score: float | None = None) -> dict[str, Any]:
    """A memory as mem0 returns items: ``{id, memory, hash, created_at, updated_at, [score], metadata}``."""
    item: dict[str, Any] = {
        "id": str(memory.id),
        "memory": memory.content,
        "hash": memory.content_hash,
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
    }
    if memory.captured_at is not None:
        item["captured_at"] = iso(memory.captured_at)  # when it happened, if not when stored
    if score is not None:
        item["score"] = score
    item["metadata"] = {**(memory.metadata_ or {}), "app": app_name}
    return item


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


def _require_active(app_name: str, is_active: bool, action: str) -> None:
    if not is_active:
        raise Forbidden(f"App {app_name} is currently paused. Cannot {action}.")


def epoch_seconds(moment: datetime) -> float:
    """A naive-UTC datetime (as the database stores them) as epoch seconds."""
    return moment.replace(tzinfo=UTC).timestamp()


def already_existed(memory: Memory) -> dict[str, Any]:
    """The mem0-style result for a write that de-duplication turned away."""
    return {
        "id": str(memory.id),
        "memory": memory.content,
        "event": "NONE",
        "already_existed": True,
        "state": memory.state.value,
    }


#: A user's app by the user's id and the app's name: (user key, app key, is_active).
_USER_APP = (
    select(User.id, App.id, App.is_active)
    .join(App, App.owner_id == User.id)
    .where(User.user_id == bindparam("user_id"), App.name == bindparam("app_name"))
)
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


class MemoryService:
    def __init__(self, database: Database, engine: Any, clock: Callable[[], datetime] | None = None) -> None:
        self.database = database
        self.engine = engine
        self.clock = clock or utcnow
        self.policy = Policy.from_settings(engine.settings)
        self._usage_bytes: dict[uuid.UUID, int] = {}
        self.vectors = Vectors(engine)
        self._retrievers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="keyword-search")
        # One writer, so access-log batches land in order (see _log_access).
        self._bookkeeping = ThreadPoolExecutor(max_workers=1, thread_name_prefix="access-log")
        self.keywords = KeywordIndex(database)
        self.categoriser = Categoriser(self.vectors.embed_batch)
        self._category_ids: dict[str, uuid.UUID] = {}

    # -- users and apps -------------------------------------------------------------------
    def user(self, session: Session, user_id: str) -> User:
        return get_or_create_user(session, user_id)

    def find_user(self, session: Session, user_id: str) -> User:
        validate_user_id(user_id)
        user = session.scalar(select(User).where(User.user_id == user_id))
        if user is None:
            raise NotFound(f"user {user_id!r} not found")
        return user

    def user_app(self, session: Session, user_id: str, app_name: str) -> tuple[User, App]:
        """The user and their app, in one query when both exist (the common case)."""
        validate_user_id(user_id)
        row = session.execute(
            select(User, App)
            .join(App, App.owner_id == User.id)
            .where(User.user_id == user_id, App.name == app_name)
        ).first()
        if row is not None:
            return row[0], row[1]
        user = self.user(session, user_id)
        return user, self.app(session, user, app_name)

    def _active_app(self, user_id: str, app_name: str, action: str) -> tuple[uuid.UUID, uuid.UUID]:
        """The keys of the user and their app, which must not be paused; both are created
        when missing. One indexed read of three columns in the common case (a search's first
        step, beside the query's embedding: 0.17 ms, where loading ORM objects took 0.47)."""
        validate_user_id(user_id)
        with self.database.engine.connect() as connection:
            row = connection.execute(_USER_APP, {"user_id": user_id, "app_name": app_name}).first()
        if row is None:
            with self.database.session() as session:
                user, app = self.user_app(session, user_id, app_name)
                row = (user.id, app.id, app.is_active)
        user_pk, app_pk, is_active = row
        _require_active(app_name, is_active, action)
        return user_pk, app_pk

    def app(self, session: Session, user: User, app_name: str) -> App:
        app_name = validate_app_name(app_name)
        return get_or_create(
            session, App, {"owner_id": user.id, "name": app_name}, {"is_active": True, "metadata_": {}}
        )

    @staticmethod
    def require_active(app: App, action: str) -> None:
        _require_active(app.name, app.is_active, action)

    # -- writes ---------------------------------------------------------------------------
    def add_memory(
        self,
        *,
        user_id: str,
        app_name: str,
        text: str,
        infer: bool = False,
        metadata: dict[str, Any] | None = None,
        channel: str = "rest",
        project: str | None = None,
        conversation_id: str | None = None,
        model: str | None = None,
        captured_at: datetime | None = None,
        redacted_upstream: int = 0,
    ) -> list[dict[str, Any]]:
        """Store ``text`` for the user through ``app_name`` after the policy gate.

        Returns mem0-style results: ``event`` is ``ADD`` for stored memories, ``PENDING`` for
        a capture waiting for consent, ``NONE`` with ``already_existed`` for a duplicate.
        """
        text = validate_text(text)
        if metadata is not None and not isinstance(metadata, dict):
            raise BadInput("metadata must be a JSON object")
        write = Write(
            user_id=user_id,
            app=validate_app_name(app_name),
            text=text,
            channel=channel,
            metadata=dict(metadata or {}),
            project=project,
            conversation_id=conversation_id,
            model=model,
            captured_at=captured_at,
            redacted_upstream=redacted_upstream,
        )
        with self.database.session() as session:
            user, app = self.user_app(session, user_id, app_name)
            self.require_active(app, "create new memories")
            admitted = admit(write, self.policy, self._facts(session, user))
            existing = session.scalar(
                select(Memory).where(
                    Memory.user_id == user.id,
                    Memory.content_hash == admitted.content_hash,
                    Memory.state != MemoryState.deleted,
                )
            )
            if existing is not None:
                return [already_existed(existing)]
            if admitted.state == "pending":
                memory = self._new_row(admitted, uuid.uuid4(), user.id, app.id, MemoryState.pending)
                session.add(memory)
                self._usage_add(user.id, admitted.text)
                return [
                    {"id": str(memory.id), "memory": memory.content, "event": "PENDING", "state": "pending"}
                ]
            user_pk, app_pk = user.id, app.id
        return self._store(admitted, user_pk, app_pk, infer=infer)

    def _store(
        self,
        admitted: Admitted,
        user_pk: uuid.UUID,
        app_pk: uuid.UUID,
        *,
        infer: bool = False,
        decided_by: str = "",
    ) -> list[dict[str, Any]]:
        """Embed and store an admitted write; SQL rows follow the vectors mem0 created."""
        now = self.clock()
        results = self.vectors.add(admitted, app_id=str(app_pk), infer=infer, created_at=now)
        added = [r for r in results if r.get("event") == "ADD"]
        try:
            with self.database.session() as session:
                for result in added:
                    memory = self._new_row(
                        admitted, uuid.UUID(result["id"]), user_pk, app_pk, MemoryState.active, now=now
                    )
                    memory.content = result["memory"]  # mem0 may have extracted facts (infer=True)
                    memory.content_hash = content_hash(memory.content)
                    session.add(memory)
                    session.flush()
                    self._set_categories(session, memory, self.vectors.embed(memory.content), new=True)
                    self._usage_add(user_pk, memory.content)
                    if admitted.consent in ("rule", "approved", "approved_edited"):
                        session.add(
                            ConsentDecision(
                                memory_id=memory.id,
                                user_id=user_pk,
                                decision="allowed" if admitted.consent == "rule" else "approved",
                                decided_by=decided_by or f"rule:{admitted.rule_id}",
                                rule_id=admitted.rule_id,
                                edited=admitted.consent == "approved_edited",
                            )
                        )
        except Exception:
            # Keep the stores in step: a vector without its SQL row would be an orphan.
            for result in added:
                self.vectors.delete(result["id"])
            raise
        return results

    def _new_row(
        self,
        admitted: Admitted,
        memory_id: uuid.UUID,
        user_pk: uuid.UUID,
        app_pk: uuid.UUID,
        state: MemoryState,
        now: datetime | None = None,
    ) -> Memory:
        write = admitted.write
        now = now or self.clock()  # the same clock retention compares against
        return Memory(
            id=memory_id,
            created_at=now,
            updated_at=now,
            user_id=user_pk,
            app_id=app_pk,
            content=admitted.text,
            content_hash=admitted.content_hash,
            metadata_={**admitted.metadata, "channel": write.channel},
            state=state,
            channel=write.channel,
            project=write.project,
            conversation_id=write.conversation_id,
            model=write.model,
            # A turn of a conversation always has a time: conversations are ordered by it.
            captured_at=write.captured_at or (now if write.conversation_id else None),
            consent=admitted.consent,
            redactions=admitted.redactions,
            expires_at=admitted.expires_at,
        )

    def _facts(self, session: Session, user: User) -> Facts:
        rules = session.scalars(
            select(ConsentRule).where(ConsentRule.user_id == user.id).order_by(ConsentRule.created_at)
        ).all()
        ordered = sorted(rules, key=lambda r: r.effect != "deny")  # deny rules decide first
        return Facts(
            now=self.clock(),
            used_bytes=self._usage(session, user.id),
            rules=tuple(Rule(r.id, r.app_pattern, r.project_pattern, r.effect) for r in ordered),  # type: ignore[arg-type]
        )

    def _usage(self, session: Session, user_pk: uuid.UUID) -> int:
        """Bytes of memory text the user stores, counted once, then kept up to date in process."""
        used = self._usage_bytes.get(user_pk)
        if used is None:
            used = int(
                session.scalar(
                    select(func.coalesce(func.sum(func.length(Memory.content)), 0)).where(
                        Memory.user_id == user_pk, Memory.state != MemoryState.deleted
                    )
                )
                or 0
            )
            self._usage_bytes[user_pk] = used
        return used

    def _usage_add(self, user_pk: uuid.UUID, text: str) -> None:
        if user_pk in self._usage_bytes:
            self._usage_bytes[user_pk] += len(text.encode("utf-8"))

    def forget_usage(self, user_pk: uuid.UUID | None = None) -> None:
        """Drop cached quota usage (after deletes); it is recounted on the next write."""
        if user_pk is None:
            self._usage_bytes.clear()
        else:
            self._usage_bytes.pop(user_pk, None)

    def prime_embeddings(self, texts: Iterable[str]) -> int:
        """Embed texts that are about to be written in one batch (``performance.batch_operations``).

        mem0 embeds one text per ``add``; batching them first through the embedder's cache makes
        each of those a cache hit. The texts are redacted exactly as the gate will redact them,
        so the cache key is the text that will be stored. Returns how many were embedded.
        """
        if not self.engine.settings.performance.batch_operations:
            return 0
        redacted = [
            redact(t, pii=self.policy.mask_pii).text for t in texts if isinstance(t, str) and t.strip()
        ]
        if redacted:
            self.vectors.embed_batch(redacted)
        return len(redacted)

    def add_memories(
        self, *, user_id: str, app_name: str, items: Sequence[dict[str, Any]], channel: str = "rest"
    ) -> list[dict[str, Any]]:
        """Several writes from one caller, embedded as a batch; each passes the gate on its own and
        fails on its own (``{"index", "error", "status"}``) without stopping the others."""
        self.prime_embeddings(item.get("text") for item in items)  # type: ignore[misc]
        outcomes: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            try:
                results = self.add_memory(
                    user_id=user_id,
                    app_name=app_name,
                    text=item.get("text"),  # type: ignore[arg-type]
                    metadata=item.get("metadata"),
                    infer=bool(item.get("infer", False)),
                    channel=channel,
                    project=item.get("project"),
                    conversation_id=item.get("conversation_id"),
                    captured_at=item.get("captured_at"),
                )
                outcomes.append({"index": index, "results": results})
            except MemoryError_ as exc:
                outcomes.append(
                    {"index": index, "error": exc.message, "code": exc.code, "status": exc.status}
                )
        return outcomes

    def backdate(self, ids: Sequence[uuid.UUID], created_at: datetime) -> None:
        """Give imported memories their original creation time, in SQL and in the vector
        payload (``created_ts``, which date filters read)."""
        with self.database.session() as session:
            for memory in session.scalars(select(Memory).where(Memory.id.in_(ids))):
                memory.created_at = created_at
        for memory_id in ids:
            self.vectors.set_payload(str(memory_id), {"created_ts": epoch_seconds(created_at)})

    # -- consent --------------------------------------------------------------------------
    def approve(
        self, memory_id: object, *, user_id: str, decided_by: str, text: str | None = None
    ) -> list[dict[str, Any]]:
        """Approve a pending item (optionally edited; the edit passes the gate again): it is
        embedded and becomes an active memory. mem0 gives it a new id (its vector id), which the
        result carries; the pending row is replaced."""
        mid = parse_memory_id(memory_id)
        with self.database.session() as session:
            pending = self._owned(session, mid, user_id)
            if pending.state != MemoryState.pending:
                raise Conflict(f"memory {mid} is not pending (state {pending.state.value})")
            new_text = validate_text(text, "text") if text is not None else pending.content
            write = Write(
                user_id=pending.user.user_id,
                app=pending.app.name,
                text=new_text,
                channel=pending.channel or "capture",
                metadata={k: v for k, v in (pending.metadata_ or {}).items() if k != "channel"},
                project=pending.project,
                conversation_id=pending.conversation_id,
                model=pending.model,
                captured_at=pending.captured_at,
            )
            facts = self._facts(session, pending.user)
            used = max(0, facts.used_bytes - len(pending.content.encode("utf-8")))
            policy = replace(self.policy, require_consent=False)
            admitted = admit(write, policy, Facts(now=facts.now, used_bytes=used, rules=()))
            admitted = approved(admitted, edited=text is not None and text != pending.content)
            user_pk, app_pk = pending.user_id, pending.app_id
            existing = session.scalar(
                select(Memory).where(
                    Memory.user_id == user_pk,
                    Memory.content_hash == admitted.content_hash,
                    Memory.state.notin_([MemoryState.deleted, MemoryState.pending]),
                )
            )
            session.delete(pending)
            self.forget_usage(user_pk)
            if existing is not None:  # approving a copy of what is stored already stores nothing
                session.add(
                    ConsentDecision(
                        memory_id=existing.id, user_id=user_pk, decision="approved", decided_by=decided_by
                    )
                )
                return [already_existed(existing)]
        return self._store(admitted, user_pk, app_pk, decided_by=decided_by)

    def reject(self, memory_id: object, *, user_id: str, decided_by: str) -> None:
        """Reject a pending item: its text is gone for good; the decision is recorded."""
        mid = parse_memory_id(memory_id)
        with self.database.session() as session:
            pending = self._owned(session, mid, user_id)
            if pending.state != MemoryState.pending:
                raise Conflict(f"memory {mid} is not pending (state {pending.state.value})")
            session.add(
                ConsentDecision(
                    memory_id=mid, user_id=pending.user_id, decision="rejected", decided_by=decided_by
                )
            )
            self.forget_usage(pending.user_id)
            session.delete(pending)

    def update_memory(self, principal_user: str | None, memory_id: object, text: str) -> Memory:
        """Replace a memory's text through the gate: SQL and the vector (re-embedded) both change."""
        text = validate_text(text, "memory_content")
        mid = parse_memory_id(memory_id)
        with self.database.session() as session:
            memory = self._owned(session, mid, principal_user)
            if memory.state in (MemoryState.deleted, MemoryState.pending):
                raise NotFound(
                    f"memory {mid} not found"
                    if memory.state == MemoryState.deleted
                    else f"memory {mid} is pending consent: approve it with an edit instead"
                )
            write = Write(
                user_id=memory.user.user_id,
                app=memory.app.name,
                text=text,
                channel="rest",
                metadata=dict(memory.metadata_ or {}),
                project=memory.project,
                conversation_id=memory.conversation_id,
                model=memory.model,
            )
            facts = self._facts(session, memory.user)
            facts = Facts(
                now=facts.now, used_bytes=max(0, facts.used_bytes - len(memory.content.encode())), rules=()
            )
            admitted = admit(write, self.policy, facts)
            self.vectors.update(str(mid), admitted)
            self.forget_usage(memory.user_id)
            memory.content = admitted.text
            memory.content_hash = admitted.content_hash
            memory.redactions = (memory.redactions or 0) + admitted.redactions
            memory.updated_at = utcnow()
            self._set_categories(session, memory, self.vectors.embed(admitted.text))
            session.flush()
            session.refresh(memory)
            _ = (
                memory.app.name,
                memory.user.user_id,
                [c.name for c in memory.categories],
            )  # load before detaching
            return memory

    def change_state(
        self,
        memory_ids: Iterable[object],
        new_state: MemoryState,
        *,
        user_id: str | None,
        changed_by: str | None,
    ) -> int:
        """Move memories to ``new_state``; ``user_id`` restricts to that owner (None = admin)."""
        if new_state == MemoryState.deleted:
            return self.delete_memories(memory_ids, user_id=user_id, changed_by=changed_by)
        ids = [parse_memory_id(m) for m in memory_ids]
        changed = 0
        with self.database.session() as session:
            actor = self._actor(session, changed_by)
            for memory in self._rows(session, ids, user_id):
                if memory.state in (new_state, MemoryState.deleted):
                    continue
                self._record_state(session, memory, new_state, actor)
                self.vectors.set_payload(str(memory.id), {"state": new_state.value})
                changed += 1
        return changed

    def delete_memories(
        self,
        memory_ids: Iterable[object],
        *,
        user_id: str | None,
        changed_by: str | None = None,
        app_name: str | None = None,
    ) -> int:
        """Delete for real: the vector point and the text go; a content-less tombstone stays.

        ``user_id`` restricts to that owner's memories (None: any, for the admin); ids of
        other users' memories are ignored. ``app_name``, when given, must not be paused.
        """
        ids = [parse_memory_id(m) for m in memory_ids]
        deleted = 0
        with self.database.session() as session:
            if app_name is not None and user_id is not None:
                self.require_active(
                    self.app(session, self.user(session, user_id), app_name), "delete memories"
                )
            actor = self._actor(session, changed_by or user_id)
            for memory in self._rows(session, ids, user_id):
                if memory.state == MemoryState.deleted:
                    continue
                if memory.state != MemoryState.pending:  # pending items were never embedded
                    self.vectors.delete(str(memory.id))
                self.forget_usage(memory.user_id)
                self._record_state(session, memory, MemoryState.deleted, actor)
                memory.content = ""
                memory.content_hash = None
                session.execute(delete(MemoryCategory).where(MemoryCategory.memory_id == memory.id))
                deleted += 1
        return deleted

    def delete_all(self, *, user_id: str, app_name: str | None = None) -> int:
        with self.database.session() as session:
            user = self.user(session, user_id)
            query = select(Memory.id).where(Memory.user_id == user.id, Memory.state != MemoryState.deleted)
            ids = list(session.scalars(query))
        return self.delete_memories(ids, user_id=user_id, changed_by=user_id, app_name=app_name)

    # -- reads ----------------------------------------------------------------------------
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
    ) -> list[Hit]:
        """Hybrid search over the user's active memories: dense vectors and keyword relevance,
        fused by reciprocal rank; logs each hit as accessed by the app. ``score`` is the fused
        score (higher is better; comparable within one result list).

        A query that names a date ("in July 2023", "on 13 October 2023", see :mod:`.when`)
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
        callers that do not show them)."""
        query = validate_text(query, "query")
        if len(query) > MAX_QUERY_CHARS:
            raise TooLarge(f"query is {len(query)} characters; the maximum is {MAX_QUERY_CHARS}")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise BadInput(f"limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
        if not isinstance(context, int) or isinstance(context, bool) or not 0 <= context <= MAX_CONTEXT:
            raise BadInput(f"context must be an integer from 0 to {MAX_CONTEXT}")
        validate_user_id(user_id)
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
        candidates = max(limit, SEARCH_CANDIDATES)
        named = windows(query)
        depth = max(candidates, WINDOW_CANDIDATES) if named else candidates
        # The keyword half runs beside the dense half, which starts at once in this thread:
        # the query's embedding is the longest step, and a worker thread took ~1 ms to get
        # going while this one held the interpreter. Both release the GIL (onnxruntime,
        # SQLite). A paused app is refused before any result is used.
        keyword_future = self._retrievers.submit(
            self._keyword_half,
            user_id,
            app_name,
            query,
            limit=depth,
            app_filter=app_filter,
            project=project,
            created_from=created_from,
            created_to=created_to,
        )
        dense = [item["id"] for item in self.vectors.search(query, filters=filters, limit=depth)]
        app_pk, keyword = keyword_future.result()
        # One session for everything after the retrievers: the window, the neighbours, the
        # rows and the access log.
        with self.database.session() as session:
            rankings = [dense[:candidates], keyword[:candidates]]
            if named:
                rankings.append(self._in_windows(session, fuse([dense, keyword]), named)[:candidates])
            fused = fuse(rankings)
            ranking = self.engine.settings.search
            if fused and (ranking.neighbour_share or ranking.conversation_share):
                nearby = adjacent(session, [memory_id for memory_id, _ in fused])
                fused = propagate(fused, nearby.neighbours, ranking.neighbour_share)
                fused = lift(fused, nearby.conversation, ranking.conversation_share)
            weights = self._boost_weights()
            if weights.enabled and fused:
                fused = self._boosted(session, fused[:candidates], weights)
            scored = fused[:limit]
            if not scored:
                return []
            keys = {"ids": [uuid.UUID(memory_id) for memory_id, _ in scored]}
            # Rows through the session's connection, not ORM objects: a 10k search spent
            # about 1 ms building Memory and Category objects it only reads.
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
                hits.append(Hit(row, float(score), row.app_name, categories=names.get(row.id, [])))
            if context:
                hits = [replace(hit, **around(session, hit.memory, context)) for hit in hits]
        self._log_access(
            app_pk,
            [(h.memory.id, {"query": query, "score": h.score, "hash": h.memory.content_hash}) for h in hits],
            access_type,
        )
        return hits

    def _keyword_half(
        self,
        user_id: str,
        app_name: str,
        query: str,
        *,
        limit: int,
        app_filter: uuid.UUID | None,
        project: str | None,
        created_from: datetime | None,
        created_to: datetime | None,
    ) -> tuple[uuid.UUID, list[str]]:
        """The app a search reads through (refused when paused) and the keyword candidates."""
        user_pk, app_pk = self._active_app(user_id, app_name, "read memories")
        keyword = self.keywords.search(
            user_pk,
            query,
            limit=limit,
            app_id=app_filter,
            project=project,
            created_from=created_from,
            created_to=created_to,
        )
        return app_pk, keyword

    def _boost_weights(self) -> Weights:
        search = self.engine.settings.search
        return Weights(search.recency_weight, search.recency_half_life_days, search.recall_weight)

    def _boosted(
        self, session: Session, fused: list[tuple[str, float]], weights: Weights
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
            rows = session.execute(
                select(MemoryAccessLog.memory_id, func.count())
                .where(MemoryAccessLog.memory_id.in_(keys), MemoryAccessLog.access_type == "search")
                .group_by(MemoryAccessLog.memory_id)
            )
            recalls = {str(memory_id): count for memory_id, count in rows}
        return boost(fused, moments, recalls, self.clock(), weights)

    @staticmethod
    def _in_windows(session: Session, fused: list[tuple[str, float]], named: list[Window]) -> list[str]:
        """The fused candidates (best first) that happened inside one of the windows."""
        if not fused:
            return []
        moments = {
            str(mid): captured or created
            for mid, captured, created in session.execute(
                select(Memory.id, Memory.captured_at, Memory.created_at).where(
                    Memory.id.in_([uuid.UUID(memory_id) for memory_id, _ in fused])
                )
            )
        }
        return [
            memory_id
            for memory_id, _ in fused
            if memory_id in moments and any(w.contains(moments[memory_id]) for w in named)
        ]

    def list_active(
        self, *, user_id: str, app_name: str, access_type: str = "list"
    ) -> list[tuple[Memory, str]]:
        with self.database.session() as session:
            user = self.user(session, user_id)
            app = self.app(session, user, app_name)
            self.require_active(app, "read memories")
            rows = list(
                session.execute(
                    select(Memory, App.name)
                    .join(App, Memory.app_id == App.id)
                    .where(Memory.user_id == user.id, Memory.state == MemoryState.active)
                    .order_by(Memory.created_at.desc())
                )
            )
        self._log_access(app.id, [(m.id, {}) for m, _ in rows], access_type)
        return [(m, name) for m, name in rows]

    def get(self, memory_id: object, principal_user: str | None) -> Memory:
        """One memory for its owner (``principal_user``) or the admin (None). Pending items
        are visible only to their owner: the admin gets Forbidden."""
        mid = parse_memory_id(memory_id)
        with self.database.session() as session:
            memory = self._owned(session, mid, principal_user)
            if memory.state == MemoryState.deleted:
                raise NotFound(f"memory {mid} not found")
            if memory.state == MemoryState.pending and principal_user is None:
                raise Forbidden(f"memory {mid} is pending consent: only its owner can read it")
            _ = memory.app.name, memory.user.user_id, [c.name for c in memory.categories]
            return memory

    # -- mem0-shaped results, as OpenMemory's MCP tools return them ------------------------
    def search(
        self,
        *,
        user_id: str,
        app_name: str,
        query: str,
        limit: int = 10,
        channel: str = "mcp",
        context: int = 0,
    ) -> list[dict[str, Any]]:
        hits = self.search_hits(
            user_id=user_id,
            app_name=app_name,
            query=query,
            limit=limit,
            context=context,
            with_categories=False,  # mem0's result shape has none
        )
        items = []
        for hit in hits:
            item = mem0_item(hit.memory, hit.app_name, score=hit.score)
            if context:
                item["context"] = {
                    "before": [mem0_item(m, hit.app_name) for m in hit.before],
                    "after": [mem0_item(m, hit.app_name) for m in hit.after],
                }
            items.append(item)
        return items

    def list_memories(self, *, user_id: str, app_name: str, channel: str = "mcp") -> list[dict[str, Any]]:
        return [mem0_item(m, name) for m, name in self.list_active(user_id=user_id, app_name=app_name)]

    def recent(self, *, user_id: str, limit: int = 20) -> list[dict[str, Any]]:
        with self.database.session() as session:
            user = self.user(session, user_id)
            rows = session.execute(
                select(Memory, App.name)
                .join(App, Memory.app_id == App.id)
                .where(Memory.user_id == user.id, Memory.state == MemoryState.active)
                .order_by(Memory.created_at.desc())
                .limit(limit)
            )
            return [mem0_item(m, name) for m, name in rows]

    # -- helpers --------------------------------------------------------------------------
    def _owned(self, session: Session, memory_id: uuid.UUID, principal_user: str | None) -> Memory:
        # Owner and app come in the same query: every caller reads them.
        memory = session.get(Memory, memory_id, options=[joinedload(Memory.user), joinedload(Memory.app)])
        if memory is None:
            raise NotFound(f"memory {memory_id} not found")
        if principal_user is not None and memory.user.user_id != principal_user:
            raise Forbidden("this token cannot access that memory")
        return memory

    def _rows(self, session: Session, ids: Sequence[uuid.UUID], user_id: str | None) -> list[Memory]:
        if not ids:
            return []
        query = select(Memory).where(Memory.id.in_(ids))
        if user_id is not None:
            query = query.join(User, Memory.user_id == User.id).where(User.user_id == user_id)
        return list(session.scalars(query))

    def _actor(self, session: Session, changed_by: str | None) -> uuid.UUID | None:
        if changed_by is None:
            return None
        user = session.scalar(select(User).where(User.user_id == changed_by))
        return user.id if user else None

    @staticmethod
    def _record_state(
        session: Session, memory: Memory, new_state: MemoryState, actor: uuid.UUID | None
    ) -> None:
        now = utcnow()
        session.add(
            MemoryStatusHistory(
                memory_id=memory.id,
                changed_by=actor,
                old_state=memory.state.value,
                new_state=new_state.value,
                changed_at=now,
            )
        )
        memory.state = new_state
        memory.updated_at = now
        if new_state == MemoryState.archived:
            memory.archived_at = now
        elif new_state == MemoryState.deleted:
            memory.deleted_at = now

    def _set_categories(
        self, session: Session, memory: Memory, vector: Sequence[float], *, new: bool = False
    ) -> None:
        names = self.categoriser.categorise(vector)
        if not new:
            session.execute(delete(MemoryCategory).where(MemoryCategory.memory_id == memory.id))
        for name in names:
            session.add(MemoryCategory(memory_id=memory.id, category_id=self._category_id(session, name)))
        session.flush()
        session.expire(memory, ["categories"])

    def _category_id(self, session: Session, name: str) -> uuid.UUID:
        # Categories are a small fixed-ish set and never deleted: remember their ids.
        cached = self._category_ids.get(name)
        if cached is None:
            category = get_or_create(
                session,
                Category,
                {"name": name},
                {"description": f"Automatically created category for {name}"},
            )
            cached = self._category_ids[name] = category.id
        return cached

    def _log_access(
        self,
        app_id: uuid.UUID,
        entries: Sequence[tuple[uuid.UUID, dict[str, Any]]],
        access_type: str,
    ) -> None:
        """Record that the app read these memories, off the read's path: the write transaction
        cost a 10k search 1.4 ms of its ~16. Whoever reads the log first calls
        :meth:`flush_access_log`; a graceful stop writes what is queued."""
        if not entries:
            return
        now = utcnow()
        rows = [
            {
                "id": uuid.uuid4(),
                "memory_id": mid,
                "app_id": app_id,
                "accessed_at": now,
                "access_type": access_type,
                "metadata_": meta,
            }
            for mid, meta in entries
        ]
        self._bookkeeping.submit(self._write_access_log, rows)

    def _write_access_log(self, rows: list[dict[str, Any]]) -> None:
        try:
            try:
                with self.database.session() as session:
                    # One multi-row INSERT: as ORM objects these cost more than the search.
                    session.execute(insert(MemoryAccessLog), rows)
            except IntegrityError:
                # A memory was purged since it was read: its entries go with it.
                with self.database.session() as session:
                    present = set(
                        session.scalars(
                            select(Memory.id).where(Memory.id.in_({r["memory_id"] for r in rows}))
                        )
                    )
                    kept = [row for row in rows if row["memory_id"] in present]
                    if kept:
                        session.execute(insert(MemoryAccessLog), kept)
        except Exception:  # noqa: BLE001 - bookkeeping must not take the server down; it is logged
            log.exception("could not record %d memory accesses", len(rows))

    def flush_access_log(self) -> None:
        """Wait until every access recorded so far is in the database."""
        self._bookkeeping.submit(lambda: None).result()

    def close(self) -> None:
        """Stop the search threads (before the engine they use is closed) and write the queued
        access log."""
        self._retrievers.shutdown(wait=True)
        self._bookkeeping.shutdown(wait=True)

    def health(self) -> dict[str, str]:
        status = {}
        try:
            self.database.check()
            status["database"] = "ok"
        except Unavailable as exc:
            status["database"] = exc.message
        try:
            self.vectors.check()
            status["vector_store"] = "ok"
        except Exception as exc:  # noqa: BLE001 - reported, not raised: this is the health probe
            cause = exc.__cause__ if isinstance(exc, Unavailable) and exc.__cause__ else exc
            status["vector_store"] = f"unavailable: {cause.__class__.__name__}"
        return status


class Vectors:
    """The service's only door to mem0: add, update, delete, search and embed.

    mem0 returns ``{"results": [...]}`` dicts and raises ``ValueError`` for ids it does not
    know; this turns those into plain lists and our typed errors, and reports a store that
    cannot serve as ``Unavailable``.
    """

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.memory = engine.memory
        self.has_llm = engine.settings.llm.provider != "none"

    def add(
        self, admitted: Admitted, *, app_id: str, infer: bool, created_at: datetime
    ) -> list[dict[str, Any]]:
        """Embed and store a write the policy gate admitted (nothing else is accepted).
        ``created_at`` (the SQL row's) goes into the payload as ``created_ts`` (epoch seconds,
        indexed) so date filters run inside the vector store."""
        if not isinstance(admitted, Admitted):
            raise TypeError("the engine stores only writes admitted by policy.gate.admit()")
        write = admitted.write
        payload = {
            **admitted.metadata,
            "source_app": "claude-code-memory",
            "mcp_client": write.app,
            "app_id": app_id,
            "state": MemoryState.active.value,
            "channel": write.channel,
            "created_ts": epoch_seconds(created_at),
        }
        for key in ("project", "conversation_id"):
            if getattr(write, key):
                payload[key] = getattr(write, key)
        if admitted.expires_at is not None:
            payload["expires_at"] = epoch_seconds(admitted.expires_at)
        # Without an LLM, infer=True (OpenMemory's REST default) stores the text verbatim.
        try:
            with self.engine.server_errors():
                result = self.memory.add(
                    admitted.text, user_id=write.user_id, metadata=payload, infer=infer and self.has_llm
                )
        except ValueError as exc:
            raise BadInput(str(exc)) from exc
        return list(result.get("results", []))

    def update(self, memory_id: str, admitted: Admitted) -> None:
        if not isinstance(admitted, Admitted):
            raise TypeError("the engine stores only writes admitted by policy.gate.admit()")
        try:
            with self.engine.server_errors():
                self.memory.update(memory_id, text=admitted.text)
        except ValueError as exc:
            raise NotFound(f"memory {memory_id} has no vector: {exc}") from exc

    def delete(self, memory_id: str) -> tuple[int, int]:
        """Remove the vector point and every mem0 history row of the memory (which keep its old
        text): deleting is for real. Returns (vectors deleted, history rows deleted)."""
        vectors = 1
        try:
            with self.engine.server_errors():
                self.memory.delete(memory_id)
        except ValueError:
            vectors = 0
            log.info("memory %s had no vector to delete", memory_id)
        return vectors, self.purge_history(memory_id)

    def purge_history(self, memory_id: str) -> int:
        history = self.memory.db
        with history._lock:  # mem0's own lock around its sqlite connection
            deleted = history.connection.execute(
                "DELETE FROM history WHERE memory_id = ?", (memory_id,)
            ).rowcount
            history.connection.commit()
        return int(deleted)

    def history_count(self, memory_id: str) -> int:
        history = self.memory.db
        with history._lock:
            row = history.connection.execute(
                "SELECT count(*) FROM history WHERE memory_id = ?", (memory_id,)
            ).fetchone()
        return int(row[0])

    def exists(self, memory_id: str) -> bool:
        with self.engine.server_errors():
            return self.engine.store.get(memory_id) is not None

    def set_payload(self, memory_id: str, fields: dict[str, Any]) -> None:
        with self.engine.server_errors():
            self.engine.set_payload(memory_id, fields)

    def search(self, query: str, *, filters: dict[str, Any], limit: int) -> list[dict[str, Any]]:
        """The ``limit`` nearest memories that pass ``filters`` and do not point away from the
        query (cosine < 0); keyword search and fusion then rank. Straight to the vector store:
        mem0's ``Memory.search`` fetches max(4 × limit, 60) points with payloads and scores
        them again (lemmas, entities) to give the same order without an LLM — measured 5 ms of
        a 10k search for nothing."""
        with self.engine.server_errors():
            hits = self.engine.nearest(query, limit, filters)
        return [{"id": memory_id, "score": score} for memory_id, score in hits if score >= 0.0]

    def embed(self, text: str) -> list[float]:
        return self.engine.embed(text)

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        batch = getattr(self.engine.embedder, "embed_batch", None)
        if batch is not None:
            return batch(texts)
        return [self.engine.embed(t) for t in texts]

    def check(self) -> None:
        with self.engine.server_errors():
            self.engine.count({"user_id": "__health__"})
