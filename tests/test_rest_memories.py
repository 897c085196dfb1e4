"""The memories router against the real server: OpenMemory's shapes, auth, bad input, restarts."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.support.server import MemoryServer
from tests.support.servers import ApiServer, StartServer


@pytest.fixture(scope="module")
def srv(start_module_server: StartServer) -> ApiServer:
    """The module's app, in process; a restart gets a ``ccmem serve`` of its own."""
    return start_module_server(in_process=True)


def client(server: ApiServer, token: str) -> httpx.Client:
    return server.client(token, timeout=30)


def fresh_user(server: ApiServer) -> tuple[str, httpx.Client]:
    user = f"u{uuid.uuid4().hex[:10]}"
    return user, client(server, server.make_token(user))


def add(c: httpx.Client, text: str, app: str = "tests", **extra: object) -> dict:
    response = c.post("/api/v1/memories/", json={"text": text, "app": app, **extra})
    assert response.status_code == 200, response.text
    return response.json()


def total(c: httpx.Client) -> int:
    return c.get("/api/v1/memories/").json()["total"]


def test_create_get_list_and_search(srv: ApiServer) -> None:
    user, c = fresh_user(srv)
    row = add(c, "I always use pytest with the -x flag for Python tests", metadata={"source": "unit"})
    assert set(row) >= {
        "id",
        "user_id",
        "app_id",
        "content",
        "metadata_",
        "state",
        "created_at",
        "categories",
    }
    assert row["state"] == "active" and row["metadata_"]["source"] == "unit"
    add(c, "My sister moved to Lisbon last spring and surfs every weekend")
    add(c, "The staging database is PostgreSQL 16 on port 5433")

    detail = c.get(f"/api/v1/memories/{row['id']}").json()
    assert detail["text"] == row["content"] and detail["app_name"] == "tests"
    assert isinstance(detail["created_at"], int) and detail["user_id"] == user

    listing = c.get("/api/v1/memories/", params={"size": 2, "page": 1}).json()
    assert listing["total"] == 3 and listing["pages"] == 2 and len(listing["items"]) == 2
    assert set(listing["items"][0]) == {
        "id", "content", "created_at", "state", "app_id", "app_name", "categories", "metadata_"
    }  # fmt: skip

    results = c.post(
        "/api/v1/memories/search", json={"query": "which test runner do I use?", "limit": 3}
    ).json()
    assert results["results"][0]["id"] == row["id"]
    first = results["results"][0]
    assert set(first) >= {"id", "content", "score", "metadata", "app", "created_at"}
    assert first["score"] > results["results"][-1]["score"]
    city = c.post("/api/v1/memories/search", json={"query": "where does my sister live?", "limit": 1}).json()
    assert "Lisbon" in city["results"][0]["content"]


def test_update_re_embeds(srv: ApiServer) -> None:
    _, c = fresh_user(srv)
    row = add(c, "Deploys happen on Fridays at noon")
    add(c, "I drink green tea in the afternoon")
    updated = c.put(
        f"/api/v1/memories/{row['id']}", json={"memory_content": "Our favourite editor is Neovim"}
    )
    assert updated.status_code == 200 and updated.json()["content"] == "Our favourite editor is Neovim"
    hit = c.post("/api/v1/memories/search", json={"query": "which text editor?", "limit": 1}).json()[
        "results"
    ][0]
    assert hit["id"] == row["id"] and hit["content"] == "Our favourite editor is Neovim"


