"""``ccmem hooks install|status|uninstall``: this server as Claude Code's hook target.

``install`` merges our hooks into one settings.json (``--scope user``: ``~/.claude/settings.json``;
``project``: ``.claude/settings.json``; ``local``: ``.claude/settings.local.json``), keeping every
other key and hook as it was, after a backup beside it. The token is never written: the hooks
send ``$CCMEM_TOKEN`` from the environment Claude Code runs in. See docs/hooks.md.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from ..client import claude_plugin as cp
from ..client import claude_settings as cs
from ..errors import BadInput
from . import common
from .common import ConfigOpt, JsonOpt, UrlOpt, out

app = typer.Typer(help="Claude Code hooks: recall at session start and with every prompt, capture at Stop.")


class Scope(StrEnum):
    user = "user"
    project = "project"
    local = "local"


ScopeOpt = Annotated[
    Scope,
    typer.Option(
        help="user: ~/.claude/settings.json; project: .claude/settings.json; "
        "local: .claude/settings.local.json"
    ),
]
ProjectOpt = Annotated[
    Path | None, typer.Option("--project-dir", help="the project for --scope project/local (default: .)")
]


def settings_path(scope: Scope, project_dir: Path | None = None) -> Path:
    if scope is Scope.user:
        return Path.home() / ".claude" / "settings.json"
    name = "settings.json" if scope is Scope.project else "settings.local.json"
    return (project_dir or Path.cwd()) / ".claude" / name


def _events(events: str | None) -> list[str]:
    chosen = [e.strip() for e in (events or ",".join(cs.DEFAULT_EVENTS)).split(",") if e.strip()]
    unknown = [e for e in chosen if e not in cs.ALL_EVENTS]
    if unknown or not chosen:
        raise BadInput(
            f"unknown hook event(s) {', '.join(unknown) or '(none)'}: choose from {', '.join(cs.ALL_EVENTS)}"
        )
    return chosen


def plugin_enabled_in(project_dir: Path | None = None) -> list[Path]:
    """The settings files (user, project, local) that enable our Claude Code plugin."""
    found = []
    for scope in Scope:
        path = settings_path(scope, project_dir)
        try:
            document, _ = cs.load(path)
        except ValueError:
            continue
        if cp.enabled_in(document):
            found.append(path)
    return found


def _read(path: Path) -> tuple[dict[str, Any], str | None]:
    try:
        return cs.load(path)
    except ValueError as exc:
        raise BadInput(str(exc)) from None


def _write(path: Path, document: dict[str, Any], old_text: str | None) -> Path | None:
    """Write the document (after a backup of the old file); the backup's path."""
    backup = None
    if old_text is not None:
        backup = path.with_name(f"{path.name}.ccmem-{datetime.now():%Y%m%dT%H%M%S%f}.bak")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cs.dump(document, old_text), encoding="utf-8")
    return backup


@app.command()
def install(
    scope: ScopeOpt = Scope.user,
    events: Annotated[
        str | None,
        typer.Option(
            help=f"comma-separated events (default {','.join(cs.DEFAULT_EVENTS)}; "
            f"also {','.join(cs.HTTP_EVENTS[2:])})"
        ),
    ] = None,
    project_dir: ProjectOpt = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            help="a file holding the token (mode 0600), read by command hooks when $CCMEM_TOKEN is "
            "not set (ccmem connect claude-code writes one)",
        ),
    ] = None,
    url: UrlOpt = None,
    config: ConfigOpt = None,
    ca_file: Annotated[
        Path | None,
        typer.Option(
            "--ca-file",
            help="with --token-file: the certificate an https server is checked against (docs/remote.md)",
        ),
    ] = None,
) -> None:
    """Add our hooks to Claude Code's settings (idempotent; other hooks and keys kept as they are)."""
    base_url = common.server_url(common.settings(config), url)
    # The plugin carries the same hooks: both would answer every prompt (docs/plugin.md).
    enabled = plugin_enabled_in(project_dir)
    if enabled:
        raise BadInput(
            f"the Claude Code plugin {cp.PLUGIN_ID} is enabled in {', '.join(map(str, enabled))} and "
            "carries these hooks already; nothing was installed (`ccmem plugin uninstall` first to "
            "use settings hooks instead)"
        )
    path = settings_path(scope, project_dir)
    document, text = _read(path)
    token_file = token_file.resolve() if token_file else None
    ca_file = ca_file.resolve() if ca_file else None
    entries = {
        event: cs.hook_entry(event, base_url, token_file=token_file, ca_file=ca_file)
        for event in _events(events)
    }
    updated = cs.with_hooks(document, entries)
    if text is not None and updated == document and cs.installed(document) == entries:
        out.print(f"already installed in {path}: {', '.join(entries)}", highlight=False)
        return
    backup = _write(path, updated, text)
    out.print(f"installed {', '.join(entries)} in {path}", highlight=False)
    if backup:
        out.print(f"backup: {backup}", highlight=False)
    if token_file is None:
        out.print(
            f"the hooks send ${cs.TOKEN_ENV}: export it where Claude Code runs (ccmem token create)",
            highlight=False,
        )


@app.command()
def uninstall(scope: ScopeOpt = Scope.user, project_dir: ProjectOpt = None) -> None:
    """Remove our hooks (only ours) from Claude Code's settings."""
    path = settings_path(scope, project_dir)
    document, text = _read(path)
    if not cs.installed(document):
        out.print(f"no hooks of ours in {path}", highlight=False)
        return
    backup = _write(path, cs.without_hooks(document), text)
    out.print(f"removed our hooks from {path}; backup: {backup}", highlight=False)


@app.command()
def status(
    project_dir: ProjectOpt = None, url: UrlOpt = None, as_json: JsonOpt = False, config: ConfigOpt = None
) -> None:
    """Which settings files hold our hooks, and whether the server answers the hook endpoint."""
    import os

    import httpx

    base_url = common.server_url(common.settings(config), url)
    files = {}
    for scope in Scope:
        path = settings_path(scope, project_dir)
        try:
            document, _ = cs.load(path)
        except ValueError:
            document = {}
        files[scope.value] = {"path": str(path), "events": sorted(cs.installed(document))}
    token = os.environ.get(cs.TOKEN_ENV)
    try:
        response = httpx.post(
            base_url + cs.HOOK_PATH,
            json={},
            headers={"Authorization": f"Bearer {token}"} if token else {},
            timeout=5,
        )
        server = {200: "answers", 401: f"refuses the token (${cs.TOKEN_ENV})"}.get(
            response.status_code, f"HTTP {response.status_code}"
        )
    except httpx.HTTPError as exc:
        server = f"unreachable ({exc.__class__.__name__})"
    plugin = [str(path) for path in plugin_enabled_in(project_dir)]
    report = {
        "files": files,
        "server": base_url,
        "endpoint": server,
        "token_set": bool(token),
        "plugin_enabled_in": plugin,
    }
    if as_json:
        common.print_json(report)
        return
    for scope_name, found in files.items():
        events = ", ".join(found["events"]) or "none"
        out.print(f"{scope_name:8} {found['path']}: {events}", highlight=False)
    out.print(f"server   {base_url}{cs.HOOK_PATH}: {server}", highlight=False)
    if plugin:
        ours = any(found["events"] for found in files.values())
        standing = "stand aside for these hooks" if ours else "serve sessions"
        where = ", ".join(plugin)
        out.print(f"plugin   {cp.PLUGIN_ID} enabled in {where}: its hooks {standing}", highlight=False)
    if not token:
        out.print(f"${cs.TOKEN_ENV} is not set: the hooks will be refused", highlight=False)
