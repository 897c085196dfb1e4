"""Deleted text leaves the disk: every file under the data directory, scanned as bytes.

A real server stores memories that carry random markers, then deletes some over REST, forgets
others and lets the retention purge take a third group. Every file under the data directory
(memory.db and its log, mem0's history.db and its log, the vector shard's segments and log) is
then read as bytes, with the server running and again after it stopped: no deleted marker may be
found, and every kept marker must be (so a scan that reads nothing cannot pass).
"""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.support.in_process import InProcessServer
from tests.support.servers import StartServer

APP = "claude-code"


def marker() -> str:
    # Lower case and ending in a digit, so the full-text index stores it as it is (no stemming).
    return f"mk{secrets.token_hex(10)}7"


def needle(mark: str) -> bytes:
    # The tail alone: FTS5 stores a term after the prefix it shares with the term before it.
    return mark[-14:].encode()


def hits(data_dir: Path, marks: list[str]) -> dict[str, dict[str, int]]:
    """For each marker, the files that hold it and how often: every file, every byte."""
    found: dict[str, dict[str, int]] = {mark: {} for mark in marks}
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for mark in marks:
            count = data.count(needle(mark))
            if count:
                found[mark][str(path.relative_to(data_dir))] = count
    return found


def add(client: httpx.Client, text: str, app: str = APP) -> str:
    response = client.post("/api/v1/memories", json={"text": text, "app": app})
    assert response.status_code == 200, response.text
    return response.json()["id"]


def expire_now(database: Path, memory_ids: list[str]) -> None:
    """Move the memories' expiry into the past, as the passing of their retention period would."""
    connection = sqlite3.connect(database, timeout=30)
    try:
        # As the server's own connections do: this update must not leave the old row behind.
        connection.execute("PRAGMA secure_delete=ON")
        connection.executemany(
            "UPDATE memories SET expires_at = '2000-01-01 00:00:00.000000' WHERE id = ?",
            [(memory_id.replace("-", ""),) for memory_id in memory_ids],
        )
        assert connection.total_changes == len(memory_ids)
        connection.commit()
    finally:
        connection.close()


@pytest.fixture
def server(start_server: StartServer) -> InProcessServer:
    """The app in process: stopping it runs the shutdown that closes every store."""
    return start_server(in_process=True)


def test_deleted_forgotten_and_purged_text_is_gone_from_every_file(server: InProcessServer) -> None:
    user = f"u{secrets.token_hex(5)}"
    client = server.client(server.make_token(user))
    groups = {name: [marker(), marker()] for name in ("kept", "deleted", "forgotten", "purged")}
    ids: dict[str, list[str]] = {}
    with client:
        for name, marks in groups.items():
            app = "cursor" if name == "forgotten" else APP
            ids[name] = [add(client, f"The user's code name is {mark} since spring", app) for mark in marks]
        before = hits(server.data_dir, [m for marks in groups.values() for m in marks])
        assert all(before.values()), f"a marker was not found right after it was stored: {before}"

        response = client.request("DELETE", "/api/v1/memories/", json={"memory_ids": ids["deleted"]})
        assert response.json() == {"message": "Successfully deleted 2 memories"}
        receipt = client.post("/api/v1/forget", json={"app": "cursor"}).json()
        assert receipt["memories"] == 2, receipt
        expire_now(server.data_dir / "memory.db", ids["purged"])
        with server.client(server.admin_token) as admin:
            purge = admin.post("/api/v1/retention/purge").json()
        assert sorted(purge["memory_ids"]) == sorted(ids["purged"]), purge
        assert purge["counts"]["vectors"] == 2 and purge["counts"]["history_rows"] == 2

        gone = [m for name in ("deleted", "forgotten", "purged") for m in groups[name]]
        running = hits(server.data_dir, gone + groups["kept"])
        assert {m: running[m] for m in gone} == dict.fromkeys(gone, {})
        assert all(running[m] for m in groups["kept"]), running
        # Still served: erasing rewrote the stores without losing what was kept.
        listed = client.get("/api/v1/memories/", params={"size": 50}).json()["items"]
        assert {m["id"] for m in listed if m["state"] == "active"} == set(ids["kept"])
        found = client.post("/api/v1/memories/search", json={"query": groups["kept"][0], "app": APP})
        assert ids["kept"][0] in {item["id"] for item in found.json()["results"]}

    server.stop()
    stopped = hits(server.data_dir, gone + groups["kept"])
    assert {m: stopped[m] for m in gone} == dict.fromkeys(gone, {})
    assert all(stopped[m] for m in groups["kept"]), stopped