def test_states_delete_and_access_log(srv: ApiServer) -> None:
    _, c = fresh_user(srv)
    keep = add(c, "The office wifi password rotates monthly")
    archived = add(c, "Kubernetes cluster runs on three bare-metal nodes")
    paused = add(c, "I am allergic to peanuts")
    gone = add(c, "Birthday party planned for the 14th of June")

    assert (
        c.post("/api/v1/memories/actions/archive", json=[archived["id"]])
        .json()["message"]
        .endswith("archived 1 memories")
    )
    r = c.post("/api/v1/memories/actions/pause", json={"memory_ids": [paused["id"]], "state": "paused"})
    assert r.status_code == 200, r.text
    r = c.request("DELETE", "/api/v1/memories/", json={"memory_ids": [gone["id"]]})
    assert r.json() == {"message": "Successfully deleted 1 memories"}

    listed = {m["id"]: m["state"] for m in c.get("/api/v1/memories/").json()["items"]}
    assert listed == {keep["id"]: "active", paused["id"]: "paused"}
    shown = c.post("/api/v1/memories/filter", json={"show_archived": True}).json()
    assert {m["id"] for m in shown["items"]} == {keep["id"], paused["id"], archived["id"]}
    assert c.get(f"/api/v1/memories/{gone['id']}").status_code == 404

    ids = [
        h["id"]
        for h in c.post("/api/v1/memories/search", json={"query": "peanuts kubernetes birthday"}).json()[
            "results"
        ]
    ]
    assert ids == [keep["id"]]  # only active memories are searchable

    r = c.post("/api/v1/memories/actions/pause", json={"memory_ids": [paused["id"]], "state": "active"})
    # Through the app that wrote them: a read through an app that does not exist (the default
    # "openmemory" here) finds the same but creates no app, so it has no access log to write.
    hits = c.post("/api/v1/memories/search", json={"query": "food allergy", "limit": 1}).json()["results"]
    assert hits[0]["id"] == paused["id"]
    search = {"query": "food allergy", "limit": 1, "app": "tests"}
    assert c.post("/api/v1/memories/search", json=search).json()["results"][0]["id"] == paused["id"]
    log = c.get(f"/api/v1/memories/{paused['id']}/access-log").json()
    assert (
        log["total"] == 1
        and log["logs"][0]["access_type"] == "search"
        and log["logs"][0]["app_name"] == "tests"
    )


def test_filter_sort_categories_related(srv: ApiServer) -> None:
    _, c = fresh_user(srv)
    a = add(c, "Flight to Tokyo booked for March, hotel near Shinjuku", app="travel-app")
    b = add(c, "Train pass for a two week trip around Japan", app="travel-app")
    add(c, "Quarterly tax payment is due in April", app="money")
    apps = c.post(
        "/api/v1/memories/filter",
        json={"app_ids": [a["app_id"]], "sort_column": "memory", "sort_direction": "asc"},
    )
    assert [m["id"] for m in apps.json()["items"]] == [a["id"], b["id"]]
    assert c.post("/api/v1/memories/filter", json={"search_query": "tax"}).json()["total"] == 1
    assert c.post("/api/v1/memories/filter", json={"sort_column": "nope"}).status_code == 422
    categories = c.get("/api/v1/memories/categories").json()
    assert categories["total"] >= 1 and "travel" in {cat["name"] for cat in categories["categories"]}
    related = c.get(f"/api/v1/memories/{a['id']}/related").json()
    assert related["size"] == 5 and b["id"] in {m["id"] for m in related["items"]}
    by_category = c.get("/api/v1/memories/", params={"categories": "travel"}).json()
    assert a["id"] in {m["id"] for m in by_category["items"]}
    # Search carries each hit's category names (sorted), the same as the memory itself.
    hits = c.post("/api/v1/memories/search", json={"query": "trip to Japan", "limit": 3}).json()["results"]
    for hit in hits:
        assert c.get(f"/api/v1/memories/{hit['id']}").json()["categories"] == hit["categories"]
    assert "travel" in next(hit["categories"] for hit in hits if hit["id"] == a["id"])
    # A stated preference is filed as one (the embedding alone said "technical support").
    pytest_pref = add(c, "I prefer pytest over unittest", app="notes")
    categories_of = c.get(f"/api/v1/memories/{pytest_pref['id']}").json()["categories"]
    assert "preferences" in categories_of and "technical support" not in categories_of[:1], categories_of


