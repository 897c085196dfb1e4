"""Retention and forgetting: memories leave every store for real, with a receipt.

    Retention(...).sweep(dry_run=False) -> Receipt        expired memories and stale pending items
    Retention(...).forget(user_id, ..., dry_run=False)    a user's memories by app / project /
                                                          conversation / since a date
    Sweeper(retention, interval_minutes).running()        the server's schedule for sweep()

A hard delete removes the SQL row with its dependent rows (category links, state history,
access logs), then the vector point and mem0's history rows (which keep old texts): rows
first, so a crash leaves only what the reconciliation repairs (see ``Retention._remove``). A receipt counts
what went from each store; a dry run counts what would go and changes nothing.

Consent decisions are kept: they name ids, decisions and who decided, never content, and they
are the audit trail the consent feature promises. Tombstones (state ``deleted``, no content)
are left by the sweep; ``forget`` removes them too, since they still carry the project and
conversation ids that a user asking to be forgotten means.
"""

from __future__ import annotations

import fnmatch
import logging
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, func, or_, select
from sqlalchemy.orm import Session

from ...config import PrivacySettings
from ...db.database import Database
from ...db.models import App, ConsentDecision, Memory, MemoryAccessLog, MemoryCategory, MemoryStatusHistory
from ...domain.memory_state import MemoryState
from ...errors import BadInput, NotFound
from ...store.access_log import AccessLog
from ...store.owners import Owners
from ...store.values import iso, validate_app_name
from ...store.vectors import Vectors
from ..write.usage import Usage
from .erasure import Erasure
from .periodic import Periodic

log = logging.getLogger(__name__)

#: Every store a receipt counts, in the order a table shows them.
STORES = ("sql_rows", "vectors", "history_rows", "access_logs", "status_history", "categories_links")
#: Rows that exist only for a memory, by the receipt's name for them.
DEPENDENTS: dict[str, type[MemoryAccessLog] | type[MemoryStatusHistory] | type[MemoryCategory]] = {
    "access_logs": MemoryAccessLog,
    "status_history": MemoryStatusHistory,
    "categories_links": MemoryCategory,
}
#: Memories deleted per SQL transaction: bounds lock time on SQLite and the IN (...) lists.
BATCH_SIZE = 200
#: The scheduler's first sweep waits this long, so start-up (model loading, migrations) is done.
FIRST_SWEEP_DELAY_SECONDS = 5.0
_GLOB_CHARS = frozenset("*?[")


def parse_since(value: object) -> datetime | None:
    """A point in time from epoch seconds or an ISO date / date-time, as naive UTC.

    Naive ISO values are taken as UTC. Raises ``ValueError`` naming the value.
    """
    if value is None or isinstance(value, datetime):
        return _naive_utc(value) if value is not None else None
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            try:
                return _naive_utc(datetime.fromisoformat(text))
            except ValueError:
                raise ValueError(
                    f"since {text!r} is neither epoch seconds nor an ISO date (2025-01-31) "
                    "or date-time (2025-01-31T12:00:00Z)"
                ) from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"since must be epoch seconds or an ISO date, not {value!r}")
    try:
        return datetime.fromtimestamp(value, UTC).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"since {value!r} is out of range for epoch seconds") from None


