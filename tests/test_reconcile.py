"""The reconciliation of SQL and the vector store, on a real server's data directory.

Each inconsistency a crash can leave is planted with the package's own classes while the
server is stopped; the next start repairs them all in the background and ``/health`` says so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.consistency import Stores
from tests.support.server import MemoryServer

TEXTS = {
    "lost": "The deploy pipeline runs on GitHub Actions with a self-hosted runner",
    "lost_archived": "My grandmother taught me to bake sourdough bread every Sunday",
    "tombstoned": "The office wifi password rotates every ninety days",
    "kept": "I prefer tabs over spaces in Go code",
}


def reconciliation(server: MemoryServer, *, timeout: float = 60) -> dict[str, Any]:
    """``/health``'s reconciliation once the start-up pass is done."""
    deadline = time.monotonic() + timeout
    while True:
        report = httpx.get(f"{server.base_url}/health", timeout=10).json().get("reconciliation")
        if report is not None and report["state"] != "running":
            return report
        assert time.monotonic() < deadline, f"reconciliation not done: {report}\n{server.log()}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    server = MemoryServer(tmp_path_factory.mktemp("reconcile"))
    server.start()
    yield server
    server.stop()


def test_a_start_repairs_what_a_crash_leaves_and_health_reports_it(srv: MemoryServer) -> None:
    first = reconciliation(srv)  # an empty store: nothing to do
    assert first["state"] == "done" and first["trigger"] == "start-up"
    c = httpx.Client(
        base_url=srv.base_url, headers={"Authorization": f"Bearer {srv.make_token('ada')}"}, timeout=30
    )
    ids = {}
    for name, text in TEXTS.items():
        response = c.post("/api/v1/memories/", json={"text": text, "app": "tests"})
        assert response.status_code == 200, response.text
        ids[name] = response.json()["id"]
    assert c.post("/api/v1/memories/actions/archive", json=[ids["lost_archived"]]).status_code == 200
    srv.stop()

    with Stores(srv.data_dir) as stores:
        stores.drop_vector(ids["lost"])
        stores.drop_vector(ids["lost_archived"])
        orphan = stores.plant_orphan(like=ids["kept"])
        stores.tombstone_in_sql(ids["tombstoned"])
        planted = stores.check()
    assert sorted(planted.half_deleted) == sorted([ids["lost"], ids["lost_archived"]])
    assert sorted(planted.orphans) == sorted([orphan, ids["tombstoned"]])

    srv.start()
    report = reconciliation(srv)
    assert report["state"] == "done", report
    assert report["orphan_vectors_removed"] == 2 and report["missing_vectors_restored"] == 2, report
    assert report["checked_rows"] == 4 and report["checked_points"] == 3, report
    assert report["finished_at"] and report["seconds"] >= 0
    for moment in (report["started_at"], report["finished_at"]):  # one "Z", not "+00:00Z"
        assert moment.endswith("Z") and "+" not in moment and datetime.fromisoformat(moment), moment

    # The restored memory is found by meaning again; the deleted one is not.
    hits = c.post("/api/v1/memories/search", json={"query": "where do CI builds run?", "limit": 1}).json()
    assert hits["results"][0]["id"] == ids["lost"]

    # On demand: admin only, and nothing is left to repair.
    assert c.post("/api/v1/admin/reconcile").status_code == 403
    again = httpx.post(
        f"{srv.base_url}/api/v1/admin/reconcile", headers=srv.admin_headers(), timeout=60
    ).json()
    assert again["trigger"] == "admin" and again["state"] == "done"
    assert again["orphan_vectors_removed"] == again["missing_vectors_restored"] == 0, again
    doctor = srv.ccmem(
        "doctor", "--json", "--port", str(srv.port), "--data-dir", str(srv.data_dir), check=False
    )
    assert '"reconciliation"' in doctor.stdout and "0 orphan vectors removed" in doctor.stdout, doctor.stdout
    srv.stop()

    with Stores(srv.data_dir) as stores:
        after = stores.check()
        assert after.half_deleted == [] and after.orphans == []
        # The payload a write stores, with the row's state mirrored.
        restored, kept = stores.payload(ids["lost_archived"]), stores.payload(ids["kept"])
        assert restored is not None and kept is not None
        assert restored["state"] == "archived"
        ours = {"source_app", "mcp_client", "app_id", "channel", "user_id", "role"}
        assert {k: restored[k] for k in ours} == {k: kept[k] for k in ours}
        assert set(restored) == set(kept), (restored, kept)
        assert "data" not in restored  # the embedded store keeps no text
        history = stores.history_ids()
        assert ids["lost"] in history and orphan not in history and ids["tombstoned"] not in history
    srv.start()


def test_a_start_repairs_the_same_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    # PostgreSQL hands the rows' ids back as UUIDs, SQLite as the hex it stores: both are
    # matched to the points (a mismatch would take every point for an orphan).
    server = MemoryServer(tmp_path, env={"DATABASE_URL": postgres_url})
    server.start()
    try:
        assert reconciliation(server)["state"] == "done"
        c = httpx.Client(
            base_url=server.base_url,
            headers={"Authorization": f"Bearer {server.make_token('ada')}"},
            timeout=30,
        )
        ids = {
            name: c.post("/api/v1/memories/", json={"text": text, "app": "tests"}).json()["id"]
            for name, text in TEXTS.items()
        }
        server.stop()
        with Stores(server.data_dir, database_url=postgres_url) as stores:
            stores.drop_vector(ids["lost"])
            orphan = stores.plant_orphan(like=ids["kept"])
            stores.tombstone_in_sql(ids["tombstoned"])
        server.start()
        report = reconciliation(server)
        assert report["state"] == "done", report
        assert report["checked_rows"] == 4 and report["checked_points"] == 4, report
        assert report["orphan_vectors_removed"] == 2 and report["missing_vectors_restored"] == 1, report
        server.stop()
        with Stores(server.data_dir, database_url=postgres_url) as stores:
            after = stores.check()
        assert after.half_deleted == [] and after.orphans == [] and orphan not in after.points
        assert after.points == {ids["lost"], ids["lost_archived"], ids["kept"]}
    finally:
        server.stop()


def test_doctor_reconciles_a_stopped_data_directory_in_process(srv: MemoryServer) -> None:
    # Memories of its own: with two workers this test may get a server no other test wrote to.
    c = httpx.Client(
        base_url=srv.base_url, headers={"Authorization": f"Bearer {srv.make_token('bo')}"}, timeout=30
    )
    for text in list(TEXTS.values())[:2]:
        assert c.post("/api/v1/memories/", json={"text": text, "app": "tests"}).status_code == 200
    srv.stop()
    with Stores(srv.data_dir) as stores:
        before = stores.check()
        lost, other = sorted(before.live)[:2]
        stores.drop_vector(lost)
        orphan = stores.plant_orphan(like=other)
    doctor = srv.ccmem(
        "doctor",
        "--reconcile",
        "--json",
        "--port",
        str(srv.port),
        "--data-dir",
        str(srv.data_dir),
        check=False,
    )
    assert "1 orphan vectors removed, 1 missing vectors restored" in doctor.stdout, doctor.stdout
    with Stores(srv.data_dir) as stores:
        after = stores.check()
        assert after.half_deleted == [] and after.orphans == [] and orphan not in after.points
        assert lost in after.points
    srv.start()
