"""``ccmem status``: everything a person asks on the second day, in one screen.

The server's health and version (``/health``), one line a service of the stack (api, ui,
proxy: running or not, PID, port, healthy), the connected user's memory count
(``/api/v1/stats`` with the token ``ccmem connect`` saved, or one given), how Claude Code is
connected (plugin or settings hooks, and its MCP server's scope: client/claude_connection.py)
and whether the user service is installed (cli/service.py). With the server unreachable it
prints what it can and exits 3.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..client import claude_connection
from ..client import connection as saved_connection
from ..config import Settings
from ..errors import BadInput, MemoryStackError, Unavailable
from ..stack import services as stack_services
from ..stack import supervisor
from . import common, service
from .common import ConfigOpt, JsonOpt, UrlOpt, out


def _health(base: str) -> tuple[int, dict[str, Any]]:
    """``/health``'s status code and body; Unavailable (exit 3) when nothing answers."""
    import httpx  # where used: `ccmem serve` never needs it (restart time)

    try:
        response = httpx.get(f"{base}/health", timeout=10)
    except httpx.HTTPError as exc:
        reason = f"cannot reach the server at {base} ({exc.__class__.__name__})"
        raise Unavailable(f"{reason}; {saved_connection.when_down(base)}") from exc
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or "status" not in body:
        raise BadInput(
            f"{base}/health answered HTTP {response.status_code} without a health report; "
            "is that a claude-code-memory server?"
        )
    return response.status_code, body


def services(settings: Settings) -> list[dict[str, Any]]:
    """One row a service of the stack: what the supervisor's state file says, checked against
    the processes and ports; a service the stack does not run is probed on its configured port."""
    pid_path = stack_services.pid_file(settings)
    running = stack_services.read_pid(pid_path)
    supervised = running is not None and supervisor.is_supervisor(running)
    state = stack_services.read_state(stack_services.state_file(settings)) if supervised else None
    rows = []
    for name in stack_services.SERVICE_ORDER:
        [spec] = stack_services.plan(settings, {name}, [name])
        known = state.services.get(name) if state else None
        if known is not None:
            spec = dataclasses.replace(spec, port=known.port)
            up = known.pid is not None and supervisor.alive(known.pid)
            row = {"name": name, "running": up, "pid": known.pid if up else None, "supervised": True}
        else:
            # Not in the stack: something may still answer there (`ccmem serve` run by hand).
            row = {"name": name, "running": False, "pid": None, "supervised": False}
        row["port"] = spec.port
        row["healthy"] = supervisor.healthy(spec)
        row["running"] = row["running"] or row["healthy"]
        rows.append(row)
    return rows


def _service_line(row: dict[str, Any]) -> str:
    if not row["running"]:
        return f"not running (port {row['port']})"
    pid = f"pid {row['pid']}" if row["pid"] else "not started by the stack"
    health = "healthy" if row["healthy"] else "NOT healthy"
    return f"running, {pid}, port {row['port']}, {health}"


def _counts(
    base: str,
    config: Path | None,
    settings: Settings,
    user: str | None,
    token: str | None,
    connection: saved_connection.Connection | None,
) -> dict[str, Any] | None:
    """The memory counts for ``user`` (with the admin token), for the token's user, or for the
    user ``ccmem connect`` saved (its token, sent only to its own server); None without one."""
    from ..client.remote import choose_token  # where used: it imports httpx (restart time)

    chosen = choose_token(token, settings.server.admin_token)
    value = chosen.value if chosen is not None else None
    who = user
    fallback = chosen is None or chosen.source == "the admin token"
    if not user and fallback and connection is not None and connection.url.rstrip("/") == base:
        value, who = connection.token(), connection.user
    elif chosen is None or (chosen.is_admin and not user):
        # The admin token counts only for a user it is told about, however it was given.
        return None
    if value is None:
        return None
    scope = common.without_none({"user_id": user})
    try:
        with common.remote(config, base, value) as client:
            stats = client.get("/api/v1/stats", params=scope)
            pending = client.get("/api/v1/consent/pending/count", params=scope)
    except MemoryStackError as exc:
        if who != user and not isinstance(exc, Unavailable):
            # The saved token no longer works (revoked, another server): say so, count nothing.
            return {"user": who, "error": f"{exc.message}; `ccmem connect claude-code` makes a new one"}
        raise
    return {
        "user": who,
        "memories": stats["total_memories"],
        "apps": stats["total_apps"],
        "pending": pending["total"],
    }


