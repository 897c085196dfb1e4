"""De-duplication under concurrency: many writers of the same texts at the same moment.

The audit sent the same 15 texts from 20 REST writers at once (single and batch routes) and
found 71 rows instead of 15. The database now decides (a unique index on the user and the
text's hash): every writer gets a 200, and each text is stored exactly once — on SQLite and
on PostgreSQL.

Under load the PostgreSQL run also found writes failing on the categories' foreign key: a
writer remembered the id of a category it had just inserted before its transaction committed,
and other writers linked to that row while it was still invisible to them (or gone, when the
transaction rolled back). The third test holds that window open on purpose.

CI once answered one batch 500 here on PostgreSQL: two batches inserting the same texts in
their own orders each held a text the other waited for (a deadlock). The last two tests line
two batches up on purpose, once on the memories' index and once on new categories.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's telemetry switches before mem0 loads
from claude_code_memory.config import load_settings
from claude_code_memory.memories.server_parts import ServerParts
from claude_code_memory.memories.service import MemoryService
from claude_code_memory.policy.gate import content_hash
from tests.support.postgres import PostgresDatabase
from tests.support.server import MemoryServer

WRITERS = 20
TEXTS = [f"Concurrent fact number {n}: the build cache lives in bucket {n * 7}" for n in range(15)]


def _write_at_once(server: MemoryServer, token: str) -> list[int]:
    """Each writer sends every text (shuffled), half one by one, half as one batch, all
    starting together; returns every status code."""
    statuses: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(WRITERS)

    def writer(index: int) -> None:
        texts = random.Random(index).sample(TEXTS, len(TEXTS))
        mine: list[int] = []
        with httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=120
        ) as client:
            start.wait()
            if index % 2:
                mine += [client.post("/api/v1/memories", json={"text": t}).status_code for t in texts]
            else:
                response = client.post("/api/v1/memories/batch", json={"items": [{"text": t} for t in texts]})
                mine.append(response.status_code)
                if response.status_code == 200:
                    mine += [item.get("status", 200) for item in response.json()["results"]]
        with lock:
            statuses.extend(mine)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return statuses


def _stored(server: MemoryServer, token: str) -> Counter[str]:
    with httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as client:
        items: list[dict[str, Any]] = client.get("/api/v1/memories/", params={"size": 100}).json()["items"]
    return Counter(item["content"] for item in items)


def _check(server: MemoryServer) -> None:
    token = server.make_token("racer")
    statuses = _write_at_once(server, token)
    assert len(statuses) == WRITERS // 2 * len(TEXTS) + WRITERS // 2 * (1 + len(TEXTS))
    assert set(statuses) == {200}, Counter(statuses)
    assert _stored(server, token) == Counter(TEXTS)  # each text once, none lost
    with httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as client:
        hits = client.post("/api/v1/memories/search", json={"query": TEXTS[3], "limit": 20}).json()["results"]
    # No orphan vector either: the losers' points were removed, so the text is found once.
    assert [hit["content"] for hit in hits].count(TEXTS[3]) == 1


def test_concurrent_writers_of_the_same_texts_store_each_once_on_sqlite(start_server) -> None:  # type: ignore[no-untyped-def]
    _check(start_server())


@pytest.mark.postgres
def test_concurrent_writers_of_the_same_texts_store_each_once_on_postgresql(  # type: ignore[no-untyped-def]
    start_server, postgres_url: str
) -> None:
    _check(start_server(env={"DATABASE_URL": postgres_url}))


def _waiting_on_locks(postgres: PostgresDatabase) -> int:
    """How many of the server's connections wait for a lock another transaction holds."""
    with postgres.superuser_connection() as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
            [postgres.database],
        ).fetchone()
    return int(row[0]) if row else 0


def _until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def _parts(postgres: PostgresDatabase, tmp_path: Path) -> ServerParts:
    """The server's parts in this process, on ``postgres``."""
    settings = load_settings(
        config_path=None,
        environ={},
        overrides={"server.data_dir": str(tmp_path / "data"), "storage.database_url": postgres.url},
    )
    return ServerParts(settings)


@pytest.mark.postgres
def test_a_category_another_writer_is_still_creating_is_not_linked_before_it_commits(
    postgres: PostgresDatabase, tmp_path: Path
) -> None:
    parts = _parts(postgres, tmp_path)
    service: MemoryService = parts.service
    # First writer: filed under "preferences" and "projects", in that order; second writer:
    # under "preferences" alone. Neither category exists yet.
    first_text = "I prefer short feature branches in our repository"
    second_text = "I prefer ruff over flake8 for linting Python"
    outcomes: dict[str, Any] = {}

    def write(name: str, text: str) -> None:
        try:
            outcomes[name] = service.writes.add_memory(user_id="racer", app_name="notes", text=text)
        except Exception as exc:
            outcomes[name] = exc

    try:
        with postgres.superuser_connection(postgres.database) as holder, holder.transaction():
            # Another transaction is creating "projects": the first writer inserts
            # "preferences", then waits here with it uncommitted.
            holder.execute(
                "INSERT INTO categories (id, name, created_at, updated_at)"
                " VALUES (%s, 'projects', now(), now())",
                [uuid.uuid4()],
            )
            first = threading.Thread(target=write, args=("first", first_text))
            first.start()
            _until(lambda: _waiting_on_locks(postgres) == 1, "the first writer waits for 'projects'")
            second = threading.Thread(target=write, args=("second", second_text))
            second.start()
            # The second writer must wait for the first's "preferences", not link to it.
            _until(
                lambda: not second.is_alive() or _waiting_on_locks(postgres) == 2,
                "the second writer waits or finishes",
            )
            raise psycopg.Rollback  # that "projects" is never made: the first writer makes it
        first.join(timeout=60)
        second.join(timeout=60)
        assert not isinstance(outcomes["second"], Exception), repr(outcomes["second"])
        assert not isinstance(outcomes["first"], Exception), repr(outcomes["first"])
        filed = {
            name: sorted(c.name for c in service.reads.get(outcomes[name][0]["id"], "racer").categories)
            for name in ("first", "second")
        }
        assert filed == {"first": ["preferences", "projects"], "second": ["preferences"]}
    finally:
        parts.close()


