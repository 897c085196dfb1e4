"""The user service that starts the stack at login, and how ``ccmem status`` reads Claude Code.

* the systemd unit passes ``systemd-analyze --user verify`` (the real tool, as CI has it: a
  private runtime directory stands in for a login session's) with awkward paths, and a broken
  unit does not: the check is not a formality;
* the launchd agent survives a plistlib round trip with what launchd needs (RunAtLoad, restart
  on failure only, the absolute command) and no secret;
* ``ccmem service install|status|uninstall`` in process, in a throwaway HOME: the unit written
  without the admin token, what to run printed when no user manager answers, a file that is not
  ours left alone, uninstall removing the unit and its enable link and nothing else; the same
  for the launchd agent; ``ccmem connect claude-code --undo`` removes the unit ``--service`` wrote;
* Claude Code's connection read from its files: the plugin, settings hooks, MCP servers by scope.
"""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from claude_code_memory.cli import app
from claude_code_memory.cli.connect_claude_code import Record
from claude_code_memory.client import claude_connection
from claude_code_memory.client import claude_settings as cs
from claude_code_memory.errors import MemoryStackError
from claude_code_memory.stack import user_service as us

ADMIN_TOKEN = "admin-secret-never-in-a-unit"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway HOME with its own XDG directories, and no way to a real user manager."""
    home = tmp_path / "home"
    home.mkdir()
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.delenv("CCMEM_CONFIG", raising=False)
    monkeypatch.delenv("CCMEM_ADMIN_TOKEN", raising=False)
    monkeypatch.chdir(tmp_path)
    return home


def make_config(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    config = where / "config.yaml"
    config.write_text(f"server:\n  data_dir: {where / 'data'}\n", encoding="utf-8")
    (where / ".env").write_text(f"CCMEM_ADMIN_TOKEN={ADMIN_TOKEN}\n", encoding="utf-8")
    return config


def ccmem(*args: str) -> tuple[int, str]:
    """Exit code and output, in process; a typed error as the CLI's edge prints it (exit 1)."""
    result = CliRunner().invoke(app, list(args))
    if isinstance(result.exception, MemoryStackError):
        return 1, result.output + f"error: {result.exception.message}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


# -- systemd -------------------------------------------------------------------------------------
def verify(unit: Path) -> tuple[int, list[str]]:
    """``systemd-analyze --user verify`` of ``unit``: its exit code and the lines about that unit.

    verify also loads the machine's own user units (sockets.target pulls in gpg-agent's sockets,
    for one) and reports what it finds wrong with them; those lines are the machine's business.
    """
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing: Debian's systemd package (.ci/run installs it)"
    # --user needs a runtime directory (a login session's XDG_RUNTIME_DIR); CI runs as root with
    # none, and a private one is all verify asks for. A short one: the machine's socket units put
    # their sockets there, and a socket path longer than 108 bytes fails to parse.
    runtime = tempfile.mkdtemp(prefix="ccmem-run-", dir="/tmp")
    try:
        env = {**os.environ, "XDG_RUNTIME_DIR": runtime, "HOME": str(unit.parent)}
        checked = subprocess.run(
            [analyze, "--user", "verify", str(unit)], capture_output=True, text=True, timeout=60, env=env
        )
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    ours = [
        line
        for line in checked.stdout.splitlines() + checked.stderr.splitlines()
        if line.startswith((f"{unit}:", f"{unit.name}:"))
    ]
    return checked.returncode, ours


@pytest.mark.integration  # runs systemd-analyze / systemctl
def test_the_systemd_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    # A config path with a space, a percent sign and a dollar: systemd's own quoting must hold.
    config = make_config(tmp_path / "my config %h $HOME")
    argv = us.foreground_argv(config)
    text = us.systemd_unit(argv, config.parent)
    unit = tmp_path / us.UNIT_NAME
    unit.write_text(text, encoding="utf-8")

    code, said = verify(unit)

    assert code == 0 and said == [], said
    assert text.startswith(us.UNIT_MARKER)
    assert f"ExecStart={sys.executable} -m claude_code_memory.cli up --foreground --config " in text
    assert '"' + str(config).replace("%", "%%").replace("$", "$$") + '"' in text
    for line in ("Type=simple", "Restart=on-failure", "KillMode=mixed", "WantedBy=default.target"):
        assert line in text.splitlines()
    assert ADMIN_TOKEN not in text

    # The check has teeth: a misspelt key and a command that does not exist are reported.
    unit.write_text(text.replace("Restart=", "Restrat=").replace(sys.executable, "/nowhere/python"))
    code, said = verify(unit)
    assert code != 0, said
    assert any("Restrat" in line for line in said) and any("/nowhere/python" in line for line in said), said


