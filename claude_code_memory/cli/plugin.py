"""``ccmem plugin install|uninstall|status``: our Claude Code plugin, installed by Claude Code's own CLI.

``install`` runs ``claude plugin marketplace add <this checkout>``, ``claude plugin install
ccmem@claude-code-memory`` and ``claude plugin configure … --values-stdin`` (the token goes on
stdin, never on a command line), after a snapshot of ``~/.claude/settings.json``;
``uninstall`` runs ``claude plugin uninstall`` (and ``marketplace remove`` when ``install`` added
it) and puts the settings back byte for byte (client/claude_plugin.py). See docs/plugin.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Annotated

import typer

from ..client import claude_plugin as cp
from ..client import claude_settings as cs
from ..config import TOKEN_ENV
from ..errors import BadInput, MemoryStackError, Unavailable
from . import common
from .common import ConfigOpt, UrlOpt, out
from .hooks import Scope, plugin_enabled_in, settings_path

app = typer.Typer(help="The Claude Code plugin: hooks, MCP server and skills, configured in Claude Code.")

ClaudeOpt = Annotated[
    str, typer.Option("--claude", help="the Claude Code CLI to run (default: claude on PATH)")
]


def _claude(executable: str) -> str:
    found = shutil.which(executable)
    if not found:
        raise Unavailable(f"the Claude Code CLI ({executable!r}) is not on PATH: pass --claude PATH")
    return found


def _run(claude: str, *args: str, stdin: str | None = None) -> str:
    completed = subprocess.run(
        [claude, "plugin", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if completed.returncode != 0:
        said = (completed.stderr.strip() or completed.stdout.strip()).splitlines()
        last = said[-1] if said else f"exit {completed.returncode}"
        raise MemoryStackError(f"claude plugin {args[0]} failed: {last}")
    return completed.stdout


def _marketplace_known(claude: str) -> bool:
    listed = json.loads(_run(claude, "marketplace", "list", "--json") or "[]")
    return any(entry.get("name") == cp.MARKETPLACE for entry in listed if isinstance(entry, dict))


def _user_of(base_url: str, token: str) -> str:
    """The token's user, from the server (``GET /api/v1/me``)."""
    import httpx

    try:
        response = httpx.get(
            f"{base_url}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=10
        )
    except httpx.HTTPError as exc:
        reason = exc.__class__.__name__
        raise Unavailable(f"the server at {base_url} cannot be reached ({reason}): pass --user") from exc
    if response.status_code != 200:
        raise BadInput(f"the server at {base_url} refused the token (HTTP {response.status_code})")
    user = response.json().get("user_id")
    if not user:
        raise BadInput(
            "the admin token has no user of its own: give the plugin a user's token (ccmem token create)"
        )
    return str(user)


def _snapshot(settings: Path) -> cp.Snapshot | None:
    """The snapshot an earlier ``install`` took (kept across installs: it holds the original)."""
    try:
        return cp.Snapshot.load(settings)
    except ValueError as exc:
        raise BadInput(str(exc)) from None


def _credentials() -> Path:
    return Path.home() / ".claude" / ".credentials.json"


@app.command()
def install(
    user: Annotated[
        str | None, typer.Option("--user", help="the token's user (default: asked of the server)")
    ] = None,
    token: Annotated[
        str | None, typer.Option("--token", help=f"the user's token (default: ${TOKEN_ENV})")
    ] = None,
    url: UrlOpt = None,
    claude: ClaudeOpt = "claude",
    config: ConfigOpt = None,
) -> None:
    """Install and configure the plugin for Claude Code (user scope), from this checkout."""
    root = cp.marketplace_root()
    if root is None:
        raise Unavailable(
            "no .claude-plugin/marketplace.json beside this installation: run it from a checkout"
        )
    token = token or os.environ.get(TOKEN_ENV)
    if not token:
        raise BadInput(f"no token: pass --token or set ${TOKEN_ENV} (ccmem token create --user NAME)")
    base_url = common.server_url(common.settings(config), url)
    user = user or _user_of(base_url, token)
    executable = _claude(claude)
    settings = settings_path(Scope.user)
    snapshot = _snapshot(settings) or cp.Snapshot.take(settings, _credentials())
    if not _marketplace_known(executable):
        _run(executable, "marketplace", "add", str(root))
        snapshot.marketplace_added = True
    snapshot.save()
    _run(executable, "install", cp.PLUGIN_ID)
    values = {"server_url": base_url, "user_id": user, "token": token}
    _run(executable, "configure", cp.PLUGIN_ID, "--values-stdin", stdin=json.dumps(values))
    out.print(f"installed {cp.PLUGIN_ID} for user {user} at {base_url}", highlight=False, soft_wrap=True)
    for path in _settings_hooks():
        out.print(
            f"{path} holds hooks of `ccmem hooks install`: the plugin's hooks stand aside while they "
            "are there; `ccmem hooks uninstall` hands over to the plugin",
            highlight=False,
            soft_wrap=True,
        )


@app.command()
def uninstall(claude: ClaudeOpt = "claude") -> None:
    """Uninstall the plugin and put ~/.claude/settings.json back as it was before ``install``."""
    executable = _claude(claude)
    settings = settings_path(Scope.user)
    snapshot = _snapshot(settings)
    installed = json.loads(_run(executable, "list", "--json") or "[]")
    if any(isinstance(entry, dict) and entry.get("id") == cp.PLUGIN_ID for entry in installed):
        _run(executable, "uninstall", cp.PLUGIN_ID)
    if snapshot is None:
        out.print(
            f"uninstalled {cp.PLUGIN_ID}; no snapshot of the settings to restore",
            highlight=False,
            soft_wrap=True,
        )
        return
    if snapshot.marketplace_added:
        _run(executable, "marketplace", "remove", cp.MARKETPLACE)
    exact = snapshot.restore()
    if exact:
        out.print(
            f"uninstalled {cp.PLUGIN_ID}; {settings} is as it was before", highlight=False, soft_wrap=True
        )
    else:
        out.print(
            f"uninstalled {cp.PLUGIN_ID}; {settings} changed since the install: your changes were kept, "
            "the empty plugin keys Claude Code left were removed",
            highlight=False,
            soft_wrap=True,
        )


def _settings_hooks() -> list[Path]:
    found = []
    for scope in Scope:
        path = settings_path(scope)
        try:
            document, _ = cs.load(path)
        except ValueError:
            continue
        if cs.installed(document):
            found.append(path)
    return found


@app.command()
def status() -> None:
    """Where the plugin is enabled, and whether hooks of ``ccmem hooks install`` make it stand aside."""
    enabled = plugin_enabled_in()
    where = f"enabled in {', '.join(map(str, enabled))}" if enabled else "not enabled"
    out.print(f"plugin {cp.PLUGIN_ID}: {where}", highlight=False, soft_wrap=True)
    hooks = _settings_hooks()
    if hooks and enabled:
        out.print(
            f"hooks of `ccmem hooks install` in {', '.join(map(str, hooks))}: they serve sessions, the "
            "plugin's hooks stand aside",
            highlight=False,
            soft_wrap=True,
        )
