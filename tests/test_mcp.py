"""The MCP endpoint of the real server, driven by the official MCP SDK's clients.

SSE (``GET /mcp/{client}/sse/{user}`` + the POST path its ``endpoint`` event names) and
Streamable HTTP (``/mcp/{client}/http/{user}``), each with the user's bearer token: the five
OpenMemory tools and their result formats, the two resources, auth (401, 403, a session that
another user's token cannot drive), user isolation, a paused app, and bad input answered with
4xx JSON or a tool error, never a 500.

One server for the module; every test works as its own fresh user.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from tests.support.server import MemoryServer

pytestmark = pytest.mark.timeout(300)

TOOLS = {"add_memories", "search_memory", "list_memories", "delete_memories", "delete_all_memories"}
#: Ours, beside OpenMemory's five (docs/reflection.md).
REFLECTION_TOOLS = {"analyze_conversations", "suggest_next_actions"}
MEMORYOS_TOOLS = {
    "add_memory",
    "retrieve_memory",
    "get_user_profile",
    "store_memory",
    "retrieve_context",
    "fetch",
    "get_context_info",
}
CLIENT = "claude-code"
TRANSPORTS = ["sse", "http"]
SEARCH_DESCRIPTION = "Search through stored memories. This method is called EVERYTIME the user asks anything."
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
BOTH_ACCEPTED = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def memory_server(shared_server: MemoryServer) -> MemoryServer:
    """MCP clients over SSE and Streamable HTTP need a port; every test has users and apps of
    its own, so the files' shared server does."""
    return shared_server


@pytest.fixture
def alice(memory_server: MemoryServer) -> tuple[str, str]:
    return new_user(memory_server, "alice")


@pytest.fixture
def bob(memory_server: MemoryServer) -> tuple[str, str]:
    return new_user(memory_server, "bob")


def new_user(server: MemoryServer, name: str) -> tuple[str, str]:
    user = f"{name}-{uuid.uuid4().hex[:8]}"
    return user, server.make_token(user)


def mcp_url(server: MemoryServer, transport: str, user: str, client: str = CLIENT) -> str:
    return f"{server.base_url}/mcp/{client}/{transport}/{user}"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def connect(
    server: MemoryServer, transport: str, user: str, token: str, *, client: str = CLIENT, mode: str = "legacy"
) -> AsyncIterator[Client]:
    """An initialised SDK client. ``legacy`` is the initialize handshake today's clients use;
    ``auto`` negotiates the 2026-07-28 per-request protocol when the server speaks it."""
    url = mcp_url(server, transport, user, client)
    if transport == "sse":
        async with Client(sse_client(url, headers=bearer(token)), mode=mode) as session:
            yield session
    else:
        async with (
            httpx2.AsyncClient(headers=bearer(token), timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode) as session,
        ):
            yield session


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(scenario)


def text_of(result: CallToolResult) -> str:
    assert result.content, result
    return result.content[0].text  # type: ignore[union-attr]


def ok(result: CallToolResult) -> str:
    assert not result.is_error, text_of(result)
    return text_of(result)


def failed(result: CallToolResult) -> str:
    assert result.is_error, f"expected a tool error, got {text_of(result)!r}"
    return text_of(result)


async def add(session: Client, text: str) -> str:
    """Add ``text`` and return the new memory's id."""
    body = json.loads(ok(await session.call_tool("add_memories", {"text": text})))
    [result] = body["results"]
    assert result["event"] == "ADD" and result["memory"] == text
    return result["id"]


async def search(session: Client, query: str, **arguments: Any) -> list[dict[str, Any]]:
    body = json.loads(ok(await session.call_tool("search_memory", {"query": query, **arguments})))
    return body["results"]