def test_auth_and_isolation(srv: ApiServer) -> None:
    alice, a = fresh_user(srv)
    bob, b = fresh_user(srv)
    secret = add(a, "Alice's private note about her recovery plan")
    anonymous = srv.client().get("/api/v1/memories/")
    assert anonymous.status_code == 401 and anonymous.json()["error"] == "unauthorised"
    assert srv.client().get("/api/v1/memories/", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert b.get(f"/api/v1/memories/{secret['id']}").status_code == 404  # as an unknown id
    assert b.get("/api/v1/memories/", params={"user_id": alice}).status_code == 403
    assert b.post("/api/v1/memories/", json={"user_id": alice, "text": "x"}).status_code == 403
    assert b.put(f"/api/v1/memories/{secret['id']}", json={"memory_content": "hijacked"}).status_code == 404
    assert b.request("DELETE", "/api/v1/memories/", json={"memory_ids": [secret["id"]]}).json()[
        "message"
    ] == ("Successfully deleted 0 memories")
    bob_hits = b.post("/api/v1/memories/search", json={"query": "recovery plan"}).json()["results"]
    assert bob_hits == []
    assert a.get(f"/api/v1/memories/{secret['id']}").json()["text"].startswith("Alice")

    admin = client(srv, srv.admin_token)
    assert admin.get("/api/v1/memories/").status_code == 422  # the admin token must name a user
    assert admin.get("/api/v1/memories/", params={"user_id": alice}).json()["total"] == 1
    assert srv.client().get("/health").json()["status"] == "ok"  # no token needed
    assert bob


def test_refusals_keep_their_headers(srv: ApiServer) -> None:
    """A 401 names the scheme it wants (RFC 6750) and a 405 the methods it allows, whether our
    typed error or Starlette's HTTPException refused."""
    for headers in ({}, {"Authorization": "Bearer nope"}):
        refused = srv.client().get("/api/v1/memories/", headers=headers, timeout=30)
        assert refused.status_code == 401 and refused.json()["error"] == "unauthorised"
        assert refused.headers.get("www-authenticate") == "Bearer"
    # The MCP transport answers its own 401s from the same typed error.
    mcp = srv.client().post("/mcp/claude-code/http/someone", json={}, timeout=30)
    assert mcp.status_code == 401 and mcp.headers.get("www-authenticate") == "Bearer"
    wrong_method = srv.client().delete("/health", timeout=30)
    assert wrong_method.status_code == 405 and wrong_method.json()["error"] == "method_not_allowed"
    assert "GET" in wrong_method.headers.get("allow", "").split(", ")


def test_bad_input_is_4xx_json_and_changes_nothing(srv: ApiServer) -> None:
    _, c = fresh_user(srv)
    add(c, "baseline memory")
    before = total(c)
    cases = [
        c.post("/api/v1/memories/", content=b"{not json", headers={"content-type": "application/json"}),
        c.post("/api/v1/memories/", json={"text": 42}),
        c.post("/api/v1/memories/", json={"text": "   "}),
        c.post("/api/v1/memories/", json={}),
        c.post("/api/v1/memories/", json={"text": "x", "app": ""}),
        c.post("/api/v1/memories/", json={"text": "x", "metadata": "not an object"}),
        c.post("/api/v1/memories/", json={"text": "x" * 2_100_000}),
        c.get("/api/v1/memories/not-a-uuid"),
        c.get(f"/api/v1/memories/{uuid.uuid4()}"),
        c.put(f"/api/v1/memories/{uuid.uuid4()}", json={"memory_content": "x"}),
        c.get("/api/v1/memories/", params={"user_id": "bad user!"}),
        c.post("/api/v1/memories/search", json={"query": "x", "limit": 0}),
        c.post("/api/v1/memories/actions/pause", json={}),
        c.request("DELETE", "/api/v1/memories/", json={"memory_ids": ["nope"]}),
    ]
    statuses = [r.status_code for r in cases]
    assert statuses == [422, 422, 422, 422, 422, 422, 413, 422, 404, 404, 422, 422, 422, 422]
    for response in cases:
        body = response.json()
        assert set(body) >= {"detail", "error"} and "Traceback" not in response.text
    assert "malformed JSON" in cases[0].json()["detail"]
    assert total(c) == before


def test_openapi_docs(srv: ApiServer) -> None:
    spec = srv.client().get("/openapi.json").json()
    assert "/api/v1/memories" in spec["paths"] and "/api/v1/memories/search" in spec["paths"]
    assert srv.client().get("/docs").status_code == 200


def test_memories_survive_a_restart(server: MemoryServer) -> None:
    token = server.make_token(f"u{uuid.uuid4().hex[:10]}")
    with client(server, token) as c:
        row = add(c, "The release checklist lives in docs/RELEASING.md")
    server.restart()
    with client(server, token) as c:
        hits = c.post("/api/v1/memories/search", json={"query": "where is the release checklist?"}).json()
        assert hits["results"][0]["id"] == row["id"]
        assert c.get(f"/api/v1/memories/{row['id']}").json()["text"] == row["content"]


@pytest.mark.postgres
def test_postgresql_metadata(start_server, postgres_url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = start_server(env={"DATABASE_URL": postgres_url})
    token = server.make_token("dave")
    with client(server, token) as c:
        row = add(c, "Metadata for this user lives in PostgreSQL")
        add(c, "A second memory to page through")
        c.post("/api/v1/memories/actions/archive", json=[row["id"]])
    server.restart()
    with client(server, token) as c:
        assert c.post("/api/v1/memories/filter", json={"show_archived": True}).json()["total"] == 2
        assert c.get("/api/v1/memories/").json()["total"] == 1
        # hybrid search runs its keyword half on PostgreSQL full text here
        hits = c.post("/api/v1/memories/search", json={"query": "page through", "limit": 5}).json()["results"]
        assert [h["content"] for h in hits] == ["A second memory to page through"]
    with psycopg.connect(postgres_url) as connection:
        states = dict(connection.execute("SELECT state, count(*) FROM memories GROUP BY state").fetchall())
        assert states == {"archived": 1, "active": 1}
        assert connection.execute("SELECT count(*) FROM memory_status_history").fetchone() == (1,)
    assert not (server.data_dir / "memory.db").exists()  # nothing went to SQLite


def test_batch_create_reports_each_item(srv: ApiServer) -> None:
    _, c = fresh_user(srv)
    add(c, "Already stored before the batch")
    response = c.post(
        "/api/v1/memories/batch",
        json={
            "app": "bulk",
            "items": [
                {"text": "First bulk memory about gardening tomatoes"},
                {"text": "   "},
                {"text": "already stored BEFORE the batch"},
                {"text": "Second bulk memory about repairing bicycles", "metadata": {"k": 1}},
            ],
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["created"], body["failed"]) == (2, 1)
    assert body["results"][1]["status"] == 422 and "non-empty" in body["results"][1]["error"]
    assert body["results"][2]["results"][0]["already_existed"] is True
    hit = c.post("/api/v1/memories/search", json={"query": "fixing a bike", "limit": 1}).json()["results"][0]
    assert hit["content"].startswith("Second bulk") and hit["app"] == "bulk" and hit["metadata"]["k"] == 1
    assert c.post("/api/v1/memories/batch", json={"items": []}).status_code == 422
    assert total(c) == 3


def test_keyword_half_finds_rare_words_the_embedding_blurs(srv: ApiServer) -> None:
    _, c = fresh_user(srv)
    target = add(c, "The staging VPN gateway is zq-gw-7731 in the Frankfurt rack")
    for n in range(15):
        add(c, f"Network note {n}: the VPN gateway handles staging traffic for rack number {n}")
    hits = c.post("/api/v1/memories/search", json={"query": "zq-gw-7731", "limit": 3}).json()["results"]
    assert hits[0]["id"] == target["id"]
    c.put(f"/api/v1/memories/{target['id']}", json={"memory_content": "The gateway was renamed to ab-gw-1"})
    hits = c.post("/api/v1/memories/search", json={"query": "zq-gw-7731", "limit": 16}).json()["results"]
    assert all("zq-gw-7731" not in h["content"] for h in hits)  # the keyword index follows edits
    c.request("DELETE", "/api/v1/memories/", json={"memory_ids": [target["id"]]})
    hits = c.post("/api/v1/memories/search", json={"query": "ab-gw-1 renamed", "limit": 16}).json()["results"]
    assert target["id"] not in {h["id"] for h in hits}
