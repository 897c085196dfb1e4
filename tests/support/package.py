"""The package route for tests: the wheel and the sdist built for real (``python -m build``: the
sdist, then the wheel from it, so a file the sdist lacks fails the install), and the wheel
installed with pip into a fresh virtualenv outside the repository, with a HOME of its own.

tests/conftest.py's ``built`` fixture builds once a test process; the install (about 30 s
here) is each test's own. ``install`` makes the virtualenv and the user's shell
(``Installed.env``: none of the developer's settings); ``Installed.stop`` stops whatever of the
installation still runs, by PID.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from claude_code_memory.stack.services import read_state

from .processes import processes_naming
from .server import REPO_ROOT


def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False, **kwargs
    )


def said(completed: subprocess.CompletedProcess[str]) -> str:
    return f"exit {completed.returncode}\n{completed.stdout[-4000:]}\n{completed.stderr[-4000:]}"


@dataclass
class Built:
    wheel: Path
    sdist: Path


def build(out: Path) -> Built:
    completed = run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO_ROOT)], timeout=600)
    assert completed.returncode == 0, said(completed)
    [wheel] = out.glob("*.whl")
    [sdist] = out.glob("*.tar.gz")
    return Built(wheel, sdist)


#: The developer's settings a new user's shell does not have.
FOREIGN = ("CCMEM_", "XDG_", "QDRANT_", "VIRTUAL_ENV", "PYTHON")
FOREIGN_NAMES = ("DATABASE_URL", "MEM0_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


@dataclass
class Installed:
    home: Path
    workdir: Path
    venv: Path
    env: dict[str, str]
    ports: dict[str, int] = field(default_factory=dict)

    def ccmem(
        self, *args: str, timeout: float = 600, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run(
            [str(self.venv / "bin" / "ccmem"), *args], cwd=cwd or self.workdir, env=self.env, timeout=timeout
        )

    @property
    def state(self) -> Path:
        return self.home / ".local" / "state" / "ccmem"

    @property
    def data(self) -> Path:
        return self.home / ".local" / "share" / "ccmem"

    @property
    def config(self) -> Path:
        return self.home / ".config" / "ccmem" / "config.yaml"

    def stack_pids(self) -> list[int]:
        """The supervisor's and its services' PIDs, from the stack's run files."""
        run_dir = self.state / "run"
        state = read_state(run_dir / "stack.json")
        pids = [service.pid for service in state.services.values() if service.pid] if state else []
        with contextlib.suppress(OSError, ValueError):
            pids.insert(0, int((run_dir / "stack.pid").read_text()))
        return pids

    def processes(self) -> dict[int, str]:
        """PID -> command line of every process run from this installation's virtualenv."""
        return processes_naming(self.venv)

    def stop(self) -> None:
        """``ccmem stack down``, then SIGKILL to whatever of the installation is left."""
        pids = self.stack_pids()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.ccmem("stack", "down", timeout=60)
        for pid in [*pids, *self.processes()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def new_shell(home: Path, venv: Path, extra_path: str = "") -> dict[str, str]:
    """A new user's shell: the developer's environment without any setting of ours, the
    temporary HOME, and the virtualenv's bin (then ``extra_path``) first on PATH."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(FOREIGN) and key not in FOREIGN_NAMES
    }
    path = os.pathsep.join(part for part in (str(venv / "bin"), extra_path) if part)
    env.update(
        HOME=str(home),
        USER="newcomer",
        LOGNAME="newcomer",
        PATH=f"{path}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
    )
    return env


def install(built: Built, where: Path) -> Installed:
    """The wheel installed with pip into ``where/venv`` (outside the repository), an empty HOME
    (``where/home``) and a directory to run from (``where/somewhere``)."""
    assert not where.resolve().is_relative_to(REPO_ROOT.resolve())
    venv = where / "venv"
    python = shutil.which("python3") or sys.executable
    made = run([python, "-m", "venv", str(venv)], timeout=300)
    assert made.returncode == 0, said(made)
    pip = run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
        + [str(built.wheel)],
        cwd=where,
        timeout=1200,
    )
    assert pip.returncode == 0, said(pip)
    home, workdir = where / "home", where / "somewhere"
    home.mkdir()
    workdir.mkdir()
    return Installed(home, workdir, venv, new_shell(home, venv))


def wait_gone(installed: Installed, timeout: float = 60) -> dict[int, str]:
    """Wait until nothing of the installation runs; what is still running at the end."""
    deadline = time.monotonic() + timeout
    while installed.processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    return installed.processes()
