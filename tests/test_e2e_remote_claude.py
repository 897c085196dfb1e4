"""The pinned Claude Code CLI against a server with a self-signed certificate (docs/remote.md):
its MCP connection fails while the certificate is unknown to it and connects once
``NODE_EXTRA_CA_CERTS`` names the pinned file, from the process environment or from the ``env``
of ``~/.claude/settings.json`` (where ``ccmem connect claude-code --server`` writes it); and, after
``ccmem connect claude-code --server --fingerprint`` in a fresh HOME, a plain ``claude -p`` there
has the MCP server connected and its prompt hook recalls a memory from the TLS server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.fake_anthropic import FakeAnthropic, ToolThenAnswer
from tests.support.node_clients import claude_bin, mcp_config, run_claude
from tests.support.server import ccmem_bin
from tests.support.tls_server import TlsServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]


def _status(run: object, name: str = "memory") -> str | None:
    init = run.event("system", "init")  # type: ignore[attr-defined]
    return {entry["name"]: entry["status"] for entry in init.get("mcp_servers", [])}.get(name)


def test_claude_code_reaches_a_self_signed_server_only_when_it_trusts_the_pinned_certificate(
    tmp_path: Path,
) -> None:
    with TlsServer(tmp_path / "server") as server:
        token = server.make_token("remote-claude", "laptop")
        config = mcp_config(
            "memory", f"{server.base_url}/mcp/claude-code/http/remote-claude", token, transport="http"
        )
        outcomes: dict[str, str | None] = {}
        with FakeAnthropic(ToolThenAnswer("mcp__memory__search_memory", {"query": "x"}, "done")) as upstream:
            for case in ("untrusted", "environment", "settings"):
                home = tmp_path / case
                home.mkdir()
                env = {"NODE_EXTRA_CA_CERTS": str(server.cert_file)} if case == "environment" else {}
                if case == "settings":
                    (home / ".claude").mkdir()
                    settings = {"env": {"NODE_EXTRA_CA_CERTS": str(server.cert_file)}}
                    (home / ".claude" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
                run = run_claude(
                    "hello", home=home, upstream_url=upstream.base_url, mcp_config=config, env=env
                )
                outcomes[case] = _status(run)
        assert outcomes["untrusted"] != "connected", outcomes
        assert outcomes["environment"] == "connected", outcomes
        assert outcomes["settings"] == "connected", outcomes


def test_connect_server_gives_the_real_claude_code_hooks_and_mcp_on_the_remote_server(tmp_path: Path) -> None:
    with TlsServer(tmp_path / "server") as server:
        token = server.make_token("remote-gus", "laptop")
        stored = httpx.post(
            f"{server.base_url}/api/v1/memories",
            json={"text": "The laptop's deploy target is the staging cluster gus-42.", "infer": False},
            headers={"Authorization": f"Bearer {token}"},
            verify=server.trusting(),
            timeout=60,
        )
        assert stored.status_code < 300, stored.text
        home = tmp_path / "laptop"
        home.mkdir()
        config = tmp_path / "laptop.yaml"
        config.write_text(f"server:\n  data_dir: {tmp_path / 'laptop-data'}\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CCMEM_")}
        env |= {"HOME": str(home), "CCMEM_CONFIG": str(config), "NO_PROXY": "127.0.0.1,localhost"}
        command = [str(ccmem_bin()), "connect", "claude-code", "--server", server.base_url, "--token", token]
        command += ["--fingerprint", server.printed_fingerprint(), "--claude", str(claude_bin())]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "MCP server 'memory' added" in done.stdout, done.stdout

        with FakeAnthropic(ToolThenAnswer("mcp__memory__search_memory", {"query": "x"}, "done")) as upstream:
            run = run_claude(
                "Which staging cluster is the laptop's deploy target?",
                home=home,
                upstream_url=upstream.base_url,
            )
            bodies = json.dumps([request.body for request in upstream.message_requests])
        assert _status(run) == "connected", run.describe()  # MCP, from the user config connect wrote
        assert "gus-42" in bodies, run.describe()  # the hook recalled it from the remote server
