"""Every ``ccmem`` command end to end: the real console script in a subprocess, against a real
server on 127.0.0.1 (``ccmem serve`` itself, through :class:`MemoryServer`).

What these tests hold the CLI to:

* ``--json`` output parses and carries the data; the table output shows it too;
* exit codes: 0 ok, 1 an error on exactly one stderr line (a bad token, an unknown id), 2 bad
  usage, 3 when no server answers — for every command that needs one;
* ``export`` → ``import`` restores the memories into another user (``--mode skip`` skips them
  the second time);
* ``doctor`` on a fresh data directory: model files ✓, proxy CA a warning with a hint, no user
  token a failure with a hint, then all good once a token exists;
* ``mcp-config``'s printed ``claude mcp add ...`` line, run verbatim by the real Claude Code CLI,
  registers a server that ``claude mcp list`` reports connected (SSE and Streamable HTTP), and
  its ``.mcp.json`` snippet connects a real ``claude -p`` session;
* docs/cli.md is what docs/generate_cli_docs.py makes from the current ``--help`` output;
* no command goes untested (the last test compares the commands run here with the CLI's tree).
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer

from claude_code_memory.cli import app as cli_app
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.node_clients import claude_bin, claude_env, run_claude
from tests.support.openmemory_db import OpenMemoryDb
from tests.support.processes import free_port
from tests.support.server import REPO_ROOT, MemoryServer, add_memory

pytestmark = pytest.mark.timeout(300)


def _command_tree(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, child in getattr(command, "commands", {}).items():
        if getattr(child, "commands", None) and not getattr(child, "invoke_without_command", False):
            yield from _command_tree(child, (*path, name))  # a plain group: only its leaves run
        else:
            yield (*path, name)
            yield from _command_tree(child, (*path, name))


COMMANDS = set(_command_tree(typer.main.get_command(cli_app)))


@pytest.fixture(scope="module")
def memory_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    server = MemoryServer(tmp_path_factory.mktemp("cli-server"))
    # mcp-config builds URLs from mem0.mcp.base_url; point it at this server's random port.
    server.extra_env["CCMEM_MEM0__MCP__BASE_URL"] = server.base_url
    with server:
        yield server


def ccmem(server: MemoryServer, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return server.ccmem(*args, check=check)


def remote(server: MemoryServer, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """A command against the running server (the config's port is not the test server's)."""
    return ccmem(server, *args, "--url", server.base_url, check=check)


def as_json(completed: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(completed.stdout)


def one_line_error(completed: subprocess.CompletedProcess[str], code: int, *fragments: str) -> None:
    """The command failed with ``code``, said why on exactly one stderr line, printed nothing else."""
    output = f"exit {completed.returncode}\nstdout: {completed.stdout}\nstderr: {completed.stderr}"
    assert completed.returncode == code, output
    assert completed.stdout == "", output
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    assert "Traceback" not in completed.stderr
    for fragment in fragments:
        assert fragment in lines[0], output


def new_user(server: MemoryServer) -> tuple[str, str]:
    """A new user and a token for it, over REST (no process): for tests of other commands."""
    user = f"cli-{uuid.uuid4().hex[:8]}"
    return user, server.make_token(user)


def new_user_from_the_cli(server: MemoryServer) -> tuple[str, str]:
    user = f"cli-{uuid.uuid4().hex[:8]}"
    created = as_json(
        ccmem(server, "token", "create", "--user", user, "--json", "--data-dir", str(server.data_dir))
    )
    assert created["user_id"] == user and created["token"].startswith("ccm_")
    return user, created["token"]


# -- start-up ------------------------------------------------------------------------------------
@pytest.mark.integration
def test_the_server_start_up_path_imports_no_client_library() -> None:
    # Restart time at 100k memories is a target (docs/search.md): `ccmem serve` loads the CLI and
    # the API, and neither needs httpx (the CLI's REST client) at start-up, nor the MCP SDK (the
    # MCP endpoint is built on its first request: claude_code_memory/mcp/lazy.py).
    code = (
        "import sys, claude_code_memory.cli, claude_code_memory.api.app; "
        "print(sorted(m for m in ('httpx', 'openai', 'qdrant_client', 'mem0', 'mcp') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# What the server, the embedded stores and the model need; a command talking to a server over
# REST needs none of it, and `ccmem` starts ~170 times in this suite.
SERVER_SIDE = (
    "fastapi", "starlette", "uvicorn", "sqlalchemy", "alembic", "mcp", "mem0", "qdrant_client",
    "qdrant_edge", "onnxruntime", "tokenizers", "numpy",
)  # fmt: skip


@pytest.mark.integration
@pytest.mark.parametrize("command", [("--help",), ("list", "--token", "t", "--url", "{url}")])
def test_commands_that_use_the_rest_api_load_nothing_of_the_server(command: tuple[str, ...]) -> None:
    argv = [part.format(url=f"http://127.0.0.1:{free_port()}") for part in ("ccmem", *command)]
    code = (
        "import sys\n"
        "from claude_code_memory.cli import main\n"
        f"sys.argv = {argv!r}\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print('loaded:', sorted(m for m in {SERVER_SIDE!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )
    assert done.stdout.strip().splitlines()[-1] == "loaded: []", done.stdout + done.stderr


@pytest.mark.integration
@pytest.mark.parametrize(
    ("command", "modules"),
    [
        (["serve"], ["common", "server"]),
        (["up"], ["common", "proxy", "server", "setup", "stack", "ui"]),
        (["stack", "supervise"], ["common", "proxy", "server", "stack", "ui"]),
    ],
)
def test_what_starts_the_server_loads_no_other_command(command: list[str], modules: list[str]) -> None:
    """The server's start (and a hook's, through `up` and the supervisor) does not wait for the
    other commands' modules (restart time)."""
    code = (
        "import sys\n"
        "from claude_code_memory.cli import main\n"
        f"sys.argv = ['ccmem', *{command!r}, '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('loaded:', sorted(m for m in sys.modules if m.startswith('claude_code_memory.cli.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )
    assert "Usage: ccmem " + " ".join(command) in done.stdout, done.stdout + done.stderr
    loaded = done.stdout.strip().splitlines()[-1]
    assert loaded == f"loaded: {[f'claude_code_memory.cli.{name}' for name in modules]}", loaded


# -- usage and exit codes ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("search",),  # missing argument
        ("no-such-command",),
        ("list", "--no-such-option"),
        ("add", "a memory", "--metadata", "[1, 2]"),  # not a JSON object
        ("add", "a memory", "--metadata", "{oops"),
        ("mcp-config", "--transport", "carrier-pigeon"),
        ("search", "x", "--limit", "0"),
    ],
)
def test_bad_usage_exits_2_with_the_usage_line(memory_server: MemoryServer, args: tuple[str, ...]) -> None:
    completed = memory_server.ccmem(*args, check=False)
    assert completed.returncode == 2, completed
    assert "Usage: ccmem" in completed.stderr and "Traceback" not in completed.stderr