@pytest.mark.integration  # runs systemd-analyze / systemctl
def test_service_install_status_uninstall_with_systemd(home: Path, tmp_path: Path) -> None:
    config = make_config(tmp_path / "cfg")
    unit = home / ".config" / "systemd" / "user" / us.UNIT_NAME
    theirs = unit.parent / "something-else.service"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("[Service]\nExecStart=/bin/true\n")

    code, said = ccmem("service", "install", "--config", str(config))

    assert code == 0, said
    text = unit.read_text(encoding="utf-8")
    assert f"--config {config}" in text and f"WorkingDirectory={config.parent}" in text
    assert ADMIN_TOKEN not in text and (unit.stat().st_mode & 0o777) == 0o644
    # No user manager answers in a test: the commands to run are printed.
    assert "systemctl --user daemon-reload && systemctl --user enable --now ccmem.service" in said
    code, said = ccmem("service", "status", "--json")
    state = json.loads(said)
    assert (state["installed"], state["enabled"], state["ours"]) == (True, False, True)
    assert state["path"] == str(unit)
    # What `systemctl --user enable` makes: the link status reads.
    wants = unit.parent / "default.target.wants"
    wants.mkdir()
    (wants / us.UNIT_NAME).symlink_to(unit)
    assert json.loads(ccmem("service", "status", "--json")[1])["enabled"] is True

    code, said = ccmem("service", "uninstall")

    assert code == 0 and f"removed {unit}" in said
    assert not unit.exists() and not (wants / us.UNIT_NAME).is_symlink()
    assert theirs.read_text() == "[Service]\nExecStart=/bin/true\n"
    assert "no user service of ccmem is installed" in ccmem("service", "uninstall")[1]


@pytest.mark.integration  # runs systemd-analyze / systemctl
def test_a_unit_ccmem_did_not_write_is_left_alone(home: Path, tmp_path: Path) -> None:
    config = make_config(tmp_path / "cfg")
    unit = home / ".config" / "systemd" / "user" / us.UNIT_NAME
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nExecStart=/usr/bin/someone-elses\n")

    code, said = ccmem("service", "install", "--config", str(config))
    assert code == 1 and unit.read_text() == "[Service]\nExecStart=/usr/bin/someone-elses\n"
    code, said = ccmem("service", "uninstall")
    assert code == 1 and unit.exists()
    assert "not written by ccmem" in ccmem("service", "status")[1]


def test_down_says_the_enabled_service_starts_the_stack_at_the_next_login(home: Path, tmp_path: Path) -> None:
    config = make_config(tmp_path / "cfg")
    assert ccmem("down", "--config", str(config)) == (0, "the stack is not running\n")
    unit = us.systemd_unit_path()
    unit.parent.mkdir(parents=True)
    unit.write_text(us.systemd_unit(us.foreground_argv(config), config.parent))
    (unit.parent / "default.target.wants").mkdir()
    (unit.parent / "default.target.wants" / us.UNIT_NAME).symlink_to(unit)

    code, said = ccmem("down", "--config", str(config))

    assert code == 0 and "the stack is not running" in said
    assert f"the user service ({unit}) starts it again at the next login" in " ".join(said.split())


def test_install_needs_a_config(home: Path, tmp_path: Path) -> None:
    code, _ = ccmem("service", "install", "--config", str(tmp_path / "none" / "config.yaml"))
    assert code == 1
    assert not (home / ".config" / "systemd").exists()


@pytest.mark.integration  # runs systemd-analyze / systemctl
def test_connect_undo_removes_the_unit_connect_wrote_and_nothing_else(home: Path, tmp_path: Path) -> None:
    config = make_config(tmp_path / "cfg")
    assert ccmem("service", "install", "--config", str(config))[0] == 0
    unit = home / ".config" / "systemd" / "user" / us.UNIT_NAME
    # What `connect claude-code --service` records after a hooks-route connect.
    record = Record("hooks", "alice", "http://127.0.0.1:1", "", settings_path=str(tmp_path / "absent.json"))
    record.service_file = str(unit)
    connect_dir = tmp_path / "cfg" / "data" / "connect"
    connect_dir.mkdir(parents=True)
    (connect_dir / "claude-code.json").write_text(json.dumps(vars(record)))
    kept = home / ".config" / "ccmem" / "kept.txt"
    kept.parent.mkdir(parents=True)
    kept.write_text("mine")

    code, said = ccmem(
        "connect", "claude-code", "--undo", "--config", str(config), "--claude", "/nowhere/claude"
    )

    assert code == 0, said
    assert f"removed the user service {unit}" in said
    assert not unit.exists() and kept.read_text() == "mine"
    assert not (connect_dir / "claude-code.json").exists()


