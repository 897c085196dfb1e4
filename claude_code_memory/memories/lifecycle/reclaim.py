"""Giving disk space back after deletes: SQLite files vacuumed, the vector store compacted.

    Reclaim(database, engine, settings).run(force=False) -> report    on demand (admin route, doctor)
    Reclaim(...).after_delete()                                        after each batch of deletes,
                                                                       at most every few minutes

A delete frees space inside the files, not on the disk: SQLite keeps freed pages and the
half-empty pages deleted rows leave, and Qdrant Edge keeps deleted points' vectors in its
segments and its write-ahead log. Each store is rewritten once enough of it is reclaimable
(``storage.reclaim_threshold`` of the file, at least ``storage.reclaim_min_mb``):

* SQLite (``memory.db`` and mem0's ``history.db``): ``VACUUM``, then a truncating checkpoint
  (in WAL mode VACUUM writes the new file through the log). What is reclaimable is read from
  the ``dbstat`` table: free pages plus the unused bytes of used pages. ``auto_vacuum =
  INCREMENTAL`` was measured and not chosen: deleting every other memory freed almost no whole
  page (the rows shared their pages with kept ones), so an incremental vacuum, which only
  returns free pages, gave nothing back, and switching an existing database to it takes a
  VACUUM anyway. VACUUM needs free disk for a second copy of the file: without it the file is
  left alone and the report says so.
* Qdrant Edge: :meth:`~claude_code_memory.engine.edge_store.QdrantEdgeStore.compact` (the live
  points copied into a new shard) once the points deleted since the last compaction reach the
  threshold of the points it holds. Edge does not report deleted points, so the count starts
  again at every start of the server: a forced run compacts whatever the count.
* PostgreSQL and a Qdrant server: nothing. PostgreSQL's autovacuum makes dead rows' space
  reusable; giving it back to the disk (``VACUUM FULL``) locks the tables and is left to the
  operator. A Qdrant server vacuums its segments itself.

Rewriting holds each store while it runs (writers wait on SQLite's lock, vector calls on the
store's), so the automatic run checks at most every ``storage.reclaim_check_minutes``.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...config import Settings
from ...db.database import Database
from ...engine.disk_space import write_reserve
from ...store.vectors import VectorEngine

log = logging.getLogger(__name__)

MB = 1024 * 1024


def disk_bytes(path: Path) -> int:
    """Bytes a file or a directory tree takes on the disk (allocated blocks: Edge's files are
    sparse, their apparent size says little)."""
    if not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_blocks * 512
    total = 0
    for child in path.rglob("*"):
        try:
            if child.is_file():
                total += child.stat().st_blocks * 512
        except OSError:  # removed while walking (a log segment recycled)
            continue
    return total


def sqlite_space(connection: sqlite3.Connection) -> dict[str, int]:
    """The file's bytes and how many of them a VACUUM could give back (free pages and the
    unused bytes of used pages; without ``dbstat``, the free pages alone)."""
    page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    free = connection.execute("PRAGMA freelist_count").fetchone()[0]
    try:
        unused = connection.execute("SELECT coalesce(sum(unused), 0) FROM dbstat").fetchone()[0]
    except sqlite3.Error:
        unused = 0
    return {"bytes": pages * page_size, "reclaimable": free * page_size + int(unused)}


class Reclaim:
    def __init__(
        self,
        database: Database,
        engine: VectorEngine,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.database = database
        self.engine = engine
        self.settings = settings
        self.clock = clock
        self._lock = threading.Lock()
        self._last_check: float | None = None
        self._closed = False
        self.last_report: dict[str, Any] | None = None

    def after_delete(self) -> None:
        """After a batch of deletes: a run in the background when automatic reclaiming is on and
        the last check is old enough. Never raises: a delete has happened whatever this does."""
        storage = self.settings.storage
        now = self.clock()
        if not storage.auto_reclaim:
            return
        if self._last_check is not None and now - self._last_check < storage.reclaim_check_minutes * 60:
            return
        self._last_check = now
        # Off the delete's thread: the delete has answered by the time VACUUM and the vector
        # store's compaction run (seconds on a large store), and one run at a time (the lock).
        threading.Thread(target=self._run_quietly, name="ccmem-reclaim", daemon=True).start()

    def close(self) -> None:
        """Wait for a background run in progress, and start none after: it works on the stores,
        which are closed next (mem0 closes its history database under a running VACUUM)."""
        with self._lock:
            self._closed = True

    def _run_quietly(self) -> None:
        try:
            with self._lock:
                if not self._closed:
                    self._run(force=False)
        except Exception:
            log.exception("reclaiming disk space after a delete failed; the next delete tries again")

    def run(self, force: bool = False) -> dict[str, Any]:
        """Reclaim what each store holds for deleted data: every store at the threshold, or with
        ``force`` every store whatever it holds. Answers what was done and the bytes before and
        after."""
        with self._lock:
            return self._run(force)

    def _run(self, force: bool) -> dict[str, Any]:
        started = time.perf_counter()
        report = {
            "forced": force,
            "stores": {
                "sql": self._sql(force),
                "history": self._history(force),
                "vectors": self._vectors(force),
            },
        }
        report["seconds"] = round(time.perf_counter() - started, 3)
        self.last_report = report
        return report

    # -- SQLite --------------------------------------------------------------------------------
    def _due(self, space: dict[str, int], force: bool) -> str | None:
        """Why the file is not vacuumed (None: it is)."""
        if space["reclaimable"] <= 0:
            return "nothing to reclaim"
        if force:
            return None
        storage = self.settings.storage
        share = space["reclaimable"] / max(space["bytes"], 1)
        if share < storage.reclaim_threshold:
            return (
                f"{share:.0%} reclaimable, under storage.reclaim_threshold ({storage.reclaim_threshold:.0%})"
            )
        if space["reclaimable"] < storage.reclaim_min_mb * MB:
            return f"{space['reclaimable']} bytes reclaimable, under storage.reclaim_min_mb"
        return None

    def _vacuum(self, connection: sqlite3.Connection, path: Path | None, force: bool) -> dict[str, Any]:
        before = sqlite_space(connection)
        files_before = _with_log(path)
        result: dict[str, Any] = {
            "action": "none",
            "bytes_before": files_before,
            "reclaimable_before": before["reclaimable"],
        }
        why = self._due(before, force)
        if why is None and path is not None:
            free = shutil.disk_usage(path.parent).free
            performance, server = self.settings.performance, self.settings.server
            reserve = write_reserve(server.max_body_bytes, performance.min_free_disk_mb)
            needed = 2 * before["bytes"] + reserve
            if free < needed:
                why = f"needs {needed // MB} MB free on the disk for the copy, {free // MB} MB free"
        if why is not None:
            result["reason"] = why
            result["bytes_after"] = files_before
            return result
        started = time.perf_counter()
        connection.commit()
        connection.execute("VACUUM")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        result["action"] = "vacuum"
        result["seconds"] = round(time.perf_counter() - started, 3)
        result["bytes_after"] = _with_log(path)
        return result

    def _sql(self, force: bool) -> dict[str, Any]:
        if self.database.engine.dialect.name != "sqlite":
            return {
                "action": "none",
                "reason": "PostgreSQL: autovacuum reuses the space (see docs/storage.md)",
            }
        path = self.database.engine.url.database
        with self.database.engine.connect() as connection:
            raw = connection.connection.driver_connection
            assert isinstance(raw, sqlite3.Connection)
            return self._vacuum(raw, Path(path) if path else None, force)

    def _history(self, force: bool) -> dict[str, Any]:
        history = getattr(self.engine.memory, "db", None)
        connection = getattr(history, "connection", None)
        if not isinstance(connection, sqlite3.Connection):
            return {"action": "none", "reason": "mem0 keeps no SQLite history here"}
        path = getattr(history, "db_path", None)
        with _held(history):
            return self._vacuum(connection, Path(path) if path and path != ":memory:" else None, force)

    # -- the vector store --------------------------------------------------------------------------
    def _vectors(self, force: bool) -> dict[str, Any]:
        store: Any = self.engine.store
        compact = getattr(store, "compact", None)
        if compact is None:
            return {"action": "none", "reason": "a Qdrant server compacts its own segments"}
        shard = Path(store.shard_path)
        deleted, points = int(store.deleted), int(store.count())
        result: dict[str, Any] = {
            "action": "none",
            "bytes_before": disk_bytes(shard),
            "points": points,
            "deleted_since_compaction": deleted,
        }
        share = deleted / max(points + deleted, 1)
        threshold = self.settings.storage.reclaim_threshold
        if not force and (deleted == 0 or share < threshold):
            result["reason"] = (
                f"{deleted} points deleted since the last compaction ({share:.0%}), under {threshold:.0%}"
            )
            result["bytes_after"] = result["bytes_before"]
            return result
        started = time.perf_counter()
        result["points"] = compact()
        result["action"] = "compact"
        result["seconds"] = round(time.perf_counter() - started, 3)
        result["bytes_after"] = disk_bytes(shard)
        return result


def _with_log(path: Path | None) -> int | None:
    """A SQLite file's bytes on disk with its write-ahead log and shared-memory index."""
    if path is None:
        return None
    return sum(disk_bytes(Path(f"{path}{suffix}")) for suffix in ("", "-wal", "-shm"))


@contextmanager
def _held(history: Any) -> Iterator[None]:
    lock = getattr(history, "_lock", None)  # mem0's own lock around its connection
    if lock is None:
        yield
        return
    with lock:
        yield
