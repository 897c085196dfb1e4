"""The durable outbox: captured turns waiting for the memory API to acknowledge them.

One SQLite file (``data/proxy/outbox.db``, mode 0600: it holds conversation text). A turn is
written here before any delivery attempt and deleted only when the API has acknowledged it, so
neither an API outage nor a proxy restart loses one. Every row carries a ``capture_id`` (also
sent to the API in the turn's metadata); a resend after a lost acknowledgement is stored once
because the API de-duplicates identical content.

The outbox is bounded: when it holds ``max_rows`` turns, adding one drops the oldest (and says
how many it dropped, for the log). Used from one thread only (the delivery thread).

A delivered or dropped turn leaves the file for real: ``secure_delete`` zeroes the row's bytes
and a ``wal_checkpoint(TRUNCATE)`` after each delete empties the write-ahead log, which would
otherwise keep the page images that held the turn's text until it is next reused.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    capture_id TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    payload TEXT NOT NULL
)
"""
PRIVATE = 0o600


@dataclass(frozen=True)
class Row:
    id: int
    capture_id: str
    attempts: int
    payload: dict[str, Any]


class Outbox:
    def __init__(self, path: Path, *, max_rows: int) -> None:
        if max_rows < 1:
            raise ValueError(f"outbox max_rows must be at least 1, not {max_rows}")
        self.path = path
        self.max_rows = max_rows
        path.parent.mkdir(parents=True, exist_ok=True)
        # Create the file 0600 before SQLite opens it; SQLite gives its journal files the
        # database file's mode.
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, PRIVATE))
        os.chmod(path, PRIVATE)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.execute(SCHEMA)
        for suffix in ("-wal", "-shm"):
            sidecar = path.with_name(path.name + suffix)
            if sidecar.exists():
                os.chmod(sidecar, PRIVATE)

    def add(self, capture_id: str, payload: dict[str, Any]) -> int:
        """Store one turn; return how many old turns were dropped to stay within the bound."""
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(
                "INSERT OR IGNORE INTO outbox (capture_id, created_at, payload) VALUES (?, ?, ?)",
                (capture_id, time.time(), json.dumps(payload, ensure_ascii=False)),
            )
            excess = self.count() - self.max_rows
            if excess > 0:
                self._db.execute(
                    "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox ORDER BY id LIMIT ?)", (excess,)
                )
            self._db.execute("COMMIT")
        if excess > 0:
            self._truncate_log()
        return max(excess, 0)

    def oldest(self, limit: int = 1) -> list[Row]:
        rows = self._db.execute(
            "SELECT id, capture_id, attempts, payload FROM outbox ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        return [Row(r[0], r[1], r[2], json.loads(r[3])) for r in rows]

    def delete(self, row_id: int) -> None:
        self._db.execute("DELETE FROM outbox WHERE id = ?", (row_id,))
        self._truncate_log()

    def _truncate_log(self) -> None:
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def note_attempt(self, row_id: int) -> None:
        self._db.execute("UPDATE outbox SET attempts = attempts + 1 WHERE id = ?", (row_id,))

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM outbox").fetchone()[0])

    def close(self) -> None:
        self._db.close()
