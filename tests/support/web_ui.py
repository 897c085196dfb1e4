"""The real web UI as a child process: ``ccmem ui`` on a free loopback port, pointed at a
running :class:`~tests.support.server.MemoryServer` (or any URL, e.g. a dead one)."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

from .processes import ChildProcess, free_port, http_ok, tail
from .server import ccmem_bin

START_TIMEOUT = 30.0


class UiServer(ChildProcess):
    def __init__(
        self, work_dir: Path, api_url: str, *, env: dict[str, str] | None = None, flags: bool = True
    ) -> None:
        """``flags=False`` passes host, port and API URL as ``CCMEM_UI__*`` environment variables
        instead of command-line options (as the containers do)."""
        self.work_dir = work_dir
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.api_url = api_url
        self.port = free_port()
        self.secret = secrets.token_urlsafe(32)
        self.extra_env = dict(env or {})
        self.log_path = work_dir / "ui.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.flags = flags

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        env = {name: value for name, value in os.environ.items() if not name.startswith("CCMEM_")}
        home = self.work_dir / "home"
        home.mkdir(exist_ok=True)
        # No config file: the built-in defaults plus what the command line says.
        env |= {
            "HOME": str(home),
            "CCMEM_CONFIG": str(self.work_dir / "ui-config.yaml"),
            "CCMEM_UI_SECRET": self.secret,
            "NO_PROXY": "127.0.0.1,localhost",
        }
        (self.work_dir / "ui-config.yaml").write_text("ui:\n  session_max_age_hours: 1\n", encoding="utf-8")
        return env | self.extra_env

    def start(self) -> UiServer:
        command = [str(ccmem_bin()), "ui"]
        env = self.env
        if self.flags:
            command += ["--host", "127.0.0.1", "--port", str(self.port), "--api-url", self.api_url]
        else:
            env |= {
                "CCMEM_UI__HOST": "127.0.0.1",
                "CCMEM_UI__PORT": str(self.port),
                "CCMEM_UI__API_URL": self.api_url,
            }
        self.launch(
            command, env, http_ok(f"{self.base_url}/healthz"), f"ccmem ui on port {self.port}", START_TIMEOUT
        )
        return self

    def log(self) -> str:
        return tail(self.log_path)

    def __enter__(self) -> UiServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