def test_import_checks_the_file_and_the_mode(memory_server: MemoryServer, tmp_path: Path) -> None:
    missing = memory_server.ccmem("import", str(tmp_path / "nope.zip"), check=False)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    archive = tmp_path / "a.zip"
    archive.write_bytes(b"PK")
    bad_mode = memory_server.ccmem("import", str(archive), "--mode", "merge", check=False)
    assert bad_mode.returncode == 2 and "skip" in bad_mode.stderr and "overwrite" in bad_mode.stderr


# Every command that needs a running server, with enough arguments to get that far.
NEEDS_THE_SERVER = [
    ("status",),
    ("whoami",),
    ("add", "text", "--user", "u"),
    ("search", "query", "--user", "u"),
    ("list", "--user", "u"),
    ("get", str(uuid.UUID(int=1))),
    ("export", "--user", "u", "--output", "out.zip"),
    ("import", "{archive}", "--user", "u"),
    ("import", "archive", "{archive}", "--user", "u"),
    ("import", "openmemory", "{openmemory}", "--user", "u"),
    ("purge", "--dry-run"),
    ("forget", "--user", "u", "--everything", "--dry-run"),
    ("consent", "list"),
    ("consent", "count"),
    ("consent", "approve", str(uuid.UUID(int=1))),
    ("consent", "reject", str(uuid.UUID(int=1))),
    ("consent", "decisions"),
    ("consent", "rules"),
    ("consent", "rules", "list"),
    ("consent", "rules", "add", "--effect", "allow"),
    ("consent", "rules", "remove", str(uuid.UUID(int=1))),
    ("hygiene", "status"),
    ("hygiene", "list"),
    ("hygiene", "run"),
    ("hygiene", "approve", str(uuid.UUID(int=1))),
    ("hygiene", "reject", str(uuid.UUID(int=1))),
    ("hygiene", "undo", str(uuid.UUID(int=1))),
    ("team", "create", "shop"),
    ("team", "list"),
    ("team", "invite", "shop", "bob"),
    ("team", "invitations", "shop"),
    ("team", "uninvite", "shop", "bob"),
    ("team", "accept", "cct_x"),
    ("team", "members", "shop"),
    ("team", "role", "shop", "bob", "reader"),
    ("team", "remove", "shop", "bob"),
    ("team", "leave", "shop"),
    ("team", "share", "shop", str(uuid.UUID(int=1))),
    ("team", "memories", "shop"),
    ("team", "unshare", "shop", str(uuid.UUID(int=1))),
    ("team", "audit", "shop"),
    ("team", "delete", "shop", "--yes"),
]


@pytest.mark.parametrize("args", NEEDS_THE_SERVER, ids=" ".join)
def test_no_server_exits_3_with_one_line(
    memory_server: MemoryServer, tmp_path: Path, args: tuple[str, ...]
) -> None:
    archive = tmp_path / "export.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip
    args = tuple(str(archive) if a == "{archive}" else a for a in args)
    if "{openmemory}" in args:
        database = OpenMemoryDb(tmp_path / "openmemory.db")
        owner = database.user("default_user")
        database.memory(owner, database.app(owner, "openmemory"), "a memory", created_at=datetime(2024, 1, 1))
        database.close()
        args = tuple(str(database.path) if a == "{openmemory}" else a for a in args)
    dead = f"http://127.0.0.1:{free_port()}"

    completed = ccmem(memory_server, *args, "--url", dead, check=False)

    if args in (("status",), ("whoami",)):
        # Both print what they know without the server (test_status_without_a_server,
        # tests/test_cli_identity.py's whoami test); the error line is still the one on stderr.
        completed = subprocess.CompletedProcess(completed.args, completed.returncode, "", completed.stderr)
    one_line_error(completed, 3, f"cannot reach the server at {dead}", "start it with `ccmem up`")


