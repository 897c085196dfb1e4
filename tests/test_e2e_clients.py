"""End to end with real third-party MCP clients against the real server.

* The MCP Inspector CLI (``@modelcontextprotocol/inspector``) lists the tools and calls them
  over SSE and over Streamable HTTP, with the user's bearer token.
* The Claude Code CLI (``@anthropic-ai/claude-code``) loads our server from ``--mcp-config``
  (with the bearer token in ``headers``) and, driven by a fake Anthropic upstream that plays
  the model, calls ``mcp__memory__search_memory`` and sends the memory it found back upstream.

The clients are pinned in ``tests/e2e/package.json``; ``.ci/run`` installs them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.fake_anthropic import FakeAnthropic, ToolThenAnswer, block_text, tool_results
from tests.support.node_clients import mcp_config, run_claude, run_inspector, tool_result_text
from tests.support.server import MemoryServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TOOLS = {"add_memories", "search_memory", "list_memories", "delete_memories", "delete_all_memories"}
CLIENT = "claude-code"
SEARCH_TOOL = "mcp__memory__search_memory"


@pytest.fixture(scope="module")
def memory_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    # One server for the module: each test works as its own user, so they cannot see each other.
    with MemoryServer(tmp_path_factory.mktemp("e2e-server")) as server:
        yield server


def new_user(server: MemoryServer) -> tuple[str, str]:
    user = f"e2e-{uuid.uuid4().hex[:8]}"
    return user, server.make_token(user)


def mcp_url(server: MemoryServer, transport: str, user: str) -> str:
    return f"{server.base_url}/mcp/{CLIENT}/{transport}/{user}"


def distinctive_fact() -> str:
    # Letters, digits and spaces only: it must survive being JSON-encoded twice unchanged.
    marker = uuid.uuid4().hex[:6]
    return f"My favourite build tool is called zebrafinch {marker}"


# -- MCP Inspector -----------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["sse", "http"])
def test_inspector_lists_the_memory_tools(
    memory_server: MemoryServer, tmp_path: Path, transport: str
) -> None:
    user, token = new_user(memory_server)

    result = run_inspector(
        mcp_url(memory_server, transport, user),
        transport=transport,
        token=token,
        method="tools/list",
        home=tmp_path,
    )

    tools = {tool["name"]: tool for tool in result.payload["tools"]}
    assert set(tools) >= TOOLS, f"missing tools: {TOOLS - set(tools)}"
    assert "text" in tools["add_memories"]["inputSchema"]["properties"]
    assert "infer" in tools["add_memories"]["inputSchema"]["properties"]
    assert "query" in tools["search_memory"]["inputSchema"]["properties"]
    assert "memory_ids" in tools["delete_memories"]["inputSchema"]["properties"]


@pytest.mark.parametrize("transport", ["sse", "http"])
def test_inspector_lists_a_dialect(memory_server: MemoryServer, tmp_path: Path, transport: str) -> None:
    # ?tools=mitm-mem0: mcp-mitm-mem0's six tools with its argument names, nothing else.
    user, token = new_user(memory_server)
    result = run_inspector(
        mcp_url(memory_server, transport, user) + "?tools=mitm-mem0",
        transport=transport,
        token=token,
        method="tools/list",
        home=tmp_path,
    )
    tools = {tool["name"]: tool for tool in result.payload["tools"]}
    assert list(tools) == [
        "search_memories",
        "list_memories",
        "add_memory",
        "delete_memory",
        "analyze_conversations",
        "suggest_next_actions",
    ]
    assert set(tools["add_memory"]["inputSchema"]["properties"]) == {"messages", "user_id", "metadata"}
    assert all("outputSchema" in tool for tool in tools.values())


def call_tool(
    server: MemoryServer, transport: str, user: str, token: str, home: Path, tool: str, arguments: dict
) -> str:
    """Call one tool through the Inspector CLI; its text, or a failure showing the server's log."""
    result = run_inspector(
        mcp_url(server, transport, user),
        transport=transport,
        token=token,
        method="tools/call",
        tool_name=tool,
        tool_args=arguments,
        home=home,
    )
    # The CLI exits 5 when the result has isError, with the result still on stdout.
    assert result.returncode == 0, (
        f"{tool} over {transport}: inspector exited {result.returncode}\n{result.stdout}\n{result.stderr}"
        f"\n--- server log ---\n{server.log()}"
    )
    return tool_result_text(result.payload)


