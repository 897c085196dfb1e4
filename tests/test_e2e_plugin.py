"""End to end: our Claude Code plugin, installed and configured by the pinned Claude Code CLI into a
temporary HOME, against the real server and the fake Anthropic upstream.

``claude plugin validate --strict`` passes on the marketplace and on the plugin. ``ccmem plugin
install`` runs the CLI's ``marketplace add``, ``install`` and ``configure --values-stdin``; the
token lands in Claude Code's credentials file, not in settings.json. A ``claude -p`` session
started from an environment with no ``CCMEM_*`` variable gets the SessionStart briefing and a
recalled fact in its request upstream, its MCP server's tools are offered, and the turn reaches
the consent queue; ``/ccmem:remember …`` brings the skill and its MCP tool call stores the fact.
``ccmem hooks install`` refuses while the plugin is enabled; settings hooks written anyway make
the plugin's hooks stand aside (the prompt is served once, by them). ``ccmem plugin uninstall``
leaves settings.json byte for byte as it was and no credentials file behind.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from claude_code_memory.client import claude_settings as cs
from tests.support.fake_anthropic import FakeAnthropic, ToolThenAnswer, always_text, tool_names
from tests.support.node_clients import claude_bin, claude_env, run_claude
from tests.support.server import REPO_ROOT, MemoryServer, ccmem_bin
from tests.support.server import add_memory as add

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(500)]

REPLY = "Noted, thanks."
PLUGIN_ID = "ccmem@claude-code-memory"
#: How Claude Code names the tools of the plugin's MCP server ``memory``.
MCP_PREFIX = "mcp__plugin_ccmem_memory__"
#: A user's own settings, in an indentation and key order Claude Code would not write itself.
USER_SETTINGS = '{\n    "model": "opus",\n    "env": {"EDITOR": "vi"},\n    "cleanupPeriodDays": 20\n}\n'


def cli_env(home: Path) -> dict[str, str]:
    """What ``ccmem`` and ``claude plugin …`` run with: the temporary HOME, nothing of ours."""
    env = {name: value for name, value in claude_env(home, "http://127.0.0.1:9").items()}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]  # the package under test, not an installed one
    return env


def run(
    command: list[str], home: Path, *, check: bool = True, **env: str
) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(
        command,
        env=cli_env(home) | env,
        cwd=home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if check:
        assert completed.returncode == 0, (
            f"{command} exited {completed.returncode}\n{completed.stdout}{completed.stderr}"
        )
    return completed


def pending(server: MemoryServer, token: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{server.base_url}/api/v1/consent/pending", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def request_with(upstream: FakeAnthropic, needle: str) -> str:
    """The first message request (as JSON text) carrying ``needle``: the session's own turn."""
    texts = [json.dumps(request.body) for request in upstream.message_requests]
    found = [text for text in texts if needle in text]
    assert found, f"no request upstream carried {needle!r}"
    return found[0]


@pytest.mark.parametrize("target", [".", "plugin"])
def test_the_pinned_cli_validates_the_marketplace_and_the_plugin(tmp_path: Path, target: str) -> None:
    completed = run([str(claude_bin()), "plugin", "validate", "--strict", str(REPO_ROOT / target)], tmp_path)
    assert "Validation passed" in completed.stdout, completed.stdout


