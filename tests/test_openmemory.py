"""Moving in from OpenMemory: ``ccmem import openmemory`` on a database built with OpenMemory's
schema, and the opt-in local mode for clients that send no token (the stock OpenMemory UI's
requests replayed as its source sends them: openmemory/ui/hooks/*.ts at mem0 540d23d)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from claude_code_memory.auth.identity import Principal, acting_user
from claude_code_memory.auth.local_mode import LocalMode, require_loopback
from claude_code_memory.config import load_settings
from claude_code_memory.errors import ConfigError, Forbidden

from .support.openmemory_db import MemoryState, OpenMemoryDb
from .support.processes import free_port
from .support.server import MemoryServer, ccmem_bin

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def epoch(moment: datetime) -> int:
    return int(moment.replace(tzinfo=UTC).timestamp())


# -- the import ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("openmemory-import")) as started:
        yield started


def build_openmemory(path: Path) -> dict[str, Any]:
    db = OpenMemoryDb(path)
    default_user, alice = db.user("default_user"), db.user("alice")
    openmemory = db.app(default_user, "openmemory")
    cursor = db.app(default_user, "cursor", is_active=False)
    claude = db.app(alice, "claude")
    work, prefs = db.category("work"), db.category("preferences")
    made = {
        "pytest": datetime(2024, 3, 1, 9, 30),
        "deploy": datetime(2024, 4, 2, 10, 0),
        "jenkins": datetime(2023, 11, 5, 8, 0),
        "secret": datetime(2024, 5, 6, 7, 0),
    }
    ids = {
        "pytest": db.memory(
            default_user,
            openmemory,
            "I prefer pytest over unittest",
            created_at=made["pytest"],
            updated_at=datetime(2024, 3, 2),
            category_ids=(work, prefs),
        ),
        "deploy": db.memory(
            default_user,
            cursor,
            "The deploy script lives in scripts/deploy.sh",
            state=MemoryState.paused,
            created_at=made["deploy"],
        ),
        "jenkins": db.memory(
            default_user,
            openmemory,
            "We ran CI on Jenkins before GitHub Actions",
            state=MemoryState.archived,
            created_at=made["jenkins"],
            archived_at=datetime(2024, 1, 9),
        ),
        "secret": db.memory(
            default_user, openmemory, f"My GitHub token is {SECRET}", created_at=made["secret"]
        ),
        "deleted": db.memory(
            default_user,
            openmemory,
            "A memory deleted in OpenMemory",
            state=MemoryState.deleted,
            created_at=datetime(2024, 2, 2),
        ),
        # alice's copy of default_user's first memory: one duplicate once both map to one user.
        "copy": db.memory(alice, claude, "I prefer  pytest over unittest", created_at=datetime(2024, 6, 1)),
        "huge": db.memory(default_user, openmemory, "x" * 25_000, created_at=datetime(2024, 6, 2)),
    }
    db.access(
        ids["pytest"], cursor, datetime(2024, 3, 3, 12, 0), "search", {"query": "test runner", "score": 0.8}
    )
    db.access(ids["pytest"], openmemory, datetime(2024, 3, 4, 12, 0), "list", {})
    db.state_change(ids["deploy"], default_user, MemoryState.active, MemoryState.paused, datetime(2024, 4, 3))
    db.close()
    return {"ids": ids, "made": made}


def run_import(server: MemoryServer, path: Path, token: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return server.ccmem(
        "import",
        "openmemory",
        str(path),
        "--json",
        "--url",
        server.base_url,
        "--token",
        token,
        *extra,
        check=False,
        timeout=180,
    )


def test_import_openmemory_keeps_states_dates_categories_redacts_and_runs_once(
    plain_server: MemoryServer, tmp_path: Path
) -> None:
    source = build_openmemory(tmp_path / "openmemory.db")
    token = plain_server.make_token("mover")
    first = run_import(plain_server, tmp_path / "openmemory.db", token)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["read"] == 7
    assert report["read_by_state"] == {"active": 4, "paused": 1, "archived": 1, "deleted": 1}
    assert report["users"] == {"alice": "(the token's user)", "default_user": "(the token's user)"}
    assert report["skipped_deleted"] == 1
    assert report["imported"] == 4
    assert report["imported_by_state"] == {"active": 2, "paused": 1, "archived": 1}
    assert report["skipped_duplicate"] == 1  # alice's copy, same text up to whitespace
    assert report["refused"] == 1 and "maximum is 20000" in report["refusals"][0]["reason"]
    assert report["refusals"][0]["openmemory_id"] == str(source["ids"]["huge"])
    assert report["access_logs"] == 2

    api = httpx.Client(
        base_url=plain_server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    listed = api.post("/api/v1/memories/filter", json={"size": 50, "show_archived": True}).json()["items"]
    by_text = {item["content"]: item for item in listed}
    pytest_item = by_text["I prefer pytest over unittest"]
    assert pytest_item["created_at"] == epoch(source["made"]["pytest"])
    assert sorted(pytest_item["categories"]) == ["preferences", "work"]
    assert pytest_item["app_name"] == "openmemory"
    assert pytest_item["metadata_"]["openmemory_id"] == str(source["ids"]["pytest"])
    deploy = by_text["The deploy script lives in scripts/deploy.sh"]
    assert (deploy["state"], deploy["app_name"]) == ("paused", "cursor")
    assert deploy["created_at"] == epoch(source["made"]["deploy"])
    jenkins = by_text["We ran CI on Jenkins before GitHub Actions"]
    assert jenkins["state"] == "archived"
    secret = [item for item in listed if item["content"].startswith("My GitHub token is")]
    assert len(secret) == 1 and SECRET not in secret[0]["content"]
    assert "A memory deleted in OpenMemory" not in by_text
    assert len(listed) == 4

    apps = {app["name"]: app for app in api.get("/api/v1/apps", params={"page_size": 50}).json()["apps"]}
    assert apps["cursor"]["is_active"] is False  # paused in OpenMemory, paused here
    logs = api.get(f"/api/v1/memories/{pytest_item['id']}/access-log").json()["logs"]
    assert sorted((log["access_type"], log["app_name"]) for log in logs) == [
        ("list", "openmemory"),
        ("search", "cursor"),
    ]
    # Its recall count (what a briefing's "most recalled" reads): the search, not the listing.
    with closing(sqlite3.connect(plain_server.data_dir / "memory.db")) as database:
        row = database.execute(
            "SELECT recalls, recalled_at IS NOT NULL FROM memories WHERE id = ?",
            (uuid.UUID(pytest_item["id"]).hex,),
        ).fetchone()
    assert row == (1, 1)
    # A search on the re-embedded memory finds it: it was embedded with our embedder.
    hits = api.post("/api/v1/memories/search", json={"query": "which test framework do I like"}).json()
    assert hits["results"][0]["content"] == "I prefer pytest over unittest"

    second = run_import(plain_server, tmp_path / "openmemory.db", token)
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["imported"] == 0
    assert again["skipped_already_imported"] == 4
    listed_again = api.post("/api/v1/memories/filter", json={"size": 50, "show_archived": True}).json()
    assert listed_again["total"] == 4


def test_import_into_another_users_memories_needs_the_admin_token(
    plain_server: MemoryServer, tmp_path: Path
) -> None:
    build_openmemory(tmp_path / "openmemory.db")
    token = plain_server.make_token("someone")
    refused = run_import(plain_server, tmp_path / "openmemory.db", token, "--user-map", "alice=bob")
    assert refused.returncode == 1
    assert "cannot access the memories of user 'bob'" in refused.stderr
    mapped = run_import(
        plain_server,
        tmp_path / "openmemory.db",
        plain_server.admin_token,
        "--user-map",
        "alice=bob",
        "--user",
        "carol",
    )
    assert mapped.returncode == 0, mapped.stderr
    report = json.loads(mapped.stdout)
    assert report["users"] == {"alice": "bob", "default_user": "carol"}
    assert report["imported"] == 5 and report["skipped_duplicate"] == 0  # the copy is bob's own


def test_import_refuses_a_file_that_is_not_openmemorys(plain_server: MemoryServer, tmp_path: Path) -> None:
    not_a_db = tmp_path / "notes.db"
    not_a_db.write_text("hello")
    result = run_import(plain_server, not_a_db, plain_server.admin_token, "--user", "x")
    assert result.returncode == 1 and "not a SQLite database" in result.stderr


def test_without_the_local_mode_a_request_without_a_token_is_401(plain_server: MemoryServer) -> None:
    response = httpx.get(f"{plain_server.base_url}/api/v1/stats", params={"user_id": "user"})
    assert response.status_code == 401
    assert httpx.get(f"{plain_server.base_url}/health").json()["local_mode"] == {
        "enabled": False,
        "user": None,
    }


# -- the local mode: pure checks -------------------------------------------------------------
LOCAL = LocalMode(user="me", aliases=frozenset({"user", "default_user"}), port=8765)


@pytest.mark.parametrize("host", ["evil.example:8765", "evil.example", "localhost:9999", "localhost", None])
def test_local_mode_refuses_a_host_that_is_not_this_server(host: str | None) -> None:
    with pytest.raises(Forbidden, match="DNS-rebinding"):
        LOCAL.principal(host, None)


@pytest.mark.parametrize(
    "host",
    [
        "evil@127.0.0.1:8765",  # userinfo: a parser reads the host after the @
        "evil.example:x@localhost:8765",
        "127.0.0.1:8765@evil.example",
        "localhost.:8765",
        "localhost.evil.example:8765",
        "127.0.0.1.evil.example:8765",
        "0177.0.0.1:8765",  # octal to some resolvers
        "127.1:8765",
        "127.0.0.256:8765",
        "2130706433:8765",
        "[::ffff:127.0.0.1]:8765",
        "::1:8765",
        "[::1%lo]:8765",
        " localhost:8765",
        "localhost:8765 ",
        "localhost:8765/x",
        "localhost:8765:8765",
        "localhost:+8765",
        "",
    ],
)
def test_local_mode_refuses_a_host_that_only_contains_a_loopback_name(host: str) -> None:
    with pytest.raises(Forbidden, match="DNS-rebinding"):
        LOCAL.principal(host, None)


@pytest.mark.parametrize(
    "host", ["localhost:8765", "LocalHost:8765", "127.0.0.1:8765", "127.9.8.7:8765", "[::1]:8765"]
)
def test_local_mode_takes_every_plain_loopback_host(host: str) -> None:
    assert LOCAL.principal(host, None).user_id == "me"


def test_local_mode_on_port_80_takes_a_host_without_a_port() -> None:
    on_80 = LocalMode(user="me", aliases=frozenset(), port=80)
    assert on_80.principal("localhost", None).local and on_80.principal("127.0.0.1:80", None).local
    with pytest.raises(Forbidden):
        on_80.principal("evil@localhost", None)


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "null",
        "http://localhost.evil.example",
        "file://",
        "http://evil@localhost:3000",
        "ftp://localhost:3000",
    ],
)
def test_local_mode_refuses_other_origins(origin: str) -> None:
    with pytest.raises(Forbidden, match="web page"):
        LOCAL.principal("localhost:8765", origin)


def test_local_mode_refuses_a_cross_site_load_without_an_origin() -> None:
    with pytest.raises(Forbidden, match="cross-site"):
        LOCAL.principal("127.0.0.1:8765", None, "cross-site")


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("localhost:8765", None),
        ("127.0.0.1:8765", "http://localhost:3000"),
        ("[::1]:8765", "http://[::1]:3000"),
        ("localhost:8765", "http://127.0.0.1:3000"),
    ],
)
def test_local_mode_lets_this_machine_in_as_its_user(host: str, origin: str | None) -> None:
    principal = LOCAL.principal(host, origin, "cross-site" if origin else None)
    assert (principal.user_id, principal.local, principal.is_admin) == ("me", True, False)
    assert acting_user(principal, "user") == "me" and acting_user(principal, "default_user") == "me"
    with pytest.raises(Forbidden, match="auth.local_mode.aliases"):
        acting_user(principal, "mallory")


def test_a_token_principal_gets_no_aliases() -> None:
    with pytest.raises(Forbidden):
        acting_user(Principal(user_id="me"), "user")


def test_the_server_refuses_the_local_mode_off_loopback() -> None:
    from claude_code_memory.api.app import create_app

    for host in ("0.0.0.0", "192.168.1.5", "::"):
        with pytest.raises(ConfigError, match="not a loopback address"):
            require_loopback(host)
    settings = load_settings(
        environ={"CCMEM_AUTH__LOCAL_MODE__ENABLED": "true", "CCMEM_SERVER__HOST": "0.0.0.0"}
    )
    with pytest.raises(ConfigError, match="not a loopback address"):
        create_app(settings)  # refused before anything opens
    assert load_settings(environ={}).auth.local_mode.enabled is False


@pytest.mark.integration
def test_ccmem_serve_will_not_start_the_local_mode_on_0_0_0_0(tmp_path: Path) -> None:
    env = MemoryServer(tmp_path).env | {"CCMEM_AUTH__LOCAL_MODE__ENABLED": "true"}
    completed = subprocess.run(
        [
            str(ccmem_bin()),
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
            "--data-dir",
            str(tmp_path / "d"),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 1
    assert "not a loopback address" in completed.stderr
    assert "listening" not in completed.stderr


# -- the local mode: a server ----------------------------------------------------------------
@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    env = {"CCMEM_AUTH__LOCAL_MODE__ENABLED": "true", "CCMEM_AUTH__LOCAL_MODE__USER": "localme"}
    with MemoryServer(tmp_path_factory.mktemp("local-mode"), env=env) as started:
        yield started


UI_ORIGIN = "http://localhost:3000"


def test_local_mode_refuses_rebinding_and_cross_origin_over_http(local_server: MemoryServer) -> None:
    base = local_server.base_url
    rebinding = httpx.get(
        f"{base}/api/v1/stats", params={"user_id": "user"}, headers={"Host": "evil.example"}
    )
    assert rebinding.status_code == 403 and "DNS-rebinding" in rebinding.json()["detail"]
    userinfo = httpx.get(
        f"{base}/api/v1/stats",
        params={"user_id": "user"},
        headers={"Host": f"evil@127.0.0.1:{local_server.port}"},
    )
    assert userinfo.status_code == 403 and "DNS-rebinding" in userinfo.json()["detail"], userinfo.text
    foreign = httpx.get(
        f"{base}/api/v1/stats", params={"user_id": "user"}, headers={"Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403 and "http://evil.example" in foreign.json()["detail"]
    assert "access-control-allow-origin" not in foreign.headers
    local = httpx.get(f"{base}/api/v1/stats", params={"user_id": "user"}, headers={"Origin": UI_ORIGIN})
    assert local.status_code == 200 and local.headers["access-control-allow-origin"] == UI_ORIGIN
    preflight = httpx.options(
        f"{base}/api/v1/memories/filter",
        headers={
            "Origin": UI_ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == UI_ORIGIN
    other_user = httpx.get(f"{base}/api/v1/stats", params={"user_id": "mallory"})
    assert (
        other_user.status_code == 403
        and "local mode acts only for user 'localme'" in other_user.json()["detail"]
    )
    assert httpx.get(f"{base}/health").json()["local_mode"] == {"enabled": True, "user": "localme"}


def test_local_mode_keeps_token_auth_for_requests_with_a_token(local_server: MemoryServer) -> None:
    base = local_server.base_url
    bad = httpx.get(f"{base}/api/v1/me", headers={"Authorization": "Bearer ccm_not-a-token"})
    assert bad.status_code == 401  # a wrong token is not let in as the local user
    bob = local_server.make_token("bob")
    me = httpx.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {bob}"}).json()
    assert me == {"user_id": "bob", "is_admin": False}
    aliased = httpx.get(
        f"{base}/api/v1/stats", params={"user_id": "user"}, headers={"Authorization": f"Bearer {bob}"}
    )
    assert aliased.status_code == 403  # aliases belong to the local mode only
    assert httpx.get(f"{base}/api/v1/me").json() == {"user_id": "localme", "is_admin": False}


def test_stock_openmemory_ui_requests_work_in_the_local_mode(local_server: MemoryServer) -> None:
    """Each call as openmemory/ui/hooks/*.ts makes it: no token, ``user_id`` "user", axios JSON."""
    ui = httpx.Client(base_url=local_server.base_url, headers={"Origin": UI_ORIGIN}, timeout=30)
    user = "user"
    # useMemoriesApi.createMemory
    created = ui.post(
        "/api/v1/memories/",
        json={"user_id": user, "text": "I like dark roast coffee", "infer": False, "app": "openmemory"},
    )
    assert created.status_code == 200, created.text
    ui.post(
        "/api/v1/memories/",
        json={"user_id": user, "text": "My editor is Helix", "infer": False, "app": "openmemory"},
    )
    # useMemoriesApi.fetchMemories (the list page's main call; undefined fields are left out by JSON)
    page = ui.post(
        "/api/v1/memories/filter", json={"user_id": user, "page": 1, "size": 10, "search_query": "coffee"}
    )
    assert page.status_code == 200, page.text
    body = page.json()
    assert {"items", "total", "page", "size", "pages"} <= body.keys() and body["total"] == 1
    item = body["items"][0]
    assert {"id", "content", "created_at", "state", "app_name", "categories", "metadata_"} <= item.keys()
    memory_id = item["id"]
    sorted_page = ui.post(
        "/api/v1/memories/filter",
        json={
            "user_id": user,
            "page": 1,
            "size": 10,
            "sort_column": "created_at",
            "sort_direction": "desc",
            "show_archived": False,
        },
    )
    assert sorted_page.status_code == 200 and sorted_page.json()["total"] == 2
    # fetchMemoryById, fetchAccessLogs, fetchRelatedMemories
    one = ui.get(f"/api/v1/memories/{memory_id}?user_id={user}")
    assert one.status_code == 200 and one.json()["text"] == "I like dark roast coffee"
    logs = ui.get(f"/api/v1/memories/{memory_id}/access-log?page=1&page_size=10")
    assert logs.status_code == 200 and {"total", "page", "page_size", "logs"} <= logs.json().keys()
    related = ui.get(f"/api/v1/memories/{memory_id}/related?user_id={user}")
    assert related.status_code == 200 and "items" in related.json()
    # updateMemory (the UI sends memory_id in the body too)
    updated = ui.put(
        f"/api/v1/memories/{memory_id}",
        json={"memory_id": memory_id, "memory_content": "I like light roast coffee", "user_id": user},
    )
    assert updated.status_code == 200, updated.text
    # updateMemoryState
    paused = ui.post(
        "/api/v1/memories/actions/pause",
        json={"memory_ids": [memory_id], "all_for_app": True, "state": "paused", "user_id": user},
    )
    assert paused.status_code == 200, paused.text
    assert ui.get(f"/api/v1/memories/{memory_id}?user_id={user}").json()["state"] == "paused"
    # useFiltersApi.fetchCategories
    categories = ui.get(f"/api/v1/memories/categories?user_id={user}")
    assert categories.status_code == 200 and {"categories", "total"} <= categories.json().keys()
    # useAppsApi
    apps = ui.get("/api/v1/apps/?page=1&page_size=10")
    assert apps.status_code == 200, apps.text
    app = next(a for a in apps.json()["apps"] if a["name"] == "openmemory")
    assert app["total_memories_created"] == 2
    assert ui.get(f"/api/v1/apps/{app['id']}").json()["is_active"] is True
    assert ui.get(f"/api/v1/apps/{app['id']}/memories?page=1&page_size=10").json()["total"] == 2
    assert ui.get(f"/api/v1/apps/{app['id']}/accessed?page=1&page_size=10").status_code == 200
    assert ui.put(f"/api/v1/apps/{app['id']}?is_active=false").json()["status"] == "success"
    assert ui.put(f"/api/v1/apps/{app['id']}?is_active=true").status_code == 200
    # useStats
    stats = ui.get(f"/api/v1/stats?user_id={user}")
    assert (
        stats.status_code == 200 and stats.json()["total_memories"] == 2 and stats.json()["total_apps"] == 1
    )
    # useConfig.fetchConfig: read; saving the server-wide config stays with the admin token
    config = ui.get("/api/v1/config")
    assert config.status_code == 200 and "mem0" in config.json()
    # deleteMemories
    deleted = ui.request("DELETE", "/api/v1/memories/", json={"memory_ids": [memory_id], "user_id": user})
    assert deleted.status_code == 200 and deleted.json()["message"] == "Successfully deleted 1 memories"
    # Everything landed on the local user, not on a user named "user".
    admin = httpx.get(
        f"{local_server.base_url}/api/v1/stats",
        params={"user_id": "localme"},
        headers=local_server.admin_headers(),
    )
    assert admin.json()["total_memories"] == 1


def test_stock_openmemory_ui_requests_seen_in_chromium_work_in_the_local_mode(
    local_server: MemoryServer,
) -> None:
    """The calls the real stock UI (mem0 540d23d, next build, headless Chromium) made beyond the
    ones above, copied from its network log: the filter dialog and sort menu, the apps page's
    filters and sorts, bulk pause, Settings' Export and Import (docs/openmemory.md, "Tried with
    the stock UI")."""
    ui = httpx.Client(base_url=local_server.base_url, headers={"Origin": UI_ORIGIN}, timeout=30)
    user = "user"
    made = {}
    for text, app in (
        ("Seen: I prefer pytest over unittest", "claude"),
        ("Seen: the deploy script lives in scripts/deploy.sh", "cursor"),
        ("Seen: we moved CI from Jenkins to GitHub Actions", "claude"),
    ):
        created = ui.post(
            "/api/v1/memories/", json={"user_id": user, "text": text, "infer": False, "app": app}
        )
        assert created.status_code == 200, created.text
        made[app if app not in made else "jenkins"] = created.json()["id"]
    apps = ui.get("/api/v1/apps/?page=1&page_size=10&sort_by=name&sort_direction=asc").json()["apps"]
    assert [a["name"] for a in apps] == sorted(a["name"] for a in apps)
    claude = next(a["id"] for a in apps if a["name"] == "claude")

    def listed(body: dict[str, Any]) -> list[str]:
        response = ui.post("/api/v1/memories/filter", json={"user_id": user, "page": 1, "size": 10, **body})
        assert response.status_code == 200, response.text
        return [item["content"] for item in response.json()["items"] if item["content"].startswith("Seen")]

    # The filter dialog's "Apply Filters" (one app ticked) and the sort menu's three columns.
    by_app = listed(
        {
            "app_ids": [claude],
            "category_ids": [],
            "sort_column": "created_at",
            "sort_direction": "desc",
            "show_archived": False,
        }
    )
    assert by_app == [
        "Seen: we moved CI from Jenkins to GitHub Actions",
        "Seen: I prefer pytest over unittest",
    ]
    for column, position, expected in (
        ("memory", 0, "Seen: I prefer pytest over unittest"),
        ("app_name", -1, "Seen: the deploy script lives in scripts/deploy.sh"),  # cursor after claude
        ("created_at", 0, "Seen: I prefer pytest over unittest"),
    ):
        order = listed({"app_ids": [], "category_ids": [], "sort_column": column, "sort_direction": "asc"})
        assert len(order) == 3 and order[position] == expected, (column, order)
    # Bulk "Archive" from the Actions menu, then the dialog's "Archived" switch.
    archived = ui.post(
        "/api/v1/memories/actions/pause",
        json={"memory_ids": [made["jenkins"]], "all_for_app": True, "state": "archived", "user_id": user},
    )
    assert archived.status_code == 200, archived.text
    assert len(listed({})) == 2
    shown = listed(
        {
            "app_ids": [],
            "category_ids": [],
            "sort_column": "created_at",
            "sort_direction": "desc",
            "show_archived": True,
        }
    )
    assert len(shown) == 3
    # The apps page: status filter, search box, the other sorts.
    assert (
        ui.get("/api/v1/apps/?page=1&page_size=10&is_active=false&sort_by=name&sort_direction=asc").json()[
            "apps"
        ]
        == []
    )
    named = ui.get("/api/v1/apps/?page=1&page_size=10&name=cur&sort_by=memories&sort_direction=asc").json()
    assert [a["name"] for a in named["apps"]] == ["cursor"]
    for sort_by in ("memories", "memories_accessed"):
        response = ui.get(f"/api/v1/apps/?page=1&page_size=10&sort_by={sort_by}&sort_direction=desc")
        assert response.status_code == 200, response.text
    # Settings: Export Memories (fetch, JSON body) and Import (multipart, the same zip back).
    exported = ui.post(
        "/api/v1/backup/export",
        json={"user_id": user},
        headers={"Content-Type": "application/json", "Accept": "application/zip"},
    )
    assert exported.status_code == 200 and exported.content[:2] == b"PK", exported.text[:200]
    imported = ui.post(
        "/api/v1/backup/import",
        files={"file": ("memories_export.zip", exported.content, "application/zip")},
        data={"user_id": user},
    )
    assert imported.status_code == 200, imported.text
    assert len(listed({"show_archived": True})) == 3  # the same memories back: nothing doubled


def test_npx_openmemory_install_mcp_config_works_in_the_local_mode(local_server: MemoryServer) -> None:
    """``npx @openmemory/install local http://localhost:8765/mcp/claude/sse/user``'s URL, no token
    (Streamable HTTP at the same user path)."""
    response = httpx.post(
        f"{local_server.base_url}/mcp/claude/http/user",
        headers={"Accept": "application/json, text/event-stream"},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        timeout=30,
    )
    assert response.status_code == 200, response.text
    assert response.json()["result"]["protocolVersion"] == "2025-03-26"


def test_doctor_warns_while_the_local_mode_is_on(local_server: MemoryServer) -> None:
    report = json.loads(
        local_server.ccmem("doctor", "--json", "--port", str(local_server.port), check=False).stdout
    )
    check = next(c for c in report["checks"] if c["name"] == "local mode")
    assert check["status"] == "warn" and "'localme'" in check["detail"]
    off_loopback = local_server.ccmem("doctor", "--json", "--host", "0.0.0.0", check=False)
    check = next(c for c in json.loads(off_loopback.stdout)["checks"] if c["name"] == "local mode")
    assert check["status"] == "fail" and "refuses to start" in check["detail"]
    assert off_loopback.returncode == 1
