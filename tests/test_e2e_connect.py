"""End to end: ``ccmem connect claude-code`` with the pinned Claude Code CLI in a temporary HOME,
against the real server and the fake Anthropic upstream, and ``claude -p`` sessions run from an
environment with no ``CCMEM_*`` variable (a new shell).

The hooks route (``--hooks``): the user's token minted with the admin token and kept 0600 in the
data directory, command hooks that read it, the MCP server added over Streamable HTTP. One
session stores a fact with the MCP tool; the next is told it through the UserPromptSubmit hook,
and its turn reaches the consent queue. A second ``connect`` changes nothing; ``--undo`` leaves
settings.json byte for byte as it was, the MCP server gone and the token revoked. Then the
plugin route: the same recall in a new session, and ``--undo`` restoring the settings again.
Then the pure part: the hook entries that read the token file.
"""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from claude_code_memory.client import claude_settings as cs
from tests.support.fake_anthropic import FakeAnthropic, ToolThenAnswer, always_text
from tests.support.node_clients import claude_bin, claude_env, run_claude
from tests.support.server import REPO_ROOT, MemoryServer, ccmem_bin

REPLY = "Noted, thanks."
#: A user's own settings, in an indentation Claude Code would not write itself.
USER_SETTINGS = '{\n    "model": "opus",\n    "cleanupPeriodDays": 20\n}\n'


def connect(home: Path, server: MemoryServer, *args: str) -> subprocess.CompletedProcess[str]:
    # An installation of its own in the home (config.yaml, data/): named, as the CLI reads
    # no config from the directory it runs in.
    config = home / "config.yaml"
    if not config.exists():
        shutil.copyfile(REPO_ROOT / "config.yaml", config)
    env = claude_env(home, "http://127.0.0.1:9") | {
        "CCMEM_ADMIN_TOKEN": server.admin_token,
        "CCMEM_CONFIG": str(config),
        "USER": "newcomer",
    }
    completed = subprocess.run(
        [str(ccmem_bin()), "connect", "claude-code", "--url", server.base_url, "--claude", str(claude_bin())]
        + list(args),
        env=env,
        cwd=home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert completed.returncode == 0, f"exit {completed.returncode}\n{completed.stdout}\n{completed.stderr}"
    return completed


def request_with(upstream: FakeAnthropic, needle: str) -> str:
    texts = [json.dumps(request.body) for request in upstream.message_requests]
    found = [text for text in texts if needle in text]
    assert found, f"no request upstream carried {needle!r}"
    return found[0]


def pending(server: MemoryServer, token: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{server.base_url}/api/v1/consent/pending", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_connect_hooks_then_plugin_recall_in_a_new_shell(start_server: object, tmp_path: Path) -> None:
    server: MemoryServer = start_server()  # type: ignore[operator]
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(USER_SETTINGS, encoding="utf-8")
    marker = uuid.uuid4().hex[:6]
    fact = f"My favourite build tool is called zebrafinch {marker}"

    connected = connect(home, server, "--hooks")
    assert "round trip ok" in connected.stdout and "by the hooks route" in connected.stdout, connected.stdout
    token_file = home / "data" / "connect" / "claude-code.token"
    token = token_file.read_text().strip()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert token not in settings.read_text() and token not in connected.stdout + connected.stderr
    again = connect(home, server, "--hooks")
    assert "already installed" in again.stdout, again.stdout
    assert token_file.read_text().strip() == token  # the same token, not a new one each run
    mcp = subprocess.run(
        [str(claude_bin()), "mcp", "get", "memory"],
        env=claude_env(home, "http://127.0.0.1:9"),
        cwd=home,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert mcp.returncode == 0 and "/mcp/claude-code/http/newcomer?tools=claude-code" in mcp.stdout, (
        mcp.stdout
    )

    # Session one stores the fact with the MCP server connect added (no CCMEM_* anywhere).
    script = ToolThenAnswer("mcp__memory__add_memories", {"text": fact}, REPLY)
    with FakeAnthropic(script) as upstream:
        stored = run_claude(
            f"Remember this: {fact}",
            home=home,
            upstream_url=upstream.base_url,
            allowed_tools=["mcp__memory"],
            env={"ENABLE_TOOL_SEARCH": "false"},
        )
        assert stored.event("result").get("result") == REPLY, stored.describe()
        # The claude-code tool set (docs/mcp.md), not the 23 tools of the default list.
        offered = {
            tool.get("name")
            for request in upstream.message_requests
            for tool in request.body.get("tools", [])
            if str(tool.get("name", "")).startswith("mcp__memory__")
        }
        assert offered == {
            "mcp__memory__search_memory",
            "mcp__memory__add_memories",
            "mcp__memory__delete_memories",
            "mcp__memory__memory_20250818",
        }, offered
    [result] = [block for block in stored.tool_results() if block.get("tool_use_id") == script.tool_use_id]
    assert not result.get("is_error"), result

    # Session two, a new shell: the hook reads the token file and the fact reaches the model.
    with FakeAnthropic(always_text(REPLY)) as upstream:
        prompt = "Which build tool do I like best?"
        told = run_claude(prompt, home=home, upstream_url=upstream.base_url)
        assert told.event("result").get("result") == REPLY, told.describe()
        assert fact in request_with(upstream, prompt)
    session_id = told.event("system", "init")["session_id"]
    assert [item for item in pending(server, token) if item["conversation_id"] == session_id]

    undone = connect(home, server, "--undo")
    assert "is as it was before" in undone.stdout, undone.stdout
    assert settings.read_text(encoding="utf-8") == USER_SETTINGS
    assert not token_file.exists()
    refused = httpx.get(
        f"{server.base_url}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert refused.status_code == 401
    gone = subprocess.run(
        [str(claude_bin()), "mcp", "get", "memory"],
        env=claude_env(home, "http://127.0.0.1:9"),
        cwd=home,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert gone.returncode != 0

    # The plugin route: the fact, stored before, reaches a new session through the plugin's hook.
    plugged = connect(home, server)
    assert "by the plugin route" in plugged.stdout and "round trip ok" in plugged.stdout, plugged.stdout
    with FakeAnthropic(always_text(REPLY)) as upstream:
        prompt = "Remind me: which build tool is my favourite?"
        told = run_claude(prompt, home=home, upstream_url=upstream.base_url)
        assert told.event("result").get("result") == REPLY, told.describe()
        assert fact in request_with(upstream, prompt)
    undone = connect(home, server, "--undo")
    assert "is as it was before" in undone.stdout, undone.stdout
    assert settings.read_text(encoding="utf-8") == USER_SETTINGS


# -- the pure parts ----------------------------------------------------------------------------
def test_hook_entries_with_a_token_file_are_command_hooks_naming_the_file() -> None:
    token_file = Path("/home/ada/.local/share/ccmem/connect/claude-code.token")
    for event in cs.DEFAULT_EVENTS:
        entry = cs.hook_entry(
            event, "http://127.0.0.1:8765", python="/usr/bin/python3", token_file=token_file
        )
        assert entry["type"] == "command" and entry["command"].endswith(str(token_file))
        assert cs.is_ours(entry)
    assert cs.hook_entry("Stop", "http://127.0.0.1:8765")["type"] == "http"  # without: as before
