"""The real third-party MCP clients the end-to-end tests drive: Claude Code and the MCP Inspector.

Both are pinned in ``tests/e2e/package.json`` (with its lock file) and installed into
``tests/e2e/node_modules`` by ``tests/e2e/install.sh``, which ``./install.sh --dev`` and
``.ci/run`` run. A missing client fails its tests (never skips them) with how to install it. Each run
gets its own temporary ``HOME`` so nothing is read from or written to the developer's
``~/.claude`` or ``~/.mcp-inspector``.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .processes import require_tool

E2E_DIR = Path(__file__).resolve().parent.parent / "e2e"
NODE_BIN = E2E_DIR / "node_modules" / ".bin"
INSTALL_HINT = (
    "install the pinned clients with ./install.sh --dev (or bash tests/e2e/install.sh; both need "
    'Node.js >= 20 and npm), or leave the end-to-end tests out: pytest -m "not e2e"'
)


def claude_bin() -> Path:
    return require_tool(NODE_BIN / "claude", f"the Claude Code CLI; {INSTALL_HINT}", required=True)


def inspector_bin() -> Path:
    return require_tool(NODE_BIN / "mcp-inspector", f"the MCP Inspector CLI; {INSTALL_HINT}", required=True)


def _base_env(home: Path) -> dict[str, str]:
    # Only what a node program needs: no proxies (they would route MCP traffic too), no
    # credentials or config from the developer's environment.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


# -- MCP Inspector -----------------------------------------------------------------------------


@dataclass
class InspectorResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def payload(self) -> Any:
        """The ``result`` of ``--format json`` output (the method's JSON-RPC result)."""
        if self.returncode != 0:
            raise AssertionError(
                f"inspector exited {self.returncode}: {self.stderr.strip() or self.stdout.strip()}"
            )
        return json.loads(self.stdout)["result"]


def run_inspector(
    url: str,
    *,
    transport: str,
    token: str | None,
    method: str,
    home: Path,
    tool_name: str | None = None,
    tool_args: dict[str, Any] | None = None,
    timeout: float = 90,
) -> InspectorResult:
    """One ``mcp-inspector --cli`` call; ``transport`` is ``sse`` or ``http``.

    The transport is always given: the CLI guesses it from the URL's last segment, and ours
    end in the user id. ``--stored-auth-only`` stops the CLI from starting an interactive OAuth
    flow when the server answers 401 (it fails with ``auth_required`` instead).
    """
    command = [
        str(inspector_bin()),
        "--cli",
        url,
        "--transport",
        transport,
        "--method",
        method,
        "--format",
        "json",
        "--stored-auth-only",
        "--connect-timeout",
        "30000",
    ]
    if token is not None:
        command += ["--header", f"Authorization: Bearer {token}"]
    if tool_name is not None:
        command += ["--tool-name", tool_name, "--tool-args-json", json.dumps(tool_args or {})]
    completed = subprocess.run(
        command, env=_base_env(home), cwd=home, capture_output=True, text=True, timeout=timeout, check=False
    )
    return InspectorResult(completed.returncode, completed.stdout, completed.stderr)


def tool_result_text(result: dict[str, Any]) -> str:
    """The text content of an MCP ``tools/call`` result."""
    return "\n".join(
        block.get("text", "") for block in result.get("content", []) if block.get("type") == "text"
    )


# -- Claude Code -------------------------------------------------------------------------------


@dataclass
class ClaudeRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def events(self) -> list[dict[str, Any]]:
        """The ``--output-format stream-json`` events, one JSON object a line."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip().startswith("{")]

    def event(self, kind: str, subtype: str | None = None) -> dict[str, Any]:
        for event in self.events:
            if event.get("type") == kind and (subtype is None or event.get("subtype") == subtype):
                return event
        raise AssertionError(f"no {kind}/{subtype} event in Claude Code's output:\n{self.describe()}")

    def tool_uses(self) -> list[dict[str, Any]]:
        """``tool_use`` blocks of the assistant messages Claude Code reports."""
        return [
            block
            for event in self.events
            if event.get("type") == "assistant"
            for block in event.get("message", {}).get("content", [])
            if block.get("type") == "tool_use"
        ]

    def tool_results(self) -> list[dict[str, Any]]:
        """``tool_result`` blocks of the user messages Claude Code reports (what the tools returned)."""
        return [
            block
            for event in self.events
            if event.get("type") == "user"
            for block in event.get("message", {}).get("content", [])
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]

    def describe(self) -> str:
        return (
            f"exit {self.returncode}\n--- stdout ---\n{self.stdout[-6000:]}\n"
            f"--- stderr ---\n{self.stderr[-3000:]}"
        )


def claude_env(home: Path, upstream_url: str) -> dict[str, str]:
    """The environment that makes Claude Code talk only to the fake upstream (ENVIRONMENT.md)."""
    return _base_env(home) | {
        "ANTHROPIC_API_KEY": "dummy",
        "ANTHROPIC_BASE_URL": upstream_url,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


def mcp_config(name: str, url: str, token: str, *, transport: str = "sse") -> dict[str, Any]:
    """A ``--mcp-config`` document for one remote server; ``transport`` is ``sse`` or ``http``."""
    server = {"type": transport, "url": url, "headers": {"Authorization": f"Bearer {token}"}}
    return {"mcpServers": {name: server}}


def run_claude(
    prompt: str,
    *,
    home: Path,
    upstream_url: str,
    mcp_config: dict[str, Any] | None = None,
    allowed_tools: list[str] | None = None,
    timeout: float = 120,
    env: dict[str, str] | None = None,
) -> ClaudeRun:
    """``claude -p PROMPT`` with stream-json output; only ``mcp_config``'s servers are loaded.

    Without ``allowed_tools`` Claude Code refuses MCP tool calls in print mode (and still exits
    0), so tests name the tools they expect to be called. ``env`` adds to Claude Code's
    environment (e.g. ``CCMEM_TOKEN`` for the hooks).
    """
    command = [str(claude_bin()), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    if mcp_config is not None:
        config_path = home / "mcp-config.json"
        config_path.write_text(json.dumps(mcp_config), encoding="utf-8")
        command += ["--strict-mcp-config", "--mcp-config", str(config_path)]
    if allowed_tools:
        command += ["--allowedTools", ",".join(allowed_tools)]
    workdir = home / "project"
    workdir.mkdir(exist_ok=True)
    completed = subprocess.run(
        command,
        env=claude_env(home, upstream_url) | (env or {}),
        cwd=workdir,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return ClaudeRun(completed.returncode, completed.stdout, completed.stderr)
