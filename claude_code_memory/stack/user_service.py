"""The user service that starts the stack at login: a systemd user unit (Linux) or a launchd
agent (macOS), as text made by pure functions, and where each lives.

    foreground_argv(config) -> argv           what the service runs: ``ccmem up --foreground``
    systemd_unit(argv, working_dir) -> str    ~/.config/systemd/user/ccmem.service
    launchd_plist(argv, working_dir, log) -> bytes   ~/Library/LaunchAgents/<LAUNCHD_LABEL>.plist
    installed(home, environ) -> Installed     which of them is there, and whether it is ours

The service runs the supervisor in the foreground (``ccmem up --foreground`` prepares as ``up``
does, then becomes ``ccmem stack supervise`` in the same process), so the service manager
watches the process that owns the stack: it sends SIGTERM at logout (the supervisor stops its
services in order) and starts it again only when it failed. A clean stop (``ccmem down``) exits 0
and stays stopped. Nothing secret goes into either file: the admin token stays in the ``.env``
beside the config file the command names. Windows: documented in docs/autostart.md, not made.
"""

from __future__ import annotations

import plistlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..config import user_dirs

UNIT_NAME = "ccmem.service"
LAUNCHD_LABEL = "claude-code-memory.ccmem"
#: The first line of a unit we wrote: uninstall removes a unit only when it carries it.
UNIT_MARKER = "# Written by `ccmem service install`; `ccmem service uninstall` removes it."
#: Seconds the service manager waits after a failure before the next start.
RESTART_SECONDS = 5
#: Seconds it gives the supervisor to stop its services before SIGKILL (the supervisor's own
#: grace for a child is 10 s).
STOP_SECONDS = 30


def foreground_argv(config: Path, python: str | None = None) -> tuple[str, ...]:
    """The command the service runs: this interpreter (no PATH lookup at login), the config by
    its absolute path (the service does not start in the user's shell or directory)."""
    return (
        python or sys.executable,
        "-m",
        "claude_code_memory.cli",
        "up",
        "--foreground",
        "--config",
        str(config.absolute()),
    )


# -- systemd -----------------------------------------------------------------------------------
def _systemd_word(word: str) -> str:
    """One argument of ``ExecStart=`` (systemd.service(5), "Command lines"): ``%`` and ``$``
    doubled (specifiers, variables), and double quotes around a word with spaces or quotes."""
    escaped = word.replace("%", "%%").replace("$", "$$")
    if any(c.isspace() or c in "\"'\\;" for c in escaped) or not escaped:
        escaped = '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return escaped


def _systemd_path(path: Path) -> str:
    """A path in a setting that takes one path (``WorkingDirectory=``): only ``%`` is special."""
    return str(path).replace("%", "%%")


def systemd_unit(argv: Sequence[str], working_dir: Path) -> str:
    """The user unit. ``Type=simple``: the command stays in the foreground as the main process;
    ``KillMode=mixed``: SIGTERM to the supervisor alone (it stops the api, ui and proxy itself,
    in order), SIGKILL to whatever is left after the timeout."""
    return "\n".join(
        [
            UNIT_MARKER,
            "[Unit]",
            "Description=claude-code-memory: the memory server for Claude Code (ccmem up)",
            "",
            "[Service]",
            "Type=simple",
            f"WorkingDirectory={_systemd_path(working_dir)}",
            f"ExecStart={' '.join(_systemd_word(word) for word in argv)}",
            "Environment=PYTHONUNBUFFERED=1",
            "Restart=on-failure",
            f"RestartSec={RESTART_SECONDS}",
            "KillMode=mixed",
            f"TimeoutStopSec={STOP_SECONDS}",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
    )


def systemd_unit_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/systemd/user``, where systemd looks for a user's own units."""
    return user_dirs(dict(environ) if environ is not None else None)[0].parent / "systemd" / "user"


def systemd_unit_path(environ: Mapping[str, str] | None = None) -> Path:
    return systemd_unit_dir(environ) / UNIT_NAME


def systemd_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``systemctl --user enable`` linked the unit into ``default.target``."""
    return (systemd_unit_dir(environ) / "default.target.wants" / UNIT_NAME).exists()


# -- launchd -----------------------------------------------------------------------------------
def launchd_plist(argv: Sequence[str], working_dir: Path, log_file: Path) -> bytes:
    """The launch agent: started at login (``RunAtLoad``), started again when it exits with a
    failure (``KeepAlive.SuccessfulExit = false``), not after a clean stop."""
    agent = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": list(argv),
        "WorkingDirectory": str(working_dir),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": RESTART_SECONDS,
        "ExitTimeOut": STOP_SECONDS,
        "EnvironmentVariables": {"PYTHONUNBUFFERED": "1"},
        "StandardOutPath": str(log_file),
        "StandardErrorPath": str(log_file),
    }
    return plistlib.dumps(agent, fmt=plistlib.FMT_XML, sort_keys=False)


def launchd_plist_path(home: Path) -> Path:
    return home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"


# -- what is there -----------------------------------------------------------------------------
def platform_kind(platform: str | None = None) -> str:
    """``systemd``, ``launchd`` or ``none`` (Windows and the rest: documented, not made)."""
    platform = platform or sys.platform
    if platform.startswith("linux"):
        return "systemd"
    if platform == "darwin":
        return "launchd"
    return "none"


def is_ours(path: Path) -> bool:
    """The file at ``path`` is a unit or an agent ``ccmem service install`` wrote."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if path.suffix == ".plist":
        try:
            agent = plistlib.loads(data)
        except (plistlib.InvalidFileException, ValueError):
            return False
        return isinstance(agent, dict) and agent.get("Label") == LAUNCHD_LABEL
    return data.decode("utf-8", errors="replace").startswith(UNIT_MARKER)


@dataclass(frozen=True)
class Installed:
    kind: str
    #: Where the unit or agent lives on this platform ("" where none is made).
    path: str
    installed: bool
    #: Linked into the login (systemd) or loaded at every login (launchd: any agent there is).
    enabled: bool
    ours: bool

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "path": self.path,
            "installed": self.installed,
            "enabled": self.enabled,
            "ours": self.ours,
        }


def installed(home: Path, environ: Mapping[str, str] | None = None, platform: str | None = None) -> Installed:
    kind = platform_kind(platform)
    if kind == "systemd":
        path = systemd_unit_path(environ)
        there = path.is_file()
        return Installed(kind, str(path), there, there and systemd_enabled(environ), is_ours(path))
    if kind == "launchd":
        path = launchd_plist_path(home)
        there = path.is_file()
        return Installed(kind, str(path), there, there, is_ours(path))
    return Installed(kind, "", False, False, False)