@pytest.mark.postgres
def test_two_batches_of_the_same_texts_in_opposite_orders_do_not_deadlock(
    postgres: PostgresDatabase, tmp_path: Path
) -> None:
    """Each batch inserts its rows in one statement. In the batch's own order, two writers of
    the same texts could each hold a text the other waits for: PostgreSQL then aborts one of
    them (a deadlock, answered 500 in CI once). A third transaction holding the middle text
    lines both batches up at that point, so that order is what decides, not luck."""
    parts = _parts(postgres, tmp_path)
    service: MemoryService = parts.service
    first, middle, last = (
        "The staging database is restored from backup every Sunday night",
        "Our release branches are cut on the first Monday of each month",
        "The design review for the billing service moved to Thursdays",
    )
    service.writes.add_memory(user_id="racer", app_name="notes", text="An unrelated fact to make the user")
    outcomes: dict[str, Any] = {}

    def write(name: str, texts: list[str]) -> None:
        try:
            outcomes[name] = service.writes.add_memories(
                user_id="racer", app_name="notes", items=[{"text": t} for t in texts]
            )
        except Exception as exc:
            outcomes[name] = exc

    try:
        with postgres.superuser_connection(postgres.database) as holder, holder.transaction():
            holder.execute(
                "INSERT INTO memories (id, user_id, app_id, content, content_hash, metadata, state,"
                " created_at, updated_at, redactions, entities_indexed, recalls)"
                " SELECT %s, user_id, app_id, %s, %s, '{}', 'active', now(), now(), 0, false, 0"
                " FROM memories LIMIT 1",
                [uuid.uuid4(), middle, content_hash(middle)],
            )
            forward = threading.Thread(target=write, args=("forward", [first, middle, last]))
            backward = threading.Thread(target=write, args=("backward", [last, middle, first]))
            forward.start()
            backward.start()
            _until(lambda: _waiting_on_locks(postgres) == 2, "both batches wait for the middle text")
            raise psycopg.Rollback  # the middle text is left to the two batches
        forward.join(timeout=60)
        backward.join(timeout=60)
        for name in ("forward", "backward"):
            assert not isinstance(outcomes[name], Exception), repr(outcomes[name])
            assert all("error" not in item for item in outcomes[name]), outcomes[name]
        stored = Counter(m["memory"] for m in service.reads.list_memories(user_id="racer", app_name="notes"))
        assert [stored[t] for t in (first, middle, last)] == [1, 1, 1]
    finally:
        parts.close()


@pytest.mark.postgres
def test_two_batches_creating_the_same_categories_in_opposite_orders_do_not_deadlock(
    postgres: PostgresDatabase, tmp_path: Path
) -> None:
    """A batch creates the categories its memories need. In the memories' order, one batch
    would create "travel" then "finance" while another creates "finance" then "travel"; a third
    transaction holding "travel" lines both up, so that order is what decides."""
    parts = _parts(postgres, tmp_path)
    service: MemoryService = parts.service
    trips = [
        "We booked flights and a hotel in Lisbon for the spring trip",
        "Our hotel in Kyoto is near the station",
    ]
    money = [
        "My salary is paid into the bank account on the 25th",
        "The quarterly taxes and invoices are due next week",
    ]
    writes = service.writes
    vectors = writes.vectors.embed_batch(trips + money)
    filed = [
        writes.categories.categoriser.categorise(v, t) for v, t in zip(vectors, trips + money, strict=True)
    ]
    assert filed == [["travel"], ["travel"], ["finance"], ["finance"]]  # what the setup relies on
    outcomes: dict[str, Any] = {}

    def write(name: str, texts: list[str]) -> None:
        try:
            outcomes[name] = writes.add_memories(
                user_id="racer", app_name="notes", items=[{"text": t} for t in texts]
            )
        except Exception as exc:
            outcomes[name] = exc

    try:
        writes.add_memory(user_id="racer", app_name="notes", text="The standup with my manager is at nine")
        with postgres.superuser_connection(postgres.database) as holder, holder.transaction():
            holder.execute(
                "INSERT INTO categories (id, name, created_at, updated_at)"
                " VALUES (%s, 'travel', now(), now())",
                [uuid.uuid4()],
            )
            trips_first = threading.Thread(target=write, args=("trips first", [trips[0], money[0]]))
            money_first = threading.Thread(target=write, args=("money first", [money[1], trips[1]]))
            trips_first.start()
            _until(lambda: _waiting_on_locks(postgres) == 1, "the first batch waits for 'travel'")
            money_first.start()
            _until(lambda: _waiting_on_locks(postgres) == 2, "the second batch waits too")
            raise psycopg.Rollback  # "travel" is left to the two batches
        trips_first.join(timeout=60)
        money_first.join(timeout=60)
        for name in ("trips first", "money first"):
            assert not isinstance(outcomes[name], Exception), repr(outcomes[name])
            assert all("error" not in item for item in outcomes[name]), outcomes[name]
        ids = [item["results"][0]["id"] for name in ("trips first", "money first") for item in outcomes[name]]
        filed = [sorted(c.name for c in service.reads.get(i, "racer").categories) for i in ids]
        assert filed == [["travel"], ["finance"], ["finance"], ["travel"]]
    finally:
        parts.close()
