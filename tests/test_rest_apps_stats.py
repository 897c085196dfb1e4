"""REST apps and stats against the real server: OpenMemory's shapes, scoped to users."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.support.servers import ApiServer, StartServer
from tests.support.users import unique


@pytest.fixture(scope="module")
def server(start_module_server: StartServer) -> ApiServer:
    """One app for the module, in process: each test works with users of its own."""
    return start_module_server(in_process=True)


def api(server: ApiServer, token: str) -> httpx.Client:
    return server.client(token)


def remember(client: httpx.Client, user: str, text: str, app: str) -> dict[str, Any]:
    response = client.post(
        "/api/v1/memories", json={"user_id": user, "text": text, "infer": False, "app": app}
    )
    assert response.status_code == 200, response.text
    return response.json()


def apps_by_name(client: httpx.Client, **params: Any) -> dict[str, dict[str, Any]]:
    response = client.get("/api/v1/apps", params=params)
    assert response.status_code == 200, response.text
    return {app["name"]: app for app in response.json()["apps"]}


def assert_error(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) >= {"detail", "error"}, body
    for word in words:
        assert word in body["detail"], body


def test_apps_list_detail_memories_and_accessed(server: ApiServer) -> None:
    alice_id = unique("alice")
    alice = api(server, server.make_token(alice_id))
    first = remember(alice, alice_id, "I deploy the backend with Kubernetes on Fridays", "cursor")
    remember(alice, alice_id, "My favourite editor is Neovim with the lazy.nvim plugin manager", "cursor")
    remember(alice, alice_id, "The staging database is PostgreSQL 16", "claude-code")
    search = alice.post(
        "/api/v1/memories/search",
        json={"user_id": alice_id, "query": "how do I deploy?", "limit": 2, "app": "cursor"},
    )
    assert search.status_code == 200, search.text
    assert search.json()["results"], search.text

    listing = alice.get("/api/v1/apps")
    assert listing.status_code == 200, listing.text
    body = listing.json()
    assert {"total", "page", "page_size", "apps"} <= set(body)
    assert body["total"] == 2 and body["page"] == 1 and body["page_size"] == 10
    apps = {app["name"]: app for app in body["apps"]}
    assert set(apps) == {"cursor", "claude-code"}
    cursor = apps["cursor"]
    assert {"id", "name", "is_active", "total_memories_created", "total_memories_accessed"} <= set(cursor)
    assert cursor["id"] == first["app_id"]
    assert cursor["is_active"] is True
    assert cursor["total_memories_created"] == 2
    assert cursor["total_memories_accessed"] >= 1
    assert apps["claude-code"]["total_memories_created"] == 1
    assert apps["claude-code"]["total_memories_accessed"] == 0

    # OpenMemory's trailing slash, filters and sorting.
    assert alice.get("/api/v1/apps/").json()["total"] == 2
    assert list(apps_by_name(alice, name="CURS")) == ["cursor"]
    by_count = alice.get("/api/v1/apps", params={"sort_by": "memories", "sort_direction": "desc"}).json()
    assert [app["name"] for app in by_count["apps"]] == ["cursor", "claude-code"]
    by_name = alice.get("/api/v1/apps", params={"sort_by": "name", "page_size": 1, "page": 2}).json()
    assert by_name["total"] == 2 and [app["name"] for app in by_name["apps"]] == ["cursor"]
    assert_error(alice.get("/api/v1/apps", params={"sort_by": "colour"}), 422, "sort_by")
    assert_error(alice.get("/api/v1/apps", params={"page_size": 1000}), 422, "page_size")

    detail = alice.get(f"/api/v1/apps/{cursor['id']}")
    assert detail.status_code == 200, detail.text
    info = detail.json()
    assert info["is_active"] is True
    assert info["total_memories_created"] == 2
    assert info["total_memories_accessed"] >= 1
    assert info["first_accessed"] and info["last_accessed"]
    assert info["first_accessed"].endswith("Z")

    memories = alice.get(f"/api/v1/apps/{cursor['id']}/memories")
    assert memories.status_code == 200, memories.text
    page = memories.json()
    assert page["total"] == 2 and page["page"] == 1 and page["page_size"] == 10
    item = page["memories"][0]
    assert {"id", "content", "created_at", "state", "app_id", "categories", "metadata_"} <= set(item)
    assert item["app_id"] == cursor["id"] and item["state"] == "active"
    assert isinstance(item["created_at"], str) and isinstance(item["categories"], list)
    # The stock OpenMemory UI shows `new Date(created_at + "Z")`: naive UTC, as the access log.
    assert not item["created_at"].endswith("Z"), item["created_at"]
    created = datetime.fromisoformat(item["created_at"] + "Z")
    assert abs((datetime.now(UTC) - created).total_seconds()) < 600
    [entry, *_] = alice.get(f"/api/v1/memories/{item['id']}/access-log").json()["logs"] or [None]
    assert entry is None or not entry["accessed_at"].endswith("Z")
    assert {m["content"] for m in page["memories"]} == {
        "I deploy the backend with Kubernetes on Fridays",
        "My favourite editor is Neovim with the lazy.nvim plugin manager",
    }

    accessed = alice.get(f"/api/v1/apps/{cursor['id']}/accessed")
    assert accessed.status_code == 200, accessed.text
    rows = accessed.json()
    assert rows["total"] >= 1
    assert all(row["access_count"] >= 1 for row in rows["memories"])
    # The log is by the reading app; the memories read may come from any of the user's apps.
    read = {row["memory"]["content"]: row["memory"]["app_name"] for row in rows["memories"]}
    assert read.get("I deploy the backend with Kubernetes on Fridays") == "cursor"
    claude_code = apps["claude-code"]["id"]
    assert alice.get(f"/api/v1/apps/{claude_code}/accessed").json()["total"] == 0


def test_pausing_an_app_stops_its_writes_and_reads_until_resumed(server: ApiServer) -> None:
    alice_id = unique("alice")
    alice = api(server, server.make_token(alice_id))
    app_id = remember(alice, alice_id, "I prefer tabs over spaces", "cursor")["app_id"]

    paused = alice.put(f"/api/v1/apps/{app_id}", params={"is_active": "false"})
    assert paused.status_code == 200, paused.text
    assert paused.json()["status"] == "success"
    assert alice.get(f"/api/v1/apps/{app_id}").json()["is_active"] is False
    assert list(apps_by_name(alice, is_active="false")) == ["cursor"]
    assert apps_by_name(alice, is_active="true") == {}

    refused = alice.post(
        "/api/v1/memories",
        json={"user_id": alice_id, "text": "I also like Rust", "infer": False, "app": "cursor"},
    )
    assert_error(refused, 403, "paused")
    search = alice.post(
        "/api/v1/memories/search", json={"user_id": alice_id, "query": "tabs", "app": "cursor"}
    )
    assert_error(search, 403, "paused")
    # The app's memories themselves are untouched.
    assert alice.get(f"/api/v1/apps/{app_id}/memories").json()["memories"][0]["state"] == "active"
    # Another app of the same user still works.
    remember(alice, alice_id, "I like Go for small services", "claude-code")

    resumed = alice.put(f"/api/v1/apps/{app_id}/", params={"is_active": "true"})
    assert resumed.status_code == 200, resumed.text
    remember(alice, alice_id, "I also like Rust", "cursor")
    assert alice.get(f"/api/v1/apps/{app_id}").json()["total_memories_created"] == 2

    assert_error(alice.put(f"/api/v1/apps/{app_id}"), 422, "is_active")
    assert_error(alice.put(f"/api/v1/apps/{app_id}", params={"is_active": "perhaps"}), 422, "is_active")


def test_apps_are_scoped_to_their_user(server: ApiServer) -> None:
    alice_id = unique("alice")
    bob_id = unique("bob")
    alice = api(server, server.make_token(alice_id))
    bob = api(server, server.make_token(bob_id))
    admin = api(server, server.admin_token)
    alice_app = remember(alice, alice_id, "Alice's secret project is called Bluebird", "cursor")["app_id"]
    bob_app = remember(bob, bob_id, "Bob uses Emacs", "windsurf")["app_id"]

    assert set(apps_by_name(alice)) == {"cursor"}
    assert set(apps_by_name(bob)) == {"windsurf"}
    assert_error(bob.get("/api/v1/apps", params={"user_id": alice_id}), 403)
    for path in (
        f"/api/v1/apps/{alice_app}",
        f"/api/v1/apps/{alice_app}/memories",
        f"/api/v1/apps/{alice_app}/accessed",
    ):
        response = bob.get(path)
        assert_error(response, 404, "not found")  # as an unknown id: existence does not leak
        assert "Bluebird" not in response.text
    assert_error(bob.put(f"/api/v1/apps/{alice_app}", params={"is_active": "false"}), 404)
    assert alice.get(f"/api/v1/apps/{alice_app}").json()["is_active"] is True

    # The admin sees every user's apps (other tests' users share this server).
    everyone = admin.get("/api/v1/apps", params={"page_size": 100}).json()
    owners = {
        (app["name"], app["user_id"]) for app in everyone["apps"] if app["user_id"] in (alice_id, bob_id)
    }
    assert owners == {("cursor", alice_id), ("windsurf", bob_id)}
    assert set(apps_by_name(admin, user_id=bob_id)) == {"windsurf"}
    assert admin.get(f"/api/v1/apps/{alice_app}").status_code == 200
    assert admin.put(f"/api/v1/apps/{bob_app}", params={"is_active": "false"}).status_code == 200
    assert bob.get(f"/api/v1/apps/{bob_app}").json()["is_active"] is False

    assert_error(alice.get(f"/api/v1/apps/{uuid.uuid4()}"), 404, "not found")
    assert_error(admin.get(f"/api/v1/apps/{uuid.uuid4()}/memories"), 404)
    assert_error(alice.get("/api/v1/apps/not-a-uuid"), 422, "not-a-uuid", "UUID")
    assert_error(alice.put("/api/v1/apps/12345", params={"is_active": "true"}), 422, "UUID")
    assert_error(admin.get("/api/v1/apps", params={"user_id": "no such user!"}), 422, "user_id")
    anonymous = server.client().get("/api/v1/apps")
    assert anonymous.status_code == 401


def test_stats_count_a_users_live_memories_and_apps(server: ApiServer) -> None:
    alice_id = unique("alice")
    bob_id = unique("bob")
    alice = api(server, server.make_token(alice_id))
    bob = api(server, server.make_token(bob_id))
    admin = api(server, server.admin_token)
    doomed = remember(alice, alice_id, "Temporary note to delete", "cursor")
    remember(alice, alice_id, "I run tests with pytest -x", "cursor")
    remember(alice, alice_id, "Lunch is at noon", "claude-code")
    remember(bob, bob_id, "Bob's only memory", "cursor")
    deleted = alice.request(
        "DELETE", "/api/v1/memories", json={"memory_ids": [doomed["id"]], "user_id": alice_id}
    )
    assert deleted.status_code == 200, deleted.text

    stats = alice.get("/api/v1/stats")
    assert stats.status_code == 200, stats.text
    body = stats.json()
    assert body["total_memories"] == 2
    assert body["total_apps"] == 2
    assert {app["name"] for app in body["apps"]} == {"cursor", "claude-code"}
    assert {
        "id",
        "owner_id",
        "name",
        "description",
        "metadata_",
        "is_active",
        "created_at",
        "updated_at",
    } <= set(body["apps"][0])
    assert alice.get("/api/v1/stats/", params={"user_id": alice_id}).json() == body
    assert admin.get("/api/v1/stats", params={"user_id": alice_id}).json() == body
    assert bob.get("/api/v1/stats").json()["total_memories"] == 1

    assert_error(bob.get("/api/v1/stats", params={"user_id": alice_id}), 403)
    assert_error(admin.get("/api/v1/stats"), 422, "user_id")
    assert_error(admin.get("/api/v1/stats", params={"user_id": "nobody"}), 404, "nobody")
    assert_error(admin.get("/api/v1/stats", params={"user_id": "bad user!"}), 422, "user_id")