def test_a_bad_token_exits_1(memory_server: MemoryServer) -> None:
    for args in (("search", "anything"), ("list",), ("status", "--user", "someone")):
        completed = remote(memory_server, *args, "--token", "not-a-token", check=False)
        one_line_error(completed, 1, "unknown or revoked token", "HTTP 401")


def test_the_admin_token_must_name_a_user(memory_server: MemoryServer) -> None:
    one_line_error(remote(memory_server, "list", check=False), 1, "user_id is required")


# -- status ------------------------------------------------------------------------------------
def test_status_reports_health_version_and_counts(memory_server: MemoryServer) -> None:
    user, token = new_user(memory_server)
    add_memory(memory_server, token, "Status counts this memory", app="ccmem")  # REST: status is tested

    plain = as_json(remote(memory_server, "status", "--json"))
    assert plain["reachable"] and plain["healthy"] and plain["url"] == memory_server.base_url
    assert plain["health"]["status"] == "ok" and plain["health"]["version"]
    assert plain["health"]["database"] == "ok" and plain["health"]["vector_store"] == "ok"
    assert plain["counts"] is None  # the admin token counts only for a named user

    mine = as_json(remote(memory_server, "status", "--json", "--token", token))["counts"]
    assert mine == {"user": None, "memories": 1, "apps": 1, "pending": 0}
    theirs = as_json(remote(memory_server, "status", "--json", "--user", user))["counts"]
    assert theirs == {"user": user, "memories": 1, "apps": 1, "pending": 0}

    table = remote(memory_server, "status", "--user", user).stdout
    assert "✓" in table and memory_server.base_url in table and "vector store" in table
    assert f"{user}: 1 in 1 apps, 0 pending consent" in " ".join(table.split())


