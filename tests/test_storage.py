"""Bounded storage against the real server: the storage view (bytes per store, per user,
growth), reclaiming space after deletes (the SQLite file and the vector store actually shrink on
disk), and the warning before a user's quota is hit (REST header and body, MCP result).

One server for the module, with a 0.5 MB quota and automatic reclaiming off, so that the forced
reclaim below is what shrinks the files.
"""

from __future__ import annotations

import json
import random
import string
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client

import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's telemetry switches before mem0 loads
from claude_code_memory.config import load_settings
from claude_code_memory.memories.lifecycle.storage import quota_state
from claude_code_memory.memories.server_parts import ServerParts
from tests.support import temp_root
from tests.support.server import MemoryServer

pytestmark = pytest.mark.timeout(300)

QUOTA = 512 * 1024
N = 120  # memories written, half of them deleted


@pytest.fixture(scope="module")
def storage_server() -> Iterator[MemoryServer]:
    env = {"CCMEM_PERFORMANCE__MAX_MEMORY_SIZE_MB": "0.5", "CCMEM_STORAGE__AUTO_RECLAIM": "false"}
    # What the stores take on a disk, not on the tmpfs the other tests use (tests/support/temp_root.py).
    with temp_root.on_disk("storage") as where, MemoryServer(where, env=env) as server:
        yield server


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def words(rng: random.Random, count: int) -> str:
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(count))


def add_batch(server: MemoryServer, token: str, texts: list[str]) -> httpx.Response:
    response = httpx.post(
        f"{server.base_url}/api/v1/memories/batch",
        json={"items": [{"text": t} for t in texts]},
        headers=bearer(token),
        timeout=120,
    )
    assert response.status_code == 200 and response.json()["failed"] == 0, response.text
    return response


def view(server: MemoryServer, **params: Any) -> dict[str, Any]:
    response = httpx.get(
        f"{server.base_url}/api/v1/storage", params=params, headers=server.admin_headers(), timeout=60
    )
    assert response.status_code == 200, response.text
    return response.json()


def store(report: dict[str, Any], name: str) -> int:
    return next(e["bytes"] for e in report["stores"] if e["store"] == name)


def sql_bytes(report: dict[str, Any]) -> int:
    """The metadata database with its write-ahead log: a batch commits once, so until a
    checkpoint its pages are in the log, not yet in the file."""
    return store(report, "sql") + store(report, "sql_wal")


def test_quota_state_warns_from_the_ratio_on() -> None:
    assert quota_state(799, 1000, 0.8)["warning"] is None
    assert "80%" in quota_state(800, 1000, 0.8)["warning"]


