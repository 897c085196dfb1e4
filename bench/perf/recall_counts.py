"""What keeping each memory's recall count costs a search on PostgreSQL (store/access_log.py,
``count_recalls``), against an update no index sees. Prints JSON; results in bench/results/.

    .venv/bin/python -m bench.perf.recall_counts [--memories 100000] [--searches 200]

A throwaway PostgreSQL cluster (tests/support/postgres.py) gets one user's memories by ``COPY``.
Each "search" then recalls 10 memories at random, as the access log's writer does after a
search: ``count_recalls`` (``recalls`` is in a partial index, so PostgreSQL cannot update the
row in place and writes an entry in every index of ``memories``), and, for comparison, an
update of ``recalled_at`` alone (in no index). Reports ms per search (median, p95) and WAL bytes
per recalled memory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
import uuid
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy import text

from bench.harness.pg_store import pg_store
from claude_code_memory.store.access_log import SEARCH, count_recalls

COLUMNS = ", ".join(
    ["id", "user_id", "app_id", "content", "content_hash", "metadata", "state", "created_at"]
    + ["updated_at", "redactions", "entities_indexed", "recalls", "conversation_id", "captured_at"]
)
PER_SEARCH = 10
THEN = datetime(2025, 2, 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--searches", type=int, default=200)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with pg_store() as store:
        database, user_pk, app_pk = store.database, store.user_pk, store.app_pk
        ids = [uuid.uuid4() for _ in range(args.memories)]
        with psycopg.connect(store.url) as connection:
            with connection.cursor() as cursor, cursor.copy(f"COPY memories ({COLUMNS}) FROM STDIN") as copy:
                for n, memory_id in enumerate(ids):
                    day = datetime(2025, 1, 1)
                    row = (memory_id, user_pk, app_pk, f"memory {n} about the build cache", f"{n:064x}", "{}")
                    copy.write_row((*row, "active", day, day, 0, False, 0, f"c{n // 20}", day))
            connection.commit()
            connection.execute("ANALYZE memories")
            connection.commit()

            def lsn() -> Any:
                return connection.execute("SELECT pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]

            chance = random.Random(1)
            for name in ("count_recalls", "recalled_at_alone"):
                times, start = [], lsn()
                for _ in range(args.searches):
                    recalled = chance.sample(ids, PER_SEARCH)
                    started = time.perf_counter()
                    with database.session() as session:
                        if name == "count_recalls":
                            rows = [
                                {"memory_id": m, "access_type": SEARCH, "accessed_at": THEN} for m in recalled
                            ]
                            count_recalls(session, rows)
                        else:
                            session.connection().execute(
                                text("UPDATE memories SET recalled_at = :at WHERE id = :m"),
                                [{"m": m, "at": THEN} for m in recalled],
                            )
                    times.append((time.perf_counter() - started) * 1000)
                wal = connection.execute("SELECT pg_wal_lsn_diff(%s, %s)", (lsn(), start)).fetchone()
                times.sort()
                results[name] = {
                    "ms_per_search_median": round(statistics.median(times), 2),
                    "ms_per_search_p95": round(times[int(len(times) * 0.95) - 1], 2),
                    "wal_bytes_per_memory": round(float(wal[0]) / (args.searches * PER_SEARCH)),  # type: ignore[index]
                }
    print(
        json.dumps(
            {
                "memories": args.memories,
                "searches": args.searches,
                "recalled_per_search": PER_SEARCH,
                "load_average": os.getloadavg(),
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