# First in the file: the module's server has not served MCP yet.
def test_the_first_requests_build_the_endpoint_once_for_every_client_at_once(
    memory_server: MemoryServer, alice: tuple[str, str]
) -> None:
    # The endpoint is built on its first request (claude_code_memory/mcp/lazy.py); clients that
    # arrive together on both transports all wait for that one build and are all served.
    user, token = alice
    listed: list[set[str]] = []

    async def list_tools(transport: str) -> None:
        async with connect(memory_server, transport, user, token) as session:
            listed.append({tool.name for tool in (await session.list_tools()).tools})

    async def scenario() -> None:
        async with anyio.create_task_group() as clients:
            for transport in TRANSPORTS * 3:
                clients.start_soon(list_tools, transport)

    run(scenario)
    assert len(listed) == 6 and all(names >= TOOLS for names in listed), listed
    # One endpoint (each dialect of it starts a Streamable HTTP session manager of its own).
    assert memory_server.log().count("MCP endpoint built") == 1, memory_server.log()


async def listed(session: Client) -> list[dict[str, Any]]:
    items = json.loads(ok(await session.call_tool("list_memories", {})))
    assert isinstance(items, list)
    return items


def fact() -> str:
    return f"My favourite build tool is called zebrafinch {uuid.uuid4().hex[:6]}"


# -- tools ------------------------------------------------------------------------------------


SCOPE_TOOLS = {
    "set_project",
    "complete_task",
    "move_memories",
    "link_memories",
    "list_entities",
    "search_entities",
    "restore_memories",
}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_five_openmemory_tools_are_listed(
    memory_server: MemoryServer, alice: tuple[str, str], transport: str
):
    async def scenario() -> None:
        async with connect(memory_server, transport, *alice) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        # OpenMemory's five, ours for scopes, links, entities and the trash (docs/scopes.md),
        # and the reflection tools (docs/reflection.md), and
        # Anthropic's memory tool (docs/memory-tool.md, test_memory_tool_server.py), and the
        # MemoryOS and min-memory tools (docs/profile.md, test_memoryos_tools.py).
        assert set(tools) == TOOLS | SCOPE_TOOLS | REFLECTION_TOOLS | {"memory_20250818"} | MEMORYOS_TOOLS
        assert all(tools[name].annotations.read_only_hint for name in REFLECTION_TOOLS)
        assert tools["search_memory"].description == SEARCH_DESCRIPTION
        # OpenMemory's query and limit, plus our optional neighbouring-turn context and scope.
        assert set(tools["search_memory"].input_schema["properties"]) == {
            "query",
            "limit",
            "context",
            "scope",
            "project",
            "task",
        }
        assert tools["search_memory"].input_schema["properties"]["context"]["default"] == 0
        assert tools["search_memory"].input_schema["required"] == ["query"]
        add_schema = tools["add_memories"].input_schema
        assert add_schema["properties"]["infer"]["default"] is False
        assert "LLM" in (tools["add_memories"].description or "")
        assert tools["delete_memories"].input_schema["properties"]["memory_ids"]["type"] == "array"

    run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_add_search_list_and_delete(memory_server: MemoryServer, alice: tuple[str, str], transport: str):
    first, second = fact(), f"I drink green tea every morning {uuid.uuid4().hex[:6]}"

    async def scenario() -> None:
        async with connect(memory_server, transport, *alice) as session:
            first_id = await add(session, first)
            second_id = await add(session, second)

            hits = await search(session, "which build tool do I like?")
            assert hits[0]["id"] == first_id and hits[0]["memory"] == first
            assert {"id", "memory", "hash", "created_at", "score"} <= set(hits[0])
            assert len(await search(session, "build tool", limit=1)) == 1

            assert {item["id"]: item["memory"] for item in await listed(session)} == {
                first_id: first,
                second_id: second,
            }

            deleted = ok(await session.call_tool("delete_memories", {"memory_ids": [first_id]}))
            assert deleted == "Successfully deleted 1 memories"
            assert [item["id"] for item in await listed(session)] == [second_id]
            assert first_id not in [hit["id"] for hit in await search(session, "build tool")]

            again = failed(await session.call_tool("delete_memories", {"memory_ids": [first_id]}))
            assert "No accessible memories found with provided IDs" in again

            assert (
                ok(await session.call_tool("delete_all_memories", {})) == "Successfully deleted all memories"
            )
            assert await listed(session) == []
            assert await search(session, "tea") == []

    run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_2026_protocol_works_too(memory_server: MemoryServer, alice: tuple[str, str], transport: str):
    async def scenario() -> None:
        async with connect(memory_server, transport, *alice, mode="auto") as session:
            memory_id = await add(session, fact())
            assert memory_id in [hit["id"] for hit in await search(session, "build tool")]

    run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_bad_arguments_are_tool_errors(memory_server: MemoryServer, alice: tuple[str, str], transport: str):
    async def scenario() -> None:
        async with connect(memory_server, transport, *alice) as session:
            assert "query" in failed(await session.call_tool("search_memory", {"query": "   "}))
            assert "limit" in failed(await session.call_tool("search_memory", {"query": "x", "limit": 0}))
            assert "limit" in failed(await session.call_tool("search_memory", {"query": "x", "limit": 101}))
            assert "text" in failed(await session.call_tool("add_memories", {"text": ""}))
            failed(await session.call_tool("add_memories", {}))
            failed(await session.call_tool("delete_memories", {"memory_ids": "not a list"}))
            failed(await session.call_tool("delete_memories", {"memory_ids": []}))
            failed(await session.call_tool("delete_memories", {"memory_ids": ["not-a-uuid"]}))
            # Nothing above stored anything, and the connection still works.
            assert await listed(session) == []

    run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_paused_app_cannot_add(memory_server: MemoryServer, alice: tuple[str, str], transport: str):
    client = f"paused-{uuid.uuid4().hex[:8]}"
    admin = bearer(memory_server.admin_token)

    def set_active(app_id: str, active: bool) -> None:
        response = httpx.put(
            f"{memory_server.base_url}/api/v1/apps/{app_id}",
            params={"is_active": str(active).lower()},
            headers=admin,
        )
        assert response.status_code == 200, response.text

    async def scenario() -> None:
        async with connect(memory_server, transport, *alice, client=client) as session:
            kept = await add(session, fact())  # the first call creates the app
            apps = httpx.get(
                f"{memory_server.base_url}/api/v1/apps/",
                params={"name": client},
                headers=admin,
                follow_redirects=True,
            )
            assert apps.status_code == 200, apps.text
            [app] = [app for app in apps.json()["apps"] if app["name"] == client]

            set_active(app["id"], False)
            refused = failed(await session.call_tool("add_memories", {"text": "written while paused"}))
            assert f"App {client} is currently paused" in refused

            set_active(app["id"], True)
            resumed = await add(session, "written after resuming")
            memories = {item["id"]: item["memory"] for item in await listed(session)}
            assert set(memories) == {kept, resumed}
            assert "written while paused" not in memories.values()

    run(scenario)


