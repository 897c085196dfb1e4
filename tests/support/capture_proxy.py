"""The real capture proxy as a child process: ``ccmem proxy`` (mitmdump + our addon) on a free port.

Each instance writes its own ``config.yaml`` (the repository's, with the ``proxy:`` section the
test asks for) and runs ``ccmem proxy --config ... --data-dir ...``; ``ccmem proxy`` execs
mitmdump, so the child's PID is mitmdump's and ``stop()`` (SIGTERM) is a clean shutdown. The
token reaches it only as ``CCMEM_PROXY_TOKEN`` in its environment.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import yaml

from .processes import ChildProcess, free_port, port_open, require_tool, tail
from .server import REPO_ROOT, ccmem_bin

MITMDUMP = REPO_ROOT / "proxy" / ".venv" / "bin" / "mitmdump"
START_TIMEOUT = 30.0

_SCRUBBED = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "PYTHONPATH")


def require_mitmdump() -> Path:
    return require_tool(MITMDUMP, "the capture proxy's virtualenv; run ./install.sh --dev")


class CaptureProxy(ChildProcess):
    """One ``ccmem proxy``. ``start()`` returns once the port accepts connections."""

    def __init__(
        self,
        work_dir: Path,
        *,
        mode: str,
        api_url: str,
        token: str | None,
        upstream_hosts: list[str] | None = None,
        reverse_upstream: str | None = None,
        extra_args: list[str] | None = None,
        **proxy_settings: Any,
    ) -> None:
        require_mitmdump()
        self.work_dir = work_dir
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir = work_dir / "data"
        self.port = free_port()
        self.token = token
        self.extra_args = list(extra_args or [])
        self.log_path = work_dir / "proxy.log"
        self.process: subprocess.Popen[bytes] | None = None
        section: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": self.port,
            "mode": mode,
            "api_url": api_url,
            "retry_max_seconds": 1,
            **proxy_settings,
        }
        if upstream_hosts is not None:
            section["upstream_hosts"] = upstream_hosts
        if reverse_upstream is not None:
            section["reverse_upstream"] = reverse_upstream
        base = yaml.safe_load((REPO_ROOT / "config.yaml").read_text()) or {}
        base["proxy"] = {**(base.get("proxy") or {}), **section}
        self.config_path = work_dir / "config.yaml"
        self.config_path.write_text(yaml.safe_dump(base), encoding="utf-8")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ca_cert(self) -> Path:
        return self.data_dir / "proxy" / "mitmproxy-ca-cert.pem"

    @property
    def outbox(self) -> Path:
        return self.data_dir / "proxy" / "outbox.db"

    def outbox_count(self) -> int:
        if not self.outbox.exists():
            return 0
        with sqlite3.connect(self.outbox, timeout=10) as db:
            return int(db.execute("SELECT count(*) FROM outbox").fetchone()[0])

    def command(self) -> list[str]:
        command = [str(ccmem_bin()), "proxy", "--config", str(self.config_path)]
        command += ["--data-dir", str(self.data_dir)]
        return command + (["--", *self.extra_args] if self.extra_args else [])

    def env(self) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith("CCMEM_") and name.upper() not in _SCRUBBED
        }
        home = self.work_dir / "home"
        home.mkdir(exist_ok=True)
        env["HOME"] = str(home)
        # This checkout's package and addon, whichever checkout the venv's editable install names.
        env["PYTHONPATH"] = str(REPO_ROOT)
        if self.token:
            env["CCMEM_PROXY_TOKEN"] = self.token
        return env

    def start(self) -> CaptureProxy:
        self.launch(
            self.command(),
            self.env(),
            port_open(self.port),
            f"ccmem proxy on port {self.port}",
            START_TIMEOUT,
        )
        return self

    def log(self) -> str:
        return tail(self.log_path, 12000)

    def __enter__(self) -> CaptureProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
