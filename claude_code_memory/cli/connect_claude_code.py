"""``ccmem connect claude-code [--hooks] [--undo]``: Claude Code connected to this server in one step.

1. The user's token, minted over REST with the admin token this installation has (reused on a
   second run while the server still takes it), kept in ``<data>/connect/claude-code.token``
   (mode 0600): a token source that every new shell sees, unlike an exported variable.
2. The plugin, through ``ccmem plugin install`` (Claude Code keeps the token as a sensitive
   option; the plugin carries the hooks and the MCP server) where the ``claude`` CLI has plugins;
   else, or with ``--hooks``, ``ccmem hooks install --token-file`` (command hooks that read the
   file) and ``claude mcp add --scope user --transport http`` with the token in its header.
3. The round trip: a marked memory stored, recalled through the hook endpoint, deleted.
4. With ``--service``: the user service that starts the stack at login (``ccmem service install``).

What it added is recorded in ``<data>/connect/claude-code.json``; ``--undo`` takes exactly that
away (the plugin uninstalled with the settings restored, or the settings file put back as it was
when nothing else changed it since, the MCP server removed, the user service's file removed, the
token revoked).

A successful connect also saves the connection (:mod:`claude_code_memory.client.connection`): the
CLI's default server and credentials from then on, as ``gh auth login`` makes them, and how the
local server is started when it is down.
"""

from __future__ import annotations

import getpass
import json
import os
import shlex
import shutil
import subprocess
import sys
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from ..client import claude_settings as cs
from ..client import connection as saved_connection
from ..client.connection import when_down
from ..config import Settings
from ..errors import BadInput, MemoryStackError, Unavailable
from ..stack.user_setup import write_private
from . import common
from . import hooks as hooks_cli
from . import plugin as plugin_cli
from . import service as service_cli
from .common import ConfigOpt, UrlOpt, out

app = typer.Typer(help="Connect a client to this server in one step.")

MCP_NAME = "memory"
TOKEN_NAME = "ccmem connect claude-code"


@dataclass
class Record:
    """What ``connect`` added, so that ``--undo`` removes that and nothing else."""

    route: str  # "plugin" or "hooks"
    user: str
    base_url: str
    token_id: str
    settings_path: str = ""
    #: The settings file before the hooks went in (None: there was none) and as connect left it.
    settings_before: str | None = None
    settings_written: str | None = None
    mcp_added: bool = False
    #: The unit or agent ``--service`` wrote ("": none).
    service_file: str = ""


def connect_dir(settings: Settings) -> Path:
    return settings.data_path / "connect"


def token_file(settings: Settings) -> Path:
    return connect_dir(settings) / "claude-code.token"


def record_file(settings: Settings) -> Path:
    return connect_dir(settings) / "claude-code.json"


def load_record(settings: Settings) -> Record | None:
    try:
        return Record(**json.loads(record_file(settings).read_text(encoding="utf-8")))
    except (FileNotFoundError, ValueError, TypeError):
        return None


def save_record(settings: Settings, record: Record) -> None:
    write_private(record_file(settings), json.dumps(asdict(record), indent=2) + "\n")


def ccmem_argv() -> tuple[list[str], Path | None]:
    """The argv prefix that runs this ``ccmem`` from any directory with any PATH (absolute
    paths), and the executable it resolves to when there is one."""
    running = Path(sys.argv[0])
    if running.name == "ccmem" and running.is_file():
        prefix = [str(running.resolve())]
        ours: Path | None = running.resolve()
    else:
        prefix = [sys.executable, "-m", "claude_code_memory.cli"]
        beside = Path(sys.executable).parent / "ccmem"
        ours = beside.resolve() if beside.is_file() else None
    return prefix, ours


def start_command(config: Path | None) -> tuple[list[str], str]:
    """The argv that starts this installation's server (absolute paths: a hook runs it from any
    directory, with any PATH) and the command a person types for it."""
    prefix, ours = ccmem_argv()
    argv = [*prefix, "up"] + (["--config", str(config)] if config is not None else [])
    on_path = shutil.which("ccmem")
    if ours is not None and on_path is not None and Path(on_path).resolve() == ours:
        return argv, "ccmem up"
    return argv, f"{shlex.join(prefix)} up"


