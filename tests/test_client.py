"""`Mem0MCPClient` against the real server on loopback, over both MCP transports.

The five tools through the sync API; each failure as its typed error (a bad token, another
user's URL, a tool error, nothing listening, a server that stops answering, output that is not
the tool's); one session kept across many calls; a transparent reconnect after a restart.

One server for the module (tests restore it if they stop it); every test starts by emptying
its user's memories.
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import time
import uuid
from collections.abc import Iterator

import pytest

from claude_code_memory.client.mcp_client import TRANSPORTS, Mem0MCPClient, parse_tool_output
from claude_code_memory.config import Settings
from claude_code_memory.errors import BadInput, Forbidden, NotFound, Unauthorised, Unavailable
from tests.support.processes import free_port
from tests.support.server import MemoryServer

pytestmark = pytest.mark.timeout(120)

TIMEOUT = 5.0


@pytest.fixture(scope="module")
def memory_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("client-server")) as server:
        yield server


@pytest.fixture(scope="module")
def alice(memory_server: MemoryServer) -> tuple[str, str]:
    user = f"alice-{uuid.uuid4().hex[:6]}"
    return user, memory_server.make_token(user)


@pytest.fixture(params=TRANSPORTS)
def client(request: pytest.FixtureRequest, memory_server: MemoryServer, alice) -> Iterator[Mem0MCPClient]:
    if memory_server.process is None:  # a test before this one stopped it and failed
        memory_server.start()
    with Mem0MCPClient(memory_server.base_url, *alice, transport=request.param, timeout=TIMEOUT) as client:
        client.delete_all()
        yield client


def test_add_search_list_delete_and_delete_all(client: Mem0MCPClient):
    tea = f"I drink green tea every morning {uuid.uuid4().hex[:6]}"
    editor = f"My editor is Helix with a dark theme {uuid.uuid4().hex[:6]}"

    [added] = client.add(tea)
    assert added["event"] == "ADD" and added["memory"] == tea
    editor_id = client.add(editor)[0]["id"]

    [best] = client.search("what do I drink in the morning?", limit=1)
    assert best["id"] == added["id"] and best["memory"] == tea and "score" in best
    assert [hit["id"] for hit in client.search("which editor do I use?")][0] == editor_id
    assert len(client.search("anything", limit=10)) == 2

    assert {item["id"]: item["memory"] for item in client.list()} == {added["id"]: tea, editor_id: editor}

    assert client.delete(added["id"]) == 1
    assert [item["id"] for item in client.list()] == [editor_id]
    with pytest.raises(NotFound, match="No accessible memories"):
        client.delete(added["id"])

    assert client.delete_all() is None
    assert client.list() == []
    assert client.search("tea") == []


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_bad_token_is_unauthorised(memory_server: MemoryServer, alice, transport: str):
    with (
        Mem0MCPClient(memory_server.base_url, alice[0], "not-a-token", transport=transport) as client,
        pytest.raises(Unauthorised, match=r"refused the token.*HTTP 401"),
    ):
        client.search("anything")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_another_users_url_is_forbidden(memory_server: MemoryServer, alice, transport: str):
    with (
        Mem0MCPClient(memory_server.base_url, "someone-else", alice[1], transport=transport) as client,
        pytest.raises(Forbidden, match="cannot access the memories of user 'someone-else'"),
    ):
        client.list()


def test_tool_errors_carry_the_servers_message(client: Mem0MCPClient):
    with pytest.raises(BadInput, match="^text must be a non-empty string$"):
        client.add("")
    with pytest.raises(BadInput, match="limit must be between 1 and 100"):
        client.search("tea", limit=0)
    with pytest.raises(BadInput, match="query must be a non-empty string"):
        client.search("   ")
    # Nothing was stored, and the session is still good.
    assert client.list() == []
    assert client.connection_count == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_no_server_is_unavailable_at_once(transport: str):
    base_url = f"http://127.0.0.1:{free_port()}"
    with Mem0MCPClient(base_url, "alice", "token", transport=transport, timeout=TIMEOUT) as client:
        started = time.monotonic()
        with pytest.raises(Unavailable) as raised:
            client.search("anything")
        assert time.monotonic() - started < 1.0
        assert base_url in raised.value.message and "not running" in raised.value.message
        with pytest.raises(Unavailable, match="not running"):
            client.health()


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.integration
def test_the_timeout_bounds_connecting(transport: str):
    # Accepts connections (the kernel's backlog) and never answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        base_url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with Mem0MCPClient(base_url, "alice", "token", transport=transport, timeout=1.0) as client:
            started = time.monotonic()
            with pytest.raises(Unavailable, match=r"did not answer within 1 s"):
                client.search("anything")
            assert 0.9 < time.monotonic() - started < 2.5


def test_the_timeout_bounds_each_call(memory_server: MemoryServer, alice):
    """A frozen server (SIGSTOP) costs one timeout per call; once it thaws the client recovers."""
    with Mem0MCPClient(memory_server.base_url, *alice, transport="sse", timeout=1.0) as client:
        client.list()
        pid = memory_server.process.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(Unavailable, match="did not answer search_memory within 1 s"):
                client.search("tea")
            assert time.monotonic() - started < 2.0
        finally:
            os.kill(pid, signal.SIGCONT)
        assert client.list() == []


def test_one_session_serves_many_calls(
    client: Mem0MCPClient, memory_server: MemoryServer, alice, capsys: pytest.CaptureFixture[str]
):
    client.add("I keep my dotfiles in a git repository")
    client.search("warm-up")
    timings = []
    for number in range(50):
        started = time.perf_counter()
        assert client.search(f"where are my dotfiles? ({number})", limit=3)
        timings.append(time.perf_counter() - started)
    # The same call from a fresh client, which opens a session (connect, initialize) first.
    fresh = []
    for number in range(5):
        started = time.perf_counter()
        with Mem0MCPClient(
            memory_server.base_url, *alice, transport=client.transport, timeout=TIMEOUT
        ) as other:
            assert other.search(f"where are my dotfiles? (fresh {number})", limit=3)
        fresh.append(time.perf_counter() - started)
    p50, fresh_p50 = statistics.median(timings), statistics.median(fresh)
    with capsys.disabled():
        print(
            f"\n  {client.transport}: search p50 {p50 * 1000:.1f} ms, "
            f"max {max(timings) * 1000:.1f} ms over 50 calls on one session; "
            f"{fresh_p50 * 1000:.1f} ms with a fresh session"
        )
    assert client.connection_count == 1
    # A call on the kept session does not pay the connection and handshake a fresh client pays.
    assert p50 < fresh_p50, f"kept session p50 {p50 * 1000:.0f} ms, fresh {fresh_p50 * 1000:.0f} ms"


def test_a_restarted_server_is_reconnected_transparently(memory_server: MemoryServer, alice):
    clients = [
        Mem0MCPClient(memory_server.base_url, *alice, transport=transport, timeout=TIMEOUT)
        for transport in TRANSPORTS
    ]
    try:
        for client in clients:
            client.delete_all()
        kept = clients[0].add("I was written before the restart")[0]["id"]
        memory_server.restart()
        for client in clients:
            assert [item["id"] for item in client.list()] == [kept]
        sse, http = sorted(clients, key=lambda client: client.transport != "sse")
        # The SSE stream ended with the old process: a new session. Streamable HTTP is
        # stateless here, so its session may simply carry on over a new TCP connection.
        assert sse.connection_count == 2
        assert http.connection_count in (1, 2)
    finally:
        for client in clients:
            client.close()


def test_health_reports_the_server(memory_server: MemoryServer, alice):
    with Mem0MCPClient(memory_server.base_url, *alice) as client:
        health = client.health()
    assert health["status"] == "ok" and health["version"]


def test_from_settings_uses_the_mcp_section():
    settings = Settings.model_validate(
        {"mem0": {"mcp": {"base_url": "http://127.0.0.1:9999/", "client_name": "cursor"}}}
    )
    client = Mem0MCPClient.from_settings(settings, "bob", "token", transport="sse", timeout=3)
    assert client.url == "http://127.0.0.1:9999/mcp/cursor/sse/bob"
    assert client.timeout == 3.0
    assert "token" not in repr(client)
    client.close()


def test_bad_arguments_are_refused_before_any_connection():
    with pytest.raises(ValueError, match="transport"):
        Mem0MCPClient("http://127.0.0.1:1", "alice", "token", transport="websocket")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        Mem0MCPClient("http://127.0.0.1:1", "alice", "token", timeout=0)


@pytest.mark.parametrize(
    ("tool", "text"),
    [
        ("search_memory", "not json"),
        ("search_memory", '{"hits": []}'),
        ("search_memory", '{"results": [{"memory": "no id"}]}'),
        ("add_memories", '["results"]'),
        ("list_memories", '{"results": []}'),
        ("delete_memories", "Deleted them"),
    ],
)
def test_output_that_is_not_the_tools_is_refused(tool: str, text: str):
    with pytest.raises(ValueError):
        parse_tool_output(tool, text)


def test_the_tools_documented_output_is_parsed():
    assert parse_tool_output("search_memory", '{"results": [{"id": "a", "memory": "m"}]}') == [
        {"id": "a", "memory": "m"}
    ]
    assert parse_tool_output("list_memories", "[]") == []
    assert parse_tool_output("delete_memories", "Successfully deleted 1 memories") == 1
    assert parse_tool_output("delete_all_memories", "Successfully deleted all memories") is None
