"""One identity, whatever the directory: after ``ccmem connect claude-code`` every user command
acts as the connected user with no flag and no variable; ``ccmem whoami`` says who and where; a
project's own ``config.yaml`` or ``data/`` changes nothing; ``ccmem token create`` asks the
running server and makes no database where it runs. In process (typer's CliRunner) against a
real server, in a throwaway HOME with no ``CCMEM_*`` variable."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner, Result

from claude_code_memory.cli import app
from claude_code_memory.cli.connect_claude_code import start_command
from claude_code_memory.client import connection
from claude_code_memory.client.remote import Remote, credentials
from claude_code_memory.config import load_settings
from claude_code_memory.errors import Forbidden, MemoryStackError, Unavailable
from tests.support.processes import free_port
from tests.support.server import REPO_ROOT, MemoryServer, add_memory


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("identity-server")) as running:
        yield running


@dataclass
class Home:
    path: Path
    #: The installation connect ran from: a config.yaml whose data dir is the server's.
    config: Path


def _clean_environment(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    import os

    for name in list(os.environ):
        if name.startswith(("CCMEM_", "XDG_")) or name in ("DATABASE_URL", "QDRANT_URL"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def ccmem(*args: str, ok: bool = True) -> Result:
    result = CliRunner().invoke(app, list(args))
    if ok:
        assert result.exit_code == 0, (result.output, result.exception)
    return result


@pytest.fixture
def connected(server: MemoryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    """``ccmem connect claude-code --hooks`` for ada (no ``claude`` CLI: hooks and no MCP server),
    then a shell with no admin token and no variable at all."""
    home = tmp_path / "home"
    home.mkdir()
    _clean_environment(monkeypatch, home)
    config = server.work_dir / "config.yaml"
    assert config.exists()
    monkeypatch.setenv("CCMEM_ADMIN_TOKEN", server.admin_token)
    monkeypatch.setenv("USER", "ada")
    ccmem(
        "connect", "claude-code", "--hooks", "--claude", str(tmp_path / "no-claude"),
        "--url", server.base_url, "--config", str(config),
    )  # fmt: skip
    monkeypatch.delenv("CCMEM_ADMIN_TOKEN")
    return Home(home, config)


def test_connect_saves_the_connection_and_undo_removes_it(
    connected: Home, server: MemoryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = connection.load()
    assert saved is not None
    assert (saved.url, saved.user, saved.route) == (server.base_url, "ada", "hooks")
    assert saved.config == str(connected.config.resolve())
    assert Path(saved.token_file).is_absolute() and saved.token()
    # The start command: absolute paths, this installation's config named.
    assert Path(saved.start[0]).is_absolute() and saved.start[-3:] == ["up", "--config", saved.config]
    assert saved.start_hint.endswith(" up")
    # the plugin's SessionStart hook takes auto-memory in with the same ccmem
    assert saved.sync[: len(saved.start) - 3] == saved.start[:-3] and saved.sync[-2:] == [
        "sync",
        "claude-code",
    ]
    assert connection.path().stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv("CCMEM_ADMIN_TOKEN", server.admin_token)
    ccmem("connect", "claude-code", "--undo")  # the connected installation's record, not the checkout's
    assert connection.load() is None and not connection.path().exists()
    assert not Path(saved.token_file).exists()  # found the record: the token revoked, its file gone


def test_user_commands_act_as_the_connected_user_with_no_flag(
    connected: Home, server: MemoryServer, tmp_path: Path
) -> None:
    other = server.make_token("bob")
    add_memory(server, other, "Bob keeps his bicycle in the shed")
    mine = add_memory(server, connection.load().token() or "", "Ada keeps her kayak in the garage")  # type: ignore[union-attr]

    found = json.loads(ccmem("search", "kayak garage", "--json").stdout)
    assert [hit["id"] for hit in found] == [mine]
    listed = json.loads(ccmem("list", "--json").stdout)
    assert [row["id"] for row in listed["items"]] == [mine]  # only ada's, never bob's
    assert json.loads(ccmem("consent", "list", "--json").stdout)["items"] == []
    projects = tmp_path / "projects"
    projects.mkdir()
    imported = json.loads(
        ccmem(
            "import", "claude-code", "--root", str(projects), "--state-dir", str(tmp_path / "s"), "--json"
        ).stdout
    )
    assert imported["read"] == 0 and imported["dry_run"] is False
    added = ccmem("add", "Ada's second memory", "--json")
    row = json.loads(added.stdout)
    with server.client(server.admin_token) as admin:
        assert admin.get(f"/api/v1/memories/{row['id']}").json()["user_id"] == "ada"


def test_a_user_token_naming_another_user_gets_the_servers_refusal(
    connected: Home, server: MemoryServer
) -> None:
    server.make_token("carol")
    result = ccmem("consent", "list", "--user", "carol", ok=False)
    assert isinstance(result.exception, Forbidden), result.output


def test_an_admin_acts_for_a_user_with_user(server: MemoryServer, tmp_path: Path) -> None:
    add_memory(server, server.make_token("dora"), "Dora's note about the harbour")
    admin = Remote(server.base_url, server.admin_token)
    try:
        with pytest.raises(MemoryStackError):
            admin.get("/api/v1/memories")  # the admin token names no user of its own
        admin.acting_for = "dora"
        assert [row["content"] for row in admin.get("/api/v1/memories")["items"]] == [
            "Dora's note about the harbour"
        ]
    finally:
        admin.close()


def test_a_foreign_config_and_data_where_it_runs_change_nothing(
    connected: Home, server: MemoryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "config.yaml").write_text("database: {unknown: 1}\nserver: {port: 1}\n")
    (project / ".env").write_text("CCMEM_TOKEN=not-this\n")
    before = sorted(p.name for p in project.rglob("*"))
    monkeypatch.chdir(project)

    mine = add_memory(server, connection.load().token() or "", "Ada's lighthouse key hangs by the door")  # type: ignore[union-attr]
    assert json.loads(ccmem("search", "lighthouse key", "--json").stdout)[0]["id"] == mine
    me = json.loads(ccmem("whoami", "--json").stdout)
    assert (me["user"], me["url"], me["accepted"]) == ("ada", server.base_url, True)
    assert me["token_source"] == str(connection.path())
    assert me["config"] != str(project / "config.yaml")
    ccmem("status")
    assert sorted(p.name for p in project.rglob("*")) == before


def test_whoami_says_who_where_and_how(connected: Home, server: MemoryServer) -> None:
    said = ccmem("whoami").stdout
    assert "ada" in said and server.base_url in said and str(connection.path()) in said
    checkout = REPO_ROOT / "config.yaml"
    assert f"{checkout} (checkout)" in " ".join(said.split())
    # A refused token: exit 1, and it says so.
    refused = ccmem("whoami", "--token", "not-a-token", "--json", ok=False)
    assert refused.exit_code == 1 and json.loads(refused.stdout)["accepted"] is False
    admin = json.loads(ccmem("whoami", "--token", server.admin_token, "--json").stdout)
    assert admin["admin"] is True and admin["token_source"] == "--token"
    # The server down: what is known is still said, and the exit code is 3.
    dead = f"http://127.0.0.1:{free_port()}"
    down = ccmem("whoami", "--url", dead, "--json", ok=False)
    # main() turns Unavailable into exit 3 (the runner calls the app below it)
    assert isinstance(down.exception, Unavailable), down.output
    said_down = json.loads(down.stdout)
    assert (said_down["reachable"], said_down["url"], said_down["accepted"]) == (False, dead, False)


def test_token_create_asks_the_running_server_and_leaves_the_directory_empty(
    server: MemoryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_environment(monkeypatch, tmp_path / "home")
    # An installation whose own database is elsewhere: a token made there would be refused.
    install = tmp_path / "install"
    install.mkdir()
    (install / "config.yaml").write_text(f"server:\n  port: {server.port}\n  data_dir: elsewhere\n")
    (install / ".env").write_text(f"CCMEM_ADMIN_TOKEN={server.admin_token}\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)

    printed = ccmem("token", "create", "--user", "erin", "--config", str(install / "config.yaml")).stdout
    token = printed.strip().splitlines()[-1]

    assert list(empty.iterdir()) == []
    assert not (install / "elsewhere").exists()
    me = httpx.get(f"{server.base_url}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert me.status_code == 200 and me.json()["user_id"] == "erin"


def test_token_create_without_a_server_uses_the_installations_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_environment(monkeypatch, tmp_path / "home")
    install = tmp_path / "install"
    install.mkdir()
    (install / "config.yaml").write_text("server:\n  port: 9\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    ccmem("token", "create", "--user", "finn", "--config", str(install / "config.yaml"))
    assert list(empty.iterdir()) == []
    assert (install / "data" / "memory.db").exists()  # beside the config file, not where it ran


# -- the pure parts: which server and token ------------------------------------------------------
def _saved(tmp_path: Path, url: str, *, local: bool = True) -> dict[str, str]:
    environ = {"HOME": str(tmp_path)}
    token_file = tmp_path / "token"
    token_file.write_text("connected-token\n")
    connection.save(
        connection.Connection(
            url,
            "ada",
            str(token_file),
            config="/x/config.yaml" if local else None,
            start=["ccmem"] if local else [],
        ),
        environ,
    )
    return environ


def test_the_connections_token_goes_to_its_own_server_only(tmp_path: Path) -> None:
    settings = load_settings(REPO_ROOT / "config.yaml", environ={"CCMEM_ADMIN_TOKEN": "admin"})
    environ = _saved(tmp_path, "http://127.0.0.1:7001")
    chosen = credentials(settings, environ=environ)
    assert chosen.url == "http://127.0.0.1:7001" and chosen.token is not None
    assert chosen.token.value == "connected-token" and chosen.token.source == str(connection.path(environ))
    # The flag and the variable come first.
    assert credentials(settings, token="flag", environ=environ).token.value == "flag"  # type: ignore[union-attr]
    with_variable = credentials(settings, environ=environ | {"CCMEM_TOKEN": "var"})
    assert with_variable.token.value == "var"  # type: ignore[union-attr]
    # Another server (--url, or a named config's address): never the connection's token.
    elsewhere = credentials(settings, url="http://127.0.0.1:7002", environ=environ)
    assert elsewhere.token.value == "admin"  # type: ignore[union-attr]
    named = credentials(settings, explicit_config=True, environ=environ)
    assert named.url == "http://127.0.0.1:8765" and named.token.value == "admin"  # type: ignore[union-attr]
    # No connection: the configured address and the admin token, as before.
    assert credentials(settings, environ={"HOME": str(tmp_path / "nobody")}).token.source == "the admin token"  # type: ignore[union-attr]


def test_a_remote_connection_never_gets_the_admin_token(tmp_path: Path) -> None:
    settings = load_settings(REPO_ROOT / "config.yaml", environ={"CCMEM_ADMIN_TOKEN": "admin"})
    environ = _saved(tmp_path, "https://memory.example:8765", local=False)
    (tmp_path / "token").unlink()
    chosen = credentials(settings, environ=environ)
    assert chosen.url == "https://memory.example:8765" and chosen.token is None
    assert "another machine" in chosen.unreachable_hint


def test_the_start_command_is_absolute(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    argv, hint = start_command(config)
    assert all(Path(part).is_absolute() for part in argv[:1]) and argv[-3:] == ["up", "--config", str(config)]
    assert hint == "ccmem up" or hint.endswith(" up")
    assert start_command(None)[0][-1] == "up"
    assert shutil.which(argv[0]) is not None or Path(argv[0]).exists()
