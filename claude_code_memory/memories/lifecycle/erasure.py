"""Physical erasure: after a delete, the deleted text leaves the files, not only the tables.

    Erasure(database, engine).erase() -> seconds per store     once after a batch of deletes
                                                               (a request, a forget, a sweep)

Each store deletes logically first, and each keeps the text somewhere until told otherwise:

* SQLite leaves deleted rows' bytes in free pages: ``PRAGMA secure_delete=ON`` on every
  connection zeroes them (set where the connections are made: ``db/database.py`` for
  ``memory.db``, ``engine/factory.py`` for mem0's ``history.db``);
* SQLite's write-ahead log keeps the page images written before the delete until a checkpoint
  copies the log back and reuses it: ``PRAGMA wal_checkpoint(TRUNCATE)`` does it at once and
  cuts the log to zero bytes;
* FTS5 records a delete as a new entry and keeps the old terms in its segments until they are
  merged: ``'optimize'`` merges them into one segment without the deleted rows;
* the embedded vector store keeps deleted points' payloads in its pages and its log, so it is
  never given the text (:data:`~claude_code_memory.engine.edge_store.TEXT_FIELDS`): what it
  keeps of a deleted memory is a vector and the fields searches filter on.

Each step rewrites a whole file or index, so it runs once per batch, never per row. Out of
reach here: PostgreSQL and a Qdrant server (their own storage and vacuum), and blocks a file
system or SSD keeps after a file is rewritten or removed.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable

from ...db.database import Database
from ...store.vectors import VectorEngine

log = logging.getLogger(__name__)

CHECKPOINT = "PRAGMA wal_checkpoint(TRUNCATE)"
FTS_OPTIMIZE = "INSERT INTO memories_fts(memories_fts) VALUES ('optimize')"


class Erasure:
    """Rewrites what the stores kept of deleted rows; see the module docstring."""

    def __init__(
        self, database: Database, engine: VectorEngine, then: Callable[[], None] | None = None
    ) -> None:
        self.database = database
        self.engine = engine
        #: Run after each erasure: reclaiming the space the deletes freed (memories/lifecycle/reclaim.py).
        self.then = then

    def erase(self) -> dict[str, float]:
        """Erase what deleted rows left in the stores; returns the seconds each step took."""
        timings: dict[str, float] = {}
        for name, step in (("metadata", self._metadata), ("history", self._history)):
            started = time.perf_counter()
            step()
            timings[name] = time.perf_counter() - started
        if self.then is not None:
            self.then()
        return timings

    def _metadata(self) -> None:
        if self.database.engine.dialect.name != "sqlite":
            return
        with self.database.engine.connect() as connection:
            raw = connection.connection.driver_connection
            assert isinstance(raw, sqlite3.Connection)
            if raw.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories_fts'").fetchone():
                raw.execute(FTS_OPTIMIZE)
            raw.commit()
            _checkpoint(raw, "memory.db")

    def _history(self) -> None:
        history = getattr(self.engine.memory, "db", None)
        connection = getattr(history, "connection", None)
        if not isinstance(connection, sqlite3.Connection):
            return
        with history._lock:  # type: ignore[union-attr]  # mem0's own lock around its connection
            connection.commit()
            _checkpoint(connection, "mem0 history.db")


def _checkpoint(connection: sqlite3.Connection, name: str) -> None:
    busy, _log_frames, _copied = connection.execute(CHECKPOINT).fetchone()
    if busy:
        # A reader held the log past the busy timeout: the old pages stay in it until the next
        # erasure (or the next automatic checkpoint) overwrites them.
        log.warning("%s: the write-ahead log could not be truncated (a reader was busy)", name)
