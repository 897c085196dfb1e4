"""Where a memory is written: every write passes the policy gate, then is embedded and stored.

A write becomes an ``Admitted`` value only through :func:`claude_code_memory.policy.gate.admit`,
and ``Vectors`` (store/vectors.py) stores nothing else. SQL rows follow the vectors mem0
created; a failed SQL write removes the vector it just added, so the two stores stay in step.
The quota the gate checks is counted by :class:`~.usage.Usage`; a new row's columns are
:mod:`.rows`', which the batch (:mod:`.batch`) builds with too.

De-duplication is the database's: a unique index on ``(user_id, content_hash)`` (deleted rows
keep no hash). The look-up before a write only saves embedding a text that is stored already;
when two writers of one text race past it, the second insert fails on the index, and that
writer removes its vector and answers "already existed" with the row that won.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Unpack

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ...config import Settings
from ...db.database import Database
from ...db.models import ConsentDecision, ConsentRule, Memory, User, utcnow
from ...domain.memory_state import MemoryState
from ...errors import Conflict, NotFound, TooLarge
from ...policy.gate import (
    Admitted,
    Facts,
    Policy,
    Rule,
    Write,
    admit,
    approved,
    asks_consent,
    check_path,
    content_hash,
    prepare,
)
from ...policy.redact import redact
from ...store.owners import Owners, owned
from ...store.values import already_existed, epoch_seconds, parse_memory_id, validate_app_name, validate_text
from ...store.vectors import Vectors
from .arguments import DEFAULT_CHANNEL, WriteArguments
from .batch import BatchWrite
from .capture_filter import CaptureFilter
from .categories import Categoriser
from .category_links import CategoryLinks
from .items import make_write
from .rows import consent_decision, row_values, same_text, stored
from .usage import Usage


@dataclass(frozen=True)
class StoredRow:
    """A memory row as a write stored it, with what an answer needs beside its columns (the
    row is detached: its relationships cannot be loaded any more)."""

    memory: Memory
    app_name: str
    categories: list[str]


@dataclass(frozen=True)
class Written:
    """What :meth:`Writes.write_memory` did: mem0-style results, and the rows it stored by
    memory id (none for a duplicate, a pending or a filtered write)."""

    results: list[dict[str, Any]]
    rows: dict[str, StoredRow] = field(default_factory=dict)


class Writes:
    def __init__(
        self,
        database: Database,
        settings: Settings,
        owners: Owners,
        vectors: Vectors,
        usage: Usage,
        clock: Callable[[], datetime],
        capture_filter: CaptureFilter | None = None,
    ) -> None:
        self.database = database
        self.capture_filter = capture_filter
        self.settings = settings
        self.owners = owners
        self.vectors = vectors
        self.usage = usage
        self.clock = clock
        self.policy = Policy.from_settings(settings)
        self.categories = CategoryLinks(Categoriser(vectors.embed_batch))

    def add_memory(self, **write: Unpack[WriteArguments]) -> list[dict[str, Any]]:
        """Store ``text`` for the user through ``app_name`` after the policy gate: the results
        of :meth:`write_memory` (which takes the same arguments)."""
        return self.write_memory(**write).results

    def write_memory(self, **write: Unpack[WriteArguments]) -> Written:
        """Store ``text`` for the user through ``app_name`` after the policy gate (what each
        argument means: :class:`.arguments.WriteArguments`).

        Returns mem0-style results: ``event`` is ``ADD`` for stored memories, ``PENDING`` for
        a capture waiting for consent, ``NONE`` with ``already_existed`` for a duplicate,
        ``FILTERED`` (with ``reason``, no id) for a junk capture the capture filter dropped.
        """
        self.vectors.require_room()
        user_id, app_name = write["user_id"], write["app_name"]
        infer = write.get("infer", False)
        channel = write.get("channel", DEFAULT_CHANNEL)
        asked = make_write(**write)
        text = asked.text
        policy = replace(self.policy, mask_pii=True) if write.get("mask_pii", False) else self.policy
        prepared = prepare(asked, policy)
        if not asks_consent(asked, policy) and not (infer and self.vectors.has_llm):
            # The text this write will embed (unless the checks below stop it): the model runs
            # on the other core while they read the database.
            self.vectors.prefetch(prepared.text)
        try:
            with self.database.session() as session:
                user, app = self.owners.user_app(session, user_id, app_name)
                if not write.get("into_paused_app", False):
                    self.owners.require_active(app, "create new memories")
                if self.capture_filter is not None:
                    reason = self.capture_filter.check(session, user.id, text, channel)
                    if reason is not None:
                        return Written(
                            [{"id": None, "memory": None, "event": "FILTERED", "reason": f"junk: {reason}"}]
                        )
                admitted = admit(asked, policy, self.facts(session, user, channel), prepared)
                user_pk, app_pk = user.id, app.id
                existing = stored(session, user_pk, admitted.content_hash)
                if existing is not None:
                    return Written([already_existed(existing)])
                if admitted.state == "pending":
                    now = self.clock()
                    values = row_values(admitted, uuid.uuid4(), user_pk, app_pk, MemoryState.pending, now)
                    memory = Memory(**values)
                    session.add(memory)
                    session.flush()  # a racing writer of the same text fails here, on the index
                    self.usage.add(user_pk, admitted.text)
                    return Written(
                        [
                            {
                                "id": str(memory.id),
                                "memory": memory.content,
                                "event": "PENDING",
                                "state": "pending",
                            }
                        ]
                    )
        except IntegrityError as exc:
            if not same_text(exc):
                raise
            return Written(self._already_stored(user_pk, admitted.content_hash))
        rows: dict[str, StoredRow] = {}
        return Written(self._store(admitted, user_pk, app_pk, infer=infer, rows=rows), rows)

    def add_memories(
        self, *, user_id: str, app_name: str, items: Sequence[dict[str, Any]], channel: str = "rest"
    ) -> list[dict[str, Any]]:
        """Several writes from one caller, stored together (:mod:`.batch`); each passes
        the gate on its own and fails on its own (``{"index", "error", "status"}``) without
        stopping the others, with the answer it would get written alone after the ones before."""
        self.vectors.require_room()
        return BatchWrite(self).add(user_id=user_id, app_name=app_name, items=items, channel=channel)

    def prime_embeddings(self, texts: Iterable[str]) -> int:
        """Embed texts that are about to be written in one batch (``performance.batch_operations``).

        mem0 embeds one text per ``add``; batching them first through the embedder's cache makes
        each of those a cache hit. The texts are redacted exactly as the gate will redact them,
        so the cache key is the text that will be stored. Returns how many were embedded.
        """
        if not self.settings.performance.batch_operations:
            return 0
        redacted = [
            redact(t, pii=self.policy.mask_pii).text for t in texts if isinstance(t, str) and t.strip()
        ]
        if redacted:
            self.vectors.embed_batch(redacted)
        return len(redacted)

    def approve(
        self, memory_id: object, *, user_id: str, decided_by: str, text: str | None = None
    ) -> list[dict[str, Any]]:
        """Approve a pending item (optionally edited; the edit passes the gate again): it is
        embedded and becomes an active memory. mem0 gives it a new id (its vector id), which the
        result carries; the pending row is replaced."""
        self.vectors.require_room()
        mid = parse_memory_id(memory_id)
        with self.database.session() as session:
            pending = owned(session, mid, user_id)
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
                task=pending.task,
                conversation_id=pending.conversation_id,
                model=pending.model,
                captured_at=pending.captured_at,
            )
            facts = self.facts(session, pending.user)
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
            self.usage.forget(user_pk)
            if existing is not None:  # approving a copy of what is stored already stores nothing
                session.add(
                    ConsentDecision(
                        memory_id=existing.id, user_id=user_pk, decision="approved", decided_by=decided_by
                    )
                )
                return [already_existed(existing)]
        return self._store(admitted, user_pk, app_pk, decided_by=decided_by)

    def update_memory(
        self, principal_user: str | None, memory_id: object, text: str, *, channel: str = "rest"
    ) -> Memory:
        """Replace a memory's text through the gate: SQL and the vector (re-embedded) both change."""
        return self.rewrite(principal_user, memory_id, text, channel=channel)[0]

    def rewrite(
        self, principal_user: str | None, memory_id: object, text: str, *, channel: str = "rest"
    ) -> tuple[Memory, Admitted]:
        """:meth:`update_memory`, answering also what the gate admitted (its redactions). A
        memory-tool file keeps its path: the gate checks the text against the file's caps."""
        self.vectors.require_room()
        text = validate_text(text, "memory_content")
        mid = parse_memory_id(memory_id)
        with self.database.session() as session:
            memory = owned(session, mid, principal_user)
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
                channel=channel,
                metadata=dict(memory.metadata_ or {}),
                project=memory.project,
                task=memory.task,
                conversation_id=memory.conversation_id,
                model=memory.model,
                path=memory.path,
            )
            facts = self.facts(session, memory.user)
            facts = Facts(
                now=facts.now, used_bytes=max(0, facts.used_bytes - len(memory.content.encode())), rules=()
            )
            admitted = admit(write, self.policy, facts)
            twin = stored(session, memory.user_id, admitted.content_hash)
            if twin is not None and twin.id != mid:
                raise Conflict(f"memory {twin.id} already says this; edit or delete that one instead")
            self.usage.forget(memory.user_id)
            memory.content = admitted.text
            memory.content_hash = admitted.content_hash
            memory.entities_indexed = False  # the entity rules read the new text next time
            memory.redactions = (memory.redactions or 0) + admitted.redactions
            memory.updated_at = utcnow()
            try:
                session.flush()  # the index has the last word on a racing write of the same text
            except IntegrityError as exc:
                if not same_text(exc):
                    raise
                raise Conflict(f"another memory already says this: {admitted.text[:80]!r}") from None
            self.vectors.update(str(mid), admitted)  # after SQL accepted the text, before commit
            self.categories.relink(session, memory, self.vectors.embed(admitted.text))
            session.flush()
            session.refresh(memory)
            _ = (
                memory.app.name,
                memory.user.user_id,
                [c.name for c in memory.categories],
            )  # load before detaching
            return memory, admitted

    def add_file(
        self, *, user_id: str, app_name: str, path: str, text: str, max_files: int, channel: str
    ) -> tuple[str, Admitted]:
        """A new memory-tool file (``path`` canonical, see ``policy.memory_paths``) through the
        gate; answers the new memory's id and what was admitted. ``max_files`` caps the user's
        files; a path taken meanwhile by another writer is a :class:`Conflict`."""
        self.vectors.require_room()
        write = Write(user_id=user_id, app=validate_app_name(app_name), text=text, channel=channel, path=path)
        with self.database.session() as session:
            user, app = self.owners.user_app(session, user_id, app_name)
            self.owners.require_active(app, "write memory files")
            files = session.scalar(
                select(func.count()).where(Memory.user_id == user.id, Memory.path.is_not(None))
            )
            if (files or 0) >= max_files:
                raise TooLarge(
                    f"Cannot create {path}: the memory directory holds {files} files, the maximum "
                    "(memory_tool.max_files); delete or merge files first"
                )
            admitted = admit(write, self.policy, self.facts(session, user))
            if admitted.state == "pending":  # a file the model cannot read back would break it
                raise Conflict(
                    f"Cannot create {path}: writes on the {channel} channel wait for consent "
                    "(privacy.consent_channels), and a memory file cannot wait"
                )
            user_pk, app_pk = user.id, app.id
        try:
            results = self._store(admitted, user_pk, app_pk)
        except IntegrityError:
            raise Conflict(f"File {path} already exists") from None
        added = [result for result in results if result.get("event") == "ADD"]
        if not added:  # the same path and text: only a racing writer of this very file
            raise Conflict(f"File {path} already exists")
        return str(added[0]["id"]), admitted

    def move_files(self, *, user_id: str, moves: Sequence[tuple[str, str]]) -> None:
        """Give memory-tool files new paths, all in one transaction: ``(memory id, new canonical
        path)`` pairs. The text is not touched, so nothing is embedded again; the paths pass
        the gate's path check. A new path another file holds is a :class:`Conflict`."""
        for _, new_path in moves:
            check_path(new_path)
        try:
            with self.database.session() as session:
                user = self.owners.user(session, user_id)
                rows = {
                    str(row.id): row
                    for row in session.scalars(
                        select(Memory).where(
                            Memory.user_id == user.id,
                            Memory.id.in_([parse_memory_id(memory_id) for memory_id, _ in moves]),
                        )
                    )
                }
                for memory_id, _ in moves:  # free the old names first: a swap in one go is fine
                    rows[memory_id].path = None
                session.flush()
                for memory_id, new_path in moves:
                    row = rows[memory_id]
                    row.path = new_path
                    row.content_hash = content_hash(row.content, new_path)
                    row.updated_at = utcnow()
                session.flush()
        except IntegrityError:
            raise Conflict("The destination already exists") from None
        except KeyError as exc:
            raise NotFound(f"memory {exc.args[0]} not found") from None

    def backdate(self, ids: Sequence[uuid.UUID], created_at: datetime) -> None:
        """Give imported memories their original creation time, in SQL and in the vector
        payload (``created_ts``, which date filters read)."""
        with self.database.session() as session:
            for memory in session.scalars(select(Memory).where(Memory.id.in_(ids))):
                memory.created_at = created_at
        for memory_id in ids:
            self.vectors.set_payload(str(memory_id), {"created_ts": epoch_seconds(created_at)})

    def _store(
        self,
        admitted: Admitted,
        user_pk: uuid.UUID,
        app_pk: uuid.UUID,
        *,
        infer: bool = False,
        decided_by: str = "",
        rows: dict[str, StoredRow] | None = None,
    ) -> list[dict[str, Any]]:
        """Embed and store an admitted write; SQL rows follow the vectors mem0 created (and go
        into ``rows`` when it is given)."""
        now = self.clock()
        results = self.vectors.add(admitted, app_id=str(app_pk), infer=infer, created_at=now)
        stored: list[dict[str, Any]] = []
        added = [result for result in results if result.get("event") == "ADD"]
        for index, result in enumerate(added):
            try:
                # One transaction a memory (mem0 may have extracted several facts, infer=True):
                # a text another writer stored first undoes only its own row.
                stored += self._store_row(admitted, result, user_pk, app_pk, now, decided_by, rows)
            except Exception:
                # Keep the stores in step: a vector without its SQL row would be an orphan.
                for unstored in added[index:]:
                    self.vectors.delete(unstored["id"])
                raise
        return stored + [result for result in results if result.get("event") != "ADD"]

    def _store_row(
        self,
        admitted: Admitted,
        result: dict[str, Any],
        user_pk: uuid.UUID,
        app_pk: uuid.UUID,
        now: datetime,
        decided_by: str,
        rows: dict[str, StoredRow] | None = None,
    ) -> list[dict[str, Any]]:
        """The SQL row of one vector mem0 created; "already existed" when the index refuses it."""
        text = result["memory"]  # mem0 may have extracted facts (infer=True)
        for attempt in (1, 2):
            try:
                row = self._insert_row(admitted, result, user_pk, app_pk, now, decided_by)
                if rows is not None:
                    rows[str(row.memory.id)] = row
                break
            except IntegrityError as exc:
                if same_text(exc):
                    self.vectors.delete(result["id"])
                    return self._already_stored(user_pk, content_hash(text, admitted.write.path))
                if attempt == 2:  # another constraint twice (a category two writers made): give up
                    raise
        self.usage.add(user_pk, text)
        return [result]

    def _insert_row(
        self,
        admitted: Admitted,
        result: dict[str, Any],
        user_pk: uuid.UUID,
        app_pk: uuid.UUID,
        now: datetime,
        decided_by: str,
    ) -> StoredRow:
        text = result["memory"]
        memory_id = uuid.UUID(result["id"])
        values = row_values(admitted, memory_id, user_pk, app_pk, MemoryState.active, now)
        values.update(content=text, content_hash=content_hash(text, admitted.write.path))
        with self.database.session() as session:
            # An INSERT, not the unit of work: a third of a single write's SQL time went to it.
            session.execute(insert(Memory), [values])  # a racing writer of the same text fails here
            names = self.categories.link_new(session, [(memory_id, text, self.vectors.embed(text))])[0]
            decision = consent_decision(admitted, memory_id, user_pk, decided_by)
            if decision is not None:
                session.add(decision)
        return StoredRow(Memory(**values), admitted.write.app, names)

    def _already_stored(self, user_pk: uuid.UUID, digest: str | None) -> list[dict[str, Any]]:
        """The answer for a write that lost a race to a writer of the same text."""
        with self.database.session() as session:
            winner = stored(session, user_pk, digest)
            if winner is None:  # the winner was deleted since: the caller may simply write again
                raise Conflict("a write of the same text raced this one; try again")
            return [already_existed(winner)]

    def facts(self, session: Session, user: User, channel: str | None = None) -> Facts:
        """What the gate needs to know; the consent rules only for a ``channel`` they apply to
        (None: any), saving their query on every other write."""
        consenting = self.policy.require_consent and channel in self.policy.consent_channels
        rules = (
            session.scalars(
                select(ConsentRule).where(ConsentRule.user_id == user.id).order_by(ConsentRule.created_at)
            ).all()
            if channel is None or consenting
            else []
        )
        ordered = sorted(rules, key=lambda r: r.effect != "deny")  # deny rules decide first
        return Facts(
            now=self.clock(),
            used_bytes=self.usage.used(session, user.id),
            rules=tuple(Rule(r.id, r.app_pattern, r.project_pattern, r.effect) for r in ordered),  # type: ignore[arg-type]
        )