def save_connection(
    settings: Settings,
    config: Path | None,
    base_url: str,
    user: str,
    route: str,
    *,
    local: bool,
    ca_file: Path | None = None,
) -> Path:
    """The CLI's default credentials from now on; a local server's start command with them."""
    chosen = common.config_file(config).resolve()
    start, hint = start_command(chosen if chosen.is_file() else None) if local else ([], "")
    saved = saved_connection.Connection(
        url=base_url,
        user=user,
        token_file=str(token_file(settings).resolve()),
        route=route,
        config=str(chosen) if local else None,
        start=start,
        start_hint=hint,
        # The plugin's SessionStart hook runs it (with --cwd and --quiet) to take auto-memory in.
        sync=[*ccmem_argv()[0], "sync", "claude-code"],
        ca_file=str(ca_file.resolve()) if ca_file is not None else None,
    )
    return saved_connection.save(saved)


# -- the server --------------------------------------------------------------------------------
def _http(method: str, url: str, token: str, verify: Any = True, **kwargs: Any) -> Any:
    """``verify``: True (the system's CAs) or a CA file's path (a pinned server certificate)."""
    import httpx  # where used: the CLI's start-up stays light

    try:
        response = httpx.request(
            method, url, headers={"Authorization": f"Bearer {token}"}, timeout=30, verify=verify, **kwargs
        )
    except httpx.HTTPError as exc:
        raise Unavailable(
            f"the server at {url.split('/api/')[0]} cannot be reached ({exc.__class__.__name__}): "
            f"{when_down(url.split('/api/')[0])}"
        ) from exc
    if response.status_code >= 400:
        raise MemoryStackError(f"{method} {url} answered HTTP {response.status_code}: {response.text[:200]}")
    return response.json() if response.content else None


def token_user(base_url: str, token: str, verify: Any = True) -> str | None:
    """The token's user when the server takes it, else None."""
    try:
        return str(_http("GET", f"{base_url}/api/v1/me", token, verify).get("user_id") or "") or None
    except MemoryStackError as exc:
        if isinstance(exc, Unavailable):
            raise
        return None


def user_token(settings: Settings, base_url: str, user: str) -> tuple[str, str | None]:
    """The user's token (reused from the token file while the server takes it) and, when one was
    minted now, its id."""
    path = token_file(settings)
    if path.exists():
        kept = path.read_text(encoding="utf-8").strip()
        if kept and token_user(base_url, kept) == user:
            return kept, None
    admin = settings.server.admin_token
    if not admin:
        raise BadInput("no admin token in this installation's .env: run `ccmem setup` (or ./install.sh)")
    made = _http("POST", f"{base_url}/api/v1/tokens", admin, json={"user_id": user, "name": TOKEN_NAME})
    connect_dir(settings).mkdir(parents=True, exist_ok=True)
    os.chmod(connect_dir(settings), 0o700)
    write_private(path, made["token"] + "\n")
    return made["token"], made["id"]


def round_trip(base_url: str, token: str, user: str, verify: Any = True) -> str:
    """Store a marked memory, recall it through the hook endpoint, delete it; one line on success."""
    marker = f"ccmem-connect-{uuid.uuid4().hex[:12]}"
    text = f"The connection check {marker} stores, recalls and deletes this memory."
    row = _http(
        "POST",
        f"{base_url}/api/v1/memories",
        token,
        verify,
        json={"text": text, "app": "ccmem-connect", "user_id": user, "infer": False},
    )
    if not row or not row.get("id"):
        raise MemoryStackError("the round trip's memory was not stored (the policy gate kept it back)")
    try:
        hook_input = {
            "hook_event_name": "UserPromptSubmit",
            "session_id": f"ccmem-connect-{uuid.uuid4().hex[:8]}",
            "cwd": str(Path.cwd()),
            "prompt": f"What does the connection check {marker} do?",
        }
        answer = _http("POST", f"{base_url}{cs.HOOK_PATH}", token, verify, json=hook_input) or {}
        context = str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))
        if marker not in context:
            raise MemoryStackError(
                "the hook endpoint answered without the marked memory: recall does not work"
            )
    finally:
        _http(
            "DELETE",
            f"{base_url}/api/v1/memories",
            token,
            verify,
            json={"memory_ids": [row["id"]], "user_id": user},
        )
    return f"round trip ok: {marker} stored, recalled through {cs.HOOK_PATH}, deleted"


# -- Claude Code -------------------------------------------------------------------------------
def _claude_path(claude: str) -> str | None:
    return shutil.which(claude)


