"""Retention and forgetting: memories leave every store for real, and the receipts say so.

In process, with a controllable clock: the sweep hard-deletes expired memories from SQL (row and
dependents), the vector store, mem0 history and search, keeps fresh ones, expires stale pending
items with a recorded decision, and runs on its schedule. Over REST and the CLI against the real
server: forget by app, project, conversation and date, dry runs, receipts, who may do what.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from sqlalchemy import delete, event, func, select, update

import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's telemetry switches before mem0 loads
from claude_code_memory.db.models import (
    ConsentDecision,
    Memory,
    MemoryAccessLog,
    MemoryCategory,
    MemoryStatusHistory,
    User,
    utcnow,
)
from claude_code_memory.domain.memory_state import MemoryState
from claude_code_memory.errors import BadInput, NotFound
from claude_code_memory.memories.lifecycle.retention import STORES, Sweeper, parse_since
from claude_code_memory.memories.server_parts import ServerParts, retention_of
from claude_code_memory.memories.service import MemoryService
from claude_code_memory.search.request import SearchRequest
from tests.support.parts import open_parts
from tests.support.processes import free_port
from tests.support.rows import user_with_app
from tests.support.server import MemoryServer

APP = "claude-code"


class Clock:
    """The service's clock, moved by the test."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock(utcnow())


@pytest.fixture
def components(tmp_path: Path, clock: Clock) -> Iterator[ServerParts]:
    with open_parts(tmp_path / "data", {"privacy.auto_delete_after_days": 30}) as parts:
        parts.service.clock = clock
        yield parts


def add(service: MemoryService, user: str, text: str, channel: str = "rest", **provenance: Any) -> str:
    result = service.writes.add_memory(user_id=user, app_name=APP, text=text, channel=channel, **provenance)[
        0
    ]
    assert result["event"] in ("ADD", "PENDING"), result
    return result["id"]


def dependents(service: MemoryService, ids: list[str]) -> dict[str, int]:
    """Rows in the memory's dependent tables, counted straight from SQL."""
    keys = [uuid.UUID(i) for i in ids]
    service.access_log.flush()  # what every reader of the access log does first
    with service.database.session() as session:
        return {
            name: int(
                session.scalar(select(func.count()).select_from(model).where(model.memory_id.in_(keys))) or 0
            )
            for name, model in (
                ("access_logs", MemoryAccessLog),
                ("status_history", MemoryStatusHistory),
                ("categories_links", MemoryCategory),
            )
        }


def sql_row(service: MemoryService, memory_id: str) -> Memory | None:
    with service.database.session() as session:
        return session.get(Memory, uuid.UUID(memory_id))


def found_by_search(service: MemoryService, user: str, query: str) -> set[str]:
    return {
        str(h.memory.id)
        for h in service.pipeline.search(SearchRequest(user_id=user, app_name=APP, query=query, limit=50))
    }


# -- the sweep, in process -------------------------------------------------------------------------
def test_reads_recorded_in_the_background_are_purged_with_their_memory(components: ServerParts) -> None:
    service = components.service
    kept = add(service, "alice", "The user runs PostgreSQL 16 in staging")
    gone = add(service, "alice", "The user runs PostgreSQL 15 in production")
    # The access log is written off the search's path; hold its writer while a memory is purged
    # between the read and the write.
    release = threading.Event()
    service.access_log.writer.submit(release.wait, 10)
    assert found_by_search(service, "alice", "PostgreSQL") == {kept, gone}
    with service.database.session() as session:
        session.execute(delete(Memory).where(Memory.id == uuid.UUID(gone)))
    release.set()
    assert dependents(service, [kept, gone])["access_logs"] == 1  # the purged one's entry dropped
    # A purge counts and removes the reads still queued when it starts.
    found_by_search(service, "alice", "staging database")
    receipt = retention_of(service).forget("alice", everything=True)
    assert receipt.counts["access_logs"] == 2
    assert dependents(service, [kept])["access_logs"] == 0


