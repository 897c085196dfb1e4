"""The real memory server as a child process: ``ccmem serve`` on a free loopback port.

Each instance gets its own working directory (config copy, logs, a private ``HOME``), its own
data directory and a random admin token. The child's environment is scrubbed of the
developer's ``CCMEM_*`` / ``DATABASE_URL`` / ``QDRANT_*`` settings, and its working directory
has no ``.env``, so nothing outside the test decides how it runs.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from .processes import ChildProcess, free_port, http_ok, require_tool, settled, tail

if TYPE_CHECKING:
    from .servers import ApiServer

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0

# Settings a developer may have exported that must not leak into a test server.
_SCRUBBED = (
    "DATABASE_URL",
    "QDRANT_URL",
    "QDRANT_API_KEY",
    "MEM0_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
)


def ccmem_bin() -> Path:
    """The ``ccmem`` of the interpreter running the tests (``.venv/bin/ccmem`` under README's command)."""
    beside = Path(sys.executable).parent / "ccmem"
    if beside.exists():
        return beside
    return require_tool(
        REPO_ROOT / ".venv" / "bin" / "ccmem", "the package's command; run ./install.sh --dev"
    )


class MemoryServer(ChildProcess):
    """One ``ccmem serve`` process. ``start()`` returns once ``/health`` answers 200."""

    def __init__(
        self, work_dir: Path, *, data_dir: Path | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.work_dir = work_dir
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir = data_dir or work_dir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.admin_token = secrets.token_urlsafe(32)
        self.extra_env = dict(env or {})
        self.log_path = work_dir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._starts = 0

        config = REPO_ROOT / "config.yaml"
        self.config_path: Path | None = None
        if config.exists():
            # A copy, so the repository's .env (read beside the config file) stays out of it.
            self.config_path = work_dir / "config.yaml"
            shutil.copyfile(config, self.config_path)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    @property
    def env(self) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith("CCMEM_") and name.upper() not in _SCRUBBED
        }
        home = self.work_dir / "home"
        home.mkdir(exist_ok=True)
        env |= {"HOME": str(home), "CCMEM_ADMIN_TOKEN": self.admin_token, "NO_PROXY": "127.0.0.1,localhost"}
        if self.config_path is not None:
            env["CCMEM_CONFIG"] = str(self.config_path)
        return env | self.extra_env

    def start(self, *, degraded: bool = False) -> MemoryServer:
        """Start and wait for ``/health``: 200, or with ``degraded`` also 503 (up, but a store
        cannot serve yet, as on a disk too full to load the vector store)."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("the server is already running")
        self._starts += 1
        health = f"{self.base_url}/health"
        command = [
            str(ccmem_bin()),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
        ]
        self.launch(
            command,
            self.env,
            settled(health) if degraded else http_ok(health),
            f"ccmem serve on port {self.port} (start #{self._starts})",
            START_TIMEOUT,
        )
        return self

    def restart(self) -> MemoryServer:
        """Stop and start again on the same port and data directory."""
        self.stop()
        return self.start()

    def client(self, token: str | None = None, *, timeout: float = 60) -> httpx.Client:
        """An httpx client of this server, with ``token`` as its bearer token (none: no header)."""
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def make_token(self, user: str) -> str:
        """A new bearer token for ``user``: from ``POST /api/v1/tokens`` with the admin token while
        the server runs (no process to start), else from ``ccmem token create``."""
        if self.process is not None and self.process.poll() is None:
            response = httpx.post(
                f"{self.base_url}/api/v1/tokens",
                json={"user_id": user},
                headers=self.admin_headers(),
                timeout=30,
            )
            if response.status_code != 201:
                raise RuntimeError(f"POST /api/v1/tokens answered {response.status_code}: {response.text}")
            return str(response.json()["token"])
        completed = self.ccmem("token", "create", "--user", user, "--data-dir", str(self.data_dir))
        lines = [line.strip() for line in completed.stdout.splitlines() if line.strip()]
        if not lines:
            raise RuntimeError(f"ccmem token create printed no token:\n{completed.stderr}")
        return lines[-1]

    def ccmem(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run another ``ccmem`` command with this server's environment and working directory."""
        completed = subprocess.run(
            [str(ccmem_bin()), *args],
            cwd=self.work_dir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and completed.returncode != 0:
            output = f"{completed.stdout}\n{completed.stderr}".strip()
            raise RuntimeError(f"ccmem {' '.join(args)} exited {completed.returncode}:\n{output}")
        return completed

    def log(self) -> str:
        """The server's output so far (stdout and stderr), for assertion messages."""
        return tail(self.log_path)

    def __enter__(self) -> MemoryServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def add_memory(
    server: ApiServer, token: str, text: str, project: str | None = None, app: str = "notes"
) -> str:
    """Store ``text`` for the token's user over REST; returns the memory's id."""
    response = server.client(token, timeout=30).post(
        "/api/v1/memories", json={"text": text, "project": project, "app": app}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    return str(body.get("id") or body["results"][0]["id"])