# -- resources ----------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_resources(memory_server: MemoryServer, alice: tuple[str, str], bob: tuple[str, str], transport: str):
    user = alice[0]
    text = fact()

    async def scenario() -> None:
        async with connect(memory_server, transport, *alice) as session:
            memory_id = await add(session, text)
            assert "memory://recent" in [str(r.uri) for r in (await session.list_resources()).resources]
            templates = (await session.list_resource_templates()).resource_templates
            assert "memory://{user_id}" in [t.uri_template for t in templates]

            mine = json.loads((await session.read_resource(f"memory://{user}")).contents[0].text)  # type: ignore[union-attr]
            assert [(m["id"], m["memory"]) for m in mine] == [(memory_id, text)]
            recent = json.loads((await session.read_resource("memory://recent")).contents[0].text)  # type: ignore[union-attr]
            assert memory_id in [m["id"] for m in recent]

            with pytest.raises(MCPError):
                await session.read_resource(f"memory://{bob[0]}")

    run(scenario)


# -- auth and isolation ----------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("token", [None, "not-a-token"])
def test_missing_or_unknown_token_is_401(
    memory_server: MemoryServer, alice: tuple[str, str], transport: str, token
):
    headers = bearer(token) if token else {}
    response = open_transport(memory_server, transport, alice[0], headers)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorised"

    async def scenario() -> None:
        async with connect(memory_server, transport, alice[0], token or ""):
            pass

    with pytest.raises(Exception):  # noqa: B017 - the SDK wraps the 401 differently per transport
        run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_another_users_token_is_403(memory_server: MemoryServer, alice, bob, transport: str):
    response = open_transport(memory_server, transport, alice[0], bearer(bob[1]))
    assert response.status_code == 403
    assert response.json() == {"detail": response.json()["detail"], "error": "forbidden"}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_users_cannot_see_each_others_memories(memory_server: MemoryServer, alice, bob, transport: str):
    secret = f"The vault code is {uuid.uuid4().int % 10**6:06d}"

    async def scenario() -> None:
        async with connect(memory_server, transport, *alice) as session:
            secret_id = await add(session, secret)

        async with connect(memory_server, transport, *bob) as session:
            await add(session, "Bob likes sailing")
            assert secret_id not in [hit["id"] for hit in await search(session, "what is the vault code?")]
            assert secret not in [item["memory"] for item in await listed(session)]
            refused = failed(await session.call_tool("delete_memories", {"memory_ids": [secret_id]}))
            assert "No accessible memories" in refused
            await session.call_tool("delete_all_memories", {})

        # Bob's deletes did not touch Alice's memory; the admin token may act for her.
        async with connect(memory_server, transport, alice[0], memory_server.admin_token) as session:
            assert secret_id in [item["id"] for item in await listed(session)]

    run(scenario)


