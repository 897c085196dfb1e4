"""The plugin's hook script (``plugin/scripts/memory_hook.sh``: sh and curl) against a real server,
run as Claude Code runs it (``sh SCRIPT`` with the hook input on stdin and the plugin's options in
its environment): recall and capture with the token from ``CLAUDE_PLUGIN_OPTION_TOKEN``; nothing
printed and exit 0 on every failure; standing aside exactly when ``ccmem hooks install``'s hooks
are in a settings file (the rule of ``claude_settings.is_ours``); the token never on a command
line. The end-to-end run through the pinned CLI is tests/test_e2e_plugin.py."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_code_memory.client import claude_settings as cs

from .support.server import MemoryServer, add_memory
from .test_claude_plugin import other_tools_hooks

SCRIPT = Path(__file__).resolve().parents[1] / "plugin" / "scripts" / "memory_hook.sh"
FACT = "The kestrel service deploys with the wrenfinch tool."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("plugin-hook-shell")) as running:
        yield running


@pytest.fixture(scope="module")
def token(server: MemoryServer) -> str:
    value = server.make_token(f"ada-{uuid.uuid4().hex[:6]}")
    add_memory(server, value, FACT, project="kestrel")
    return value


def run_hook(
    home: Path,
    body: dict[str, Any],
    url: str,
    token: str | None,
    *,
    path: str | None = None,
    on_socket: bool = False,
) -> str:
    """The script's output for ``body``; ``on_socket``: the input on a socket, as Claude Code
    (Node's child processes) hands it over, else on a pipe."""
    env = {"PATH": path or os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    env["CLAUDE_PLUGIN_OPTION_SERVER_URL"] = url
    env["CLAUDE_PROJECT_DIR"] = str(home / "kestrel")
    if token is not None:
        env["CLAUDE_PLUGIN_OPTION_TOKEN"] = token
    data = json.dumps(body).encode()
    if on_socket:
        ours, theirs = socket.socketpair()
        with ours, theirs:
            ours.sendall(data)
            ours.shutdown(socket.SHUT_WR)
            done = subprocess.run(
                ["/bin/sh", str(SCRIPT)], stdin=theirs, env=env, cwd=home, capture_output=True, timeout=30
            )
    else:
        done = subprocess.run(
            ["/bin/sh", str(SCRIPT)], input=data, env=env, cwd=home, capture_output=True, timeout=30
        )
    assert done.returncode == 0 and done.stderr == b"", done
    return done.stdout.decode()


def prompt(home: Path) -> dict[str, Any]:
    return {
        "hook_event_name": "UserPromptSubmit",
        "session_id": str(uuid.uuid4()),
        "cwd": str(home / "kestrel"),
        "transcript_path": "/dev/null",
        "prompt": "Which tool deploys the kestrel service?",
    }


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "kestrel" / ".git").mkdir(parents=True)
    return tmp_path


def test_recall_and_capture_with_the_plugin_s_token(server: MemoryServer, token: str, home: Path) -> None:
    for on_socket in (False, True):
        answer = json.loads(run_hook(home, prompt(home), server.base_url + "/", token, on_socket=on_socket))
        assert "wrenfinch" in answer["hookSpecificOutput"]["additionalContext"]
    stop = prompt(home) | {"hook_event_name": "Stop", "last_assistant_message": "It uses wrenfinch."}
    del stop["prompt"]
    run_hook(home, prompt(home) | {"session_id": stop["session_id"]}, server.base_url, token)
    run_hook(home, stop, server.base_url, token)
    with server.client(token) as client:
        pending = client.get("/api/v1/consent/pending", params={"project": "kestrel"}).json()["items"]
    assert any("It uses wrenfinch." in json.dumps(item) for item in pending)


def test_every_failure_prints_nothing_and_exits_0(server: MemoryServer, token: str, home: Path) -> None:
    assert run_hook(home, prompt(home), server.base_url, "wrong-token") == ""
    assert run_hook(home, prompt(home), server.base_url, None) == ""
    assert run_hook(home, prompt(home), "http://127.0.0.1:9", token) == ""  # nothing listens
    # A token a header cannot carry is never sent (nor a config line injected with it).
    assert run_hook(home, prompt(home), server.base_url, token + '"\nurl = "http://127.0.0.1:9') == ""
    # No curl on PATH: memory_hook.py answers instead.
    bare = home / "bin"
    bare.mkdir()
    (bare / "grep").symlink_to(shutil.which("grep") or "/bin/grep")
    # A real interpreter, not a shim (pyenv's is a bash script, and bash is not on this PATH).
    (bare / "python3").symlink_to(
        shutil.which("python3", path="/usr/bin:/bin") or os.path.realpath(sys.executable)
    )
    answer = run_hook(home, prompt(home), server.base_url, token, path=str(bare))
    assert "wrenfinch" in json.loads(answer)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("index", range(len(cs.ALL_EVENTS) + len(other_tools_hooks())))
def test_it_stands_aside_exactly_for_ccmem_hooks_install_s_hooks(
    server: MemoryServer, token: str, home: Path, index: int
) -> None:
    hooks = [cs.hook_entry(event, server.base_url) for event in cs.ALL_EVENTS] + other_tools_hooks()
    hook = hooks[index]
    where = home / "kestrel" / ".claude" / "settings.local.json"
    where.parent.mkdir(parents=True)
    where.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [hook]}]}}, indent=2), encoding="utf-8")
    answered = run_hook(home, prompt(home), server.base_url, token) != ""
    assert answered == (not cs.is_ours(hook)), hook


def test_the_token_is_never_on_a_command_line() -> None:
    script = SCRIPT.read_text(encoding="utf-8")
    # Only printf (a builtin) sees it, and curl reads it from a pipe (-K /dev/fd/3).
    uses = [line for line in script.splitlines() if "$token" in line and not line.lstrip().startswith("#")]
    assert all("printf" in line or line.lstrip().startswith("case") for line in uses), uses
    assert "curl -K /dev/fd/3 " in script