def test_an_expired_memory_is_gone_from_every_store_and_a_fresh_one_kept(
    components: ServerParts, clock: Clock
) -> None:
    service = components.service
    old = [
        add(service, "alice", "The user prefers dark mode in the editor"),
        add(service, "alice", "The user deploys services with Docker Compose"),
    ]
    # Give the old memories rows in every dependent table and a second mem0 history row.
    service.writes.update_memory("alice", old[0], "The user prefers a dark theme in every editor")
    service.states.change_state([old[1]], MemoryState.paused, user_id="alice", changed_by="alice")
    service.states.change_state([old[1]], MemoryState.active, user_id="alice", changed_by="alice")
    assert found_by_search(service, "alice", "editor theme") == set(old)
    before = dependents(service, old)
    assert before["access_logs"] == 2 and before["status_history"] == 2
    history_before = sum(service.vectors.history_count(i) for i in old)
    assert history_before == 3  # ADD, ADD, UPDATE

    clock.advance(days=31)
    fresh = add(service, "alice", "The user writes their tests with pytest")
    retention = retention_of(service)

    dry = retention.sweep(dry_run=True)
    assert dry.dry_run and sorted(dry.memory_ids) == sorted(old)
    assert dry.counts == {"sql_rows": 2, "vectors": 2, "history_rows": history_before, **before}
    assert all(sql_row(service, i) is not None and service.vectors.exists(i) for i in old)
    assert dependents(service, old) == before and retention.last_run is None

    receipt = retention.sweep()
    assert not receipt.dry_run and sorted(receipt.memory_ids) == sorted(old)
    assert receipt.counts == dry.counts and receipt.pending_expired == 0
    for memory_id in old:
        assert sql_row(service, memory_id) is None  # no row at all: not a tombstone
        assert not service.vectors.exists(memory_id)
        assert service.vectors.history_count(memory_id) == 0
    assert dependents(service, old) == dict.fromkeys(before, 0)
    assert found_by_search(service, "alice", "editor theme docker pytest") == {fresh}

    kept = sql_row(service, fresh)
    assert kept is not None and kept.state == MemoryState.active and kept.content
    assert service.vectors.exists(fresh) and service.vectors.history_count(fresh) == 1
    assert retention.last_run is receipt
    again = retention.sweep()
    assert again.memories == 0 and set(again.counts.values()) == {0}


def test_stale_pending_items_expire_with_a_recorded_decision(components: ServerParts) -> None:
    service = components.service
    stale = add(
        service, "bob", "User: where do the logs go?\n\nAssistant: to /var/log/app", channel="capture"
    )
    young = add(service, "bob", "User: which port?\n\nAssistant: 8765", channel="capture")
    active = add(service, "bob", "The user's team ships on Fridays")
    assert sql_row(service, stale).state == MemoryState.pending  # type: ignore[union-attr]
    # created_at is set by the database default (wall clock): captured 15 days ago.
    with service.database.session() as session:
        session.execute(
            update(Memory)
            .where(Memory.id == uuid.UUID(stale))
            .values(created_at=utcnow() - timedelta(days=15))
        )

    receipt = retention_of(service).sweep()
    assert receipt.memory_ids == [stale] and receipt.pending_expired == 1
    assert receipt.counts["sql_rows"] == 1 and receipt.counts["vectors"] == 0  # never embedded
    assert sql_row(service, stale) is None
    assert sql_row(service, young).state == MemoryState.pending  # type: ignore[union-attr]
    assert sql_row(service, active).state == MemoryState.active  # type: ignore[union-attr]
    with service.database.session() as session:
        decisions = session.scalars(select(ConsentDecision)).all()
        assert [(str(d.memory_id), d.decision, d.decided_by) for d in decisions] == [
            (stale, "expired", "retention")
        ]


def test_the_scheduler_sweeps_on_its_interval_and_stops_cleanly(
    components: ServerParts, clock: Clock
) -> None:
    service = components.service
    doomed = add(service, "carol", "The user keeps notes in Obsidian")
    clock.advance(days=31)
    retention = retention_of(service)

    async def run() -> None:
        async with Sweeper(retention, interval_minutes=0.005, first_delay_seconds=0).running():
            with anyio.fail_after(20):
                while retention.last_run is None or not retention.last_run.memories:
                    await anyio.sleep(0.05)
            doomed_row_gone = sql_row(service, doomed) is None
            assert doomed_row_gone and not service.vectors.exists(doomed)
            waiting_from = utcnow()
            await anyio.sleep(0.8)  # at least one more run: the loop goes on after the first
            assert retention.last_run.memories == 0
            # A run scheduled since: not "after now", which the next run's time may just have
            # passed, its wake-up not yet taken (CI saw it 0.6 ms late).
            assert retention.next_run_at is not None and retention.next_run_at > waiting_from
        assert retention.next_run_at is None

    anyio.run(run)


