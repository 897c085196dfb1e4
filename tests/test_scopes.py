"""Scopes, links, entities and the trash, over REST and MCP (the official SDK), on a real server.

One server for the module (``privacy.trash_days: 7``, captures stored at once); each test uses
its own user, so they do not see each other's memories.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.server import MemoryServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    running = MemoryServer(
        tmp_path_factory.mktemp("scopes-server"),
        env={"CCMEM_PRIVACY__REQUIRE_CONSENT": "false", "CCMEM_PRIVACY__TRASH_DAYS": "7"},
    ).start()
    try:
        yield running
    finally:
        running.stop()


class Caller:
    def __init__(self, server: MemoryServer) -> None:
        self.server = server
        self.user = f"u{uuid.uuid4().hex[:10]}"
        self.token = server.make_token(self.user)
        self.http = httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60
        )

    def create(self, text: str, **scope: Any) -> str:
        response = self.http.post("/api/v1/memories", json={"text": text, **scope})
        assert response.status_code == 200, response.text
        return str(response.json()["id"])

    def search(self, query: str, **body: Any) -> list[dict[str, Any]]:
        response = self.http.post("/api/v1/memories/search", json={"query": query, "limit": 10, **body})
        assert response.status_code == 200, response.text
        return list(response.json()["results"])

    def listed(self, **params: Any) -> set[str]:
        response = self.http.get("/api/v1/memories", params={"size": 100, **params})
        assert response.status_code == 200, response.text
        return {item["id"] for item in response.json()["items"]}

    async def mcp(self, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
        """Run tool calls in one MCP session (Streamable HTTP); each result parsed from JSON
        when it is JSON, or the error text when the tool failed."""
        url = f"{self.server.base_url}/mcp/claude-code/http/{self.user}"
        results: list[Any] = []
        headers = {"Authorization": f"Bearer {self.token}"}
        async with (
            httpx.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                text = result.content[0].text  # type: ignore[union-attr]
                if result.is_error:
                    results.append({"error": text})
                    continue
                try:
                    results.append(json.loads(text))
                except ValueError:
                    results.append(text)
        return results


@pytest.fixture
def caller(server: MemoryServer) -> Caller:
    return Caller(server)


def test_search_from_a_project_sees_its_memories_first_and_no_other_projects(caller: Caller) -> None:
    shop = caller.create("The checkout service retries payment webhooks three times", project="shop")
    blog = caller.create("The blog service retries failed webhooks five times", project="blog")
    common = caller.create("Webhooks should always be retried with exponential backoff")

    everything = [hit["id"] for hit in caller.search("how are webhooks retried")]
    assert {shop, blog, common} <= set(everything)  # no scope named: as before scopes

    scoped = caller.search("how are webhooks retried", current_project="shop")
    ids = [hit["id"] for hit in scoped]
    assert blog not in ids and ids[:2] == [shop, common]
    assert scoped[0]["provenance"]["project"] == "shop"
    assert [h["id"] for h in caller.search("webhooks", scope="global")] == [common]
    assert [h["id"] for h in caller.search("webhooks", scope="all", current_project="shop")] != ids
    assert [h["id"] for h in caller.search("webhooks", project="blog")] == [blog]  # the old filter

    assert caller.listed(project="shop") == {shop}
    assert caller.listed(scope="global") == {common}
    bad = caller.http.post("/api/v1/memories/search", json={"query": "x", "scope": "task"})
    assert bad.status_code == 422 and "needs a project" in bad.text


def test_a_scoped_search_finds_the_project_s_memory_under_many_of_other_projects(caller: Caller) -> None:
    """The scope is a condition inside both retrievers, not a filter after them: 70 memories of
    another project that match the question word for word do not crowd out the asking
    project's one, which shares no word with it (looked for 60 deep, then filtered, it was
    not found)."""
    items = [
        {"text": f"Service {n} of the billing team uses the PostgreSQL database", "project": "billing"}
        for n in range(70)
    ]
    response = caller.http.post("/api/v1/memories/batch", json={"items": items})
    assert response.status_code == 200 and response.json()["failed"] == 0, response.text
    ours = caller.create("Our records are kept in SQLite", project="shop")
    question = "which database does the service use"
    unscoped = [hit["id"] for hit in caller.search(question, limit=60)]
    assert ours not in unscoped  # sixty of the other project's rank above it

    scoped = caller.search(question, current_project="shop")
    assert [hit["id"] for hit in scoped] == [ours]


def test_move_between_scopes_and_complete_a_task(caller: Caller) -> None:
    first = caller.create("Step one of the migration: copy the orders table", project="shop", task="migrate")
    second = caller.create(
        "Step two of the migration: switch reads to the copy", project="shop", task="migrate"
    )
    keep = caller.create(
        "Migration lesson: always dry-run against a snapshot", project="shop", task="lessons"
    )
    assert caller.listed(project="shop", task="migrate") == {first, second}

    moved = caller.http.post("/api/v1/memories/actions/move", json={"memory_ids": [second], "project": None})
    assert moved.status_code == 200 and moved.json()["moved"] == 1
    assert second in caller.listed(scope="global")
    assert caller.search("switch reads to the copy", scope="global")[0]["id"] == second
    refused = caller.http.post(
        "/api/v1/memories/actions/move", json={"memory_ids": [first], "task": "orphan"}
    )
    assert refused.status_code == 422 and second in caller.listed(scope="global")

    done = caller.http.post("/api/v1/tasks/complete", json={"project": "shop", "task": "migrate"})
    assert done.status_code == 200 and done.json()["archived"] == 1
    assert (
        first not in caller.listed()
        and caller.http.get(f"/api/v1/memories/{first}").json()["state"] == "archived"
    )
    promoted = caller.http.post(
        "/api/v1/tasks/complete", json={"project": "shop", "task": "lessons", "promote": True}
    )
    assert promoted.json()["promoted"] == 1
    assert keep in caller.listed(project="shop") and keep not in caller.listed(task="lessons")
    scopes = caller.http.get("/api/v1/scopes").json()["scopes"]
    assert {"scope": "project", "project": "shop", "task": None, "memories": 1} in scopes


def test_a_capture_is_filed_under_the_project_the_hooks_name(caller: Caller, tmp_path: Path) -> None:
    # The proxy sends the folder Claude Code started in; the server reads its name from the path
    # alone (no .git looked for on its own disk), as the hooks do.
    repository = tmp_path / "storefront"
    body = {
        "app": "claude-code",
        "project": str(repository),
        "messages": [{"role": "user", "content": "the storefront uses server-side rendering"}],
    }
    response = caller.http.post("/api/v1/capture", json=body)
    assert response.status_code == 200, response.text
    memory = caller.http.get(f"/api/v1/memories/{response.json()['id']}")
    assert caller.listed(project="storefront") == {response.json()["id"]}, memory.text


def test_links_are_shown_and_come_first_in_related(caller: Caller) -> None:
    a = caller.create("We chose PostgreSQL for the orders database")
    b = caller.create("The orders database runs on a managed instance")
    link = caller.http.post(f"/api/v1/memories/{a}/links", json={"target_id": b, "relation": "depends on"})
    assert link.status_code == 200 and link.json()["created"] is True
    again = caller.http.post(f"/api/v1/memories/{a}/links", json={"target_id": b, "relation": "Depends on"})
    assert again.json() == {**link.json(), "created": False}
    links = caller.http.get(f"/api/v1/memories/{b}/links").json()["links"]
    assert [(x["direction"], x["relation"], x["memory"]["id"]) for x in links] == [
        ("incoming", "depends on", a)
    ]
    related = caller.http.get(f"/api/v1/memories/{a}/related").json()
    assert related["items"][0]["id"] == b and related["items"][0]["link"]["relation"] == "depends on"
    assert caller.http.post(f"/api/v1/memories/{a}/links", json={"target_id": a}).status_code == 422
    other = Caller(caller.server).create("someone else's memory")
    assert caller.http.post(f"/api/v1/memories/{a}/links", json={"target_id": other}).status_code == 404


def test_entities_are_listed_and_searched(caller: Caller) -> None:
    memory = caller.create("Alice Martin asked to move src/billing/invoice.py to FastAPI", project="shop")
    caller.create("Run pytest before pushing; the InvoiceBuilder needs a fixture")
    entities = caller.http.get("/api/v1/entities").json()["entities"]
    named = {(e["kind"], e["name"]) for e in entities}
    assert {
        ("person", "Alice Martin"),
        ("file", "src/billing/invoice.py"),
        ("tool", "FastAPI"),
        ("tool", "pytest"),
        ("identifier", "InvoiceBuilder"),
        ("project", "shop"),
    } <= named
    found = caller.http.get("/api/v1/entities/search", params={"q": "alice"}).json()["entities"]
    assert [(e["name"], [m["id"] for m in e["memories"]]) for e in found] == [("Alice Martin", [memory])]
    tools = caller.http.get("/api/v1/entities", params={"kind": "tool"}).json()["entities"]
    assert {e["kind"] for e in tools} == {"tool"}
    assert caller.http.get("/api/v1/entities", params={"kind": "planet"}).status_code == 422


def test_mcp_tools_set_project_scope_link_entities_and_restore(caller: Caller) -> None:
    other = caller.create("The analytics project stores events in ClickHouse partitions", project="analytics")
    results = asyncio.run(
        caller.mcp(
            ("set_project", {"project": "shop"}),
            ("add_memories", {"text": "Shop events are stored in daily partitions"}),
            ("add_memories", {"text": "Partitions are named after the day", "scope": "global"}),
            ("add_memories", {"text": "Partition pruning ticket is in progress", "task": "pruning"}),
            ("search_memory", {"query": "how are events stored in partitions"}),
            ("search_memory", {"query": "how are events stored in partitions", "scope": "all"}),
            ("search_memory", {"query": "partitions", "scope": "task", "task": "pruning"}),
            ("list_entities", {"kind": "project"}),
        )
    )
    shop_id = results[1]["results"][0]["id"]
    global_id = results[2]["results"][0]["id"]
    task_id = results[3]["results"][0]["id"]
    assert results[0] == {"project": "shop"}
    default = [hit["id"] for hit in results[4]["results"]]
    assert other not in default and default[0] in (shop_id, task_id) and global_id in default
    assert other in [hit["id"] for hit in results[5]["results"]]
    assert [hit["id"] for hit in results[6]["results"]] == [task_id]
    assert {"shop", "analytics"} <= {e["name"] for e in results[7]["entities"]}
    assert caller.listed(project="shop", task="pruning") == {task_id}

    later = asyncio.run(
        caller.mcp(
            ("link_memories", {"a": shop_id, "b": global_id, "relation": "see also"}),
            ("search_entities", {"query": "shop"}),
            ("complete_task", {"task": "pruning", "project": "shop", "promote": True}),
            ("delete_memories", {"memory_ids": [global_id]}),
            ("restore_memories", {"memory_ids": [global_id]}),
            ("link_memories", {"a": shop_id, "b": "not-a-uuid"}),
            ("search_memory", {"query": "daily partitions", "scope": "project"}),
        )
    )
    assert later[0]["relation"] == "see also" and later[0]["created"] is True
    assert later[1]["entities"][0]["name"] == "shop"
    assert later[2] == {"project": "shop", "task": "pruning", "promoted": 1, "archived": 0}
    assert later[4] == {"restored": [global_id], "conflicts": []}
    assert "error" in later[5]
    # A new session (Streamable HTTP is stateless): the caller's current project carried over.
    assert {hit["id"] for hit in later[6]["results"]} <= {shop_id, task_id}
    assert caller.listed(project="shop") == {shop_id, task_id}


def _files_holding(root: Path, marker: bytes) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and marker in path.read_bytes()]


def test_trash_restores_across_a_restart_and_purge_erases(server: MemoryServer) -> None:
    caller = Caller(server)
    marker = f"trash-marker-{uuid.uuid4().hex}"
    kept = caller.create(f"{marker} the staging database password rotates monthly")
    gone = caller.create(f"{marker}-purge the old VPN endpoint is retired")

    deleted = caller.http.request("DELETE", "/api/v1/memories", json={"memory_ids": [kept, gone]})
    assert deleted.json() == {"message": "Successfully deleted 2 memories"}  # OpenMemory's answer
    assert not caller.listed() and not caller.search(marker)
    trash = caller.http.get("/api/v1/trash").json()
    assert {item["id"] for item in trash["items"]} == {kept, gone} and trash["trash_days"] == 7
    # Documented: until purged, a trashed memory's text is still in the files.
    assert _files_holding(server.data_dir, marker.encode())
    # The same text may be written again while its twin is in the trash.
    twin = caller.create(f"{marker}-purge the old VPN endpoint is retired")

    server.restart()
    restored = caller.http.post("/api/v1/trash/restore", json={"memory_ids": [kept, gone]}).json()
    assert restored["restored"] == [kept] and [c["id"] for c in restored["conflicts"]] == [gone]
    assert caller.http.get(f"/api/v1/memories/{kept}").json()["state"] == "active"
    assert [hit["id"] for hit in caller.search(f"{marker} staging database password")][0] == kept

    purged = caller.http.post("/api/v1/trash/purge", json={"memory_ids": [gone]})
    assert purged.status_code == 200 and purged.json() == {"purged": 1}
    assert caller.http.get(f"/api/v1/memories/{gone}").status_code == 404
    caller.http.request("DELETE", "/api/v1/memories", json={"memory_ids": [twin]})
    caller.http.post("/api/v1/trash/purge", json={"memory_ids": [twin]})
    assert not _files_holding(server.data_dir, f"{marker}-purge".encode())
    assert caller.http.post("/api/v1/trash/restore", json={"memory_ids": ["nope"]}).status_code == 422
