"""Reconciliation: the metadata database and the vector store brought back into step.

    Reconciler(...).run(trigger) -> Report       one pass (start-up, admin route, ccmem doctor)
    Reconciler(...).running()                    the server's start-up pass, in the background

SQL is the source of truth. Each write path orders its two stores so that a crash between
them leaves only what a pass here repairs (a killed process runs no ``except`` or ``finally``):

* a write stores the vector first and the row after (writes.py): a crash leaves a point with
  no row, an *orphan*;
* a delete commits its tombstones first and removes the vectors after (states.py), and forget
  and the retention purge delete the rows first and the vectors after (retention.py): a crash
  leaves points whose rows are deleted or gone, orphans again, with their mem0 history.

The rules, for every point and every row:

1. a point with no row, or whose row is ``deleted`` or ``pending``, is removed with its mem0
   history rows (``orphan_vectors_removed``);
2. a row ``active``, ``paused`` or ``archived`` with no point gets it back: its text embedded
   again, under the same id, with the payload a write would have stored and the row's state
   (``missing_vectors_restored``); only an older version or a hand-edited store leaves these,
   but one such row is listed and found by keyword yet invisible to meaning search;
3. mem0 history rows of a memory with neither a live row nor a point are purged
   (``stale_history_removed``): they keep deleted text.

The server answers while a pass runs, so each candidate is looked at again just before it is
repaired: a write in flight has stored its vector but not yet its row, so a point this process
wrote less than :data:`IN_FLIGHT_SECONDS` ago is left for the next pass (``skipped_in_flight``);
a point written before the process started cannot belong to a write in flight.

Replicas (:meth:`Reconciler.shared`): another replica's write may be in flight at any time, so
every point written less than :data:`IN_FLIGHT_SECONDS` ago is left alone whoever wrote it, and
the start-up pass runs under the ``reconciliation`` lease: a replica starting while another
one's pass runs skips its own. mem0's history file is each replica's own (under its data
directory), so rule 3 over it runs on every replica, on a schedule of its own and without a
lease (:meth:`Reconciler.purge_local_history`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import anyio
from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from ...db.database import Database
from ...db.models import Memory
from ...domain.memory_state import MemoryState
from ...store.leases import Leases
from ...store.values import dashed_id, iso
from ...store.vectors import Vectors, point_payload
from .erasure import Erasure
from .periodic import renewing

log = logging.getLogger(__name__)

#: States whose memories have a vector point.
LIVE = frozenset({MemoryState.active, MemoryState.paused, MemoryState.archived, MemoryState.trashed})
#: A point (or history row) this process wrote more recently than this may belong to a write
#: whose SQL row is not committed yet: it is left for the next pass.
IN_FLIGHT_SECONDS = 300.0

Trigger = Literal["start-up", "admin", "doctor"]
#: The start-up pass's lease (store/leases.py).
LEASE = "reconciliation"


class Stopped(Exception):
    """The server is shutting down: the pass ends where it is."""


@dataclass
class Report:
    """What one pass found and repaired; counts only, never contents."""

    trigger: str
    state: Literal["running", "done", "failed"] = "running"
    orphan_vectors_removed: int = 0
    missing_vectors_restored: int = 0
    stale_history_removed: int = 0
    skipped_in_flight: int = 0
    checked_rows: int = 0
    checked_points: int = 0
    seconds: float = 0.0
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None
    error: str | None = None

    @property
    def repaired(self) -> int:
        return self.orphan_vectors_removed + self.missing_vectors_restored + self.stale_history_removed

    def to_dict(self) -> dict[str, Any]:
        body = asdict(self)
        body["started_at"] = iso(self.started_at)
        body["finished_at"] = iso(self.finished_at)
        body["seconds"] = round(self.seconds, 3)
        return body


class Reconciler:
    """Runs reconciliation passes one at a time and remembers the last (for ``/health``)."""

    def __init__(
        self,
        database: Database,
        vectors: Vectors,
        erasure: Erasure,
        *,
        in_flight_seconds: float = IN_FLIGHT_SECONDS,
    ) -> None:
        self.database = database
        self.vectors = vectors
        self.erasure = erasure
        self.in_flight = timedelta(seconds=in_flight_seconds)
        #: Points and history rows written before this cannot belong to a write in flight.
        self.booted_at = datetime.now(UTC)
        self.last: Report | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.leases: Leases | None = None
        self.lease_ttl = timedelta(seconds=60)

    def shared(self, leases: Leases, ttl_seconds: float) -> Reconciler:
        """Run beside other replicas (the module's docstring)."""
        self.leases = leases
        self.lease_ttl = timedelta(seconds=ttl_seconds)
        self.booted_at = datetime.min.replace(tzinfo=UTC)  # any recent point may be in flight
        return self

    async def _start_up_pass(self) -> None:
        try:
            await self._reconcile_at_start()
        finally:
            # Then the searches' copy of the vectors is read (in its own thread), so that the
            # first searches do not wait behind that reading; after the pass, which reads the
            # store too, rather than beside it.
            if not self._stop.is_set():
                try:
                    await anyio.to_thread.run_sync(self.vectors.prepare_search)
                except Exception:  # noqa: BLE001 - only a head start: the first search reads it otherwise
                    log.warning("vector store: could not start reading the searches' copy", exc_info=True)

    async def _reconcile_at_start(self) -> None:
        leases = self.leases
        if leases is None:
            await anyio.to_thread.run_sync(self.run, "start-up")
            return
        if not await anyio.to_thread.run_sync(leases.acquire, LEASE, self.lease_ttl):
            log.info("reconciliation: another replica holds the lease; this one skips its start-up pass")
            return
        try:
            async with renewing(leases, LEASE, self.lease_ttl):
                await anyio.to_thread.run_sync(self.run, "start-up")
            await anyio.to_thread.run_sync(leases.ran, LEASE)
        finally:
            await anyio.to_thread.run_sync(leases.release, LEASE)

    def status(self) -> dict[str, Any] | None:
        return self.last.to_dict() if self.last is not None else None

    def run(self, trigger: Trigger = "admin") -> Report:
        """One pass over every row and point; a pass already running is waited for first."""
        with self._lock:
            report = self.last = Report(trigger=trigger)
            started = time.perf_counter()
            state: Literal["done", "failed"] = "failed"
            try:
                self._pass(report)
                state = "done"
            except Exception as exc:
                report.error = f"{exc.__class__.__name__}: {exc}"
                if not isinstance(exc, Stopped):
                    log.exception("reconciliation failed")
            finally:
                report.seconds = time.perf_counter() - started
                report.finished_at = datetime.now(UTC)
                # Last: /health reads the report while this runs, and "done" says it is whole
                # (a reader once saw "done" with the seconds not yet set).
                report.state = state
            if report.repaired or report.skipped_in_flight:
                log.warning(
                    "reconciliation (%s): %d orphan vectors removed, %d missing vectors restored, "
                    "%d stale history memories purged, %d left for the next pass (writes in flight)",
                    trigger,
                    report.orphan_vectors_removed,
                    report.missing_vectors_restored,
                    report.stale_history_removed,
                    report.skipped_in_flight,
                )
            return report

    # -- the pass -----------------------------------------------------------------------------
    def _pass(self, report: Report) -> None:
        # Rows before points: a write in flight then shows as a point without a row (checked
        # again below), never as a row without a point. Ids are compared in their hex form,
        # which SQLite stores: at 1M memories the pass took 12-13 s of the interpreter with
        # ids as UUIDs and canonical strings, and the searches after a start waited on it.
        with self.database.session() as session:
            states = _row_states(session)
        report.checked_rows = len(states)
        points = set(self.vectors.point_ids(hex_form=True))
        report.checked_points = len(points)
        live = {hex_id for hex_id, state in states.items() if state in LIVE}

        for hex_id in sorted(points - live):
            self._check_stop()
            self._remove_orphan(dashed_id(hex_id), known_row=hex_id in states, report=report)
        for hex_id in sorted(live - points):
            self._check_stop()
            self._restore(dashed_id(hex_id), report)
        history = self.vectors.history_keys()
        for hex_id in sorted(history.keys() - live - points):
            self._check_stop()
            self._purge_stale_history(history[hex_id], report)
        if report.orphan_vectors_removed or report.stale_history_removed:
            self.erasure.erase()  # the removed history held text: it leaves the files

    def _remove_orphan(self, memory_id: str, *, known_row: bool, report: Report) -> None:
        if self._state(memory_id) in LIVE:
            return  # a write committed its row since the rows were read
        if not known_row:
            written = self.vectors.point_created_at(memory_id)
            if written is None:
                return  # gone since the points were listed
            if self._in_flight(written):
                report.skipped_in_flight += 1
                return
        if self.vectors.delete(memory_id)[0]:
            report.orphan_vectors_removed += 1

    def _restore(self, memory_id: str, report: Report) -> None:
        if self.vectors.exists(memory_id):
            return
        with self.database.session() as session:
            memory = session.scalar(
                select(Memory)
                .options(joinedload(Memory.user), joinedload(Memory.app))
                .where(Memory.id == uuid.UUID(memory_id))
            )
            if memory is None or memory.state not in LIVE or not memory.content:
                return  # deleted since the rows were read
            payload = point_payload(
                app_name=memory.app.name,
                app_id=str(memory.app_id),
                state=memory.state,
                channel=memory.channel,
                created_at=memory.created_at,
                project=memory.project,
                conversation_id=memory.conversation_id,
                expires_at=memory.expires_at,
            )
            text, user_id = memory.content, memory.user.user_id
        self.vectors.restore(memory_id, text, user_id=user_id, payload=payload)
        if self._state(memory_id) not in LIVE:
            self.vectors.delete(memory_id)  # deleted while it was embedded: do not leave an orphan
            return
        report.missing_vectors_restored += 1

    def _purge_stale_history(self, memory_id: str, report: Report) -> None:
        state = self._state(memory_id)
        if state in LIVE or self.vectors.exists(memory_id):
            return
        # A deleted row never comes back, so its history cannot belong to a write in flight; a
        # pending one may be under approval right now (its vector and history being written).
        written = None if state == MemoryState.deleted else self.vectors.history_written_at(memory_id)
        if written is not None and self._in_flight(written):
            report.skipped_in_flight += 1
            return
        if self.vectors.purge_history(memory_id):
            report.stale_history_removed += 1

    def purge_local_history(self) -> int:
        """Rule 3 alone, over this process's mem0 history file: rows of memories with neither a
        live row nor a point are purged (their text leaves the files). Answers how many."""
        with self.database.session() as session:
            rows = session.execute(select(Memory.id, Memory.state))
            live = {str(memory_id) for memory_id, state in rows if state in LIVE}
        report = Report(trigger="local history")
        for memory_id in sorted(self.vectors.history_ids() - live):
            self._purge_stale_history(memory_id, report)
        if report.stale_history_removed:
            self.erasure.erase()
        return report.stale_history_removed

    # -- helpers ------------------------------------------------------------------------------
    def _state(self, memory_id: str) -> MemoryState | None:
        with self.database.session() as session:
            return session.scalar(select(Memory.state).where(Memory.id == uuid.UUID(memory_id)))

    def _in_flight(self, written: datetime) -> bool:
        return written >= self.booted_at and datetime.now(UTC) - written < self.in_flight

    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise Stopped("the server stopped before the pass finished")

    # -- the server's start-up pass -----------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Reconciler]:
        """A pass in a worker thread while the server answers; leaving stops it between items
        (a worker thread cannot be interrupted) so the stores are never closed under it."""
        self._stop.clear()
        task = asyncio.create_task(self._start_up_pass(), name="reconciliation")
        try:
            yield self
        finally:
            self._stop.set()
            with contextlib.suppress(Exception):
                await task


def _row_states(session: Session) -> dict[str, str]:
    """Every memory row's state, keyed by the id's hex form (SQLite's driver reads it as stored)."""
    raw = session.connection().connection.driver_connection
    if isinstance(raw, sqlite3.Connection):
        return dict(raw.execute("SELECT id, state FROM memories"))
    rows = session.execute(select(Memory.id, Memory.state))
    return {memory_id.hex: MemoryState(state).value for memory_id, state in rows}