# -- forget, in process ----------------------------------------------------------------------------
def test_forget_matches_a_project_glob_in_every_state_including_tombstones(components: ServerParts) -> None:
    service = components.service
    in_project = [
        add(
            service,
            "dave",
            "User: how do I build the shop api?\n\nAssistant: run make all in its folder",
            "capture",
            project="/src/shop-api",
        ),
        add(
            service,
            "dave",
            "User: how do I test the shop web app?\n\nAssistant: run make test in its folder",
            "capture",
            project="/src/shop-web",
        ),
    ]
    service.writes.approve(in_project[0], user_id="dave", decided_by="user:dave")  # becomes active, new id
    with service.database.session() as session:
        approved_id = str(session.scalar(select(Memory.id).where(Memory.project == "shop-api")))
    tombstone = add(
        service,
        "dave",
        "User: which linter does the shop cli use?\n\nAssistant: ruff, with the default rules",
        "capture",
        project="/src/shop-cli",
    )
    service.writes.approve(tombstone, user_id="dave", decided_by="user:dave")
    with service.database.session() as session:
        tombstone = str(session.scalar(select(Memory.id).where(Memory.project == "shop-cli")))
    service.states.delete_memories([tombstone], user_id="dave")
    other = add(
        service,
        "dave",
        "User: what builds the blog's docs?\n\nAssistant: mkdocs, from the docs folder",
        "capture",
        project="/src/blog",
    )
    retention = retention_of(service)

    # A capture is filed under its working directory's name: "shop-api", "shop-web", ...
    receipt = retention.forget("dave", project="shop-*")
    assert sorted(receipt.memory_ids) == sorted([approved_id, in_project[1], tombstone])
    assert receipt.counts["sql_rows"] == 3 and receipt.counts["vectors"] == 1
    assert receipt.scope == {"user_id": "dave", "project": "shop-*"}
    assert not service.vectors.exists(approved_id) and service.vectors.history_count(approved_id) == 0
    assert all(sql_row(service, i) is None for i in receipt.memory_ids)
    assert sql_row(service, other) is not None
    # Exact match: no glob characters, no prefix matching.
    assert retention.forget("dave", project="blo", dry_run=True).memories == 0
    assert retention.forget("dave", project="blog", dry_run=True).memory_ids == [other]


def test_forget_refuses_vague_or_unknown_scopes_and_changes_nothing(components: ServerParts) -> None:
    service = components.service
    kept = add(service, "erin", "The user lives in Lisbon")
    retention = retention_of(service)
    with pytest.raises(BadInput, match="everything=true"):
        retention.forget("erin")
    with pytest.raises(BadInput, match="cannot be combined with app"):
        retention.forget("erin", app=APP, everything=True)
    with pytest.raises(NotFound, match="no app 'nope'"):
        retention.forget("erin", app="nope")
    with pytest.raises(NotFound, match="'nobody' not found"):
        retention.forget("nobody", everything=True)
    assert sql_row(service, kept) is not None and service.vectors.exists(kept)

    receipt = retention.forget("erin", everything=True)
    assert receipt.memory_ids == [kept] and receipt.scope == {"user_id": "erin", "everything": True}
    assert sql_row(service, kept) is None and not service.vectors.exists(kept)


def test_since_accepts_epoch_seconds_and_iso_dates_and_names_bad_values() -> None:
    assert parse_since(0) == datetime(1970, 1, 1)
    assert parse_since("86400.5") == datetime(1970, 1, 2, 0, 0, 0, 500000)
    assert parse_since("2025-01-31") == datetime(2025, 1, 31)
    assert parse_since("2025-01-31T12:00:00+02:00") == datetime(2025, 1, 31, 10)
    assert parse_since("2025-01-31T12:00:00Z") == datetime(2025, 1, 31, 12)
    for bad in ("yesterday", True, [1], "2025-13-01", 1e20):
        with pytest.raises(ValueError, match="since"):
            parse_since(bad)


