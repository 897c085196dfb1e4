"""The pinned Claude Code CLI against the OAuth-protected MCP endpoint, headless (docs/oauth.md).

Without credentials ``claude mcp list`` and a ``-p`` run see the endpoint as "needs
authentication". ``claude mcp login --no-browser`` prints the authorization URL and waits for
the redirect URL to be pasted (it insists on a terminal, so it runs on a pseudo-terminal here):
the test plays the person in the browser (authorize → consent page → Allow) and pastes the
redirect back. Claude Code then holds the tokens, and ``claude -p`` calls ``add_memories``.

Claude Code identifies itself by its Client ID Metadata Document on claude.ai, which this
machine cannot fetch (no internet), so the test pre-registers a client (RFC 7591) and gives
Claude Code its id with ``--client-id`` and ``--callback-port``.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.fake_anthropic import FakeAnthropic, ToolThenAnswer
from tests.support.node_clients import claude_bin, claude_env, run_claude
from tests.support.server import MemoryServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

_CONTROL = re.compile(r"\x1b\]8;;[^\x07]*\x07|\x1b\[[0-9;?]*[A-Za-z]|[\r\n]")
_AUTHORIZE_URL = re.compile(r"(http://127\.0\.0\.1:\d+/authorize\?\S+)")
_FORM_REQUEST = re.compile(r'name="request" value="([^"]+)"')


def _read_until(fd: int, pattern: str, seconds: float) -> str:
    seen, deadline = "", time.monotonic() + seconds
    while time.monotonic() < deadline and pattern not in seen:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 65536).decode(errors="replace")
            except OSError:
                break
    return seen


def _claude(env: dict[str, str], home: Path, *args: str) -> str:
    done = subprocess.run(
        [str(claude_bin()), *args], env=env, cwd=home, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL, check=True,
    )  # fmt: skip
    return done.stdout


def test_claude_code_signs_in_headless_and_calls_a_tool(tmp_path: Path) -> None:
    env_server = {"CCMEM_AUTH__OAUTH__ENABLED": "true"}
    answer = ToolThenAnswer("mcp__memory__add_memories", {"text": "Claude Code came in by OAuth"}, "Stored.")
    with MemoryServer(tmp_path / "server", env=env_server) as server, FakeAnthropic(answer) as upstream:
        user_token = server.make_token("alice")
        home = tmp_path / "home"
        home.mkdir()
        env = claude_env(home, upstream.base_url)
        url = f"{server.base_url}/mcp/claude-code/http/alice"
        port = 47000 + os.getpid() % 1000
        callback = f"http://localhost:{port}/callback"
        client = httpx.post(
            f"{server.base_url}/register", json={"client_name": "Claude Code", "redirect_uris": [callback]}
        )
        assert client.status_code == 201, client.text
        client_id = client.json()["client_id"]
        _claude(env, home, "mcp", "add", "--scope", "user", "--transport", "http",
                "--client-id", client_id, "--callback-port", str(port), "memory", url)  # fmt: skip
        assert "Needs authentication" in _claude(env, home, "mcp", "list")

        primary, secondary = pty.openpty()
        login = subprocess.Popen(
            [str(claude_bin()), "mcp", "login", "--no-browser", "memory"],
            env=env | {"TERM": "xterm", "COLUMNS": "1000"},
            cwd=home,
            stdin=secondary,
            stdout=secondary,
            stderr=secondary,
            close_fds=True,
        )
        os.close(secondary)
        try:
            printed = _CONTROL.sub(" ", _read_until(primary, "paste the redirect URL", 60))
            found = _AUTHORIZE_URL.search(printed)
            assert found, printed
            with httpx.Client(follow_redirects=False, trust_env=False, timeout=30) as browser:
                consent_page = browser.get(browser.get(found.group(1)).headers["location"])
                assert "Allow Claude Code to use your memory?" in consent_page.text
                form = _FORM_REQUEST.search(consent_page.text)
                assert form
                decided = browser.post(
                    f"{server.base_url}/oauth/consent",
                    data={"request": form.group(1), "token": user_token, "decision": "allow"},
                )
            redirect = decided.headers["location"]
            assert redirect.startswith(callback + "?code=")
            os.write(primary, (redirect + "\r").encode())
            assert "Authenticated" in _read_until(primary, "Authenticated", 60)
            assert login.wait(timeout=30) == 0
        finally:
            if login.poll() is None:
                login.kill()
                login.wait()
            os.close(primary)

        assert "Connected" in _claude(env, home, "mcp", "list")
        run = run_claude(
            "Remember how Claude Code came in",
            home=home,
            upstream_url=upstream.base_url,
            allowed_tools=["mcp__memory"],
        )
        init = run.event("system", "init")
        assert {"name": "memory", "status": "connected"}.items() <= init["mcp_servers"][0].items()
        assert "Claude Code came in by OAuth" in json.dumps(run.tool_results())
        listed = httpx.get(
            f"{server.base_url}/api/v1/memories",
            params={"user_id": "alice"},
            headers={"Authorization": f"Bearer {user_token}"},
        )
        assert "Claude Code came in by OAuth" in listed.text
