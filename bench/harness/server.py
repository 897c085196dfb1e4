"""A real ``ccmem serve`` for a bench: started on a free loopback port over a temporary (or kept)
data directory, with an admin token, user tokens and its RSS; stopped by its PID."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from bench.harness.paths import CCMEM, ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Server:
    def __init__(
        self, keep: Path | None = None, settings: dict[str, str] | None = None, code: Path | None = None
    ) -> None:
        """A server on a temporary directory, or on ``keep`` (created if missing, not removed).
        ``settings`` are config keys (``search.conversation_share``) and values for this server,
        passed as ``CCMEM_SECTION__KEY`` variables. ``code``: another checkout whose package
        this virtualenv's ``ccmem`` runs (``PYTHONPATH``; see bench/perf/ab.py)."""
        self.keep = keep is not None
        self.data_dir = keep.resolve() if keep is not None else Path(tempfile.mkdtemp(prefix="ccmem-bench-"))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.admin = secrets.token_urlsafe(24)
        self.base = f"http://127.0.0.1:{self.port}"
        # Another checkout reads its own config.yaml: this one's may hold keys it does not know.
        config = (code or ROOT) / "config.yaml"
        self.env = {**os.environ, "CCMEM_ADMIN_TOKEN": self.admin, "CCMEM_CONFIG": str(config)}
        for key, value in (settings or {}).items():
            self.env["CCMEM_" + key.upper().replace(".", "__")] = value
        if code is not None:
            self.env["PYTHONPATH"] = str(code)
        self.log = open(self.data_dir / "server.log", "w")  # noqa: SIM115 - closed in stop()
        self.start()

    def start(self) -> float:
        """Start ``ccmem serve`` on the data dir; seconds until ``/health`` answered 200."""
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [str(CCMEM), "serve", "--port", str(self.port), "--data-dir", str(self.data_dir / "data")],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base}/health", timeout=1).status_code == 200:
                    return time.perf_counter() - started
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        raise SystemExit("server did not start; see " + str(self.data_dir / "server.log"))

    def restart(self) -> dict[str, float]:
        """Stop by SIGTERM (timed), start again on the same data (timed to healthy)."""
        started = time.perf_counter()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(120)
        stop_s = time.perf_counter() - started
        return {"stop_s": round(stop_s, 2), "start_to_healthy_s": round(self.start(), 2)}

    def start_up_pass(self) -> float:
        """Wait for the start-up reconciliation (it runs beside the first requests after a start,
        and searches share the interpreter with it); its seconds, from ``/health``."""
        while True:
            report = httpx.get(f"{self.base}/health", timeout=30).json().get("reconciliation")
            if report is not None and report["state"] != "running":
                if report["state"] != "done":
                    raise SystemExit(f"the start-up reconciliation {report['state']}: {report.get('error')}")
                return round(float(report["seconds"]), 2)
            time.sleep(0.2)

    def stop_only(self) -> None:
        """Stop the server (SIGTERM) and keep its data and log, to start it again later."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(120)

    def token(self, user: str) -> str:
        out = subprocess.run(
            [str(CCMEM), "token", "create", "--user", user, "--data-dir", str(self.data_dir / "data")],
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        if not self.keep:
            shutil.rmtree(self.data_dir, ignore_errors=True)


Item = str | dict[str, object]


@contextlib.contextmanager
def server_on_copy(data_dir: Path, prefix: str) -> Iterator[Server]:
    """A server (hygiene schedule off) on a copy of a kept ``--data-dir`` (never changed);
    stopped and the copy removed afterwards."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    shutil.copytree(data_dir / "data", work / "data")
    server = Server(work, settings={"hygiene.schedule_hours": "0"})
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