# -- over REST and the CLI, against the real server ------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    # Captures store directly (no consent queue), so they carry project and conversation ids.
    running = MemoryServer(
        tmp_path_factory.mktemp("retention-server"), env={"CCMEM_PRIVACY__REQUIRE_CONSENT": "false"}
    ).start()
    try:
        yield running
    finally:
        code = running.stop()
    # The sweeper is cancelled in the lifespan; shutting down must stay clean around it.
    log = running.log()
    assert code in (0, -15) and "Application shutdown complete" in log, log  # uvicorn re-raises SIGTERM
    assert "Traceback" not in log and "retention sweep failed" not in log


class Caller:
    """A user with a token on the shared server."""

    def __init__(self, server: MemoryServer) -> None:
        self.server = server
        self.user = f"u{uuid.uuid4().hex[:10]}"
        self.token = server.make_token(self.user)
        self.http = httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )

    def capture(self, text: str, app: str = APP, **provenance: str) -> str:
        body = {"app": app, "messages": [{"role": "user", "content": text}], **provenance}
        response = self.http.post("/api/v1/capture", json=body)
        assert response.status_code == 200 and response.json()["status"] == "stored", response.text
        return response.json()["id"]

    def create(self, text: str, app: str = APP) -> str:
        response = self.http.post("/api/v1/memories", json={"text": text, "app": app})
        assert response.status_code == 200, response.text
        return response.json()["id"]

    def exists(self, memory_id: str) -> bool:
        status = self.http.get(f"/api/v1/memories/{memory_id}").status_code
        assert status in (200, 404)
        return status == 200

    def categories(self, memory_id: str) -> int:
        return len(self.http.get(f"/api/v1/memories/{memory_id}").json()["categories"])

    def search(self, query: str) -> set[str]:
        response = self.http.post("/api/v1/memories/search", json={"query": query, "limit": 50, "app": APP})
        assert response.status_code == 200, response.text
        return {item["id"] for item in response.json()["results"]}

    def forget(self, **body: Any) -> httpx.Response:
        return self.http.post("/api/v1/forget", json=body)


@pytest.fixture
def caller(server: MemoryServer) -> Iterator[Caller]:
    made = Caller(server)
    yield made
    made.http.close()


@pytest.fixture(scope="module")
def shared_caller(server: MemoryServer) -> Iterator[Caller]:
    made = Caller(server)
    yield made
    made.http.close()


def admin(server: MemoryServer) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, headers=server.admin_headers(), timeout=30)


def test_forget_by_app_returns_a_receipt_per_store_and_removes_from_search(caller: Caller) -> None:
    gone = [
        caller.create("The user drinks oolong tea", app="cursor"),
        caller.capture("I use vim", app="cursor"),
    ]
    kept = caller.create("The user runs Arch Linux")
    assert caller.search("tea vim linux") == {*gone, kept}  # one access log per memory
    links = sum(caller.categories(i) for i in gone)

    dry = caller.forget(app="cursor", dry_run=True)
    assert dry.status_code == 200, dry.text
    assert dry.json()["dry_run"] and sorted(dry.json()["memory_ids"]) == sorted(gone)
    assert all(caller.exists(i) for i in gone)

    response = caller.forget(app="cursor")
    assert response.status_code == 200, response.text
    receipt = response.json()
    assert sorted(receipt["memory_ids"]) == sorted(gone) and receipt["memories"] == 2
    expected = {
        "sql_rows": 2,
        "vectors": 2,
        "history_rows": 2,
        "access_logs": 2,
        "status_history": 0,
        "categories_links": links,
    }
    assert receipt["counts"] == expected == dry.json()["counts"]
    assert receipt["scope"] == {"user_id": caller.user, "app": "cursor"}
    assert not any(caller.exists(i) for i in gone) and caller.exists(kept)
    assert caller.search("tea vim linux") == {kept}