def test_concurrent_calls_of_two_users_stay_apart(memory_server: MemoryServer, alice, bob):
    # The caller travels with each request's context: interleaved requests must not swap users.
    written: dict[str, set[str]] = {alice[0]: set(), bob[0]: set()}

    async def write(transport: str, user: str, token: str) -> None:
        async with (
            connect(memory_server, transport, user, token) as session,
            anyio.create_task_group() as group,
        ):
            for number in range(8):
                group.start_soon(add_as, session, user, f"{user} note {number} via {transport}")

    async def add_as(session: Client, user: str, text: str) -> None:
        written[user].add(await add(session, text))

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(write, "sse", *alice)
            group.start_soon(write, "http", *bob)
            group.start_soon(write, "http", *alice)
            group.start_soon(write, "sse", *bob)
        for user, token in (alice, bob):
            async with connect(memory_server, "http", user, token) as session:
                items = await listed(session)
            assert {item["id"] for item in items} == written[user]
            assert all(item["memory"].startswith(f"{user} note") for item in items)

    run(scenario)


def test_an_sse_session_belongs_to_the_token_that_opened_it(memory_server: MemoryServer, alice, bob):
    async def scenario() -> None:
        async with httpx.AsyncClient(base_url=memory_server.base_url, timeout=30) as http:
            async with http.stream(
                "GET", f"/mcp/{CLIENT}/sse/{alice[0]}", headers=bearer(alice[1])
            ) as stream:
                assert stream.status_code == 200
                events = sse_data(stream)
                endpoint = await anext(events)
                assert endpoint.startswith("/mcp/messages/?session_id=")

                hijack = await http.post(endpoint, json=INITIALIZE, headers=bearer(bob[1]))
                assert hijack.status_code == 403
                assert hijack.json()["error"] == "forbidden"
                anonymous = await http.post(endpoint, json=INITIALIZE)
                assert anonymous.status_code == 401
                elsewhere = endpoint.replace("/mcp/messages/", f"/mcp/{CLIENT}/sse/{bob[0]}/messages/")
                assert (
                    await http.post(elsewhere, json=INITIALIZE, headers=bearer(alice[1]))
                ).status_code == 404

                # OpenMemory's second message path works for the session's own user.
                own_path = endpoint.replace("/mcp/messages/", f"/mcp/{CLIENT}/sse/{alice[0]}/messages/")
                accepted = await http.post(own_path, json=INITIALIZE, headers=bearer(alice[1]))
                assert accepted.status_code in (200, 202)
                reply = json.loads(await anext(events))
                assert reply["id"] == 1 and reply["result"]["protocolVersion"] == "2025-03-26"

            unknown = await http.post(
                "/mcp/messages/",
                params={"session_id": uuid.uuid4().hex},
                json=INITIALIZE,
                headers=bearer(alice[1]),
            )
            assert unknown.status_code == 404
            assert unknown.json()["error"] == "not_found"
            garbled = await http.post(
                "/mcp/messages/", params={"session_id": "nope"}, json=INITIALIZE, headers=bearer(alice[1])
            )
            assert garbled.status_code == 422

    run(scenario)