def test_the_plugin_recalls_and_captures_without_any_ccmem_variable(
    start_server: object, tmp_path: Path
) -> None:
    # A briefing of one memory, this project's: the global fact can only come with the prompt.
    server: MemoryServer = start_server(env={"CCMEM_CLAUDE_CODE__BRIEFING_MEMORIES": "1"})  # type: ignore[operator]
    home = tmp_path / "home"
    project = home / "project"
    project.mkdir(parents=True)
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(USER_SETTINGS, encoding="utf-8")
    credentials = home / ".claude" / ".credentials.json"
    token = server.make_token("plugged")
    marker = uuid.uuid4().hex[:6]
    briefing_fact = f"The release checklist lives in docs/release-{marker}.md"
    tool_fact = f"My favourite build tool is called zebrafinch {marker}"
    add(server, token, briefing_fact, project.name)  # the name the hooks give the folder
    add(server, token, tool_fact)

    ccmem, claude = str(ccmem_bin()), str(claude_bin())
    installed = run(
        [ccmem, "plugin", "install", "--url", server.base_url, "--claude", claude], home, CCMEM_TOKEN=token
    )
    assert f"installed {PLUGIN_ID} for user plugged" in installed.stdout, installed.stdout
    # The token is a sensitive option: in Claude Code's credentials file (0600), not its settings.
    assert token not in settings.read_text(encoding="utf-8")
    assert token in credentials.read_text(encoding="utf-8")
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    # Again: idempotent, and the snapshot of the settings before the first install is kept.
    run([ccmem, "plugin", "install", "--url", server.base_url, "--claude", claude], home, CCMEM_TOKEN=token)
    status = run([ccmem, "plugin", "status"], home).stdout
    assert f"plugin {PLUGIN_ID}: enabled in {settings}" in status, status
    listed = json.loads(run([claude, "plugin", "list", "--json"], home).stdout)
    assert [entry["id"] for entry in listed] == [PLUGIN_ID], listed

    # Each side sees the other: settings hooks are refused while the plugin is enabled.
    refused = run([ccmem, "hooks", "install", "--url", server.base_url], home, check=False)
    assert refused.returncode == 1 and PLUGIN_ID in refused.stderr, refused.stderr
    assert "hooks" not in json.loads(settings.read_text(encoding="utf-8"))

    with FakeAnthropic(always_text(REPLY)) as upstream:
        prompt = "Which build tool do I like best?"
        # No CCMEM_* at all. Tool search off: the MCP tools are sent in ``tools``, so the request
        # shows the plugin's MCP server answered tools/list, which it does only for a good token.
        # A plugin's MCP server connects in the background; with hooks as quick as the plugin's
        # (sh and curl) the first request can leave before it has, so the CLI is told to wait
        # for it (CLAUDE_CODE_MCP_STARTUP_WAIT_MS, the pinned CLI's own setting).
        wait = {"ENABLE_TOOL_SEARCH": "false", "CLAUDE_CODE_MCP_STARTUP_WAIT_MS": "15000"}
        session = run_claude(prompt, home=home, upstream_url=upstream.base_url, env=wait)
        final = session.event("result")
        assert final.get("subtype") == "success" and final.get("result") == REPLY, session.describe()
        turn = request_with(upstream, prompt)
        offered = {name for request in upstream.message_requests for name in tool_names(request.body)}
        assert {f"{MCP_PREFIX}search_memory", f"{MCP_PREFIX}add_memories"} <= offered, sorted(offered)
        # The plugin's URL asks for the claude-code tool set (docs/mcp.md): these four, no more.
        assert {name.removeprefix(MCP_PREFIX) for name in offered if name.startswith(MCP_PREFIX)} == {
            "search_memory",
            "add_memories",
            "delete_memories",
            "memory_20250818",
        }, sorted(offered)
        assert briefing_fact in turn, f"no SessionStart briefing upstream\n{turn[:3000]}"
        assert tool_fact in turn and 'kind=\\"recall\\"' in turn, turn[:3000]

    session_id = session.event("system", "init")["session_id"]
    captured = [item for item in pending(server, token) if item["conversation_id"] == session_id]
    assert [item["content"] for item in captured] == [f"User: {prompt}\n\nAssistant: {REPLY}"]
    assert captured[0]["project"] == project.name and captured[0]["channel"] == "capture"

    # The remember skill: `/ccmem:remember …` brings its instructions, and the model's call of
    # the plugin's MCP tool stores the fact with the plugin's token.
    fact = f"My dentist is called Dr. Mole {marker}"
    script = ToolThenAnswer(f"{MCP_PREFIX}add_memories", {"text": fact, "scope": "global"}, REPLY)
    with FakeAnthropic(script) as upstream:
        remembered = run_claude(
            f"/ccmem:remember {fact}",
            home=home,
            upstream_url=upstream.base_url,
            allowed_tools=[MCP_PREFIX.rstrip("_")],
            env={"ENABLE_TOOL_SEARCH": "false"},
        )
        assert remembered.event("result").get("result") == REPLY, remembered.describe()
        assert "# Remember" in request_with(upstream, fact)
    [stored] = [
        block for block in remembered.tool_results() if block.get("tool_use_id") == script.tool_use_id
    ]
    assert not stored.get("is_error"), stored
    found = httpx.post(
        f"{server.base_url}/api/v1/memories/search",
        json={"query": "dentist", "limit": 5},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ).json()["results"]
    assert fact in [hit["content"] for hit in found], found

    # Settings hooks written anyway (here for another user, through $CCMEM_TOKEN): the plugin's
    # hooks stand aside, so only that user's memories reach the session and only its queue
    # gets the turn.
    other_token = server.make_token("hooked")
    other_fact = f"My favourite build tool is called heronmoth {marker}"
    add(server, other_token, other_fact)
    before_hooks = settings.read_bytes()
    document, text = cs.load(settings)
    entries = {event: cs.hook_entry(event, server.base_url) for event in cs.DEFAULT_EVENTS}
    settings.write_text(cs.dump(cs.with_hooks(document, entries), text), encoding="utf-8")
    with FakeAnthropic(always_text(REPLY)) as upstream:
        prompt = "Which build tool is my favourite one?"
        hooked = run_claude(
            prompt, home=home, upstream_url=upstream.base_url, env={"CCMEM_TOKEN": other_token}
        )
        assert hooked.event("result").get("result") == REPLY, hooked.describe()
        turn = request_with(upstream, prompt)
        assert other_fact in turn and "zebrafinch" not in turn and briefing_fact not in turn, turn[:3000]
    hooked_id = hooked.event("system", "init")["session_id"]
    assert not [item for item in pending(server, token) if item["conversation_id"] == hooked_id]
    assert [item for item in pending(server, other_token) if item["conversation_id"] == hooked_id]
    settings.write_bytes(before_hooks)

    uninstalled = run([ccmem, "plugin", "uninstall", "--claude", claude], home)
    assert "is as it was before" in uninstalled.stdout, uninstalled.stdout
    assert settings.read_text(encoding="utf-8") == USER_SETTINGS
    assert not credentials.exists()
    assert json.loads(run([claude, "plugin", "list", "--json"], home).stdout) == []
    assert json.loads(run([claude, "plugin", "marketplace", "list", "--json"], home).stdout) == []


