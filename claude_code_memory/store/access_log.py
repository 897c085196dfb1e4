"""The access log: which app read which memory, when, and for what query.

Written off the read's path by one background writer, so batches land in order and a search
does not wait for a write transaction. Whoever reads the log first calls
:meth:`AccessLog.flush`; :meth:`AccessLog.close` (a graceful stop) writes what is queued.
A query is kept redacted, like a memory's text: a prompt the hooks search with may hold a
secret the user typed.

Each memory also counts its recalls (``memories.recalls``: the rows of :data:`RECALLS` types
the log holds for it) and keeps the last one's time (``recalled_at``), in the same transaction
as the rows: a SessionStart briefing asks for a project's most recalled memories, and the tiers
for each segment's visits; counting the log for those read every recall of every memory each
time (~130 ms at 25k log rows, growing with the log).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import bindparam, case, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from ..db.database import Database
from ..db.models import Memory, MemoryAccessLog, utcnow
from ..policy.redact import redact

log = logging.getLogger(__name__)

#: Access types that recall a memory: a search returned it, a hook injected it. A listing
#: (every memory, read or not) or a fetch by id is not recall.
SEARCH = "search"
INJECTED = "injected"
RECALLS = (SEARCH, INJECTED)

#: Run on the connection (Core: one executemany), not through the session's ORM bulk update.
_COUNT_RECALLS = (
    update(Memory)
    .where(Memory.id == bindparam("memory"))
    .values(
        recalls=Memory.recalls + bindparam("more"),
        recalled_at=case(
            (or_(Memory.recalled_at.is_(None), Memory.recalled_at < bindparam("at")), bindparam("at")),
            else_=Memory.recalled_at,
        ),
    )
)


class AccessLog:
    def __init__(self, database: Database) -> None:
        self.database = database
        # One writer, so batches land in order.
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="access-log")
        #: Rows recorded and not yet taken by the writer: whatever queues up while it is busy
        #: (a hook's search and its injection, concurrent searches) goes in one transaction.
        self._pending: list[dict[str, Any]] = []
        self._pending_lock = threading.Lock()

    def record(
        self,
        app_id: uuid.UUID,
        entries: Sequence[tuple[uuid.UUID, dict[str, Any]]],
        access_type: str,
    ) -> None:
        """Record that the app read these memories, in the background: the write transaction
        would otherwise be a noticeable share of a search."""
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
        with self._pending_lock:
            due = not self._pending  # else a drain is queued and will take these too
            self._pending.extend(rows)
        if due:
            self.writer.submit(self._drain)

    def _drain(self) -> None:
        with self._pending_lock:
            rows, self._pending = self._pending, []
        if rows:
            self._write(rows)

    def _write(self, rows: list[dict[str, Any]]) -> None:
        try:
            _redact_queries(rows)
            try:
                with self.database.session() as session:
                    # One multi-row INSERT: as ORM objects these cost more than the search.
                    session.execute(insert(MemoryAccessLog), rows)
                    count_recalls(session, rows)
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
                        count_recalls(session, kept)
        except Exception:  # noqa: BLE001 - bookkeeping must not take the server down; it is logged
            log.exception("could not record %d memory accesses", len(rows))

    def flush(self) -> None:
        """Wait until every access recorded so far is in the database."""
        self.writer.submit(lambda: None).result()

    def close(self) -> None:
        """Write what is queued and stop the writer."""
        self.writer.shutdown(wait=True)


def _redact_queries(rows: list[dict[str, Any]]) -> None:
    """Redact each row's ``metadata_["query"]`` in place (a batch shares one query: redacted once)."""
    redacted: dict[str, str] = {}
    for row in rows:
        query = row["metadata_"].get("query")
        if isinstance(query, str) and query:
            if query not in redacted:
                redacted[query] = redact(query).text
            row["metadata_"] = {**row["metadata_"], "query": redacted[query]}


def count_recalls(session: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Add the recalls among ``rows`` (access-log rows as dicts) to their memories' counts, and
    move each memory's last recall up to its newest row's time."""
    recalls = [row for row in rows if row["access_type"] in RECALLS]
    if not recalls:
        return
    counts = Counter(row["memory_id"] for row in recalls)
    latest: dict[Any, Any] = {}
    for row in recalls:
        memory_id = row["memory_id"]
        latest[memory_id] = max(latest.get(memory_id, row["accessed_at"]), row["accessed_at"])
    session.connection().execute(
        _COUNT_RECALLS,
        [{"memory": memory_id, "more": n, "at": latest[memory_id]} for memory_id, n in counts.items()],
    )
