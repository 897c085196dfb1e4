"""The shared state and the job leases of replicas (store/shared_state.py, store/leases.py), on a
real PostgreSQL database (Debian's) and on SQLite: the same statements run on both."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from claude_code_memory.db.database import Database
from claude_code_memory.store.leases import Leases
from claude_code_memory.store.shared_state import SharedState
from tests.support.windows import clear_of_the_minute_edge

pytestmark = pytest.mark.postgres


@pytest.fixture(params=["postgres", "sqlite"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
    else:
        url = f"sqlite:///{tmp_path / 'memory.db'}"
    opened = Database(url)
    opened.migrate()
    yield opened
    opened.close()


def test_values_expire_and_are_taken_once(database: Database) -> None:
    shared = SharedState(database)
    shared.put("session:a", "prompt", "hello")
    shared.put("session:a", "model", {"name": "m"}, ttl=timedelta(seconds=-1))  # already expired
    assert shared.get("session:a", "prompt") == "hello"
    assert shared.get("session:a", "model") is None
    assert shared.get("session:b", "prompt") is None  # another scope
    assert shared.take("session:a", "prompt") == "hello"
    assert shared.take("session:a", "prompt") is None
    shared.add_keys("given:a", ["m1", "m2", "m1"])
    shared.add_keys("given:a", ["m3"])
    assert shared.keys("given:a") == ["m1", "m2", "m3"]
    shared.drop("given:a")
    assert shared.keys("given:a") == []
    assert shared.prune() == 1  # the expired model


def test_counters_are_atomic_across_threads(database: Database) -> None:
    shared = SharedState(database)
    threads = [
        threading.Thread(target=lambda: [shared.increment("rate:t", "w1") for _ in range(25)])
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert shared.increment("rate:t", "w1", 0) == 100
    # An expired counter starts again.
    assert shared.increment("rate:t", "w2", 5, ttl=timedelta(seconds=-1)) == 5
    assert shared.increment("rate:t", "w2", 1, ttl=timedelta(seconds=60)) == 1


def test_one_holder_at_a_time_and_a_takeover_after_expiry(database: Database) -> None:
    first, second = Leases(database, "replica-1"), Leases(database, "replica-2")
    ttl = timedelta(seconds=1)
    assert first.acquire("sweep", ttl)
    assert not second.acquire("sweep", ttl)
    assert first.acquire("sweep", ttl)  # renewed by its holder
    assert second.holder("sweep") == "replica-1"
    time.sleep(1.2)  # the holder stopped renewing
    assert second.acquire("sweep", ttl)
    assert not first.acquire("sweep", ttl)
    second.release("sweep")
    assert first.acquire("sweep", ttl)


def test_due_spaces_runs_across_replicas(database: Database) -> None:
    first, second = Leases(database, "replica-1"), Leases(database, "replica-2")
    every = timedelta(hours=1)
    assert first.due("hygiene run", every)
    assert first.acquire("hygiene run", timedelta(seconds=60))
    first.ran("hygiene run")
    first.release("hygiene run")
    assert second.acquire("hygiene run", timedelta(seconds=60))
    assert not second.due("hygiene run", every)  # replica 1 ran it a moment ago


def test_racing_replicas_take_a_new_lease_once(database: Database) -> None:
    leases = [Leases(database, f"replica-{i}") for i in range(6)]
    won: list[str] = []
    barrier = threading.Barrier(len(leases))

    def race(lease: Leases) -> None:
        barrier.wait()
        if lease.acquire("reconciliation", timedelta(seconds=60)):
            won.append(lease.holder_id)

    threads = [threading.Thread(target=race, args=(lease,)) for lease in leases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1, won


def test_rate_limit_counters_are_shared_by_every_replica(database: Database) -> None:
    """Two replicas' counter stores on one database count one client together: the 4th request
    of a 3-a-minute rate is refused whichever replica it reaches (each replica's own memory
    would have let 3 through on each), a refused request is not counted, and clear forgets."""
    from claude_code_memory.rate_limits.limiter import MemoryCounters, rate
    from claude_code_memory.store.shared_state import SharedCounters

    clear_of_the_minute_edge(needed=5)
    three = rate("3/minute")
    one, other = SharedCounters(SharedState(database)), SharedCounters(SharedState(database))
    assert one.hit(three, "token:a") is None and other.hit(three, "token:a") is None
    assert one.wait(three, "token:a") is None and one.hit(three, "token:a") is None
    wait = other.hit(three, "token:a")
    assert wait is not None and 1 <= wait <= 60
    assert other.wait(three, "token:a") is not None and one.hit(three, "token:b") is None
    assert SharedState(database).count(SharedCounters.SCOPE, other._window(three, "token:a")[0]) == 3
    one.clear(three, "token:a")
    assert other.hit(three, "token:a") is None
    apart = [MemoryCounters(), MemoryCounters()]  # what each replica had on its own
    assert all(apart[i % 2].hit(three, "token:a") is None for i in range(4))