def test_the_memory_status_skill_checks_with_a_tool_the_plugin_offers_and_names_ccmem_up(
    start_server: object, tmp_path: Path
) -> None:
    """``/ccmem:memory-status`` with the pinned Claude Code: the skill's status command runs, its
    lines reach the model, and the model's check is a call of ``search_memory`` (a tool of the
    plugin's set) that succeeds with the plugin's token; with the server stopped the lines say
    it is not reachable and name ``ccmem up``."""
    server: MemoryServer = start_server()  # type: ignore[operator]
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    token = server.make_token("statused")
    ccmem, claude = str(ccmem_bin()), str(claude_bin())
    run([ccmem, "plugin", "install", "--url", server.base_url, "--claude", claude], home, CCMEM_TOKEN=token)
    tools = {"ENABLE_TOOL_SEARCH": "false", "CLAUDE_CODE_MCP_STARTUP_WAIT_MS": "15000"}

    script = ToolThenAnswer(f"{MCP_PREFIX}search_memory", {"query": "memory status", "limit": 1}, REPLY)
    with FakeAnthropic(script) as upstream:
        checked = run_claude(
            "/ccmem:memory-status",
            home=home,
            upstream_url=upstream.base_url,
            allowed_tools=[MCP_PREFIX.rstrip("_")],
            env=tools,
        )
        assert checked.event("result").get("result") == REPLY, checked.describe()
        skill = request_with(upstream, "# Memory status")
        assert f"server {server.base_url}: ok" in skill, skill[:4000]
        assert "get_context_info" not in skill and "search_memory" in skill
    [answer] = [block for block in checked.tool_results() if block.get("tool_use_id") == script.tool_use_id]
    assert not answer.get("is_error"), answer

    server.stop()
    with FakeAnthropic(always_text(REPLY)) as upstream:
        down = run_claude("/ccmem:memory-status", home=home, upstream_url=upstream.base_url, env=tools)
        assert down.event("result").get("result") == REPLY, down.describe()
        skill = request_with(upstream, "# Memory status")
        assert f"server {server.base_url}: not reachable" in skill, skill[:4000]
        assert "start it with `ccmem up`" in skill and "ccmem serve" not in skill
