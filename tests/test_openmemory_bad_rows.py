"""``ccmem import openmemory`` past bad rows: a real SQLite database in OpenMemory's schema
holding a bad row of each kind between good ones, imported into a real server; and the import
route taking a batch with invalid memories."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from .support.openmemory_db import OpenMemoryDb
from .support.server import MemoryServer
from .test_openmemory import run_import


@pytest.fixture(scope="module")
def import_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("openmemory-bad-rows")) as started:
        yield started


def build_openmemory_with_bad_rows(path: Path) -> dict[str, str]:
    """Good rows with a bad row of each kind between them (by creation time, the order read)."""
    db = OpenMemoryDb(path)
    owner = db.user("default_user")
    app = db.app(owner, "openmemory")
    rows = {
        name: db.memory(owner, app, text, created_at=datetime(2024, 7, day))
        for day, (name, text) in enumerate(
            [
                ("good_first", "The staging database is called heron-stage"),
                ("bad_utf8", "placeholder: replaced by bytes below"),
                ("good_second", "Release notes are written in docs/releases"),
                ("unknown_state", "A memory in a state OpenMemory never had"),
                ("empty", "placeholder: emptied below"),
                ("oversized", "placeholder: made huge below"),
                ("not_a_uuid", "A memory whose id is not a UUID"),
                ("good_third", "The on-call rota lives in the ops wiki"),
            ],
            start=1,
        )
    }
    db.close()
    hex_of = {name: memory_id.hex for name, memory_id in rows.items()}
    with sqlite3.connect(path) as connection:
        update = "UPDATE memories SET {} WHERE id = ?"
        connection.execute(
            update.format("content = CAST(X'4d7920706173730a80ff2062797465' AS TEXT)"), (hex_of["bad_utf8"],)
        )
        connection.execute(update.format("state = 'forgotten'"), (hex_of["unknown_state"],))
        connection.execute(update.format("content = ''"), (hex_of["empty"],))
        # Over the server's request body cap (2 MB): no batch can carry it.
        connection.execute(update.format("content = ?"), ("y" * 2_500_000, hex_of["oversized"]))
        connection.execute(update.format("id = 'not-a-uuid'"), (hex_of["not_a_uuid"],))
    ids = {name: str(memory_id) for name, memory_id in rows.items()}
    ids["not_a_uuid"] = "not-a-uuid"
    return ids


def test_an_import_goes_on_past_bad_rows_reports_each_and_runs_again(
    import_server: MemoryServer, tmp_path: Path
) -> None:
    path = tmp_path / "openmemory.db"
    ids = build_openmemory_with_bad_rows(path)
    token = import_server.make_token("badrows")
    first = run_import(import_server, path, token)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["imported"] == 3 and report["read"] == 8, report
    reasons = {row["openmemory_id"]: row["reason"] for row in report["bad_rows"]}
    assert set(reasons) == {
        ids[name] for name in ("bad_utf8", "unknown_state", "empty", "oversized", "not_a_uuid")
    }
    assert "UTF-8" in reasons[ids["bad_utf8"]]
    assert "forgotten" in reasons[ids["unknown_state"]]
    assert "empty" in reasons[ids["empty"]]
    assert "bytes" in reasons[ids["oversized"]]
    assert "not a UUID" in reasons[ids["not_a_uuid"]]
    assert report["skipped_bad_rows"] == 5
    api = httpx.Client(
        base_url=import_server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    listed = api.post("/api/v1/memories/filter", json={"size": 50}).json()["items"]
    assert sorted(item["content"] for item in listed) == [
        "Release notes are written in docs/releases",
        "The on-call rota lives in the ops wiki",
        "The staging database is called heron-stage",
    ]

    # The text output names each row skipped and why.
    text = import_server.ccmem(
        "import", "openmemory", str(path), "--url", import_server.base_url, "--token", token, timeout=180
    )
    assert "imported 0" in text.stdout and "3 imported before" in " ".join(text.stdout.split())
    for memory_id in reasons:
        assert f"skipped {memory_id}" in text.stdout, text.stdout


def test_the_import_route_skips_an_invalid_memory_and_names_it(import_server: MemoryServer) -> None:
    token = import_server.make_token("routebad")
    good, empty = str(uuid.uuid4()), str(uuid.uuid4())
    batch = {
        "memories": [
            {"openmemory_id": empty, "app": {"name": "openmemory"}, "content": "", "state": "active"},
            {"openmemory_id": "12", "app": {"name": "openmemory"}, "content": "x", "state": "active"},
            {"openmemory_id": good, "app": {"name": "openmemory"}, "content": "Kites fly", "state": "active"},
            {"openmemory_id": str(uuid.uuid4()), "app": {"name": "o"}, "content": "y", "state": "lost"},
            "not an object",
        ]
    }
    answer = httpx.post(
        f"{import_server.base_url}/api/v1/import/openmemory",
        json=batch,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["imported"] == 1 and body["received"] == 5
    named = [row["openmemory_id"] for row in body["bad_rows"]]
    assert named == [empty, "12", batch["memories"][3]["openmemory_id"], None], body["bad_rows"]  # type: ignore[index]
    assert all(row["reason"] for row in body["bad_rows"])
