"""Tool sets by dialect (``?tools=``) on both transports, driven by the official MCP SDK client.

Each dialect lists exactly its tools with the system's own argument names; a memory added in
one dialect is found in another (one service behind all); mcp-mitm-mem0's resources answer;
``user_id`` arguments cannot reach another user; the default list and OpenMemory's five are
byte for byte what the server listed before dialects (``tests/data/mcp_tools_list_main.json``,
taken from main); structured output; the 2026-07-28 stateless ``server/discover``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from claude_code_memory.mcp import dialects
from tests.support.server import MemoryServer

pytestmark = pytest.mark.timeout(300)

TRANSPORTS = ["sse", "http"]
#: The body of ``POST /mcp/claude-code/http/<user>`` with ``tools/list`` (id 1,
#: ``Mcp-Protocol-Version: 2025-11-25``) answered by main before dialects. A change meant to alter
#: the default list rewrites it with ``raw_tools_list``'s bytes, and says so in the CHANGELOG.
SNAPSHOT = Path(__file__).parent / "data" / "mcp_tools_list_main.json"
ACCEPT = {"Accept": "application/json, text/event-stream"}

ARGUMENTS = {
    # mcp-mitm-mem0's own signatures.
    "mitm-mem0": {
        "search_memories": {"query", "user_id", "limit", "now"},
        "list_memories": {"user_id"},
        "add_memory": {"messages", "user_id", "metadata"},
        "delete_memory": {"memory_id"},
        "analyze_conversations": {"user_id", "limit"},
        "suggest_next_actions": {"user_id"},
    },
    "memoryos": {
        "add_memory": {"user_input", "agent_response", "timestamp", "meta_data"},
        "retrieve_memory": {"query", "relationship_with_user", "style_hint", "max_results"},
        "get_user_profile": {"include_knowledge", "include_assistant_knowledge"},
    },
    "all": {"search_memory": {"query", "limit", "context", "scope", "project", "task", "now"}},
    "min-memory": {
        "retrieve_context": {
            "query",
            "scope",
            "memory_type",
            "project",
            "task_id",
            "include_related",
            "limit",
            "score_threshold",
            "recency_weight",
            "status_filter",
            "now",
        },
    },
    "claude-code": {
        "search_memory": {"query", "limit", "scope", "project", "now"},
        "add_memories": {"text", "scope", "project"},
        "delete_memories": {"memory_ids"},
    },
}


@pytest.fixture(scope="module")
def memory_server(shared_server: MemoryServer) -> MemoryServer:
    return shared_server


@pytest.fixture
def alice(memory_server: MemoryServer) -> tuple[str, str]:
    user = f"alice-{uuid.uuid4().hex[:8]}"
    return user, memory_server.make_token(user)


def url(server: MemoryServer, transport: str, user: str, dialect: str | None) -> str:
    query = f"?tools={dialect}" if dialect else ""
    return f"{server.base_url}/mcp/claude-code/{transport}/{user}{query}"


@asynccontextmanager
async def connect(
    server: MemoryServer, transport: str, user: str, token: str, dialect: str | None, mode: str = "legacy"
) -> AsyncIterator[Client]:
    address = url(server, transport, user, dialect)
    headers = {"Authorization": f"Bearer {token}"}
    if transport == "sse":
        async with Client(sse_client(address, headers=headers), mode=mode) as session:
            yield session
    else:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(address, http_client=http), mode=mode) as session,
        ):
            yield session


def ok(result: CallToolResult) -> str:
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, text
    return text


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("dialect", dialects.NAMES)
def test_each_dialect_lists_exactly_its_tools(
    memory_server: MemoryServer, alice: tuple[str, str], transport: str, dialect: str
) -> None:
    async def scenario() -> dict[str, Any]:
        async with connect(memory_server, transport, *alice, dialect) as session:
            return {tool.name: tool for tool in (await session.list_tools()).tools}

    tools = anyio.run(scenario)
    assert list(tools) == list(dialects.TOOLS[dialect])
    for name, arguments in ARGUMENTS.get(dialect, {}).items():
        assert set(tools[name].input_schema["properties"]) == arguments, name
    if dialect in ("mitm-mem0", "claude-code", "memory-tool"):
        for tool in tools.values():  # the new dialects: a real schema and every hint set
            assert tool.output_schema is not None, tool.name
            hints = tool.annotations
            assert hints is not None and hints.read_only_hint is not None, tool.name
            assert hints.read_only_hint or hints.destructive_hint is not None, tool.name
            assert hints.idempotent_hint is not None, tool.name


def raw_tools_list(server: MemoryServer, user: str, token: str, dialect: str | None) -> bytes:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Authorization": f"Bearer {token}", "Mcp-Protocol-Version": "2025-11-25"} | ACCEPT
    response = httpx.post(url(server, "http", user, dialect), json=body, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response.content


def test_the_default_list_is_byte_for_byte_what_main_listed(memory_server: MemoryServer, alice) -> None:
    assert raw_tools_list(memory_server, *alice, None) == SNAPSHOT.read_bytes()


def test_openmemorys_five_are_byte_for_byte_as_before(memory_server: MemoryServer, alice) -> None:
    before = json.loads(SNAPSHOT.read_bytes())["result"]["tools"]
    listed = json.loads(raw_tools_list(memory_server, *alice, "openmemory"))["result"]["tools"]
    assert [tool["name"] for tool in listed] == list(dialects.OPENMEMORY)
    encode = json.dumps
    assert [encode(tool) for tool in listed] == [
        encode(tool) for tool in before if tool["name"] in dialects.OPENMEMORY
    ]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unknown_dialect_is_a_clear_422(memory_server: MemoryServer, alice, transport: str) -> None:
    address = url(memory_server, transport, alice[0], "mem9")
    headers = {"Authorization": f"Bearer {alice[1]}"}
    if transport == "sse":
        response = httpx.get(address, headers=headers, timeout=10)
    else:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        response = httpx.post(address, json=body, headers=headers | ACCEPT, timeout=10)
    assert response.status_code == 422  # BadInput, as every bad name in the path
    assert "mem9" in response.json()["detail"] and "claude-code" in response.json()["detail"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_memory_added_in_one_dialect_is_found_in_every_other(
    memory_server: MemoryServer, alice: tuple[str, str], transport: str
) -> None:
    marker = uuid.uuid4().hex[:6]
    fact = f"My favourite editor theme is solarized-{marker}"

    async def scenario() -> None:
        async with connect(memory_server, transport, *alice, "mitm-mem0") as mitm:
            added = await mitm.call_tool(
                "add_memory", {"messages": [{"role": "user", "content": fact}], "metadata": {"from": "mitm"}}
            )
            [result] = json.loads(ok(added))["results"]
            assert added.structured_content == {"results": [result]}
            memory_id = result["id"]
        async with connect(memory_server, transport, *alice, "claude-code") as cc:
            found = await cc.call_tool(
                "search_memory", {"query": "editor theme solarized", "now": "2026-07-28T09:00:00Z"}
            )
            assert memory_id in [hit["id"] for hit in json.loads(ok(found))["results"]]
            assert found.structured_content is not None
            assert memory_id in [hit["id"] for hit in found.structured_content["results"]]
        async with connect(memory_server, transport, *alice, "openmemory") as om:
            found = await om.call_tool("search_memory", {"query": "editor theme solarized"})
            assert memory_id in [hit["id"] for hit in json.loads(ok(found))["results"]]
        async with connect(memory_server, transport, *alice, "min-memory") as mm:
            assert ok(await mm.call_tool("fetch", {"id": memory_id})) == fact
        async with connect(memory_server, transport, *alice, "mitm-mem0") as mitm:
            listed = await mitm.call_tool("list_memories", {})
            assert memory_id in [item["id"] for item in json.loads(ok(listed))]
            deleted = await mitm.call_tool("delete_memory", {"memory_id": memory_id})
            assert json.loads(ok(deleted)) == {"status": "deleted", "memory_id": memory_id}
            assert deleted.structured_content == {"status": "deleted", "memory_id": memory_id}
        async with connect(memory_server, transport, *alice, None) as default:
            found = await default.call_tool("search_memory", {"query": "editor theme solarized"})
            assert memory_id not in [hit["id"] for hit in json.loads(ok(found))["results"]]

    anyio.run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_mitm_user_id_cannot_reach_another_user(memory_server: MemoryServer, alice, transport: str) -> None:
    bob = f"bob-{uuid.uuid4().hex[:8]}"
    memory_server.make_token(bob)

    async def scenario() -> None:
        async with connect(memory_server, transport, *alice, "mitm-mem0") as mitm:
            refused = await mitm.call_tool("list_memories", {"user_id": bob})
            assert refused.is_error and "omit user_id" in refused.content[0].text  # type: ignore[union-attr]
            wrote = await mitm.call_tool(
                "add_memory", {"messages": [{"role": "user", "content": "planted"}], "user_id": bob}
            )
            assert wrote.is_error
            mine = await mitm.call_tool("list_memories", {"user_id": alice[0]})
            assert json.loads(ok(mine)) == []

    anyio.run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_mitm_resources_answer_markdown(memory_server: MemoryServer, alice, transport: str) -> None:
    fact = f"I deploy with nomad {uuid.uuid4().hex[:6]}"

    async def scenario() -> None:
        async with connect(memory_server, transport, *alice, "mitm-mem0") as mitm:
            ok(await mitm.call_tool("add_memory", {"messages": [{"role": "user", "content": fact}]}))
            mine = await mitm.read_resource(f"memory://{alice[0]}")
            text = mine.contents[0].text  # type: ignore[union-attr]
            assert text.startswith(f"# Memories for user: {alice[0]}") and fact in text
            recent = (await mitm.read_resource("memory://recent")).contents[0].text  # type: ignore[union-attr]
            assert recent.startswith("# Recent Memories") and fact in recent
            suggestions = await mitm.call_tool("suggest_next_actions", {})
            assert isinstance(json.loads(ok(suggestions)), list)
            analysis = await mitm.call_tool("analyze_conversations", {"limit": 5})
            assert json.loads(ok(analysis))["memories_analyzed"] >= 1

    anyio.run(scenario)


def test_stateless_2026_discover_and_tool_call(memory_server: MemoryServer, alice) -> None:
    # The 2026-07-28 revision: no initialize, no session; each POST carries its version, method
    # and (for a tool call) name in headers and the request's _meta.
    address = url(memory_server, "http", alice[0], "claude-code")
    base = {"Authorization": f"Bearer {alice[1]}", "Mcp-Protocol-Version": "2026-07-28"} | ACCEPT
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    discover = httpx.post(
        address,
        json={"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
        headers=base | {"Mcp-Method": "server/discover"},
        timeout=30,
    )
    assert discover.status_code == 200, discover.text
    assert "2026-07-28" in discover.json()["result"]["supportedVersions"]
    assert "mcp-session-id" not in discover.headers
    call = httpx.post(
        address,
        json={
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search_memory", "arguments": {"query": "anything"}, "_meta": meta},
        },
        headers=base | {"Mcp-Method": "tools/call", "Mcp-Name": "search_memory"},
        timeout=30,
    )
    assert call.status_code == 200, call.text
    result = call.json()["result"]
    assert result.get("isError") is not True and result["structuredContent"] == {"results": []}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_sdk_client_speaks_2026_with_a_dialect(
    memory_server: MemoryServer, alice, transport: str
) -> None:
    async def scenario() -> None:
        async with connect(memory_server, transport, *alice, "claude-code", mode="auto") as session:
            assert [tool.name for tool in (await session.list_tools()).tools] == list(dialects.CLAUDE_CODE)
            added = await session.call_tool("add_memories", {"text": f"I like fennel {uuid.uuid4().hex[:6]}"})
            ok(added)
            assert added.structured_content is not None and added.structured_content["results"]

    anyio.run(scenario)


@pytest.mark.parametrize(
    ("dialect", "tool"),
    [
        ("claude-code", "search_memory"),
        ("mitm-mem0", "search_memories"),
        ("all", "search_memory"),
        ("min-memory", "retrieve_context"),
    ],
)
def test_now_reads_relative_dates_as_of_then(
    memory_server: MemoryServer, alice, dialect: str, tool: str
) -> None:
    # Two hikes a year apart; "last week" is the one in the week before the search's now.
    user, token = alice
    marker = uuid.uuid4().hex[:6]
    ids = {}
    for place, when in (("Alps", "2024-03-05T10:00:00Z"), ("Dolomites", "2025-06-10T10:00:00Z")):
        response = memory_server.client(token, timeout=30).post(
            "/api/v1/memories", json={"text": f"I went hiking in the {place} {marker}", "captured_at": when}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        ids[place] = str(body.get("id") or body["results"][0]["id"])

    async def first(now: str) -> str:
        async with connect(memory_server, "http", user, token, dialect) as session:
            found = await session.call_tool(tool, {"query": "where did I go hiking last week?", "now": now})
            hits = json.loads(ok(found))
            return (hits["results"] if isinstance(hits, dict) else hits)[0]["id"]

    assert anyio.run(first, "2024-03-11T09:00:00Z") == ids["Alps"]
    assert anyio.run(first, "2025-06-16T09:00:00+00:00") == ids["Dolomites"]

    async def bad() -> CallToolResult:
        async with connect(memory_server, "http", user, token, dialect) as session:
            return await session.call_tool(tool, {"query": "hiking", "now": "last tuesday"})

    refused = anyio.run(bad)
    assert refused.is_error and "ISO 8601" in refused.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_memory_tool_dialect_answers_structured_and_errors_say_what_to_do(
    memory_server: MemoryServer, alice, transport: str
) -> None:
    async def scenario() -> None:
        async with connect(memory_server, transport, *alice, "memory-tool") as session:
            created = await session.call_tool(
                "memory_20250818", {"command": "create", "path": "/memories/notes.md", "file_text": "tabs\n"}
            )
            assert created.structured_content == {"result": ok(created)}
            viewed = await session.call_tool(
                "memory_20250818", {"command": "view", "path": "/memories/notes.md"}
            )
            assert "tabs" in ok(viewed) and viewed.structured_content == {"result": ok(viewed)}
            missing = await session.call_tool(
                "memory_20250818", {"command": "view", "path": "/memories/none.md"}
            )
            assert missing.is_error and "/memories/none.md" in missing.content[0].text  # type: ignore[union-attr]
        async with connect(memory_server, transport, *alice, "claude-code") as session:
            refused = await session.call_tool("search_memory", {"query": "x", "limit": 500})
            assert refused.is_error and "100" in refused.content[0].text  # type: ignore[union-attr]
            gone = await session.call_tool("delete_memories", {"memory_ids": [str(uuid.uuid4())]})
            assert gone.is_error and "search_memory gives the ids" in gone.content[0].text  # type: ignore[union-attr]

    anyio.run(scenario)


@pytest.mark.parametrize("dialect", dialects.NAMES)
def test_the_instructions_name_only_the_dialects_own_tools(
    memory_server: MemoryServer, alice, dialect
) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    response = httpx.post(
        url(memory_server, "http", alice[0], dialect),
        json=initialize,
        headers={"Authorization": f"Bearer {alice[1]}"} | ACCEPT,
        timeout=30,
    )
    assert response.status_code == 200, response.text
    words = set(response.json()["result"]["instructions"].replace(",", " ").replace(":", " ").split())
    every_tool = {name for names in dialects.TOOLS.values() for name in names}
    named = words & every_tool
    assert named and named <= set(dialects.TOOLS[dialect]), (dialect, named)
