"""Anthropic's memory tool driving our store from Claude Code, through the proxy's bridge.

The real pinned Claude Code CLI (``claude -p``) talks to ``ccmem proxy`` (reverse mode,
``proxy.memory_tool_bridge: true``), which forwards to the fake Anthropic upstream; our MCP
server is added to Claude Code as ``memory``, so Claude Code has the tool
``mcp__memory__memory_20250818``. The fake upstream plays a model trained on the native tool: it
checks that every request offering tools offers ``{"type": "memory_20250818", "name": "memory"}``
(never the MCP tool) with the ``context-management-2025-06-27`` beta, and answers streamed
``tool_use`` blocks named ``memory``. Claude Code must see them under the MCP name (it runs
them on our server) and the final streamed answer intact.

The scenario: create a memory file and read it back in one session; read it from a new
session (it persisted); edit it with ``str_replace``. Each step is confirmed over REST.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.capture_proxy import CaptureProxy, require_mitmdump
from tests.support.fake_anthropic import FakeAnthropic, Reply, block_text, tool_results
from tests.support.node_clients import ClaudeRun, mcp_config, run_claude
from tests.support.server import MemoryServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

MCP_NAME = "mcp__memory__memory_20250818"
NATIVE = {"type": "memory_20250818", "name": "memory"}
BETA = "context-management-2025-06-27"
PATH = "/memories/deploy.md"
NOTE = "# Deploys\n- The user deploys on Fridays, after the 14:00 freeze.\n"
FIRST_ANSWER = "Noted — I saved that you deploy on Fridays (after the 14:00 freeze) in /memories/deploy.md ✓"
SECOND_ANSWER = (
    "From memory: you deployed on Fridays; I've updated /memories/deploy.md to Thursdays as you asked."
)


class NativeMemoryModel:
    """A model that knows only the native memory tool: a script of tool inputs per session, then an answer.

    A session is recognised by a marker in the user's prompt. The step is the number of this
    session's ``tool_result`` blocks the request carries; each ``tool_use`` id names its session
    and step. Requests that do not offer the native tool (Claude Code's side requests) get "OK.".
    """

    def __init__(self, scripts: dict[str, tuple[list[dict[str, Any]], str]]) -> None:
        self.scripts = scripts
        self.results: dict[str, str] = {}  # tool_use id -> the text Claude Code sent back
        self.offered: list[dict[str, Any]] = []  # request bodies that offered tools
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body.get("tools"):
            with self._lock:
                self.offered.append(body)
        if NATIVE not in (body.get("tools") or []):
            return Reply.text("OK.")
        prompt = json.dumps(body.get("messages", [])[:1])
        session = next((name for name in self.scripts if name in prompt), None)
        if session is None:
            return Reply.text("OK.")
        steps, answer = self.scripts[session]
        done = [
            block
            for block in tool_results(body)
            if str(block.get("tool_use_id", "")).startswith(f"toolu_{session}_")
        ]
        for block in done:
            with self._lock:
                self.results[block["tool_use_id"]] = block_text(block)
        if len(done) < len(steps):
            step = len(done)
            return Reply.tool_use(
                "memory",
                steps[step],
                tool_use_id=f"toolu_{session}_{step}",
                preamble="Checking my memory directory.",
            )
        return Reply.text(answer)


def memory_tool(server: MemoryServer, token: str, command: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/api/v1/memory-tool",
        json=command,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )


def file_rows(server: MemoryServer, token: str) -> list[dict[str, Any]]:
    listed = httpx.get(
        f"{server.base_url}/api/v1/memories",
        params={"size": 100},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    listed.raise_for_status()
    return [item for item in listed.json()["items"] if item.get("path")]


def assert_run(run: ClaudeRun, answer: str, steps: int, proxy: CaptureProxy, server: MemoryServer) -> None:
    """Claude Code ran the MCP tool for every step, without an error, and printed the answer intact."""
    logs = f"{run.describe()}\n--- proxy ---\n{proxy.log()}\n--- server ---\n{server.log()[-3000:]}"
    assert run.returncode == 0, logs
    statuses = {
        entry["name"]: entry["status"] for entry in run.event("system", "init").get("mcp_servers", [])
    }
    assert statuses.get("memory") == "connected", logs
    uses = run.tool_uses()
    # Claude Code saw the tool under its MCP name: the bridge renamed the streamed tool_use.
    assert [use["name"] for use in uses] == [MCP_NAME] * steps, logs
    results = run.tool_results()
    assert len(results) == steps and not any(result.get("is_error") for result in results), logs
    final = run.event("result")
    assert final.get("subtype") == "success" and final.get("result") == answer, logs


def test_claude_code_uses_the_native_memory_tool_on_our_store(start_server: Any, tmp_path: Path) -> None:
    require_mitmdump()
    server = start_server()
    user = "alice"
    token = server.make_token(user)
    model = NativeMemoryModel(
        {
            "deploy-day": (
                [
                    {"command": "create", "path": PATH, "file_text": NOTE},
                    {"command": "view", "path": PATH},
                ],
                FIRST_ANSWER,
            ),
            "change-day": (
                [
                    {"command": "view", "path": PATH},
                    {
                        "command": "str_replace",
                        "path": PATH,
                        "old_str": "on Fridays",
                        "new_str": "on Thursdays",
                    },
                ],
                SECOND_ANSWER,
            ),
        }
    )
    config = mcp_config("memory", f"{server.base_url}/mcp/claude-code/sse/{user}", token)

    with FakeAnthropic(model, event_delay=0.005) as upstream:
        proxy = CaptureProxy(
            tmp_path / "proxy",
            mode="reverse",
            api_url=server.base_url,
            token=token,
            reverse_upstream=upstream.base_url,
            memory_tool_bridge=True,
        )
        with proxy:
            home = tmp_path / "home"
            home.mkdir()

            def claude(prompt: str, env: dict[str, str] | None = None) -> ClaudeRun:
                return run_claude(
                    prompt,
                    home=home,
                    upstream_url=proxy.url,
                    mcp_config=config,
                    allowed_tools=[MCP_NAME],
                    env=env,
                )

            # Session 1: create the file, read it back. Claude Code's default: MCP tools are
            # deferred (named in a system reminder, loaded through ToolSearch).
            first = claude("Remember this (deploy-day): I deploy on Fridays, after the 14:00 freeze.")
            assert_run(first, FIRST_ANSWER, 2, proxy, server)
            assert model.results["toolu_deploy-day_0"] == f"File created successfully at: {PATH}"
            assert (
                "2\t- The user deploys on Fridays, after the 14:00 freeze."
                in model.results["toolu_deploy-day_1"]
            )
            listing = memory_tool(server, token, {"command": "view", "path": "/memories"})
            assert listing.status_code == 200 and "deploy.md" in listing.json()["result"], listing.text
            [row] = file_rows(server, token)
            assert row["path"] == PATH and row["content"] == NOTE

            # Session 2, a new claude -p: the file is still there; edit it. Tool search off: the
            # MCP tool's definition is in the tools, replaced by the native one.
            second = claude(
                "What do you remember about my deploys (change-day)? It's Thursdays now.",
                env={"ENABLE_TOOL_SEARCH": "false"},
            )
            assert_run(second, SECOND_ANSWER, 2, proxy, server)
            assert first.event("system", "init")["session_id"] != second.event("system", "init")["session_id"]
            assert "on Fridays" in model.results["toolu_change-day_0"]  # read from the store
            assert model.results["toolu_change-day_1"].startswith("The memory file has been edited.")
            shown = memory_tool(server, token, {"command": "view", "path": PATH})
            assert shown.status_code == 200 and "deploys on Thursdays, after" in shown.json()["result"]
            [row] = file_rows(server, token)
            assert row["path"] == PATH and row["content"] == NOTE.replace("on Fridays", "on Thursdays")

        requests = upstream.message_requests

    # Every request that offered tools offered the native tool, never the MCP one, with the beta.
    offered = [r for r in requests if isinstance(r.body, dict) and r.body.get("tools")]
    assert len(offered) >= 6, [r.body.get("model") for r in requests]
    for request in offered:
        names = [tool.get("name") for tool in request.body["tools"]]
        assert NATIVE in request.body["tools"] and MCP_NAME not in names, names
        assert BETA in [beta.strip() for beta in request.headers.get("anthropic-beta", "").split(",")]
        assert request.headers["anthropic-beta"].count(BETA) == 1
        # The history's earlier tool uses reached the model under the native name too.
        history = [
            block
            for message in request.body["messages"]
            if message.get("role") == "assistant" and isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_use"
        ]
        assert all(block["name"] == "memory" for block in history), history
    assert any(len(r.body["messages"]) > 2 for r in offered)  # a request with history was checked
    # Both of Claude Code's ways of listing MCP tools were bridged: deferred (session 1, the
    # native tool appended) and in the tools (session 2, replaced in place).
    modes = {
        marker: {
            "ToolSearch" in [tool.get("name") for tool in r.body["tools"]]
            for r in offered
            if marker in json.dumps(r.body["messages"][:1])
        }
        for marker in ("deploy-day", "change-day")
    }
    assert modes == {"deploy-day": {True}, "change-day": {False}}, modes

    # The captured turns (the proxy kept capturing) name the tool as Claude Code knows it.
    deadline = time.monotonic() + 30
    while True:
        pending = httpx.get(
            f"{server.base_url}/api/v1/consent/pending",
            params={"size": 100},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        ).json()["items"]
        if len(pending) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    contents = [item["content"] for item in pending]
    assert any(FIRST_ANSWER in text for text in contents) and any(
        SECOND_ANSWER in text for text in contents
    ), contents