def test_status_without_a_server_prints_what_it_knows(
    memory_server: MemoryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    for variable in ("CCMEM_SERVER__PORT", "CCMEM_UI__PORT", "CCMEM_PROXY__PORT"):
        monkeypatch.setitem(memory_server.extra_env, variable, str(free_port()))

    completed = ccmem(memory_server, "status", "--url", dead, check=False)

    assert completed.returncode == 3, completed.stderr
    lines = {
        line.split()[0]: " ".join(line.split()[1:]) for line in completed.stdout.splitlines() if line.strip()
    }
    assert lines["server"] == f"✗ {dead} (not reachable)"
    for name in ("api", "ui", "proxy"):
        assert lines[name].startswith("not running (port "), completed.stdout
    assert lines["claude"] == "code not connected (`ccmem connect claude-code`)"
    assert lines["user"].startswith("service not installed")
    report = as_json(ccmem(memory_server, "status", "--url", dead, "--json", check=False))
    assert (report["reachable"], report["healthy"], report["health"], report["counts"]) == (
        False,
        False,
        None,
        None,
    )
    assert [row["name"] for row in report["services"]] == ["api", "ui", "proxy"]
    assert report["claude_code"]["connected"] is False and report["connection"] is None


def test_status_counts_for_the_connected_user_and_reads_claude_code(
    memory_server: MemoryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `ccmem connect claude-code`: its saved token counts with no flag and no variable,
    and Claude Code's own files say how it is connected (here: settings hooks, MCP user scope)."""
    from claude_code_memory.client import claude_settings, connection

    user, token = new_user(memory_server)
    add_memory(memory_server, token, "Status counts the connected user's memory", app="ccmem")
    home = memory_server.work_dir / "home"
    environ = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    monkeypatch.setitem(memory_server.extra_env, "XDG_CONFIG_HOME", environ["XDG_CONFIG_HOME"])
    token_file = home / "claude-code.token"
    token_file.write_text(token + "\n")
    saved = connection.Connection(memory_server.base_url, user, str(token_file), route="hooks")
    connection.save(saved, environ)
    hook = claude_settings.hook_entry("SessionStart", memory_server.base_url, token_file=token_file)
    (home / ".claude").mkdir(exist_ok=True)
    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps(claude_settings.with_hooks({}, {"SessionStart": hook})))
    mcp_url = f"{memory_server.base_url}/mcp/claude-code/http/{user}?tools=claude-code"
    (home / ".claude.json").write_text(
        json.dumps({"mcpServers": {"memory": {"type": "http", "url": mcp_url}}})
    )
    try:
        report = as_json(ccmem(memory_server, "status", "--json"))  # no --url: the saved one
        monkeypatch.setitem(memory_server.extra_env, "COLUMNS", "400")  # paths on one line
        table = ccmem(memory_server, "status").stdout
        token_file.write_text("ccm_a-token-the-server-never-made\n")  # revoked, or another server's
        stale = as_json(ccmem(memory_server, "status", "--json"))["counts"]
    finally:
        for path in (settings, home / ".claude.json", connection.path(environ)):
            path.unlink()

    assert report["url"] == memory_server.base_url and report["healthy"]
    assert report["counts"] == {"user": user, "memories": 1, "apps": 1, "pending": 0}
    assert report["connection"] == {"user": user, "url": memory_server.base_url, "route": "hooks"}
    assert stale["user"] == user and "ccmem connect claude-code" in stale["error"], stale
    claude = report["claude_code"]
    assert claude["connected"] and claude["route"] == "hooks" and claude["hooks_in"] == [str(settings)]
    assert claude["mcp_servers"] == [
        {"name": "memory", "scope": "user", "url": mcp_url, "where": str(home / ".claude.json")}
    ]
    flat = " ".join(table.split())
    assert f"memories {user}: 1 in 1 apps, 0 pending consent" in flat
    assert f"claude code connected by settings hooks ({settings})" in flat
    assert f"mcp server memory (user scope, {home / '.claude.json'})" in flat


def test_connect_service_installs_the_user_service_and_undo_removes_it(
    memory_server: MemoryServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`connect claude-code --service` (the hooks route; no Claude Code CLI needed for that)
    writes the systemd user unit for this installation's config; `--undo` takes it away with
    the rest. No user manager answers here: the commands to enable it are printed."""
    home = memory_server.work_dir / "home"
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setitem(memory_server.extra_env, "XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setitem(memory_server.extra_env, "XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setitem(memory_server.extra_env, "DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent")
    unit = home / ".config" / "systemd" / "user" / "ccmem.service"
    user = f"svc-{uuid.uuid4().hex[:6]}"
    base = ("connect", "claude-code", "--claude", "/nowhere/claude", "--url", memory_server.base_url)

    connected = ccmem(memory_server, *base, "--hooks", "--user", user, "--service", check=False)

    assert connected.returncode == 0, connected.stdout + connected.stderr
    flat = " ".join(connected.stdout.split())
    assert "round trip ok" in flat and f"wrote {unit}" in flat
    assert "systemctl --user daemon-reload && systemctl --user enable --now ccmem.service" in flat
    assert f"up --foreground --config {memory_server.config_path}" in unit.read_text()
    assert memory_server.admin_token not in unit.read_text()
    status = as_json(ccmem(memory_server, "status", "--json", "--url", memory_server.base_url))
    assert status["user_service"]["installed"] and status["user_service"]["path"] == str(unit)
    assert status["claude_code"]["route"] == "hooks"

    undone = ccmem(memory_server, *base, "--undo", check=False)

    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert f"removed the user service {unit}" in " ".join(undone.stdout.split())
    assert not unit.exists() and unit.parent.is_dir()
    assert not (home / ".claude" / "settings.json").exists()


def test_status_mcp_config_and_list_choose_the_same_token(
    memory_server: MemoryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--token, then $CCMEM_TOKEN, then the admin token from the environment: the same order for
    every command, and the admin token is known by its value wherever it came from."""
    user, token = new_user(memory_server)
    add_memory(memory_server, token, "Every command picks the same token", app="ccmem")
    admin = memory_server.admin_token

    def run(*args: str, env_token: str | None) -> subprocess.CompletedProcess[str]:
        if env_token is None:
            monkeypatch.delitem(memory_server.extra_env, "CCMEM_TOKEN", raising=False)
        else:
            monkeypatch.setitem(memory_server.extra_env, "CCMEM_TOKEN", env_token)
        return ccmem(memory_server, *args, check=False)

    mine = {"user": None, "memories": 1, "apps": 1, "pending": 0}
    for flag, env_token in (((), token), (("--token", token), admin)):
        status = run("status", "--json", "--url", memory_server.base_url, *flag, env_token=env_token)
        assert status.returncode == 0 and as_json(status)["counts"] == mine, status.stderr
        listed = run("list", "--json", "--url", memory_server.base_url, *flag, env_token=env_token)
        assert listed.returncode == 0 and "Every command picks the same token" in listed.stdout
        snippet = as_json(
            run("mcp-config", "--user", user, "--json", "--inline-token", *flag, env_token=env_token)
        )
        assert snippet["mcpServers"]["memory"]["headers"]["Authorization"] == f"Bearer {token}"

    # The admin token counts only for a user it is told about, however it was given.
    for flag, env_token in (((), None), ((), admin), (("--token", admin), None)):
        status = run("status", "--json", "--url", memory_server.base_url, *flag, env_token=env_token)
        assert status.returncode == 0 and as_json(status)["counts"] is None, status.stderr
        named = run(
            "status", "--json", "--url", memory_server.base_url, "--user", user, *flag, env_token=env_token
        )
        assert as_json(named)["counts"] == {**mine, "user": user}, named.stderr
    one_line_error(run("mcp-config", "--user", user, env_token=admin), 1, "admin token")
    one_line_error(run("mcp-config", "--user", user, env_token=None), 1, "no token")


# -- memories ----------------------------------------------------------------------------------
def test_add_search_list_and_get(memory_server: MemoryServer) -> None:
    user, token = new_user(memory_server)
    mine = ("--token", token)

    added = as_json(
        remote(
            memory_server,
            "add",
            "The staging database runs PostgreSQL 16 on port 5433",
            "--app",
            "infra",
            "--metadata",
            '{"topic": "databases"}',
            "--json",
            *mine,
        )
    )
    assert added["content"] == "The staging database runs PostgreSQL 16 on port 5433"
    assert added["metadata_"]["topic"] == "databases" and added["provenance"]["app"] == "infra"
    plain = remote(memory_server, "add", "I review pull requests in the morning", *mine).stdout
    assert plain.startswith("added ")
    second_id = plain.split()[-1]
    again = remote(memory_server, "add", "I review pull requests in the morning", *mine).stdout
    assert again.strip() == f"already stored as {second_id}"

    hits = as_json(
        remote(
            memory_server, "search", "which port does staging postgres use", "--limit", "1", "--json", *mine
        )
    )
    assert [h["id"] for h in hits] == [added["id"]] and hits[0]["app"] == "infra"
    table = remote(memory_server, "search", "which port does staging postgres use", *mine).stdout
    assert added["id"] in table and "PostgreSQL 16" in table

    listing = as_json(remote(memory_server, "list", "--json", *mine))
    assert {item["id"] for item in listing["items"]} == {added["id"], second_id} and listing["total"] == 2
    only_infra = as_json(remote(memory_server, "list", "--app", "infra", "--json", *mine))
    assert [item["id"] for item in only_infra["items"]] == [added["id"]]
    paged = remote(memory_server, "list", "--size", "1", *mine)
    assert "page 1 of 2; next: --page 2" in paged.stderr
    one_line_error(remote(memory_server, "list", "--app", "nowhere", *mine, check=False), 1, "no app named")
    # The admin token acts for the user it names.
    assert as_json(remote(memory_server, "list", "--user", user, "--json"))["total"] == 2

    shown = as_json(remote(memory_server, "get", added["id"], "--json", *mine))
    assert shown["text"] == added["content"] and shown["user_id"] == user
    assert shown["provenance"]["channel"] == "rest"
    card = remote(memory_server, "get", added["id"], *mine).stdout
    assert added["id"] in card and "PostgreSQL 16 on port 5433" in card and "infra" in card

    one_line_error(remote(memory_server, "get", str(uuid.uuid4()), *mine, check=False), 1, "not found")
    _, other_token = new_user(memory_server)
    refused = remote(memory_server, "get", added["id"], "--token", other_token, check=False)
    assert refused.returncode == 1 and refused.stdout == ""


def test_export_then_import_round_trip(memory_server: MemoryServer, tmp_path: Path) -> None:
    source, token = new_user(memory_server)
    texts = [f"Round trip fact number {n}: the {word} service owns billing" for n, word in enumerate("abc")]
    for text in texts:  # over REST: export and import are what is tested here
        add_memory(memory_server, token, text, app="roundtrip")
    add_memory(memory_server, token, "A memory of another app stays out", app="elsewhere")
    archive = tmp_path / "roundtrip.zip"

    exported = as_json(
        remote(
            memory_server,
            "export",
            "--app",
            "roundtrip",
            "--output",
            str(archive),
            "--json",
            "--token",
            token,
        )
    )

    assert exported == {"path": str(archive.resolve()), "bytes": archive.stat().st_size, "memories": 3}
    with zipfile.ZipFile(archive) as zf:
        assert {"memories.json", "memories.jsonl.gz"} <= set(zf.namelist())
        document = json.loads(zf.read("memories.json"))
    assert sorted(m["content"] for m in document["memories"]) == sorted(texts)

    target = f"restored-{uuid.uuid4().hex[:6]}"
    imported = as_json(remote(memory_server, "import", str(archive), "--user", target, "--json"))
    assert (imported["imported"], imported["skipped"]) == (3, 0)
    restored = as_json(remote(memory_server, "list", "--user", target, "--json"))
    assert sorted(item["content"] for item in restored["items"]) == sorted(texts)
    assert {item["app_name"] for item in restored["items"]} == {"roundtrip"}
    found = as_json(remote(memory_server, "search", "who owns billing", "--user", target, "--json"))
    assert found and found[0]["content"] in texts

    skipped = remote(memory_server, "import", str(archive), "--user", target, "--mode", "skip")
    assert "imported 0, skipped 3" in skipped.stdout
    assert as_json(remote(memory_server, "list", "--user", target, "--json"))["total"] == 3

    # Without --output the server's file name is used, here in the working directory; an
    # existing file is never overwritten.
    default = remote(memory_server, "export", "--user", source)
    written = memory_server.work_dir / f"memories_export_{source}.zip"
    assert written.is_file() and "exported 4 memories" in default.stdout
    one_line_error(remote(memory_server, "export", "--user", source, check=False), 1, "already exists")

    not_a_zip = tmp_path / "not.zip"
    not_a_zip.write_text("hello")
    one_line_error(
        remote(memory_server, "import", str(not_a_zip), "--user", target, check=False), 1, "not a zip"
    )


# -- tokens, consent, retention ------------------------------------------------------------------
def test_tokens_create_list_and_revoke(memory_server: MemoryServer) -> None:
    user, token = new_user_from_the_cli(memory_server)
    data = ("--data-dir", str(memory_server.data_dir))
    plain = ccmem(memory_server, "token", "create", "--user", user, "--name", "laptop", *data).stdout.strip()
    assert plain.startswith("ccm_") and "\n" not in plain

    listed = as_json(ccmem(memory_server, "token", "list", "--user", user, "--json", *data))
    assert [t["prefix"] for t in listed] == [token[:12], plain[:12]] and listed[1]["name"] == "laptop"
    assert plain[:12] in ccmem(memory_server, "token", "list", *data).stdout

    revoked = as_json(ccmem(memory_server, "token", "revoke", listed[0]["id"], "--json", *data))
    assert revoked["revoked"] and revoked["user_id"] == user
    one_line_error(remote(memory_server, "list", "--token", token, check=False), 1, "HTTP 401")
    assert remote(memory_server, "list", "--token", plain).returncode == 0
    one_line_error(ccmem(memory_server, "token", "revoke", "ccm_nosuch", *data, check=False), 1, "no token")


def test_consent_and_retention_commands_print_json(memory_server: MemoryServer) -> None:
    user, token = new_user(memory_server)
    mine = ("--token", token)
    add_memory(memory_server, token, "A memory for the retention commands", app="ccmem")

    assert as_json(remote(memory_server, "consent", "list", "--json", *mine))["items"] == []
    assert as_json(remote(memory_server, "consent", "count", "--json", *mine))["total"] == 0
    assert as_json(remote(memory_server, "consent", "decisions", "--json", *mine))["items"] == []
    rule = as_json(
        remote(memory_server, "consent", "rules", "add", "--effect", "deny", "--app", "spy", "--json", *mine)
    )
    assert as_json(remote(memory_server, "consent", "rules", "--json", *mine))["rules"][0]["id"] == rule["id"]
    assert [
        r["id"] for r in as_json(remote(memory_server, "consent", "rules", "list", "--json", *mine))["rules"]
    ] == [rule["id"]]
    assert "removed" in remote(memory_server, "consent", "rules", "remove", rule["id"], *mine).stdout
    for verb in ("approve", "reject"):
        unknown = remote(memory_server, "consent", verb, str(uuid.uuid4()), *mine, check=False)
        one_line_error(unknown, 1, "not found")

    receipt = as_json(remote(memory_server, "forget", "--user", user, "--everything", "--dry-run", "--json"))
    assert receipt["dry_run"] and receipt["memories"] == 1
    assert as_json(remote(memory_server, "purge", "--dry-run", "--json"))["dry_run"] is True
    gone = as_json(remote(memory_server, "forget", "--user", user, "--everything", "--json"))
    assert gone["memories"] == 1
    assert as_json(remote(memory_server, "list", "--json", *mine))["total"] == 0


# -- doctor ------------------------------------------------------------------------------------
def checks_of(completed: subprocess.CompletedProcess[str]) -> dict[str, dict[str, str]]:
    return {check["name"]: check for check in as_json(completed)["checks"]}


def test_doctor_on_a_fresh_data_dir(memory_server: MemoryServer, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh-data"
    fresh.mkdir()
    where = ("--data-dir", str(fresh), "--port", str(free_port()))

    first = ccmem(memory_server, "doctor", *where, "--json", check=False)

    # A fresh install is healthy: no user token yet is a warning with the fix, not a failure.
    assert first.returncode == 0, first.stdout + first.stderr
    checks = checks_of(first)
    assert list(checks) == [
        "config",
        "port",
        "data directory",
        "shipped model",
        "embedding model",
        "tokenizer",
        "admin token",
        ".env",
        "user tokens",
        "local mode",
        "exposure",
        "proxy CA",
        "reconciliation",
        "storage",
    ]
    for name in list(checks)[:7]:
        assert checks[name]["status"] == "ok", checks[name]
    assert "sha256 matches the pin" in checks["embedding model"]["detail"]
    assert checks["embedding model"]["detail"].startswith(str(Path(sys.prefix) / "share"))
    assert checks["user tokens"]["status"] == "warn" and "ccmem token create" in checks["user tokens"]["hint"]
    assert checks["local mode"] == {
        "name": "local mode",
        "status": "ok",
        "detail": "off: every request needs a token",
        "hint": "",
    }
    assert checks["proxy CA"]["status"] == "warn" and "not set up" in checks["proxy CA"]["detail"]
    assert checks["proxy CA"]["hint"]
    assert checks["reconciliation"]["status"] == "ok" and "next start" in checks["reconciliation"]["detail"]
    assert checks["storage"]["status"] == "ok" and "on disk" in checks["storage"]["detail"]
    assert not (fresh / "memory.db").exists()  # doctor looked, and created nothing

    ccmem(memory_server, "token", "create", "--user", "doc", "--data-dir", str(fresh))
    healthy = ccmem(memory_server, "doctor", *where)
    lines = healthy.stdout.splitlines()
    assert sum(line.startswith("✓") for line in lines) == 13 and any(
        line.startswith("! proxy CA") for line in lines
    )
    assert "→ only the capture proxy needs it" in healthy.stdout and "0 failed, 1 warning" in healthy.stdout


def test_doctor_sees_our_server_a_stranger_and_a_readable_env(
    memory_server: MemoryServer, tmp_path: Path
) -> None:
    new_user(memory_server)
    ours = checks_of(
        ccmem(
            memory_server,
            "doctor",
            "--port",
            str(memory_server.port),
            "--data-dir",
            str(memory_server.data_dir),
            "--json",
        )
    )
    assert ours["port"]["status"] == "ok" and "our server" in ours["port"]["detail"]
    assert ours["user tokens"]["status"] == "ok"
    # The running server's last reconciliation (its start-up pass, or one running now).
    assert ours["reconciliation"]["status"] == "ok", ours["reconciliation"]

    config = tmp_path / "config.yaml"
    config.write_text("server:\n  port: 8765\n")
    env_file = tmp_path / ".env"
    env_file.write_text("CCMEM_SERVER__LOG_LEVEL=info\n")
    env_file.chmod(0o644)
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", 0))
        stranger.listen()
        port = stranger.getsockname()[1]
        report = ccmem(
            memory_server,
            "doctor",
            "--config",
            str(config),
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path),
            "--json",
            check=False,
        )
    assert report.returncode == 1
    checks = checks_of(report)
    assert checks["port"]["status"] == "fail" and "another program" in checks["port"]["detail"]
    assert "server.port" in checks["port"]["hint"]
    assert checks[".env"]["status"] == "fail" and "0644" in checks[".env"]["detail"]
    assert checks[".env"]["hint"] == f"chmod 600 {env_file}"

    config.write_text("server:\n  port: many\n")
    broken = checks_of(ccmem(memory_server, "doctor", "--config", str(config), "--json", check=False))
    assert broken["config"]["status"] == "fail" and "server.port" in broken["config"]["detail"]


# -- mcp-config ----------------------------------------------------------------------------------
def claude_add_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("claude mcp add ")]
    assert len(lines) == 1, output
    return lines[0]


def test_mcp_config_prints_the_command_and_the_snippet(memory_server: MemoryServer) -> None:
    user, token = new_user(memory_server)
    url = f"{memory_server.base_url}/mcp/claude-code/sse/{user}"

    printed = ccmem(memory_server, "mcp-config", "--user", user, "--token", token).stdout

    assert claude_add_line(printed) == (
        f'claude mcp add --scope user --transport sse memory {url} --header "Authorization: Bearer {token}"'
    )
    # The .mcp.json a project may commit names the token; Claude Code expands it.
    snippet = as_json(ccmem(memory_server, "mcp-config", "--user", user, "--token", token, "--json"))
    assert snippet == {
        "mcpServers": {
            "memory": {"type": "sse", "url": url, "headers": {"Authorization": "Bearer ${CCMEM_TOKEN}"}}
        }
    }
    assert token not in json.dumps(snippet)
    assert json.loads(printed[printed.index("{") :]) == snippet
    assert f"export CCMEM_TOKEN={token}" in printed.splitlines()
    inline = as_json(
        ccmem(memory_server, "mcp-config", "--user", user, "--token", token, "--json", "--inline-token")
    )
    assert inline["mcpServers"]["memory"]["headers"] == {"Authorization": f"Bearer {token}"}

    http = as_json(
        ccmem(
            memory_server,
            "mcp-config",
            "--user",
            user,
            "--token",
            token,
            "--transport",
            "http",
            "--client",
            "cursor",
            "--json",
        )
    )
    assert http["mcpServers"]["memory"]["type"] == "http"
    assert http["mcpServers"]["memory"]["url"] == f"{memory_server.base_url}/mcp/cursor/http/{user}"

    one_line_error(ccmem(memory_server, "mcp-config", "--user", user, check=False), 1, "no token")
    admin = ccmem(
        memory_server, "mcp-config", "--user", user, "--token", memory_server.admin_token, check=False
    )
    one_line_error(admin, 1, "admin token")
    both = ccmem(memory_server, "mcp-config", "--user", user, "--token", token, "--create-token", check=False)
    one_line_error(both, 1, "not both")


def test_mcp_config_create_token_makes_a_working_token(memory_server: MemoryServer) -> None:
    user = f"cli-{uuid.uuid4().hex[:8]}"
    snippet = as_json(
        ccmem(
            memory_server,
            "mcp-config",
            "--user",
            user,
            "--create-token",
            "--json",
            "--inline-token",
            "--data-dir",
            str(memory_server.data_dir),
        )
    )
    header = snippet["mcpServers"]["memory"]["headers"]["Authorization"]
    response = httpx.get(
        f"{memory_server.base_url}/api/v1/stats", headers={"Authorization": header}, timeout=30
    )
    assert response.status_code == 200, response.text


@pytest.mark.e2e
@pytest.mark.parametrize("transport", ["sse", "http"])
def test_claude_code_connects_with_the_printed_command(
    memory_server: MemoryServer, tmp_path: Path, transport: str
) -> None:
    claude = claude_bin()
    user = f"cli-{uuid.uuid4().hex[:8]}"
    printed = ccmem(
        memory_server,
        "mcp-config",
        "--user",
        user,
        "--create-token",
        "--transport",
        transport,
        "--data-dir",
        str(memory_server.data_dir),
    ).stdout
    command = shlex.split(claude_add_line(printed))
    assert command[:3] == ["claude", "mcp", "add"]
    project = tmp_path / "project"
    project.mkdir()
    # No model is called: the upstream URL only has to be one nothing answers on.
    env = claude_env(tmp_path, f"http://127.0.0.1:{free_port()}")

    def claude_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(claude), *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    added = claude_cli(*command[1:])
    assert added.returncode == 0, added.stdout + added.stderr
    listed = claude_cli("mcp", "list")

    assert listed.returncode == 0, listed.stdout + listed.stderr
    url = f"{memory_server.base_url}/mcp/claude-code/{transport}/{user}"
    line = next((line for line in listed.stdout.splitlines() if line.startswith("memory: ")), "")
    assert line.startswith(f"memory: {url} ({transport.upper()}) - "), listed.stdout
    assert "Connected" in line and "Failed" not in line, f"{listed.stdout}\n{memory_server.log()}"


@pytest.mark.e2e
def test_claude_code_connects_with_the_mcp_json_snippet(memory_server: MemoryServer, tmp_path: Path) -> None:
    """The snippet holds no token: Claude Code expands ${CCMEM_TOKEN} from its environment."""
    claude_bin()
    user = f"cli-{uuid.uuid4().hex[:8]}"
    token = memory_server.make_token(user)
    snippet = as_json(ccmem(memory_server, "mcp-config", "--user", user, "--token", token, "--json"))
    assert token not in json.dumps(snippet)

    with FakeAnthropic() as upstream:
        run = run_claude(
            "hello",
            home=tmp_path,
            upstream_url=upstream.base_url,
            mcp_config=snippet,
            env={"CCMEM_TOKEN": token},
        )

    init = run.event("system", "init")
    statuses = {entry["name"]: entry["status"] for entry in init.get("mcp_servers", [])}
    assert statuses.get("memory") == "connected", f"{statuses}\n{run.describe()}\n{memory_server.log()}"
    assert "mcp__memory__search_memory" in init["tools"]


# -- docs and coverage -------------------------------------------------------------------------
@pytest.mark.integration
def test_docs_cli_md_is_generated_from_the_current_help() -> None:
    completed = subprocess.run(
        [sys.executable, str(REPO_ROOT / "docs" / "generate_cli_docs.py"), "--check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    docs = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for code in ("* 0:", "* 1:", "* 2:", "* 3:"):
        assert code in docs


@pytest.mark.integration
def test_python_m_runs_the_same_cli() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "claude_code_memory.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0 and "mcp-config" in completed.stdout


#: Commands that work without a running server (each has its own tests above; the server
#: fixture runs `serve`).
LOCAL_COMMANDS = {
    ("serve",),
    ("doctor",),
    ("token", "create"),
    ("token", "list"),
    ("token", "revoke"),
    ("mcp-config",),
    # tests/test_hooks_install.py
    ("hooks", "install"),
    ("hooks", "uninstall"),
    ("hooks", "status"),
}


#: Commands that run a service of their own, each tested end to end in its own file (which
#: must start it: the check below reads the file for the command's name).
SERVICE_COMMANDS = {
    ("ui",): ("tests/support/web_ui.py", '"ui"'),
    ("proxy",): ("tests/support/capture_proxy.py", '"proxy"'),
    ("stack", "up"): ("tests/test_native_stack.py", '"stack", "up"'),
    ("stack", "down"): ("tests/test_native_stack.py", '"stack", "down"'),
    ("stack", "status"): ("tests/test_native_stack.py", '"stack", "status"'),
    ("stack", "logs"): ("tests/test_native_stack.py", '"stack", "logs"'),
    ("stack", "supervise"): ("claude_code_memory/cli/stack.py", '"supervise"'),  # run by `stack up`
    # They drive the pinned Claude Code CLI against a server: the plugin's e2e test runs them.
    ("plugin", "install"): ("tests/test_e2e_plugin.py", '"plugin", "install"'),
    ("plugin", "uninstall"): ("tests/test_e2e_plugin.py", '"plugin", "uninstall"'),
    ("plugin", "status"): ("tests/test_e2e_plugin.py", '"plugin", "status"'),
    # Reads a transcripts folder and posts to a server: the import's integration tests run it.
    ("import", "claude-code"): ("tests/test_claude_import.py", '"import", "claude-code"'),
    # Reads and writes Claude Code's auto-memory folders against a server (its own test file).
    ("sync", "claude-code"): ("tests/test_claude_automem.py", 'command, "claude-code"'),
    # The package route: a wheel installed outside the checkout (tests/test_package.py).
    ("setup",): ("tests/test_package.py", '"setup"'),
    ("up",): ("tests/test_package.py", '"up"'),
    ("down",): ("tests/test_native_stack.py", '"down"'),
    # The user service's files, in a throwaway HOME (systemd-analyze verifies the unit).
    ("service", "install"): ("tests/test_user_service.py", '"service", "install"'),
    ("service", "uninstall"): ("tests/test_user_service.py", '"service", "uninstall"'),
    ("service", "status"): ("tests/test_user_service.py", '"service", "status"'),
    ("connect", "claude-code"): ("tests/test_e2e_connect.py", '"connect", "claude-code"'),
    # The metadata database beside a running server: the devices' integration tests run them.
    ("devices", "list"): ("tests/test_devices.py", '"devices", "list"'),
    ("devices", "revoke"): ("tests/test_devices.py", '"devices", "revoke"'),
}


def test_every_command_is_covered() -> None:
    # A new command must join NEEDS_THE_SERVER (and so the exit-3 test), LOCAL_COMMANDS, or
    # SERVICE_COMMANDS with the file that runs it.
    root = Path(__file__).resolve().parent.parent
    for command, (path, needle) in SERVICE_COMMANDS.items():
        assert needle in (root / path).read_text(encoding="utf-8"), (command, path)
    local_commands = LOCAL_COMMANDS | set(SERVICE_COMMANDS)

    def command_path(args: tuple[str, ...]) -> tuple[str, ...]:
        return next((args[:n] for n in range(len(args), 0, -1) if args[:n] in COMMANDS), ())

    remote_commands = {command_path(args) for args in NEEDS_THE_SERVER}
    covered = {path for path in COMMANDS if path in remote_commands or path in local_commands}
    assert COMMANDS - covered == set(), "commands no test covers"