@pytest.mark.parametrize(("add_over", "search_over"), [("sse", "http"), ("http", "sse")])
def test_inspector_adds_a_memory_and_finds_it(
    memory_server: MemoryServer, tmp_path: Path, add_over: str, search_over: str
) -> None:
    user, token = new_user(memory_server)
    fact = distinctive_fact()

    added = call_tool(
        memory_server, add_over, user, token, tmp_path, "add_memories", {"text": fact, "infer": False}
    )
    assert fact in added

    query = {"query": "which build tool do I like"}
    found = call_tool(memory_server, search_over, user, token, tmp_path, "search_memory", query)
    assert fact in found


@pytest.mark.parametrize("transport", ["sse", "http"])
@pytest.mark.parametrize("credential", ["none", "wrong", "other user's"])
def test_inspector_is_refused_without_the_users_token(
    memory_server: MemoryServer, tmp_path: Path, transport: str, credential: str
) -> None:
    user, _ = new_user(memory_server)
    token: str | None = None
    if credential == "wrong":
        token = "not-a-token"
    elif credential == "other user's":
        token = new_user(memory_server)[1]

    result = run_inspector(
        mcp_url(memory_server, transport, user),
        transport=transport,
        token=token,
        method="tools/list",
        home=tmp_path,
    )

    assert result.returncode != 0, f"listed tools with {credential} token:\n{result.stdout}"
    assert '"tools"' not in result.stdout


# -- Claude Code -------------------------------------------------------------------------------


def add_over_rest(server: MemoryServer, user: str, token: str, text: str) -> None:
    response = httpx.post(
        f"{server.base_url}/api/v1/memories/",
        json={"user_id": user, "text": text, "infer": False, "app": "e2e-rest"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 200, f"{response.status_code} {response.text}\n{server.log()}"


@pytest.mark.parametrize("transport", ["sse", "http"])
def test_claude_code_searches_memory_through_mcp(
    memory_server: MemoryServer, tmp_path: Path, transport: str
) -> None:
    user, token = new_user(memory_server)
    fact = distinctive_fact()
    add_over_rest(memory_server, user, token, fact)
    config = mcp_config("memory", mcp_url(memory_server, transport, user), token, transport=transport)
    answer = "Your favourite build tool is zebrafinch."
    script = ToolThenAnswer(SEARCH_TOOL, {"query": "favourite build tool"}, answer)

    with FakeAnthropic(script) as upstream:
        run = run_claude(
            "Which build tool do I like best?",
            home=tmp_path,
            upstream_url=upstream.base_url,
            mcp_config=config,
            allowed_tools=["mcp__memory"],
        )

    # Claude Code connected to our server and saw its tools.
    init = run.event("system", "init")
    statuses = {entry["name"]: entry["status"] for entry in init.get("mcp_servers", [])}
    assert statuses.get("memory") == "connected", f"{statuses}\n{run.describe()}\n{memory_server.log()}"
    assert {f"mcp__memory__{name}" for name in TOOLS} <= set(init["tools"])

    # It called the tool the (fake) model asked for, and the call succeeded.
    calls = [use for use in run.tool_uses() if use["name"] == SEARCH_TOOL]
    assert calls, run.describe()
    results = [r for r in run.tool_results() if r.get("tool_use_id") == calls[0]["id"]]
    assert results and not results[0].get("is_error"), (
        f"{run.describe()}\n--- server log ---\n{memory_server.log()}"
    )

    # The tool's result went back upstream, with the memory added over REST in it.
    sent_back = [
        block_text(block)
        for request in upstream.message_requests
        for block in tool_results(request.body, script.tool_use_id)
    ]
    assert sent_back, f"no tool_result reached the upstream\n{run.describe()}"
    assert fact in sent_back[-1], sent_back[-1]

    final = run.event("result")
    assert final.get("subtype") == "success" and final.get("result") == answer, run.describe()


def test_claude_code_reports_a_rejected_token(memory_server: MemoryServer, tmp_path: Path) -> None:
    user, _ = new_user(memory_server)
    config = mcp_config("memory", mcp_url(memory_server, "sse", user), "not-a-token")

    with FakeAnthropic(ToolThenAnswer(SEARCH_TOOL, {"query": "anything"}, "done")) as upstream:
        run = run_claude("hello", home=tmp_path, upstream_url=upstream.base_url, mcp_config=config)

    init = run.event("system", "init")
    statuses = {entry["name"]: entry["status"] for entry in init.get("mcp_servers", [])}
    assert statuses.get("memory") not in (None, "connected"), statuses
    assert not [name for name in init["tools"] if name.startswith("mcp__memory__")]