def test_forget_by_project_and_by_conversation(caller: Caller) -> None:
    shop = [
        caller.capture("Build with make", project="/src/shop", conversation_id="c1"),
        caller.capture("Test with pytest", project="/src/shop", conversation_id="c2"),
    ]
    blog = [
        caller.capture("Publish with hugo", project="/src/blog", conversation_id="c2"),
        caller.capture("Images go to /static", project="/src/blog", conversation_id="c3"),
    ]
    by_project = caller.forget(project="shop").json()  # the captures' folder's name
    assert sorted(by_project["memory_ids"]) == sorted(shop) and by_project["counts"]["vectors"] == 2
    by_conversation = caller.forget(conversation_id="c2").json()
    assert by_conversation["memory_ids"] == [blog[0]]  # c2's shop capture is already gone
    both = caller.forget(project="blog", conversation_id="c1").json()
    assert both["memories"] == 0
    assert [caller.exists(i) for i in shop + blog] == [False, False, False, True]


def test_forget_since_a_date(caller: Caller) -> None:
    before = caller.create("The user learned Rust in 2019")
    time.sleep(0.05)
    cutoff = time.time()
    time.sleep(0.05)
    after = [caller.create("The user is learning Zig"), caller.create("The user is reading SICP")]

    everything_since_2000 = caller.forget(since="2000-01-01", dry_run=True).json()
    assert sorted(everything_since_2000["memory_ids"]) == sorted([before, *after])
    assert caller.forget(since="2999-01-01T00:00:00Z", dry_run=True).json()["memories"] == 0
    receipt = caller.forget(since=cutoff).json()
    assert sorted(receipt["memory_ids"]) == sorted(after)
    assert caller.exists(before) and not any(caller.exists(i) for i in after)


@pytest.mark.parametrize(
    ("body", "status", "named"),
    [
        ({}, 422, "everything=true"),
        ({"everything": True, "app": APP}, 422, "cannot be combined"),
        ({"since": "last tuesday"}, 422, "since"),
        ({"projct": "/src/shop"}, 422, "projct"),  # a typo must not widen the delete
        ({"app": "never-used"}, 404, "never-used"),
        ({"app": ""}, 422, "app"),
    ],
)
def test_bad_forget_requests_name_the_problem_and_change_nothing(
    shared_caller: Caller, body: dict[str, Any], status: int, named: str
) -> None:
    kept = shared_caller.create("The user prefers tabs")
    response = shared_caller.forget(**body)
    assert response.status_code == status, response.text
    assert named in response.json()["detail"] and response.json()["error"]
    assert shared_caller.exists(kept)


def test_only_the_owner_or_the_admin_can_forget(server: MemoryServer, caller: Caller) -> None:
    victim = Caller(server)
    kept = victim.create("The victim's memory")
    denied = caller.forget(user_id=victim.user, everything=True)
    assert denied.status_code == 403, denied.text
    assert victim.exists(kept)
    with admin(server) as client:
        nameless = client.post("/api/v1/forget", json={"everything": True})
        assert nameless.status_code == 422 and "user_id" in nameless.json()["detail"]
        done = client.post("/api/v1/forget", json={"user_id": victim.user, "everything": True})
        assert done.status_code == 200 and done.json()["memory_ids"] == [kept]
    assert not victim.exists(kept)
    victim.http.close()


def test_purge_is_for_the_admin_and_the_scheduler_reports_its_runs(
    server: MemoryServer, caller: Caller
) -> None:
    assert caller.http.post("/api/v1/retention/purge").status_code == 403
    with admin(server) as client:
        dry = client.post("/api/v1/retention/purge", params={"dry_run": "true"})
        assert dry.status_code == 200, dry.text
        assert dry.json()["dry_run"] and set(dry.json()["counts"]) == set(STORES)
        assert client.post("/api/v1/retention/purge", params={"dry_run": "maybe"}).status_code == 422

        deadline = time.monotonic() + 30
        while (status := client.get("/api/v1/retention").json())["last_run"] is None:
            assert time.monotonic() < deadline, "the scheduler never ran its first sweep"
            time.sleep(0.2)
    assert status["auto_delete_after_days"] == 0 and status["pending_expire_days"] == 14
    assert status["interval_minutes"] == 60 and status["next_run_at"].endswith("Z")
    assert not status["last_run"]["dry_run"] and "memory_ids" in status["last_run"]
    # Users see the schedule and the counts, not which memories (of anyone) the sweep took.
    mine = caller.http.get("/api/v1/retention").json()
    assert mine["next_run_at"] == status["next_run_at"] and "memory_ids" not in mine["last_run"]


