"""Moving in from OpenMemory: its memories, written as ours (``POST /api/v1/import/openmemory``).

The CLI reads the OpenMemory database on the user's machine (``client/openmemory_db.py``) and
posts its memories in batches; this writes each one:

* through ``Writes.add_memory`` with channel ``import``: the policy gate caps and redacts
  it like any write, embeds it with our embedder, and de-duplicates it against what the user has
  (a duplicate is skipped and counted). Consent queues it only when ``privacy.consent_channels``
  names ``import`` (by default it does not: the user chose to bring these over);
* into the app it came from, created with OpenMemory's state (a paused app stays paused and
  still receives its memories); an app the user already has keeps its own state;
* with its state (paused, archived; OpenMemory's deleted ones never arrive), its categories
  (OpenMemory's names; ours are computed only when it had none), its created, updated and
  archived dates, its access log and its state history;
* once: its OpenMemory id is kept in the memory's metadata (``openmemory_id``), and a memory
  imported before (deleted since included) is skipped, so running the import again adds nothing.

A memory the gate refuses (too large, over quota, a consent rule) is counted with its reason and
the rest go on; a store that cannot serve stops the batch (what was written stays written, and
the next run picks up after it).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select

from ...db.database import Database
from ...db.get_or_create import get_or_create
from ...db.models import App, Category, Memory, MemoryAccessLog, MemoryCategory, MemoryStatusHistory, User
from ...domain.memory_state import MemoryState
from ...errors import BadInput, Forbidden, TooLarge
from ...policy.redact import redact_value
from ...store.access_log import count_recalls
from ...store.owners import Owners
from ...store.values import epoch_seconds
from ...store.vectors import Vectors
from ..lifecycle.states import States
from ..write.writes import Writes

#: The metadata key that remembers where an imported memory came from.
ORIGIN_KEY = "openmemory_id"
CATEGORY_MAX = 64
#: Memories embedded per batch before they are written (the embedder's cache keeps them).
PRIME_CHUNK = 64


@dataclass(frozen=True)
class SourceApp:
    name: str
    is_active: bool = True
    description: str | None = None
    created_at: datetime | None = None


@dataclass(frozen=True)
class Access:
    app: str
    accessed_at: datetime | None
    access_type: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class StateChange:
    old_state: str
    new_state: str
    changed_at: datetime | None


@dataclass(frozen=True)
class SourceMemory:
    """One OpenMemory memory (not deleted), for the local user ``user_id``."""

    openmemory_id: str
    user_id: str
    app: SourceApp
    content: str
    state: MemoryState
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    archived_at: datetime | None = None
    categories: tuple[str, ...] = ()
    access_logs: tuple[Access, ...] = ()
    status_history: tuple[StateChange, ...] = ()


@dataclass
class ImportReport:
    received: int = 0
    imported: int = 0
    duplicates: int = 0
    already_imported: int = 0
    refused: int = 0
    pending_consent: int = 0
    imported_by_state: Counter[str] = field(default_factory=Counter)
    access_logs: int = 0
    refusals: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "received": self.received,
            "imported": self.imported,
            "skipped_duplicate": self.duplicates,
            "skipped_already_imported": self.already_imported,
            "refused": self.refused,
            "pending_consent": self.pending_consent,
            "imported_by_state": dict(self.imported_by_state),
            "access_logs": self.access_logs,
            "refusals": self.refusals,
        }


def _set_dates(memory: Memory, source: SourceMemory) -> None:
    if source.created_at is not None:
        memory.created_at = source.created_at
    memory.updated_at = source.updated_at or source.created_at or memory.updated_at
    if source.state == MemoryState.archived and source.archived_at is not None:
        memory.archived_at = source.archived_at


def _category_names(names: Iterable[str]) -> list[str]:
    cleaned = {" ".join(name.split()).lower()[:CATEGORY_MAX] for name in names if isinstance(name, str)}
    return sorted(name for name in cleaned if name)


class OpenMemoryImport:
    """OpenMemory's memories, written through our write path with their history restored."""

    def __init__(
        self, database: Database, owners: Owners, writes: Writes, states: States, vectors: Vectors
    ) -> None:
        self.database = database
        self.owners = owners
        self.writes = writes
        self.states = states
        self.vectors = vectors

    def import_memories(self, memories: Sequence[SourceMemory]) -> ImportReport:
        """Write OpenMemory's memories as ours; the report counts what became of each."""
        report = ImportReport(received=len(memories))
        seen = self._imported_before({m.user_id for m in memories})
        # Every app first, as OpenMemory had it: an access log may name one before its memories come.
        for user_id, app in {(m.user_id, m.app.name): (m.user_id, m.app) for m in memories}.values():
            self._ensure_app(user_id, app)
        for index, memory in enumerate(memories):
            if index % PRIME_CHUNK == 0:  # embed the next chunk in one batch (performance.batch_operations)
                self.writes.prime_embeddings(m.content for m in memories[index : index + PRIME_CHUNK])
            known = seen.setdefault(memory.user_id, set())
            if memory.openmemory_id in known:
                report.already_imported += 1
                continue
            try:
                results = self.writes.add_memory(
                    user_id=memory.user_id,
                    app_name=memory.app.name,
                    text=memory.content,
                    metadata={**memory.metadata, ORIGIN_KEY: memory.openmemory_id},
                    channel="import",
                    into_paused_app=True,
                )
            except (BadInput, TooLarge, Forbidden) as refusal:  # the gate's answers (Denied is Forbidden)
                report.refused += 1
                report.refusals.append({"openmemory_id": memory.openmemory_id, "reason": refusal.message})
                continue
            known.add(memory.openmemory_id)
            result = results[0] if results else {"event": "NONE"}
            if result.get("event") == "ADD":
                report.access_logs += self._restore(uuid.UUID(result["id"]), memory)
                report.imported += 1
                report.imported_by_state[memory.state.value] += 1
            elif result.get("event") == "PENDING":
                self._restore_dates(uuid.UUID(result["id"]), memory)
                report.pending_consent += 1
            else:
                report.duplicates += 1
        return report

    def _imported_before(self, user_ids: Iterable[str]) -> dict[str, set[str]]:
        """The OpenMemory ids each user's imported memories came from (deleted ones too)."""
        found: dict[str, set[str]] = {}
        with self.database.session() as session:
            rows = session.execute(
                select(User.user_id, Memory.metadata_)
                .join(User, Memory.user_id == User.id)
                .where(User.user_id.in_(list(user_ids)), Memory.channel == "import")
            )
            for user_id, metadata in rows:
                origin = (metadata or {}).get(ORIGIN_KEY)
                if isinstance(origin, str):
                    found.setdefault(user_id, set()).add(origin)
        return found

    def _ensure_app(self, user_id: str, source: SourceApp) -> None:
        """The user's app of this name, created as OpenMemory had it (an existing one is kept)."""
        with self.database.session() as session:
            user = self.owners.user(session, user_id)
            if session.scalar(select(App.id).where(App.owner_id == user.id, App.name == source.name)):
                return
            app = self.owners.app(session, user, source.name)
            app.is_active = source.is_active
            app.description = source.description
            if source.created_at is not None:
                app.created_at = source.created_at

    def _restore(self, memory_id: uuid.UUID, source: SourceMemory) -> int:
        """State, categories, dates, access log and history of a memory just written; returns how
        many access-log rows it brought."""
        if source.state != MemoryState.active:
            self.states.change_state(
                [memory_id], source.state, user_id=source.user_id, changed_by=source.user_id
            )
        logs = 0
        with self.database.session() as session:
            memory = session.get(Memory, memory_id)
            assert memory is not None
            categories = _category_names(source.categories)
            if categories:  # OpenMemory's own; ours stay when it had none (its categoriser often failed)
                session.execute(delete(MemoryCategory).where(MemoryCategory.memory_id == memory_id))
                for name in categories:
                    category = get_or_create(
                        session,
                        Category,
                        {"name": name},
                        {"description": f"Imported from OpenMemory: {name}"},
                    )
                    session.add(MemoryCategory(memory_id=memory_id, category_id=category.id))
            user = session.get(User, memory.user_id)
            assert user is not None
            for change in source.status_history:
                session.add(
                    MemoryStatusHistory(
                        memory_id=memory_id,
                        changed_by=user.id,
                        old_state=change.old_state,
                        new_state=change.new_state,
                        changed_at=change.changed_at or memory.created_at,
                    )
                )
            app_ids: dict[str, uuid.UUID] = {}
            for access in source.access_logs:
                if access.app not in app_ids:
                    app_ids[access.app] = self.owners.app(session, user, access.app).id
                metadata, _ = redact_value(dict(access.metadata))  # a logged search query may hold a secret
                session.add(
                    MemoryAccessLog(
                        memory_id=memory_id,
                        app_id=app_ids[access.app],
                        accessed_at=access.accessed_at or memory.created_at,
                        access_type=access.access_type,
                        metadata_=metadata,
                    )
                )
                logs += 1
            # The memory's recall count and last recall, kept as the access log's writer keeps them.
            count_recalls(
                session,
                [
                    {
                        "memory_id": memory_id,
                        "access_type": access.access_type,
                        "accessed_at": access.accessed_at or memory.created_at,
                    }
                    for access in source.access_logs
                ],
            )
            _set_dates(memory, source)
        if source.created_at is not None:  # date filters read the vector payload's created_ts
            self.vectors.set_payload(str(memory_id), {"created_ts": epoch_seconds(source.created_at)})
        return logs

    def _restore_dates(self, memory_id: uuid.UUID, source: SourceMemory) -> None:
        """A memory waiting for consent keeps its dates (it has no vector yet)."""
        with self.database.session() as session:
            memory = session.get(Memory, memory_id)
            if memory is not None:
                _set_dates(memory, source)