def test_delete_then_reclaim_shrinks_the_files(storage_server: MemoryServer) -> None:
    user = f"big-{uuid.uuid4().hex[:6]}"
    token = storage_server.make_token(user)
    rng = random.Random(7)
    ids: list[str] = []
    started = time.perf_counter()
    response = add_batch(storage_server, token, [words(rng, 300) for _ in range(N)])  # ~2.2 KB each
    ids += [r["results"][0]["id"] for r in response.json()["results"]]
    print(f"added {N} in {time.perf_counter() - started:.1f} s")

    before = view(storage_server)
    mine = next(u for u in before["users"] if u["user_id"] == user)
    assert mine["memories"] == N and mine["text_bytes"] > N * 2000
    assert before["growth"][-1]["created"] >= N and before["growth"][-1]["total"] >= N
    assert store(before, "sql") > 0 and store(before, "vectors") > 0

    deleted = httpx.request(
        "DELETE",
        f"{storage_server.base_url}/api/v1/memories",
        json={"memory_ids": ids[::2]},
        headers=bearer(token),
        timeout=120,
    )
    assert deleted.status_code == 200, deleted.text
    print(f"deleted {N // 2} at {time.perf_counter() - started:.1f} s")
    after_delete = view(storage_server, user_id=user)
    assert after_delete["users"] == [{**after_delete["users"][0], "memories": N // 2, "tombstones": N // 2}]
    # A delete frees pages inside the file; the file keeps its size until it is rewritten.
    assert sql_bytes(after_delete) >= sql_bytes(before) * 0.9

    # Only the admin may rewrite the stores.
    refused = httpx.post(
        f"{storage_server.base_url}/api/v1/storage/reclaim", headers=bearer(token), timeout=30
    )
    assert refused.status_code == 403
    bad = httpx.post(
        f"{storage_server.base_url}/api/v1/storage/reclaim",
        json={"force": "sometimes"},
        headers=storage_server.admin_headers(),
        timeout=30,
    )
    assert bad.status_code == 422

    reclaimed = httpx.post(
        f"{storage_server.base_url}/api/v1/storage/reclaim",
        json={"force": True},
        headers=storage_server.admin_headers(),
        timeout=120,
    ).json()
    sql, vectors = reclaimed["stores"]["sql"], reclaimed["stores"]["vectors"]
    assert sql["action"] == "vacuum" and sql["bytes_after"] < sql["bytes_before"] * 0.75, sql
    assert vectors["action"] == "compact" and vectors["points"] >= N // 2, vectors
    assert vectors["bytes_after"] < vectors["bytes_before"], vectors

    after = view(storage_server)
    # Tombstones, indexes and the FTS index stay: the file shrinks by less than the text.
    assert sql_bytes(after) < sql_bytes(before) * 0.9
    assert store(after, "vectors") + store(after, "vectors_wal") < store(before, "vectors") + store(
        before, "vectors_wal"
    )
    assert after["last_reclaim"]["stores"]["sql"]["action"] == "vacuum"
    # Still all there: search finds a memory that was kept.
    kept = httpx.get(f"{storage_server.base_url}/api/v1/memories/{ids[1]}", headers=bearer(token), timeout=30)
    assert kept.status_code == 200

    # Nothing more to give back: an unforced run leaves the files alone and says why.
    unforced = httpx.post(
        f"{storage_server.base_url}/api/v1/storage/reclaim",
        headers=storage_server.admin_headers(),
        timeout=60,
    ).json()
    assert unforced["stores"]["sql"]["action"] == "none" and unforced["stores"]["sql"]["reason"]
    assert unforced["stores"]["vectors"]["action"] == "none"


def test_a_user_sees_only_their_own_row(storage_server: MemoryServer) -> None:
    user = f"solo-{uuid.uuid4().hex[:6]}"
    token = storage_server.make_token(user)
    response = httpx.get(f"{storage_server.base_url}/api/v1/storage", headers=bearer(token), timeout=30)
    assert response.status_code == 200 and [u["user_id"] for u in response.json()["users"]] == [user]
    other = httpx.get(
        f"{storage_server.base_url}/api/v1/storage",
        params={"user_id": "someone-else"},
        headers=bearer(token),
        timeout=30,
    )
    assert other.status_code == 403


def test_the_quota_warning_appears_at_the_threshold(storage_server: MemoryServer) -> None:
    user = f"full-{uuid.uuid4().hex[:6]}"
    token = storage_server.make_token(user)
    rng = random.Random(11)
    chunk = 20_000

    def text() -> str:
        return (words(rng, 3000) * 2)[:chunk]

    quiet = add_batch(storage_server, token, [text() for _ in range(17)])  # 340 KB: 65% of 512 KB
    assert "X-Memory-Quota-Warning" not in quiet.headers and "quota_warning" not in quiet.json()

    loud = add_batch(storage_server, token, [text() for _ in range(4)])  # 420 KB: 80.1%
    assert "80%" in loud.headers["X-Memory-Quota-Warning"]
    warning = loud.json()["quota_warning"]
    assert warning["quota_bytes"] == QUOTA and warning["used_bytes"] == 21 * chunk

    single = httpx.post(
        f"{storage_server.base_url}/api/v1/memories",
        json={"text": "one more small fact"},
        headers=bearer(token),
        timeout=30,
    )
    assert single.status_code == 200 and single.json()["quota_warning"]["used_ratio"] >= 0.8

    async def over_mcp() -> dict[str, Any]:
        url = f"{storage_server.base_url}/mcp/claude-code/sse/{user}"
        async with Client(sse_client(url, headers=bearer(token))) as session:
            result = await session.call_tool("add_memories", {"text": "and another small fact"})
        return json.loads(result.content[0].text)  # type: ignore[union-attr]

    assert "quota" in anyio.run(over_mcp)["quota_warning"]["warning"]
    row = view(storage_server, user_id=user)["users"][0]
    assert row["warning"] and row["used_ratio"] >= 0.8

    # ccmem doctor reads the running server's view with the admin token and names the user.
    doctor = storage_server.ccmem(
        "doctor",
        "--port",
        str(storage_server.port),
        "--data-dir",
        str(storage_server.data_dir),
        "--json",
        check=False,
    )
    checks = {check["name"]: check for check in json.loads(doctor.stdout)["checks"]}
    assert checks["storage"]["status"] == "warn" and user in checks["storage"]["detail"], checks["storage"]
    assert "MB on disk" in checks["storage"]["detail"]


@pytest.mark.postgres
def test_on_postgresql_the_view_reports_the_database_size_and_reclaim_leaves_it_to_autovacuum(
    postgres_url: str, tmp_path: Any
) -> None:
    from claude_code_memory.config import load_settings
    from claude_code_memory.db.database import Database
    from claude_code_memory.memories.lifecycle.reclaim import Reclaim
    from claude_code_memory.memories.lifecycle.storage import store_bytes

    settings = load_settings(
        config_path=None,
        environ={},
        overrides={"server.data_dir": str(tmp_path), "storage.database_url": postgres_url},
    )
    database = Database(settings.database_url)
    try:
        database.migrate()
        [sql] = [entry for entry in store_bytes(settings, database) if entry["store"] == "sql"]
        assert (
            sql["bytes"] > 1_000_000 and "pg_database_size" in sql["what"]
        )  # an empty cluster's db is ~7 MB
        assert Reclaim(database, None, settings)._sql(force=True)["reason"].startswith("PostgreSQL")  # type: ignore[arg-type]
    finally:
        database.close()


@pytest.mark.integration  # in process, with the real stores
def test_closing_waits_for_a_background_reclaim(tmp_path: Path) -> None:
    """A delete starts a reclaim in the background; shutting down meanwhile closed mem0's
    history database under its VACUUM (a segmentation fault). Closing waits for it now."""
    settings = load_settings(
        config_path=None,
        environ={},
        overrides={"server.data_dir": str(tmp_path / "data"), "storage.auto_reclaim": True},
    )
    parts = ServerParts(settings)
    reclaim = parts.service.reclaim
    closing = threading.Thread(target=parts.close, name="closing")
    try:
        with parts.engine.memory.db._lock:  # mem0's lock around its history database
            reclaim.after_delete()  # the run stops at the history database, behind that lock
            deadline = time.monotonic() + 60
            while not reclaim._lock.locked():
                assert time.monotonic() < deadline, "the background reclaim did not start"
                time.sleep(0.01)
            closing.start()
            closing.join(timeout=1)
            assert closing.is_alive(), "the stores were closed under a running reclaim"
        closing.join(timeout=60)
        assert not closing.is_alive()
        assert reclaim.last_report is not None  # the run ended before the stores closed
    finally:
        if not closing.is_alive() and not closing.ident:
            parts.close()


def test_the_logs_entry_follows_server_state_dir(tmp_path: Path) -> None:
    """`ccmem stack` writes its logs under server.state_dir when one is set (the package
    route's XDG state directory); the storage view counted data/logs, which stays empty then."""
    from claude_code_memory.memories.lifecycle.storage import store_bytes

    data, state = tmp_path / "data", tmp_path / "state"
    (state / "logs").mkdir(parents=True)
    (state / "logs" / "api.log").write_bytes(b"x" * 4096)
    settings = load_settings(
        config_path=None,
        environ={},
        overrides={"server.data_dir": str(data), "server.state_dir": str(state)},
    )
    [logs] = [entry for entry in store_bytes(settings) if entry["store"] == "logs"]
    assert logs["path"] == str(state / "logs") and logs["bytes"] >= 4096