def status(
    user: common.UserOpt = None,
    url: UrlOpt = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="a token to count the user's memories with (default: $CCMEM_TOKEN, then the one "
            "`ccmem connect claude-code` saved; no counts without one)",
        ),
    ] = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Is memory working? The server, each service, the memory count, Claude Code, the user service.

    The server's health and version; one line a service (api, ui, proxy: running, PID, port,
    healthy); the connected user's memory count; how Claude Code is connected (plugin or
    settings hooks, the MCP server's scope); whether the user service is installed.

    The server is --url, else the one `ccmem connect claude-code` saved, else the configured
    address. Exits 0 when it is healthy, 1 when it reports a problem, 3 when nothing answers
    (the other lines are printed all the same).
    """
    settings = common.settings(config)
    connection = saved_connection.load()
    base = common.server_url(settings, url or (connection.url if connection else None))
    problem: Unavailable | None = None
    health: dict[str, Any] | None = None
    healthy = False
    try:
        code, health = _health(base)
        healthy = code == 200 and health.get("status") == "ok"
    except Unavailable as exc:
        problem = exc
    # A degraded server could not count, and its health report says more.
    counts = _counts(base, config, settings, user, token, connection) if healthy else None
    rows = services(settings)
    claude = claude_connection.connected(Path.home(), Path.cwd())
    user_service = service.service_state()
    if as_json:
        common.print_json(
            {
                "url": base,
                "reachable": problem is None,
                "healthy": healthy,
                "health": health,
                "counts": counts,
                "services": rows,
                "claude_code": claude.as_dict(),
                "user_service": user_service,
                "connection": (
                    {"user": connection.user, "url": connection.url, "route": connection.route}
                    if connection
                    else None
                ),
            }
        )
    else:
        _print(base, health, healthy, counts, rows, claude, user_service, problem is not None)
    if problem is not None:
        raise problem
    if not healthy and health is not None:
        common.err.print(
            f"[red]error:[/] the server reports {health.get('status')!r}", highlight=False, soft_wrap=True
        )
        raise typer.Exit(common.EXIT_ERROR)


def _print(
    base: str,
    health: dict[str, Any] | None,
    healthy: bool,
    counts: dict[str, Any] | None,
    rows: list[dict[str, Any]],
    claude: claude_connection.ClaudeConnection,
    user_service: dict[str, Any],
    unreachable: bool,
) -> None:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")  # paths whole, however narrow the terminal
    mark = "[green]✓[/]" if healthy else "[red]✗[/]"
    grid.add_row("server", f"{mark} {base}" + (" (not reachable)" if unreachable else ""), style=None)
    if health is not None:
        grid.add_row("version", str(health.get("version", "?")))
        for part, state in health.items():
            if part == "local_mode" and isinstance(state, dict):
                state = f"ON (no token acts as user {state.get('user')!r})" if state.get("enabled") else "off"
            if part not in ("status", "version"):
                grid.add_row(part.replace("_", " "), common.text(str(state)))
    for row in rows:
        grid.add_row(row["name"], common.text(_service_line(row)))
    if counts is not None and "error" in counts:
        grid.add_row("memories", common.text(f"{counts['user']}: cannot count: {counts['error']}"))
    elif counts is not None:
        who = counts["user"] or "this token's user"
        grid.add_row(
            "memories",
            common.text(
                f"{who}: {counts['memories']} in {counts['apps']} apps, {counts['pending']} pending consent"
            ),
        )
    how, servers = claude_connection.describe(claude)
    grid.add_row("claude code", common.text(how))
    grid.add_row("mcp server", common.text(servers))
    grid.add_row("user service", common.text(service.describe(user_service)))
    out.print(grid)
