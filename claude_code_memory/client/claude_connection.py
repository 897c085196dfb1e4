"""How Claude Code reaches this server, read from Claude Code's own files (never changed here).

    connected(home, project_dir) -> ClaudeConnection

* the plugin: enabled in a settings file (user, project or local scope;
  :func:`claude_plugin.enabled_in`); its MCP server comes with it;
* our settings hooks (:func:`claude_settings.installed`) in any of those files;
* MCP servers that point at a claude-code-memory endpoint (``/mcp/<client>/sse|http/<user>``):
  user scope in ``~/.claude.json``'s ``mcpServers``, local scope under that file's
  ``projects[<dir>].mcpServers``, project scope in ``<dir>/.mcp.json``.

With both the plugin and settings hooks, the hooks serve sessions and the plugin's stand aside
(docs/plugin.md), so the route is "hooks".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import claude_plugin as cp
from . import claude_settings as cs

#: An MCP URL of ours: the endpoint's path shape (mcp/paths.py), with or without a query.
_MCP_PATH = re.compile(r"/mcp/[^/]+/(sse|http)/[^/?#]+")


@dataclass(frozen=True)
class McpServer:
    name: str
    #: "user", "local", "project" or "plugin".
    scope: str
    url: str
    where: str


@dataclass(frozen=True)
class ClaudeConnection:
    plugin_in: list[str] = field(default_factory=list)
    hooks_in: list[str] = field(default_factory=list)
    mcp: list[McpServer] = field(default_factory=list)

    @property
    def route(self) -> str | None:
        """ "hooks", "plugin" or None (not connected)."""
        if self.hooks_in:
            return "hooks"
        return "plugin" if self.plugin_in else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "connected": self.route is not None,
            "route": self.route,
            "plugin_enabled_in": self.plugin_in,
            "hooks_in": self.hooks_in,
            "mcp_servers": [vars(server) for server in self.mcp],
        }


def _read(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def is_ours(server: Any) -> bool:
    return isinstance(server, Mapping) and bool(_MCP_PATH.search(str(server.get("url", ""))))


def _servers(block: Any, scope: str, where: Path) -> list[McpServer]:
    if not isinstance(block, Mapping):
        return []
    return [
        McpServer(str(name), scope, str(server.get("url")), str(where))
        for name, server in block.items()
        if is_ours(server)
    ]


def settings_files(home: Path, project_dir: Path) -> list[Path]:
    """User, project and local settings, the order Claude Code's scopes are named in."""
    return [
        home / ".claude" / "settings.json",
        project_dir / ".claude" / "settings.json",
        project_dir / ".claude" / "settings.local.json",
    ]


def connected(home: Path, project_dir: Path) -> ClaudeConnection:
    plugin_in: list[str] = []
    hooks_in: list[str] = []
    for path in settings_files(home, project_dir):
        document = _read(path)
        if cp.enabled_in(document):
            plugin_in.append(str(path))
        if cs.installed(document):
            hooks_in.append(str(path))
    state_file = home / ".claude.json"
    state = _read(state_file)
    mcp = _servers(state.get("mcpServers"), "user", state_file)
    projects = state.get("projects")
    project_entry = projects.get(str(project_dir)) if isinstance(projects, Mapping) else None
    if isinstance(project_entry, Mapping):
        mcp += _servers(project_entry.get("mcpServers"), "local", state_file)
    project_file = project_dir / ".mcp.json"
    mcp += _servers(_read(project_file).get("mcpServers"), "project", project_file)
    if plugin_in:
        mcp.append(McpServer("memory", "plugin", "(the plugin's option server_url)", plugin_in[0]))
    return ClaudeConnection(plugin_in, hooks_in, mcp)


def describe(connection: ClaudeConnection) -> tuple[str, str]:
    """Two lines for ``ccmem status``: how Claude Code is connected, and its MCP server(s)."""
    route = connection.route
    if route is None:
        how = "not connected (`ccmem connect claude-code`)"
    elif route == "plugin":
        how = f"connected by the plugin {cp.PLUGIN_ID} (enabled in {', '.join(connection.plugin_in)})"
    else:
        how = f"connected by settings hooks ({', '.join(connection.hooks_in)})"
        if connection.plugin_in:
            how += "; the plugin stands aside for them"
    servers = ", ".join(f"{server.name} ({server.scope} scope, {server.where})" for server in connection.mcp)
    return how, servers or "none of ours"
