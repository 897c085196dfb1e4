"""The Qdrant-server path (``QDRANT_URL``), end to end: a real ``ccmem serve`` whose vectors live
behind Qdrant's REST API, driven through our REST API.

No Qdrant server can run here (ENVIRONMENT.md), so the server is :class:`FakeQdrant`: Qdrant's
wire format in front of qdrant-client's in-process implementation of the same API. What this
shows is that the product's server path works — collection and payload indexes created, every
write, state change, edit and delete reaching the server, searches with their filters pushed
into it, fused with the keyword index and given their neighbouring turns, and a restart that
reuses the collection. It does not show the real server's speed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from qdrant_client import models

from claude_code_memory.engine.edge_store import DEFAULT_PAYLOAD_INDEXES
from tests.support.fake_qdrant import FakeQdrant
from tests.support.server import MemoryServer

COLLECTION = "memories"


@pytest.fixture(scope="module")
def qdrant() -> Iterator[FakeQdrant]:
    with FakeQdrant() as server:
        yield server


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, qdrant: FakeQdrant) -> Iterator[MemoryServer]:
    server = MemoryServer(tmp_path_factory.mktemp("qdrant-server"), env={"QDRANT_URL": qdrant.url})
    server.start()
    yield server
    server.stop()


def client_for(server: MemoryServer) -> tuple[str, httpx.Client]:
    user = f"u{uuid.uuid4().hex[:10]}"
    token = server.make_token(user)
    return user, httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )


def store(c: httpx.Client, items: list[dict[str, Any]], app: str = "chat") -> list[str]:
    response = c.post("/api/v1/memories/batch", json={"app": app, "items": items})
    assert response.status_code == 200 and response.json()["failed"] == 0, response.text
    return [o["results"][0]["id"] for o in response.json()["results"]]


def search(c: httpx.Client, query: str, **extra: Any) -> list[dict[str, Any]]:
    response = c.post("/api/v1/memories/search", json={"query": query, "app": "chat", **extra})
    assert response.status_code == 200, response.text
    return response.json()["results"]


def point(qdrant: FakeQdrant, memory_id: str) -> models.Record | None:
    found = qdrant.store.retrieve(COLLECTION, ids=[memory_id], with_payload=True)
    return found[0] if found else None


def points_of(qdrant: FakeQdrant, user: str) -> int:
    condition = models.Filter(
        must=[models.FieldCondition(key="user_id", match=models.MatchValue(value=user))]
    )
    return qdrant.store.count(COLLECTION, count_filter=condition, exact=True).count


def last_query_filter(qdrant: FakeQdrant) -> dict[str, Any]:
    """The filter of the last search the product sent to the server, as field → condition."""
    body = qdrant.recorded("POST", f"/collections/{COLLECTION}/points/query")[-1].body
    return {c["key"]: c.get("match") or c.get("range") for c in body["filter"]["must"]}


def test_the_server_gets_the_collection_and_every_payload_index(
    srv: MemoryServer, qdrant: FakeQdrant
) -> None:
    health = httpx.get(f"{srv.base_url}/health", timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "ok", health.text
    assert qdrant.store.collection_exists(COLLECTION)
    assert qdrant.indexed_fields(COLLECTION) == DEFAULT_PAYLOAD_INDEXES
    # Nothing went to the embedded store.
    assert not (srv.data_dir / "vectors").exists()


def test_search_on_the_server_filters_fuses_and_brings_neighbours(
    srv: MemoryServer, qdrant: FakeQdrant
) -> None:
    user, c = client_for(srv)
    turns = [
        "Ann: I finally adopted a dog last weekend.",
        "Ben: That's great news! What breed is it?",
        "Ann: A three-legged greyhound named Biscuit.",
        "Ben: Biscuit is a lovely name for a greyhound.",
        "Ann: He sleeps twenty hours a day.",
    ]
    ids = store(
        c,
        [
            {"text": t, "conversation_id": "s1", "captured_at": f"2024-03-02T10:{i:02d}:00Z"}
            for i, t in enumerate(turns)
        ],
    )
    [other_project] = store(c, [{"text": "The greyhound track closes in May.", "project": "racing"}])
    # Another user's memory with the same words never comes back.
    other_user, other = client_for(srv)
    [foreign] = store(other, [{"text": "A three-legged greyhound named Biscuit."}])
    assert points_of(qdrant, user) == 6 and points_of(qdrant, other_user) == 1
    stored = point(qdrant, ids[2])
    assert stored is not None and stored.payload is not None
    assert stored.payload["data"] == turns[2] and stored.payload["state"] == "active"
    assert stored.payload["conversation_id"] == "s1" and isinstance(stored.payload["created_ts"], float)

    hits = search(c, "three-legged greyhound Biscuit", limit=3, context=2)
    assert hits[0]["id"] == ids[2]
    assert foreign not in {h["id"] for h in hits}
    assert [m["id"] for m in hits[0]["context"]["before"]] == ids[0:2]
    assert [m["id"] for m in hits[0]["context"]["after"]] == ids[3:5]
    # The user and the state were conditions of the server's search, not checked afterwards.
    pushed = last_query_filter(qdrant)
    assert pushed["user_id"] == {"value": user} and pushed["state"] == {"value": "active"}

    # A project and a date range go to the server too.
    in_project = search(c, "greyhound", project="racing")
    assert [h["id"] for h in in_project] == [other_project]
    assert last_query_filter(qdrant)["project"] == {"value": "racing"}
    now = int(time.time())
    assert search(c, "greyhound", from_date=now + 3600) == []
    pushed = last_query_filter(qdrant)
    assert pushed["created_ts"]["gte"] == now + 3600
    assert {h["id"] for h in search(c, "greyhound", from_date=now - 3600, limit=20)} >= {
        ids[2],
        ids[3],
        other_project,
    }

    # The keyword half ranks an exact rare token first, with the dense half on the server.
    [token_memory] = store(c, [{"text": "The staging VPN profile is called zq-lattice-7."}])
    assert search(c, "zq-lattice-7", limit=1)[0]["id"] == token_memory


def test_state_changes_edits_and_deletes_reach_the_server(srv: MemoryServer, qdrant: FakeQdrant) -> None:
    user, c = client_for(srv)
    first, second, third = store(
        c,
        [
            {"text": "The build cache lives on the NVMe drive."},
            {"text": "Release notes are drafted every Friday."},
            {"text": "The on-call rota changes on Mondays."},
        ],
    )
    # Archive: the server's payload says so, and search skips it.
    response = c.post("/api/v1/memories/actions/archive", json=[first])
    assert response.status_code == 200, response.text
    archived = point(qdrant, first)
    assert archived is not None and archived.payload is not None and archived.payload["state"] == "archived"
    assert first not in {h["id"] for h in search(c, "build cache NVMe drive")}
    assert last_query_filter(qdrant)["state"] == {"value": "active"}

    # Edit: the server holds the new text and the new vector.
    before = qdrant.store.retrieve(COLLECTION, ids=[second], with_vectors=True)[0].vector
    response = c.put(
        f"/api/v1/memories/{second}", json={"memory_content": "Release notes are drafted on Thursdays."}
    )
    assert response.status_code == 200, response.text
    edited = qdrant.store.retrieve(COLLECTION, ids=[second], with_payload=True, with_vectors=True)[0]
    assert edited.payload is not None and edited.payload["data"] == "Release notes are drafted on Thursdays."
    assert edited.vector != before
    assert search(c, "release notes drafted Thursdays", limit=1)[0]["id"] == second

    # Delete: the point is gone from the server.
    response = c.request("DELETE", "/api/v1/memories", json={"memory_ids": [third]})
    assert response.status_code == 200, response.text
    assert point(qdrant, third) is None
    assert points_of(qdrant, user) == 2


def test_a_restart_reuses_the_servers_collection(srv: MemoryServer, qdrant: FakeQdrant) -> None:
    _, c = client_for(srv)
    [kept] = store(c, [{"text": "The espresso machine descales itself on Sundays."}])
    created = len(qdrant.recorded("PUT", f"/collections/{COLLECTION}"))
    srv.restart()
    assert len(qdrant.recorded("PUT", f"/collections/{COLLECTION}")) == created == 1
    assert search(c, "espresso machine descaling", limit=1)[0]["id"] == kept


@pytest.mark.integration
def test_a_qdrant_server_that_stops_answering_is_a_clean_503(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with FakeQdrant() as gone:
        server = MemoryServer(tmp_path_factory.mktemp("qdrant-gone"), env={"QDRANT_URL": gone.url})
        server.start()
        try:
            _, c = client_for(server)
            [kept] = store(c, [{"text": "Stored while the vector server answered."}])
            # A collection that is gone (a server wiped under us) is an outage too, not a bug.
            assert gone.store.delete_collection(COLLECTION)
            response = c.post("/api/v1/memories/search", json={"query": "vector server", "app": "chat"})
            assert response.status_code == 503, response.text
            assert response.json()["detail"] == "the Qdrant server answered HTTP 404", response.text
            gone.stop()
            health = httpx.get(f"{server.base_url}/health", timeout=30)
            assert health.status_code == 503, health.text
            assert health.json()["vector_store"] == "unavailable: ResponseHandlingException"
            for response in (
                c.post("/api/v1/memories", json={"text": "This write has nowhere to go.", "app": "chat"}),
                c.post("/api/v1/memories/search", json={"query": "vector server", "app": "chat"}),
                c.put(
                    f"/api/v1/memories/{kept}", json={"memory_content": "An edit that cannot be embedded."}
                ),
            ):
                assert response.status_code == 503, response.text
                body = response.json()
                assert body["error"] == "unavailable" and "cannot be reached" in body["detail"], body
                assert gone.url not in response.text  # the server's address stays in the log
            assert gone.url in server.log()
            # Nothing half-done: the failed write left no row, the failed edit left the text.
            listed = c.post("/api/v1/memories/filter", json={})
            assert listed.status_code == 200, listed.text
            assert [(m["id"], m["content"]) for m in listed.json()["items"]] == [
                (kept, "Stored while the vector server answered.")
            ]
        finally:
            server.stop()


def test_reconciliation_on_the_server_restores_lost_points_and_removes_orphans(
    srv: MemoryServer, qdrant: FakeQdrant
) -> None:
    user, c = client_for(srv)
    lost, kept = store(
        c, [{"text": "The staging cluster sleeps at night."}, {"text": "Backups run at 03:00 UTC."}]
    )
    template = qdrant.store.retrieve(COLLECTION, ids=[kept], with_payload=True, with_vectors=True)[0]
    orphan = str(uuid.uuid4())
    # Written before this server started (a point it wrote minutes ago may be a write in flight).
    payload = {**(template.payload or {}), "created_at": "2020-01-01T00:00:00+00:00"}
    qdrant.store.upsert(
        COLLECTION, points=[models.PointStruct(id=orphan, vector=template.vector, payload=payload)]
    )
    qdrant.store.delete(COLLECTION, points_selector=models.PointIdsList(points=[lost]))

    response = httpx.post(f"{srv.base_url}/api/v1/admin/reconcile", headers=srv.admin_headers(), timeout=60)
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["state"] == "done", report
    assert report["orphan_vectors_removed"] == 1 and report["missing_vectors_restored"] == 1, report
    assert point(qdrant, orphan) is None
    restored = point(qdrant, lost)
    assert restored is not None and restored.payload is not None
    assert restored.payload["data"] == "The staging cluster sleeps at night."
    assert restored.payload["state"] == "active" and restored.payload["user_id"] == user
    assert search(c, "when does staging sleep?", limit=1)[0]["id"] == lost
    health = httpx.get(f"{srv.base_url}/health", timeout=10).json()
    assert health["reconciliation"]["trigger"] == "admin"


def test_on_the_server_a_scope_and_a_session_s_given_memories_are_left_out_after_the_search(
    srv: MemoryServer, qdrant: FakeQdrant, tmp_path: Path
) -> None:
    """mem0's server store has no condition for a field with no value nor for ids, so there the
    scoped search and the hooks' "not given yet" filter after the search (looking deeper), with
    the same answers the embedded store gives by filtering inside it."""
    user, c = client_for(srv)
    shop = store(
        c,
        [
            {"text": f"Shop note {n}: the checkout retries payment webhooks", "project": "shop"}
            for n in range(8)
        ],
    )
    [blog] = store(c, [{"text": "Blog note: the checkout retries payment webhooks", "project": "blog"}])
    [common] = store(c, [{"text": "Always retry payment webhooks with backoff"}])
    hits = [h["id"] for h in search(c, "how are payment webhooks retried", current_project="shop", limit=20)]
    assert blog not in hits and set(hits) == {*shop, common}
    assert "project" not in last_query_filter(qdrant)  # filtered after the server's search

    repository = tmp_path / "shop"
    (repository / ".git").mkdir(parents=True)  # the hooks' project: the repository's name
    given: list[str] = []
    for _ in range(2):
        body = {
            "hook_event_name": "UserPromptSubmit",
            "session_id": "server-session",
            "cwd": str(repository),
            "transcript_path": "/dev/null",
            "prompt": "how are payment webhooks retried",
        }
        answer = c.post("/api/v1/hooks/claude-code", json=body)
        assert answer.status_code == 200, answer.text
        block = answer.json()["hookSpecificOutput"]["additionalContext"]
        ids = [i for i in [*shop, common] if i in block]
        assert ids and not set(ids) & set(given) and blog not in block
        given += ids
    assert len(given) >= 6