def _naive_utc(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value


@dataclass
class Receipt:
    """What a sweep or a forget removed (or, for a dry run, would remove), per store."""

    dry_run: bool
    scope: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STORES, 0))
    memory_ids: list[str] = field(default_factory=list)
    #: Pending items among them that nobody decided on (each gets an "expired" decision).
    pending_expired: int = 0
    finished_at: datetime | None = None

    @property
    def memories(self) -> int:
        return len(self.memory_ids)

    def to_dict(self, *, with_ids: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = {
            "dry_run": self.dry_run,
            "scope": dict(self.scope),
            "memories": self.memories,
            "counts": dict(self.counts),
            "pending_expired": self.pending_expired,
            "finished_at": iso(self.finished_at),
        }
        if with_ids:
            body["memory_ids"] = list(self.memory_ids)
        return body

    def summary(self) -> str:
        """One line for the log: counts only, never contents."""
        verb = "would purge" if self.dry_run else "purged"
        stores = ", ".join(f"{self.counts[name]} {name}" for name in STORES)
        return f"{verb} {self.memories} memories ({self.pending_expired} expired pending): {stores}"


@dataclass(frozen=True)
class _Target:
    id: uuid.UUID
    user_pk: uuid.UUID
    state: MemoryState


class Retention:
    """Hard deletes across SQL, the vector store and mem0 history, for the sweep and forget.

    One instance per server; it remembers the last sweep and when the scheduler runs next
    (for ``GET /api/v1/retention``). Sweeps and forgets run one at a time.
    """

    def __init__(
        self,
        database: Database,
        privacy: PrivacySettings,
        *,
        owners: Owners,
        vectors: Vectors,
        usage: Usage,
        access_log: AccessLog,
        erasure: Erasure,
        clock: Callable[[], datetime],
        on_delete: Callable[[set[uuid.UUID]], object],
    ) -> None:
        self.database = database
        self.privacy = privacy
        self.owners = owners
        self.vectors = vectors
        self.usage = usage
        self.access_log = access_log
        self.erasure = erasure
        self.clock = clock
        self.on_delete = on_delete  # the profile forgets facts of memories gone
        self.next_run_at: datetime | None = None
        self.last_run: Receipt | None = None
        self._lock = threading.Lock()

    # -- the sweep ----------------------------------------------------------------------------
    def sweep(self, dry_run: bool = False) -> Receipt:
        """Delete memories whose ``expires_at`` has passed (any state but tombstones) and
        pending items older than ``privacy.pending_expire_days``, for every user."""
        with self._lock:
            now = self.clock()
            pending_cutoff = now - timedelta(days=self.privacy.pending_expire_days)
            trash_cutoff = now - timedelta(days=self.privacy.trash_days)
            receipt = Receipt(
                dry_run=dry_run,
                scope={
                    "expired_before": iso(now),
                    "pending_created_before": iso(pending_cutoff),
                    "trashed_before": iso(trash_cutoff),
                },
            )
            with self.database.session() as session:
                rows = session.execute(
                    select(Memory.id, Memory.user_id, Memory.state).where(
                        Memory.state != MemoryState.deleted,
                        or_(
                            and_(Memory.expires_at.is_not(None), Memory.expires_at <= now),
                            and_(Memory.state == MemoryState.pending, Memory.created_at < pending_cutoff),
                            # The trash's time is up (trash.py); trash_days 0 empties it.
                            and_(Memory.state == MemoryState.trashed, Memory.deleted_at <= trash_cutoff),
                        ),
                    )
                ).all()
            targets = [_Target(*row) for row in rows]
            self._remove(targets, receipt, now=now, pending_decision="expired")
            receipt.finished_at = now
            if not dry_run:
                self.last_run = receipt
                if receipt.memories:
                    log.info("retention sweep %s", receipt.summary())
            return receipt

    # -- forget -------------------------------------------------------------------------------
    def forget(
        self,
        user_id: str,
        *,
        app: str | None = None,
        project: str | None = None,
        conversation_id: str | None = None,
        since: datetime | None = None,
        everything: bool = False,
        dry_run: bool = False,
    ) -> Receipt:
        """Delete every memory of ``user_id`` matching all the given criteria, in any state.

        ``project`` is matched exactly, or as a shell glob when it has ``*``, ``?`` or ``[``;
        ``since`` keeps memories created before it. With no criterion, ``everything=True`` is
        required: forgetting all of a user's memories should never be an accident.
        """
        criteria = {"app": app, "project": project, "conversation_id": conversation_id, "since": since}
        given = {name: value for name, value in criteria.items() if value is not None}
        if not given and not everything:
            raise BadInput(
                "forget needs at least one of app, project, conversation_id or since; "
                "pass everything=true to forget all of the user's memories"
            )
        if given and everything:
            raise BadInput(f"everything=true cannot be combined with {', '.join(sorted(given))}")
        for name in ("project", "conversation_id"):
            value = given.get(name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise BadInput(f"{name} must be a non-empty string")
        if since is not None and not isinstance(since, datetime):
            raise BadInput("since must be a datetime")
        if app is not None:
            app = validate_app_name(app)

        with self._lock:
            now = self.clock()
            receipt = Receipt(
                dry_run=dry_run,
                scope={"user_id": user_id, **{k: _scope_value(v) for k, v in given.items()}}
                | ({"everything": True} if everything else {}),
            )
            with self.database.session() as session:
                targets = self._matching(session, user_id, app, project, conversation_id, since)
            self._remove(targets, receipt, now=now, pending_decision=None)
            receipt.finished_at = now
            if not dry_run and receipt.memories:
                log.info("forget %s", receipt.summary())
            return receipt

    def _matching(
        self,
        session: Session,
        user_id: str,
        app: str | None,
        project: str | None,
        conversation_id: str | None,
        since: datetime | None,
    ) -> list[_Target]:
        user = self.owners.find_user(session, user_id)
        query = select(Memory.id, Memory.user_id, Memory.state, Memory.project).where(
            Memory.user_id == user.id
        )
        if app is not None:
            app_pk = session.scalar(select(App.id).where(App.owner_id == user.id, App.name == app))
            if app_pk is None:
                raise NotFound(f"user {user_id!r} has no app {app!r}")
            query = query.where(Memory.app_id == app_pk)
        glob = project is not None and bool(_GLOB_CHARS & set(project))
        if project is not None:
            query = query.where(Memory.project.is_not(None) if glob else Memory.project == project)
        if conversation_id is not None:
            query = query.where(Memory.conversation_id == conversation_id)
        if since is not None:
            query = query.where(Memory.created_at >= since)
        return [
            _Target(memory_id, user_pk, state)
            for memory_id, user_pk, state, memory_project in session.execute(query)
            if not glob or fnmatch.fnmatchcase(memory_project or "", project or "")
        ]

    # -- the hard delete ----------------------------------------------------------------------
    def _remove(
        self, targets: list[_Target], receipt: Receipt, *, now: datetime, pending_decision: str | None
    ) -> None:
        """Delete ``targets`` from every store (or count them, for a dry run) into ``receipt``.

        Per batch one SQL transaction deletes the rows, then the vectors and history go. In that
        order a crash (or a vector store that stops answering) in between leaves points whose
        rows are gone, which no search returns (every hit is checked against its row) and the
        reconciliation removes with their history (reconcile.py); the other order left rows
        listed as active whose vectors were gone, which nothing could repair but a re-embed.
        Should the SQL transaction fail, nothing has changed and the next run retries.
        """
        counts = receipt.counts
        vectors = self.vectors
        self.access_log.flush()  # queued reads of these memories are counted and purged too
        for batch in _chunks(targets, BATCH_SIZE):
            ids = [t.id for t in batch]
            with self.database.session() as session:
                for name, model in DEPENDENTS.items():
                    counts[name] += int(
                        session.scalar(
                            select(func.count()).select_from(model).where(model.memory_id.in_(ids))
                        )
                        or 0
                    )
                pending = [t for t in batch if t.state == MemoryState.pending]
                receipt.pending_expired += len(pending) if pending_decision else 0
                if receipt.dry_run:
                    counts["sql_rows"] += len(batch)
                    for target in batch:
                        key = str(target.id)
                        counts["vectors"] += int(vectors.exists(key))
                        counts["history_rows"] += vectors.history_count(key)
                else:
                    if pending_decision:
                        session.add_all(
                            ConsentDecision(
                                memory_id=t.id,
                                user_id=t.user_pk,
                                decision=pending_decision,
                                decided_by="retention",
                                decided_at=now,
                            )
                            for t in pending
                        )
                    # Deleted explicitly (not left to ON DELETE CASCADE) so the receipt counts
                    # what went and a database without the cascade is cleaned all the same.
                    for model in DEPENDENTS.values():
                        session.execute(delete(model).where(model.memory_id.in_(ids)))
                    result = session.execute(delete(Memory).where(Memory.id.in_(ids)))
                    counts["sql_rows"] += int(result.rowcount or 0)  # type: ignore[attr-defined]
                    # The full-text index follows by trigger; erasure rewrites it below.
            if not receipt.dry_run:  # the rows are committed as gone: now their vectors
                for target in batch:
                    key = str(target.id)
                    if target.state in (MemoryState.pending, MemoryState.deleted):
                        # Never embedded, or the vector already went with the soft delete.
                        counts["history_rows"] += vectors.purge_history(key)
                    else:
                        # Counted first: mem0 writes a DELETE history row of its own while it
                        # deletes, which the purge then removes; the receipt counts the rows
                        # that held the memory, as the dry run does.
                        counts["history_rows"] += vectors.history_count(key)
                        counts["vectors"] += vectors.delete(key)[0]
            receipt.memory_ids.extend(str(memory_id) for memory_id in ids)
        if not receipt.dry_run and targets:
            # Facts extracted from these memories go with them, before the bytes are erased.
            self.on_delete({t.user_pk for t in targets})
            self.erasure.erase()  # once per sweep or forget, not per batch
        if not receipt.dry_run:
            for user_pk in {t.user_pk for t in targets}:
                self.usage.forget(user_pk)


def _chunks(items: list[_Target], size: int) -> Iterable[list[_Target]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class Sweeper(Periodic):
    """The server's schedule: ``retention.sweep()`` in a worker thread every interval, the first
    shortly after start-up (see :mod:`.periodic`)."""

    def __init__(
        self,
        retention: Retention,
        interval_minutes: float,
        first_delay_seconds: float = FIRST_SWEEP_DELAY_SECONDS,
    ) -> None:
        super().__init__(
            retention,
            retention.sweep,
            interval_seconds=interval_minutes * 60,
            first_delay_seconds=first_delay_seconds,
            name="retention sweep",
        )
        self.retention = retention


def _scope_value(value: object) -> object:
    """A forget criterion as the receipt shows it: dates as ISO strings, the rest as given."""
    return iso(value) if isinstance(value, datetime) else value