def has_plugins(claude: str | None) -> bool:
    """Whether this ``claude`` has the plugin commands ``ccmem plugin install`` drives."""
    if claude is None:
        return False
    done = subprocess.run(
        [claude, "plugin", "marketplace", "list", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode == 0


def _mcp(claude: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [claude, "mcp", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _install_hooks(settings: Settings, base_url: str, record: Record, ca_file: Path | None = None) -> None:
    path = hooks_cli.settings_path(hooks_cli.Scope.user)
    before = path.read_text(encoding="utf-8") if path.exists() else None
    hooks_cli.install(
        scope=hooks_cli.Scope.user,
        events=None,
        project_dir=None,
        token_file=token_file(settings),
        url=base_url,
        ca_file=ca_file,
    )
    if ca_file is not None:  # Claude Code's own requests (MCP) trust the same certificate
        document, text = cs.load(path)
        document.setdefault("env", {})["NODE_EXTRA_CA_CERTS"] = str(ca_file)
        path.write_text(cs.dump(document, text), encoding="utf-8")
    record.settings_path = str(path)
    if record.settings_written is None:  # the first run's "before" is the one to restore
        record.settings_before = before
    record.settings_written = path.read_text(encoding="utf-8")


def _add_mcp(claude: str | None, base_url: str, token: str, user: str, record: Record) -> str:
    url = f"{base_url}/mcp/claude-code/http/{user}?tools=claude-code"  # the small tool set (docs/mcp.md)
    if claude is None:
        return "no claude CLI on PATH: the MCP server was not added (`ccmem mcp-config --transport http`)"
    if _mcp(claude, "get", MCP_NAME).returncode == 0:
        if not record.mcp_added:
            return f"an MCP server named {MCP_NAME!r} is already configured: left as it is"
        _mcp(claude, "remove", MCP_NAME, "--scope", "user")
    # The header is the one place the token is written: Claude Code's own ~/.claude.json.
    added = _mcp(
        claude, "add", "--scope", "user", "--transport", "http", MCP_NAME, url,
        "--header", f"Authorization: Bearer {token}",
    )  # fmt: skip
    if added.returncode != 0:
        raise MemoryStackError(f"`claude mcp add` failed: {(added.stderr or added.stdout).strip()[-200:]}")
    record.mcp_added = True
    return f"MCP server {MCP_NAME!r} added (Streamable HTTP, {url})"


def _undo(settings: Settings, claude: str | None) -> None:
    record = load_record(settings)
    if record is None:
        saved_connection.remove()
        out.print("nothing to undo: `ccmem connect claude-code` has not run here", highlight=False)
        return
    if record.route == "plugin":
        plugin_cli.uninstall(claude=claude or "claude")
    else:
        path = Path(record.settings_path)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == record.settings_written:
            if record.settings_before is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(record.settings_before, encoding="utf-8")
            out.print(f"{path} is as it was before", highlight=False, soft_wrap=True)
        elif current is not None:
            document, _ = cs.load(path)
            path.write_text(cs.dump(cs.without_hooks(document), current), encoding="utf-8")
            out.print(f"{path} changed since: only our hooks were removed", highlight=False, soft_wrap=True)
        if record.mcp_added and claude is not None:
            _mcp(claude, "remove", MCP_NAME, "--scope", "user")
            out.print(f"MCP server {MCP_NAME!r} removed", highlight=False)
    if record.service_file:
        removed = service_cli.uninstall_service(Path(record.service_file))
        if removed is not None:
            out.print(f"removed the user service {removed}", highlight=False, soft_wrap=True)
    if record.token_id and settings.server.admin_token:
        try:
            _http("DELETE", f"{record.base_url}/api/v1/tokens/{record.token_id}", settings.server.admin_token)
        except MemoryStackError as exc:
            out.print(f"the token was not revoked: {exc.message}", highlight=False, soft_wrap=True)
    token_file(settings).unlink(missing_ok=True)
    record_file(settings).unlink(missing_ok=True)
    saved_connection.remove()
    out.print("disconnected Claude Code", highlight=False)


@app.command("claude-code")
def claude_code(
    user: Annotated[str | None, typer.Option("--user", help="whose memory (default: $USER)")] = None,
    hooks: Annotated[
        bool, typer.Option("--hooks", help="settings hooks and `claude mcp add`, not the plugin")
    ] = False,
    undo: Annotated[bool, typer.Option("--undo", help="remove what an earlier run added")] = False,
    claude: Annotated[
        str, typer.Option("--claude", help="the Claude Code CLI (default: claude on PATH)")
    ] = "claude",
    url: UrlOpt = None,
    config: ConfigOpt = None,
    server: Annotated[
        str | None,
        typer.Option("--server", help="another machine's server, https://host:port (docs/remote.md)"),
    ] = None,
    token: Annotated[
        str | None, typer.Option("--token", help="with --server: your device token (default: $CCMEM_TOKEN)")
    ] = None,
    fingerprint: Annotated[
        str | None,
        typer.Option("--fingerprint", help="with --server: the SHA-256 fingerprint `ccmem serve` printed"),
    ] = None,
    ca_file: Annotated[
        Path | None,
        typer.Option("--ca-file", help="with --server: the CA certificate the server's is signed by"),
    ] = None,
    service: Annotated[
        bool,
        typer.Option(
            "--service",
            help="also install the user service that starts the stack at login (`ccmem service install`)",
        ),
    ] = False,
) -> None:
    """Mint your token, install the plugin (or the hooks and the MCP server), prove the round trip.

    With --server, connect this machine to a server on another one with a device token."""
    from ..auth.identity import validate_user_id

    saved = saved_connection.load()
    if undo and config is None and saved is not None and saved.config:
        config = Path(saved.config)  # the installation that connected keeps the record
    settings = common.settings(config)
    executable = _claude_path(claude)
    if undo:
        _undo(settings, executable)
        return
    if server is not None:
        if service:
            raise BadInput("--service starts a server on this machine; with --server it runs elsewhere")
        from . import connect_remote

        remote = connect_remote.Remote.prepare(
            connect_dir(settings),
            server,
            token or os.environ.get(cs.TOKEN_ENV),
            fingerprint,
            ca_file,
            token_user,
        )
        user = remote.check_user(user)
        record = load_record(settings) or Record("hooks", user, remote.base_url, "")
        if record.route != "hooks" or record.base_url != remote.base_url:
            raise BadInput(
                f"connected to {record.base_url} already: `ccmem connect claude-code --undo` first"
            )
        remote.keep_token(token_file(settings))
        _install_hooks(settings, remote.base_url, record, remote.ca_file)
        save_record(settings, record)
        out.print(
            _add_mcp(executable, remote.base_url, remote.token, user, record), highlight=False, soft_wrap=True
        )
        save_record(settings, record)
        out.print(
            round_trip(remote.base_url, remote.token, user, remote.verify), highlight=False, soft_wrap=True
        )
        save_connection(settings, config, remote.base_url, user, "hooks", local=False, ca_file=remote.ca_file)
        out.print(remote.summary(user), highlight=False, soft_wrap=True)
        return
    base_url = common.server_url(settings, url)
    user = validate_user_id(user or os.environ.get("USER") or getpass.getuser())
    token, token_id = user_token(settings, base_url, user)
    previous = load_record(settings)
    route = "hooks" if hooks or not has_plugins(executable) else "plugin"
    if previous is not None and previous.route != route:
        raise BadInput(
            f"connected by the {previous.route} route already: `ccmem connect claude-code --undo` first"
        )
    record = previous or Record(route, user, base_url, token_id or "")
    record.token_id = token_id or record.token_id
    save_record(settings, record)
    if route == "plugin":
        assert executable is not None
        plugin_cli.install(user=user, token=token, url=base_url, claude=executable, config=config)
    else:
        _install_hooks(settings, base_url, record)
        save_record(settings, record)
        out.print(_add_mcp(executable, base_url, token, user, record), highlight=False, soft_wrap=True)
    save_record(settings, record)
    out.print(round_trip(base_url, token, user), highlight=False, soft_wrap=True)
    if service:
        record.service_file = str(service_cli.install_service(config))
        save_record(settings, record)
    written = save_connection(settings, config, base_url, user, route, local=True)
    out.print(
        f"`ccmem` commands act as {user} from now on (`ccmem whoami`; {written})",
        highlight=False,
        soft_wrap=True,
    )
    out.print(
        f"connected Claude Code for {user} by the {route} route; new sessions recall and capture "
        f"(the token is in {token_file(settings)}, mode 0600)",
        highlight=False,
        soft_wrap=True,
    )