def test_the_cli_forgets_and_dry_runs_a_purge_through_the_server(
    server: MemoryServer, caller: Caller
) -> None:
    gone = caller.create("The user plays chess", app="zed")
    url = ("--url", server.base_url)

    table = server.ccmem("forget", "--user", caller.user, "--app", "zed", "--dry-run", *url)
    assert "would delete 1 memories" in table.stdout and gone in table.stdout and "sql_rows" in table.stdout
    assert caller.exists(gone)
    as_json = server.ccmem("forget", "--user", caller.user, "--app", "zed", "--json", *url)
    receipt = json.loads(as_json.stdout)
    assert receipt["memory_ids"] == [gone] and receipt["counts"]["vectors"] == 1
    assert not caller.exists(gone)

    purge = server.ccmem("purge", "--dry-run", *url)
    assert "purge: would delete" in purge.stdout and "history_rows" in purge.stdout

    vague = server.ccmem("forget", "--user", caller.user, *url, check=False)
    assert vague.returncode == 1 and "everything=true" in vague.stderr
    as_user = server.ccmem("purge", "--token", caller.token, *url, check=False)
    assert as_user.returncode == 1 and "admin token" in as_user.stderr

    down = server.ccmem("purge", "--dry-run", "--url", f"http://127.0.0.1:{free_port()}", check=False)
    assert down.returncode == 3 and down.stdout == ""  # exit 3: server unreachable
    # One message, no traceback (Rich may wrap it at the terminal width).
    message = " ".join(down.stderr.split())
    assert (
        message.startswith("error: cannot reach the server at http://127.0.0.1:")
        and "Traceback" not in message
    )
    assert message.endswith("start it with `ccmem up`")


@contextmanager
def variables_limited_to_999(engine: Any) -> Iterator[None]:
    """Every connection of ``engine`` binds at most 999 values a statement, as SQLite builds
    before 3.32 (later ones 32,766, Debian's 250,000; PostgreSQL 65,535)."""

    def limited(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)

    event.listen(engine, "connect", limited)
    engine.dispose()  # the pool opens its connections again, each with the limit
    try:
        with engine.connect() as connection:
            raw = connection.connection.driver_connection
            assert raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) == 999
        yield
    finally:
        event.remove(engine, "connect", limited)
        engine.dispose()


def _many(service: MemoryService, count: int, state: MemoryState) -> User:
    """A new user with ``count`` memories in ``state``, as rows only (no vectors)."""
    with service.database.session() as session:
        owner, app = user_with_app(session, f"many-{uuid.uuid4().hex[:6]}")
        session.add_all(
            Memory(user_id=owner.id, app_id=app.id, content=f"memory {n}", state=state) for n in range(count)
        )
    return owner


def test_deleting_more_memories_than_one_statement_may_bind(components: ServerParts) -> None:
    """Deleting every memory of a store reads their rows a slice at a time (db/batches.py)."""
    service = components.service
    owner = _many(service, 2_000, MemoryState.pending)  # never embedded: deleted for real
    with variables_limited_to_999(service.database.engine):
        assert service.states.delete_all(user_id=owner.user_id) == 2_000
    with service.database.session() as session:
        pending = Memory.user_id == owner.id, Memory.state == MemoryState.pending
        assert session.scalar(select(func.count()).where(*pending)) == 0


def test_exporting_more_memories_than_one_statement_may_bind(components: ServerParts) -> None:
    """An export reads every memory's categories and history a slice at a time."""
    service = components.service
    owner = _many(service, 1_500, MemoryState.archived)
    with variables_limited_to_999(service.database.engine):
        document, _ = service.backup.build_export(owner.user_id)
    assert len(document["memories"]) == 1_500