def test_connect_service_is_refused_for_a_remote_server(home: Path, tmp_path: Path) -> None:
    config = make_config(tmp_path / "cfg")
    code, said = ccmem(
        "connect",
        "claude-code",
        "--service",
        "--server",
        "https://example.invalid:8765",
        "--config",
        str(config),
    )
    assert code == 1 and "with --server it runs elsewhere" in said
    assert not (home / ".config" / "systemd").exists()


# -- launchd -------------------------------------------------------------------------------------
def test_the_launchd_agent_round_trips_through_plistlib(tmp_path: Path) -> None:
    config = make_config(tmp_path / "cfg dir")
    argv = us.foreground_argv(config)
    log = tmp_path / "state" / "logs" / "stack.log"

    agent = plistlib.loads(us.launchd_plist(argv, config.parent, log))

    assert agent == {
        "Label": us.LAUNCHD_LABEL,
        "ProgramArguments": [
            sys.executable, "-m", "claude_code_memory.cli", "up", "--foreground", "--config", str(config)
        ],
        "WorkingDirectory": str(config.parent),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": us.RESTART_SECONDS,
        "ExitTimeOut": us.STOP_SECONDS,
        "EnvironmentVariables": {"PYTHONUNBUFFERED": "1"},
        "StandardOutPath": str(log),
        "StandardErrorPath": str(log),
    }  # fmt: skip
    assert ADMIN_TOKEN.encode() not in us.launchd_plist(argv, config.parent, log)


def test_service_install_and_uninstall_with_launchd(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = make_config(tmp_path / "cfg")
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setenv("PATH", str(tmp_path / "no-launchctl"))  # not a Mac: nothing to load it
    plist = home / "Library" / "LaunchAgents" / f"{us.LAUNCHD_LABEL}.plist"

    code, said = ccmem("service", "install", "--config", str(config))

    assert code == 0, said
    agent = plistlib.loads(plist.read_bytes())
    assert agent["Label"] == us.LAUNCHD_LABEL and agent["ProgramArguments"][-1] == str(config)
    assert f"launchctl bootstrap gui/{os.getuid()} {plist}" in " ".join(said.split())
    state = json.loads(ccmem("service", "status", "--json")[1])
    assert (state["kind"], state["installed"], state["enabled"]) == ("launchd", True, True)
    code, said = ccmem("service", "uninstall")
    assert code == 0 and not plist.exists() and plist.parent.is_dir()


# -- Claude Code's side, as status reads it --------------------------------------------------------
def test_claude_connection_reads_plugin_hooks_and_mcp_scopes(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".claude").mkdir(parents=True)
    (project / ".claude").mkdir(parents=True)
    assert claude_connection.connected(home, project).route is None

    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps({"enabledPlugins": {"ccmem@claude-code-memory": True}}))
    ours = {"type": "http", "url": "http://127.0.0.1:8765/mcp/claude-code/http/alice?tools=claude-code"}
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "memory": ours,
                    "github": {"type": "http", "url": "https://api.github.com/mcp"},
                },
                "projects": {str(project): {"mcpServers": {"mem-local": ours}}},
            }
        )
    )
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"team": ours}}))

    found = claude_connection.connected(home, project)

    assert found.route == "plugin" and found.plugin_in == [str(settings)]
    scopes = {(server.name, server.scope) for server in found.mcp}
    assert scopes == {("memory", "user"), ("mem-local", "local"), ("team", "project"), ("memory", "plugin")}
    how, servers = claude_connection.describe(found)
    assert "plugin ccmem@claude-code-memory" in how and "memory (user scope" in servers

    # Settings hooks serve sessions when both are there (the plugin's stand aside).
    hook = cs.hook_entry("SessionStart", "http://127.0.0.1:8765", token_file=tmp_path / "t")
    local = project / ".claude" / "settings.local.json"
    local.write_text(json.dumps(cs.with_hooks({}, {"SessionStart": hook})))
    both = claude_connection.connected(home, project)
    assert both.route == "hooks" and both.hooks_in == [str(local)]
    assert "stands aside" in claude_connection.describe(both)[0]
