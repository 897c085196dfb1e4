"""``ccmem service install|uninstall|status``: the stack started at login by the user's own
service manager (a systemd user unit on Linux, a launchd agent on macOS).

``install`` writes the unit or agent (:mod:`claude_code_memory.stack.user_service`), then asks
the service manager to load and start it when one answers (``systemctl --user daemon-reload``
and ``enable --now``; ``launchctl bootstrap gui/$UID``), else prints the commands to run.
``uninstall`` stops it and removes the file it wrote, and nothing else. ``ccmem connect
claude-code --service`` runs ``install``; its ``--undo`` runs ``uninstall``. See docs/autostart.md.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import typer

from ..config import Settings
from ..errors import BadInput
from ..stack import services as stack_services
from ..stack import user_service as us
from . import common
from .common import ConfigOpt, JsonOpt, out

app = typer.Typer(help="Start the stack at login: a systemd user unit (Linux) or a launchd agent (macOS).")


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL
    )


def systemd_manager() -> bool:
    """Whether this session has a systemd user manager to talk to (a login on a systemd
    machine; not a container, a CI job or a root shell without one)."""
    if shutil.which("systemctl") is None:
        return False
    return _run("systemctl", "--user", "show-environment").returncode == 0


def _systemctl(*args: str) -> str:
    done = _run("systemctl", "--user", *args)
    if done.returncode != 0:
        raise BadInput(f"systemctl --user {' '.join(args)} failed: {(done.stderr or done.stdout).strip()}")
    return done.stdout


def _launchctl_domain() -> str:
    return f"gui/{os.getuid()}"


def _config_for(config: Path | None) -> Path:
    path = common.config_file(config).absolute()
    if not path.is_file():
        raise BadInput(f"{path} does not exist: run `ccmem setup` (or `ccmem up`) first")
    return path


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o644)  # the service manager reads it; it holds no secret


def install_service(config: Path | None) -> Path:
    """Write the unit or agent for ``config``'s stack and load it when a manager answers; its path."""
    kind = us.platform_kind()
    if kind == "none":
        raise BadInput("no user service is made on this system: see docs/autostart.md (Windows)")
    config_path = _config_for(config)
    settings: Settings = common.settings(config_path)
    argv = us.foreground_argv(config_path)
    working_dir = config_path.parent
    if kind == "systemd":
        path = us.systemd_unit_path()
        _guard(path)
        _write(path, us.systemd_unit(argv, working_dir).encode())
        out.print(f"wrote {path}", highlight=False, soft_wrap=True)
        commands = [
            ("daemon-reload",),
            ("enable", "--now", us.UNIT_NAME),
        ]
        if systemd_manager():
            for args in commands:
                _systemctl(*args)
            out.print(
                f"enabled {us.UNIT_NAME}: the stack starts at every login (`systemctl --user status "
                f"{us.UNIT_NAME}`)",
                highlight=False,
                soft_wrap=True,
            )
        else:
            lines = " && ".join(f"systemctl --user {' '.join(args)}" for args in commands)
            out.print(
                f"no systemd user manager answers here; in a login session, run: {lines}",
                highlight=False,
                soft_wrap=True,
            )
        return path
    path = us.launchd_plist_path(Path.home())
    _guard(path)
    log_file = stack_services.logs_dir(settings) / "stack.log"
    _write(path, us.launchd_plist(argv, working_dir, log_file))
    out.print(f"wrote {path}", highlight=False, soft_wrap=True)
    bootstrap = ("launchctl", "bootstrap", _launchctl_domain(), str(path))
    if shutil.which("launchctl") and _run(*bootstrap).returncode == 0:
        out.print(f"loaded {us.LAUNCHD_LABEL}: the stack starts at every login", highlight=False)
    else:
        out.print(f"load it now with: {shlex.join(bootstrap)}", highlight=False, soft_wrap=True)
    return path


def _guard(path: Path) -> None:
    if path.exists() and not us.is_ours(path):
        raise BadInput(f"{path} exists and was not written by ccmem: left as it is")


def uninstall_service(expected: Path | None = None) -> Path | None:
    """Stop and remove the unit or agent ``install`` wrote (only the one at ``expected``, when
    given); its path (None: there was none)."""
    state = us.installed(Path.home())
    if not state.installed or (expected is not None and Path(state.path) != expected):
        return None
    path = Path(state.path)
    if not state.ours:
        raise BadInput(f"{path} was not written by ccmem: left as it is")
    if state.kind == "systemd":
        if systemd_manager():
            _run("systemctl", "--user", "disable", "--now", us.UNIT_NAME)
        # Without a manager, the link `enable` made would point at nothing once the unit goes.
        (us.systemd_unit_dir() / "default.target.wants" / us.UNIT_NAME).unlink(missing_ok=True)
        path.unlink()
        if systemd_manager():
            _run("systemctl", "--user", "daemon-reload")
    else:
        if shutil.which("launchctl"):
            _run("launchctl", "bootout", f"{_launchctl_domain()}/{us.LAUNCHD_LABEL}")
        path.unlink()
    return path


def service_state() -> dict[str, object]:
    """What ``status`` reports: the file, whether it is enabled, and (systemd) whether it runs."""
    state = us.installed(Path.home()).as_dict()
    active: str | None = None
    if state["kind"] == "systemd" and state["installed"] and systemd_manager():
        active = _run("systemctl", "--user", "is-active", us.UNIT_NAME).stdout.strip() or None
    return state | {"active": active}


def describe(state: dict[str, object]) -> str:
    """One line for ``ccmem status``."""
    if state["kind"] == "none":
        return "none on this system (docs/autostart.md)"
    if not state["installed"]:
        return "not installed (`ccmem service install` starts the stack at login)"
    mark = "enabled" if state["enabled"] else "installed, not enabled"
    active = f", {state['active']}" if state.get("active") else ""
    foreign = "" if state["ours"] else " (not written by ccmem)"
    return f"{mark}{active}: {state['path']}{foreign}"


@app.command()
def install(config: ConfigOpt = None) -> None:
    """Write the user service that runs `ccmem up --foreground` at login, and enable it."""
    install_service(config)


@app.command()
def uninstall() -> None:
    """Stop the user service and remove the unit or agent `install` wrote (nothing else)."""
    removed = uninstall_service()
    out.print(
        f"removed {removed}" if removed else "no user service of ccmem is installed",
        highlight=False,
        soft_wrap=True,
    )


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Whether the user service is installed and enabled, and where its file is."""
    state = service_state()
    if as_json:
        common.print_json(state)
    else:
        out.print(f"user service: {describe(state)}", highlight=False, soft_wrap=True)