# -- bad input and protocol details ------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("client", "user"),
    [(CLIENT, "al ice"), (CLIENT, "-alice"), (CLIENT, "x" * 65), ("bad client!", "{user}")],
)
def test_invalid_names_in_the_path_are_422(
    memory_server: MemoryServer, alice, transport: str, client: str, user: str
):
    user = user.format(user=alice[0])
    response = open_transport(
        memory_server, transport, user, bearer(memory_server.admin_token), client=client
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "bad_input"


def test_streamable_http_answers_like_openmemory(memory_server: MemoryServer, alice):
    url = mcp_url(memory_server, "http", alice[0])
    auth = bearer(alice[1])

    initialized = httpx.post(url, json=INITIALIZE, headers=auth | BOTH_ACCEPTED)
    assert initialized.status_code == 200
    assert initialized.headers["content-type"].startswith("application/json")
    assert initialized.json()["result"]["protocolVersion"] == "2025-03-26"

    assert httpx.post(url, json=INITIALIZE, headers=auth | {"Accept": "text/html"}).status_code == 406
    garbled = httpx.post(
        url, content=b"{not json", headers=auth | BOTH_ACCEPTED | {"Content-Type": "application/json"}
    )
    assert garbled.status_code == 400
    assert httpx.delete(url, headers=auth).status_code == 405
    assert httpx.get(url, headers=auth | {"Accept": "text/event-stream"}).status_code == 405


def test_sse_message_errors_are_json(memory_server: MemoryServer, alice):
    async def scenario() -> None:
        async with httpx.AsyncClient(base_url=memory_server.base_url, timeout=30) as http:
            async with http.stream(
                "GET", f"/mcp/{CLIENT}/sse/{alice[0]}", headers=bearer(alice[1])
            ) as stream:
                events = sse_data(stream)  # held: dropping the generator would close the stream
                endpoint = await anext(events)
                garbled = await http.post(
                    endpoint,
                    content=b"{not json",
                    headers=bearer(alice[1]) | {"Content-Type": "application/json"},
                )
                assert garbled.status_code == 400
                assert garbled.json()["error"] == "bad_input"
            assert (await http.get("/mcp/messages/", headers=bearer(alice[1]))).status_code == 405

    run(scenario)


# -- helpers ------------------------------------------------------------------------------------------


def open_transport(
    server: MemoryServer, transport: str, user: str, headers: dict[str, str], *, client: str = CLIENT
) -> httpx.Response:
    """The first request a client makes: the SSE GET, or the Streamable HTTP initialize POST."""
    url = mcp_url(server, transport, user, client)
    if transport == "sse":
        # A refusal comes back at once; an accepted stream would never end, so cap the read.
        with httpx.stream("GET", url, headers=headers, timeout=10) as response:
            if response.status_code == 200:
                pytest.fail(f"the SSE stream was opened for {headers}")
            response.read()
            return response
    return httpx.post(url, json=INITIALIZE, headers=headers | BOTH_ACCEPTED)


async def sse_data(stream: httpx.Response) -> AsyncIterator[str]:
    """The ``data`` of each event on an open SSE response."""
    async for line in stream.aiter_lines():
        if line.startswith("data:"):
            yield line.removeprefix("data:").strip()
