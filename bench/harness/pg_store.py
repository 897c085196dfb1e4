"""A throwaway PostgreSQL cluster with a migrated database and one user with an app, for the
benchmarks that fill it by ``COPY`` (bench/perf/usage.py, bench/perf/recall_counts.py,
bench/perf/lists_pg.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from claude_code_memory.db.database import Database
from tests.support.postgres import PostgresCluster
from tests.support.rows import user_with_app


@dataclass(frozen=True)
class Store:
    url: str
    database: Database
    user_pk: uuid.UUID
    app_pk: uuid.UUID


@contextmanager
def pg_store(user: str = "big") -> Iterator[Store]:
    """The cluster (stopped afterwards), its database migrated, and ``user`` with an app."""
    with PostgresCluster() as cluster:
        database = Database(cluster.url)
        database.migrate()
        with database.session() as session:
            owner, app = user_with_app(session, user)
            user_pk, app_pk = owner.id, app.id
        try:
            yield Store(cluster.url, database, user_pk, app_pk)
        finally:
            database.close()
