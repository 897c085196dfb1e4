"""The web UI's list reads on PostgreSQL: the filter options as they are read now (seeks,
memories/read_model/facets.py) against the grouping they replaced, a page of the list, and its
total. Prints JSON; results in bench/results/.

    .venv/bin/python -m bench.perf.lists_pg [--memories 1000000]

A throwaway PostgreSQL cluster (tests/support/postgres.py) gets one user's memories by ``COPY``
(a few projects and tasks, every browsable state, up to two of 20 categories each), then
``ANALYZE``. Each read is timed three times; the JSON holds the medians in ms. The old reads are
the statements the browse page ran before (their answers are checked to be the new ones).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

import psycopg
from sqlalchemy import func, select

from bench.harness.pg_store import pg_store
from claude_code_memory.db.models import Category, Memory, MemoryCategory
from claude_code_memory.memories.read_model import facets, queries

COLUMNS = ", ".join(
    ["id", "user_id", "app_id", "content", "content_hash", "metadata", "state", "created_at", "updated_at"]
    + ["redactions", "entities_indexed", "recalls", "project", "task"]
)


def _median_ms(read: Callable[[], object]) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        read()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=1_000_000)
    args = parser.parse_args()
    chance = random.Random(1)
    with pg_store() as store:
        database, user_pk, app_pk = store.database, store.user_pk, store.app_pk
        with database.session() as session:
            categories = [Category(name=f"c{i:02d}", description="") for i in range(20)]
            session.add_all(categories)
            session.flush()
            category_ids = [c.id for c in categories[:19]]  # the last holds no memory
        with psycopg.connect(store.url) as connection:
            ids = []
            with connection.cursor() as cursor, cursor.copy(f"COPY memories ({COLUMNS}) FROM STDIN") as copy:
                for n in range(args.memories):
                    memory_id = uuid.uuid4()
                    ids.append(memory_id)
                    project = chance.choice([None, None, "atlas", "borealis", f"p{n % 5}"])
                    task = chance.choice([None, f"t{n % 3}"]) if project else None
                    state = chance.choice(["active", "active", "paused", "archived"])
                    created = datetime(2025, 1, 1) + timedelta(seconds=chance.randrange(10**7))
                    row = (
                        memory_id,
                        user_pk,
                        app_pk,
                        f"memory {n}",
                        f"{n:064x}",
                        "{}",
                        state,
                        created,
                        created,
                    )
                    copy.write_row((*row, 0, True, 0, project, task))
            with (
                connection.cursor() as cursor,
                cursor.copy("COPY memory_categories (memory_id, category_id) FROM STDIN") as copy,
            ):
                for memory_id in ids:
                    for category_id in chance.sample(category_ids, chance.choice([0, 1, 2])):
                        copy.write_row((memory_id, category_id))
            connection.commit()
            connection.execute("ANALYZE")
            connection.commit()
        results: dict[str, float] = {}
        with database.session() as session:
            kept = (Memory.user_id == user_pk, Memory.state.in_(queries.BROWSABLE))

            def grouped() -> tuple[list[str], list[str], list[str]]:
                """The filter options as the browse page read them before."""
                projects = select(Memory.project).where(*kept, Memory.project.is_not(None))
                tasks = select(Memory.task).where(*kept, Memory.task.is_not(None))
                names = (
                    select(Category.name)
                    .join(MemoryCategory, MemoryCategory.category_id == Category.id)
                    .join(Memory, Memory.id == MemoryCategory.memory_id)
                    .where(*kept)
                )
                return (
                    list(session.scalars(projects.distinct().order_by(Memory.project))),
                    list(session.scalars(names.distinct().order_by(Category.name))),
                    list(session.scalars(tasks.distinct().order_by(Memory.task))),
                )

            offered = facets.facets(session, user_pk, queries.BROWSABLE)
            assert grouped() == (offered["projects"], offered["categories"], offered["tasks"])
            conditions = queries._browsed(user_pk, queries.Browse())
            rows = queries._rows(conditions).order_by(Memory.created_at.desc(), Memory.id)
            joined = select(func.count()).select_from(queries._rows(conditions).subquery())
            reads: dict[str, Callable[[], object]] = {
                "filter_options_grouped_before": grouped,
                "filter_options_seeks_now": lambda: facets.facets(session, user_pk, queries.BROWSABLE),
                "categories_now": lambda: facets.categories(session, user_pk, queries.LISTED),
                "page_3": lambda: session.execute(rows.offset(40).limit(20)).all(),
                "page_500": lambda: session.execute(rows.offset(9980).limit(20)).all(),
                "total_joined_before": lambda: session.scalar(joined),
                "total_now": lambda: queries._count(session, conditions),
            }
            results = {name: _median_ms(read) for name, read in reads.items()}
    print(
        json.dumps(
            {"memories": args.memories, "load_average": os.getloadavg(), "median_ms": results}, indent=2
        )
    )


if __name__ == "__main__":
    main()
