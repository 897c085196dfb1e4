"""The REST endpoints the web UI needs, against the real server: who am I, tokens, dashboard
insights (totals, series, hygiene), the browse list and a memory's status history — each with
the house's auth rules (a user token acts for its user, the admin token for anyone, 403
otherwise)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from claude_code_memory.client.mcp_client import Mem0MCPClient
from tests.support.server import MemoryServer

pytestmark = pytest.mark.timeout(300)

GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    env = {"CCMEM_PRIVACY__AUTO_DELETE_AFTER_DAYS": "3"}
    with MemoryServer(tmp_path_factory.mktemp("ui-endpoints"), env=env) as started:
        yield started


class Caller:
    def __init__(self, server: MemoryServer, token: str, name: str | None = None) -> None:
        self.name = name
        self.token = token
        self.http = httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
        )

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        assert response.status_code < 300, response.text
        return response.json()

    def add(self, text: str, **fields: Any) -> str:
        return self.ok("POST", "/api/v1/memories", json={"text": text, **fields})["id"]


def user(server: MemoryServer, name: str) -> Caller:
    unique = f"{name}-{uuid.uuid4().hex[:6]}"
    return Caller(server, server.make_token(unique), unique)


def admin(server: MemoryServer) -> Caller:
    return Caller(server, server.admin_token)


def error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    return response.json()["detail"]


# -- /me --------------------------------------------------------------------------------------
def test_me_names_the_tokens_user(server: MemoryServer) -> None:
    alice = user(server, "alice")
    assert alice.ok("GET", "/api/v1/me") == {"user_id": alice.name, "is_admin": False}
    assert admin(server).ok("GET", "/api/v1/me") == {"user_id": None, "is_admin": True}
    assert httpx.get(f"{server.base_url}/api/v1/me").status_code == 401
    bad = httpx.get(f"{server.base_url}/api/v1/me", headers={"Authorization": "Bearer ccm_nope"})
    assert bad.status_code == 401


# -- /tokens -----------------------------------------------------------------------------------
def test_tokens_create_list_revoke_scoped_to_their_user(server: MemoryServer) -> None:
    alice, bob = user(server, "alice"), user(server, "bob")
    created = alice.ok("POST", "/api/v1/tokens", json={"name": "laptop"})
    assert created["token"].startswith("ccm_") and created["name"] == "laptop"
    assert created["user_id"] == alice.name and created["prefix"] == created["token"][:12]
    laptop = Caller(server, created["token"])
    assert laptop.ok("GET", "/api/v1/me")["user_id"] == alice.name

    listed = alice.ok("GET", "/api/v1/tokens")["tokens"]
    assert {t["user_id"] for t in listed} == {alice.name} and len(listed) == 2
    assert all("token" not in t for t in listed)  # digests only: a listing never shows a token
    assert error(alice.http.get("/api/v1/tokens", params={"user_id": bob.name}), 403)

    # Another user's token: 404, as an unknown one (its existence does not leak), and it keeps working.
    bobs = bob.ok("GET", "/api/v1/tokens")["tokens"][0]
    assert "no token" in error(alice.http.delete(f"/api/v1/tokens/{bobs['id']}"), 404)
    assert bob.ok("GET", "/api/v1/me")["user_id"] == bob.name
    error(alice.http.delete("/api/v1/tokens/no-such-token"), 404)

    revoked = alice.ok("DELETE", f"/api/v1/tokens/{created['id']}")
    assert revoked == {"id": created["id"], "prefix": created["prefix"], "status": "revoked"}
    assert laptop.http.get("/api/v1/me").status_code == 401
    assert [
        t["revoked"] for t in alice.ok("GET", "/api/v1/tokens")["tokens"] if t["id"] == created["id"]
    ] == [True]

    # Bad input: nothing created.
    error(alice.http.post("/api/v1/tokens", json={"name": "x" * 101}), 422)
    error(alice.http.post("/api/v1/tokens", json={"nmae": "typo"}), 422)
    assert len(alice.ok("GET", "/api/v1/tokens")["tokens"]) == 2


def test_the_admin_manages_anyones_tokens_but_must_name_the_user(server: MemoryServer) -> None:
    root, carol, dave = admin(server), user(server, "carol"), user(server, "dave")
    assert "user_id is required" in error(root.http.post("/api/v1/tokens", json={}), 422)
    made = root.ok("POST", "/api/v1/tokens", json={"user_id": carol.name, "name": "by admin"})
    assert Caller(server, made["token"]).ok("GET", "/api/v1/me")["user_id"] == carol.name
    everyone = {t["user_id"] for t in root.ok("GET", "/api/v1/tokens")["tokens"]}
    assert {carol.name, dave.name} <= everyone  # every user's, not only those of this test's order
    root.ok("DELETE", f"/api/v1/tokens/{made['prefix']}")
    assert (
        httpx.get(
            f"{server.base_url}/api/v1/me", headers={"Authorization": f"Bearer {made['token']}"}
        ).status_code
        == 401
    )


# -- /insights ---------------------------------------------------------------------------------
def test_insights_totals_series_and_hygiene(server: MemoryServer) -> None:
    dana = user(server, "dana")
    deploy = dana.add("We deploy the web app with blue-green releases", app="cursor", project="/work/web")
    editor = dana.add("My editor is Helix", app="cursor")
    dana.add("The CI token was " + GITHUB_TOKEN + " until it was rotated", app="notes")
    paused = dana.add("Paused fact about lunch", app="notes")
    archived = dana.add("Archived fact about parking", app="notes", project="/work/web")
    dana.ok("POST", "/api/v1/memories/actions/pause", json={"memory_ids": [paused]})
    dana.ok("POST", "/api/v1/memories/actions/pause", json={"memory_ids": [archived], "state": "archived"})
    pending = dana.ok(
        "POST",
        "/api/v1/capture",
        json={
            "app": "claude-code",
            "project": "/work/web",
            # Not junk: the capture filter keeps fragments ("a capture") out of the queue.
            "messages": [{"role": "user", "content": "Remember that the web app deploys on Fridays"}],
        },
    )
    assert pending["status"] == "pending"
    # An edit may not make two memories say the same thing (one row per text): 409, nothing changes.
    twin = dana.add("A second note that will be edited")
    refused = dana.http.put(f"/api/v1/memories/{twin}", json={"memory_content": "My editor is Helix"})
    assert refused.status_code == 409 and editor in refused.json()["detail"]
    assert dana.ok("GET", f"/api/v1/memories/{twin}")["text"] == "A second note that will be edited"
    # A client (not the UI) recalls one memory.
    hits = dana.ok(
        "POST", "/api/v1/memories/search", json={"query": "blue-green deploys", "limit": 1, "app": "cursor"}
    )
    assert hits["results"][0]["id"] == deploy
    # The UI's own reads do not count as recall, and neither does a client listing everything.
    dana.ok("POST", "/api/v1/memories/search", json={"query": "Helix editor", "limit": 5, "app": "ui"})
    with Mem0MCPClient(server.base_url, dana.name, dana.token, client_name="cursor") as lister:
        assert len(lister.list()) >= 3

    body = dana.ok("GET", "/api/v1/insights", params={"days": 7})
    assert body["user_id"] == dana.name
    assert body["by_state"] == {"active": 4, "paused": 1, "archived": 1, "pending": 1, "trashed": 0}
    assert body["total"] == 6 and body["pending"] == 1
    apps = {row["app"]: row["count"] for row in body["by_app"]}
    assert apps["cursor"] == 2 and apps["notes"] == 3 and apps["openmemory"] == 1
    projects = {row["project"]: row["count"] for row in body["by_project"]}
    assert projects == {"/work/web": 2, None: 4}  # the pending capture is not counted as kept
    assert len(body["over_time"]) == 7
    today = datetime.now(UTC).date().isoformat()
    assert body["over_time"][-1] == {"date": today, "count": 6}

    hygiene = body["hygiene"]
    assert hygiene["duplicates"]["groups"] == 0 and hygiene["duplicates"]["memories"] == 0
    assert hygiene["redacted"]["memories"] == 1 and hygiene["redacted"]["redactions"] >= 1
    assert GITHUB_TOKEN not in str(hygiene["redacted"]["examples"])
    never = hygiene["never_recalled"]
    assert never["memories"] == 3  # active ones minus the one cursor recalled (UI reads do not count)
    assert deploy not in {e["id"] for e in never["examples"]}
    # auto_delete_after_days is 3 on this server: everything kept expires within 7 days, nothing within 1.
    assert hygiene["expiring_soon"]["memories"] >= 6
    soon = dana.ok("GET", "/api/v1/insights", params={"expiring_within_days": 1})["hygiene"]["expiring_soon"]
    assert soon["memories"] == 0


def test_insights_auth(server: MemoryServer) -> None:
    erin, frank = user(server, "erin"), user(server, "frank")
    erin.add("Erin's only memory")
    error(frank.http.get("/api/v1/insights", params={"user_id": erin.name}), 403)
    assert "user_id is required" in error(admin(server).http.get("/api/v1/insights"), 422)
    assert admin(server).ok("GET", "/api/v1/insights", params={"user_id": erin.name})["total"] == 1
    error(erin.http.get("/api/v1/insights", params={"days": 0}), 422)


def test_insights_count_hook_injections_and_captures(server: MemoryServer, tmp_path: Any) -> None:
    kim, lee = user(server, "kim"), user(server, "lee")
    cwd = str(tmp_path / "shop")  # a session there is of the project "shop", its folder's name
    first = kim.add("The shop deploys on Fridays", app="notes", project="shop")
    second = kim.add("The shop's database is Postgres", app="notes", project="shop")
    lee.add("Lee's own note", app="notes")
    before = kim.ok("GET", "/api/v1/insights")
    assert before["hooks"] == {"injections": 0, "captures": 0}

    def hook(caller: Caller, **fields: Any) -> Any:
        body = {"session_id": f"s-{caller.name}", "cwd": cwd, "transcript_path": "/dev/null", **fields}
        return caller.ok("POST", "/api/v1/hooks/claude-code", json=body)

    briefing = hook(kim, hook_event_name="SessionStart", source="startup")
    context = briefing["hookSpecificOutput"]["additionalContext"]
    assert first in context and second in context
    hook(kim, hook_event_name="UserPromptSubmit", prompt="Remember: tea at four")
    hook(kim, hook_event_name="Stop", last_assistant_message="Noted.")
    # A turn the proxy captured under the same app is not the hooks' work.
    kim.ok(
        "POST",
        "/api/v1/capture",
        json={"app": "claude-code", "messages": [{"role": "user", "content": "a proxy capture"}]},
    )
    hook(lee, hook_event_name="SessionStart", source="startup")  # another user's session

    after = kim.ok("GET", "/api/v1/insights")
    assert after["hooks"] == {"injections": 2, "captures": 1}
    assert after["pending"] == 2 and {"total", "by_state", "hygiene", "by_app"} <= set(after)
    assert lee.ok("GET", "/api/v1/insights")["hooks"] == {"injections": 1, "captures": 0}


# -- browse ------------------------------------------------------------------------------------
def test_browse_filters_sorts_pages_and_lists_facets(server: MemoryServer) -> None:
    gina = user(server, "gina")
    a = gina.add("Alpha: the API is written in FastAPI", app="cursor", project="/work/api")
    b = gina.add("Beta: the UI uses server-rendered templates", app="cursor", project="/work/ui")
    c = gina.add("Gamma: tea with oat milk", app="notes")
    d = gina.add("Delta: an archived idea", app="notes", project="/work/api")
    gina.ok("POST", "/api/v1/memories/actions/pause", json={"memory_ids": [d], "state": "archived"})

    def ids(**filters: Any) -> list[str]:
        return [m["id"] for m in gina.ok("POST", "/api/v1/memories/browse", json=filters)["items"]]

    assert set(ids()) == {a, b, c}  # default states: active and paused
    assert ids(apps=["notes"]) == [c]
    assert ids(apps=["notes"], states=["archived"]) == [d]
    assert set(ids(states=["active", "paused", "archived"])) == {a, b, c, d}
    assert ids(projects=["/work/api"]) == [a]
    assert ids(projects=[""]) == [c]
    assert ids(search_query="TEMPLATES") == [b]
    assert ids(sort="content", direction="asc") == [a, b, c]
    assert ids(sort="content", direction="desc", size=2) == [c, b]
    second = gina.ok(
        "POST", "/api/v1/memories/browse", json={"sort": "content", "size": 2, "page": 2, "direction": "asc"}
    )
    assert [m["id"] for m in second["items"]] == [c] and second["total"] == 3 and second["pages"] == 2
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    assert ids(from_date=tomorrow) == []
    assert set(ids(to_date=tomorrow)) == {a, b, c}
    category = gina.ok("GET", f"/api/v1/memories/{c}")["categories"]
    if category:
        assert c in ids(categories=[category[0]])

    body = gina.ok("POST", "/api/v1/memories/browse", json={})
    assert body["facets"]["apps"] == ["cursor", "notes"]
    assert body["facets"]["projects"] == ["/work/api", "/work/ui"]
    first = body["items"][0]
    assert {"id", "content", "state", "app_name", "project", "categories", "created_at", "redactions"} <= set(
        first
    )

    error(gina.http.post("/api/v1/memories/browse", json={"state": ["active"]}), 422)  # misspelt: refused
    error(gina.http.post("/api/v1/memories/browse", json={"states": ["deleted"]}), 422)
    error(gina.http.post("/api/v1/memories/browse", json={"from_date": "yesterday"}), 422)
    other = user(server, "hank")
    error(other.http.post("/api/v1/memories/browse", json={"user_id": gina.name}), 403)
    assert other.ok("POST", "/api/v1/memories/browse", json={})["total"] == 0


def test_browse_filters_by_scope(server: MemoryServer) -> None:
    ivy = user(server, "ivy")
    anywhere = ivy.add("Scope test: tabs over spaces everywhere")
    in_project = ivy.add("Scope test: the shop uses Postgres", project="shop")
    in_task = ivy.add("Scope test: checkout needs a retry", project="shop", task="checkout")

    def ids(**filters: Any) -> set[str]:
        return {m["id"] for m in ivy.ok("POST", "/api/v1/memories/browse", json=filters)["items"]}

    assert ids() == {anywhere, in_project, in_task}
    assert ids(scope="global") == {anywhere}
    assert ids(scope="project") == {in_project}
    assert ids(scope="task") == {in_task}
    assert ids(scope="task", tasks=["other"]) == set()
    body = ivy.ok("POST", "/api/v1/memories/browse", json={"scope": "task"})
    assert body["items"][0]["task"] == "checkout" and body["facets"]["tasks"] == ["checkout"]
    error(ivy.http.post("/api/v1/memories/browse", json={"scope": "everywhere"}), 422)


# -- status history ------------------------------------------------------------------------------
def test_status_history_is_the_owners_alone(server: MemoryServer) -> None:
    ivy, jack = user(server, "ivy"), user(server, "jack")
    memory = ivy.add("A memory whose life we follow")
    assert ivy.ok("GET", f"/api/v1/memories/{memory}/history")["history"] == []
    ivy.ok("POST", "/api/v1/memories/actions/pause", json={"memory_ids": [memory]})
    ivy.ok("POST", "/api/v1/memories/actions/pause", json={"memory_ids": [memory], "state": "active"})
    history = ivy.ok("GET", f"/api/v1/memories/{memory}/history")["history"]
    assert [(h["old_state"], h["new_state"]) for h in history] == [("active", "paused"), ("paused", "active")]
    assert {h["changed_by"] for h in history} == {ivy.name}
    error(jack.http.get(f"/api/v1/memories/{memory}/history"), 404)
    assert len(admin(server).ok("GET", f"/api/v1/memories/{memory}/history")["history"]) == 2
    error(ivy.http.get(f"/api/v1/memories/{uuid.uuid4()}/history"), 404)
    error(ivy.http.get("/api/v1/memories/not-a-uuid/history"), 422)
