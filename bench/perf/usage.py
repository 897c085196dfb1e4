"""What a write pays to know the user's quota use, on PostgreSQL, as the user's memories grow.
Prints JSON; results in bench/results/.

    .venv/bin/python -m bench.perf.usage [--sizes 10000 100000 1000000] [--rounds 7]

A throwaway PostgreSQL cluster (tests/support/postgres.py) is filled by ``COPY`` with one
user's memories up to each size. For each size, the median of ``--rounds``: counting the
user's text bytes (what each write of an API replica did before: ``Usage`` counted again for
every write when replicas share a database), and reading the shared count plus adding a write's
bytes to it (what it does now, memories/write/usage.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid

import psycopg

from bench.harness.pg_store import pg_store
from claude_code_memory.memories.write.usage import Usage
from claude_code_memory.store.shared_state import SharedState

COLUMNS = ", ".join(
    ["id", "user_id", "app_id", "content", "metadata", "state", "created_at", "updated_at"]
    + ["redactions", "entities_indexed", "recalls"]
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    results = []
    with pg_store() as store:
        database, user_pk, app_pk = store.database, store.user_pk, store.app_pk
        stored = 0
        with psycopg.connect(store.url) as connection:
            for size in sorted(args.sizes):
                with (
                    connection.cursor() as cursor,
                    cursor.copy(f"COPY memories ({COLUMNS}) FROM STDIN") as copy,
                ):
                    for n in range(stored, size):
                        text = (
                            f"memory number {n}: the build cache lives in bucket {n * 7}, deploys run nightly"
                        )
                        row = (
                            uuid.uuid4(),
                            user_pk,
                            app_pk,
                            text,
                            "{}",
                            "active",
                            "2025-01-01",
                            "2025-01-01",
                        )
                        copy.write_row((*row, 0, False, 0))
                connection.commit()
                connection.execute("ANALYZE memories")
                connection.commit()
                stored = size
                alone, shared = Usage(), Usage(SharedState(database))
                counting, keeping = [], []
                for _ in range(args.rounds):
                    alone.forget(user_pk)
                    with database.session() as session:
                        started = time.perf_counter()
                        alone.used(session, user_pk)
                        counting.append((time.perf_counter() - started) * 1000)
                        shared.used(session, user_pk)
                        started = time.perf_counter()
                        shared.used(session, user_pk)
                        shared.add(user_pk, "x" * 50)
                        keeping.append((time.perf_counter() - started) * 1000)
                results.append(
                    {
                        "memories": size,
                        "count_every_write_ms": round(statistics.median(counting), 2),
                        "shared_count_read_and_add_ms": round(statistics.median(keeping), 2),
                    }
                )
    print(json.dumps({"rounds": args.rounds, "load_average": os.getloadavg(), "results": results}, indent=2))


if __name__ == "__main__":
    main()
