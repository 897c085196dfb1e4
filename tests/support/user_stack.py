"""A user's own stack in a throwaway HOME, as a package install lays it out: config, data and
state in the XDG directories (``ccmem setup``'s layout, without the model step), the api alone on
a free loopback port, started by ``ccmem stack up`` and found again by its processes' command
lines (each names this stack's config file), so that a test can kill every one by PID.

``connect`` writes ``connection.json`` through ``claude_code_memory.client.connection`` as
``ccmem connect claude-code`` does, with the command that starts this stack.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx

from claude_code_memory.client import connection
from claude_code_memory.stack import user_setup

from .processes import free_port, processes_naming, wait_until


@dataclass
class UserStack:
    home: Path
    env: dict[str, str]
    port: int
    config: Path
    admin_token: str

    @classmethod
    def make(cls, home: Path) -> UserStack:
        home.mkdir(parents=True, exist_ok=True)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "NO_PROXY": "127.0.0.1,localhost",
            "MEM0_TELEMETRY": "False",
        }
        report = user_setup.setup(env, model=False)
        port = free_port()
        text = report.config_file.read_text(encoding="utf-8")
        report.config_file.write_text(text.replace("port: 8765", f"port: {port}", 1), encoding="utf-8")
        token = next(
            line.split("=", 1)[1]
            for line in report.env_file.read_text(encoding="utf-8").splitlines()
            if line.startswith("CCMEM_ADMIN_TOKEN=")
        )
        return cls(home, env, port, report.config_file, token)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def state_dir(self) -> Path:
        return Path(self.env["XDG_STATE_HOME"]) / "ccmem"

    def start_argv(self) -> list[str]:
        """What ``connect`` records as ``start``: the stack's start, with this stack's config."""
        return [sys.executable, "-m", "claude_code_memory.cli", "stack", "up", "--service", "api"] + [
            "--config",
            str(self.config),
        ]

    def up(self, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.start_argv(),
            env=self.env,
            cwd=self.home,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
        return done

    def connect(self, token_file: Path, *, start: bool = True, route: str = "hooks") -> None:
        saved = connection.Connection(
            url=self.base_url,
            user="ada",
            token_file=str(token_file),
            route=route,
            config=str(self.config),
            start=self.start_argv() if start else [],
            start_hint="ccmem up",
        )
        connection.save(saved, self.env)

    def token(self, user: str = "ada") -> str:
        response = httpx.post(
            f"{self.base_url}/api/v1/tokens",
            json={"user_id": user},
            headers={"Authorization": f"Bearer {self.admin_token}"},
            timeout=30,
        )
        assert response.status_code == 201, response.text
        return str(response.json()["token"])

    def client(self, token: str, timeout: float = 30) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout
        )

    def answers(self) -> bool:
        try:
            return httpx.get(f"{self.base_url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    # -- its processes ---------------------------------------------------------------------------
    def processes(self) -> dict[int, str]:
        """PID -> command line of every process whose command line names this stack's config."""
        return processes_naming(self.config)

    def supervisors(self) -> list[int]:
        return [pid for pid, line in self.processes().items() if " stack supervise " in line]

    def apis(self) -> list[int]:
        return [pid for pid, line in self.processes().items() if " serve " in line]

    def kill9(self) -> list[int]:
        """SIGKILL every process of this stack, by PID; the PIDs."""
        pids = list(self.processes())
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not self.processes() and not self.answers(), timeout=30, what="the stack gone")
        return pids

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "claude_code_memory.cli",
                    "stack",
                    "down",
                    "--config",
                    str(self.config),
                ],
                env=self.env,
                cwd=self.home,
                capture_output=True,
                timeout=60,
                check=False,
            )
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
