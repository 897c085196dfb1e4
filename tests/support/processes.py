"""Child processes for tests: free loopback ports, waiting for readiness, stopping by PID.

Every process a test starts is stopped through its own PID (terminate, wait, kill), never by
name, and its output goes to a file so a failure can show it.
"""

from __future__ import annotations

import functools
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require_tool(path: str | Path, what: str, *, required: bool = False) -> Path:
    """``path`` (or a command name on ``PATH``) if it is there; otherwise skip, or fail in CI.

    CI installs every tool the tests use, so a missing one there is a broken setup, not a
    reason to skip. ``required``: what ``./install.sh --dev`` installs fails everywhere, so that
    README's test command never passes with those tests silently skipped.
    """
    found = Path(path) if Path(path).is_absolute() else None
    if found is None:
        located = shutil.which(str(path))
        found = Path(located) if located else None
    if found is not None and found.exists() and os.access(found, os.X_OK):
        return found
    message = f"{path} is missing: {what}"
    if in_ci() or required:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now.

    Taken at random below the kernel's ephemeral range, where no outgoing connection takes a port
    meanwhile. Under pytest-xdist each worker draws from its own slice, so a port one worker has
    found free and not bound yet cannot go to another worker. (Not ``bind(0)`` and a remainder:
    Linux hands ``bind(0)`` odd ports.)
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    mine = int(worker) % workers if worker.isdigit() and workers > 1 else 0
    low, high = _PORTS
    span = (high - low) // max(workers, 1)
    first = low + mine * span
    for _ in range(1000):
        port = random.randrange(first, first + span)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port on 127.0.0.1 in {first}-{first + span - 1}")


def _ports_below_the_ephemeral_range() -> tuple[int, int]:
    try:
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    return (10000, ephemeral_low) if ephemeral_low >= 20000 else (20000, 32768)


#: Where :func:`free_port` draws from: ``[low, high)``.
_PORTS = _ports_below_the_ephemeral_range()


def processes_naming(needle: str | Path) -> dict[int, str]:
    """PID -> command line of every process of this machine whose command line holds ``needle``."""
    found = {}
    wanted = str(needle).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            line = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if wanted in line:
            found[int(entry.name)] = line.replace(b"\0", b" ").decode(errors="replace")
    return found


def tail(path: Path, limit: int = 6000) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no output)"
    return text[-limit:] if text.strip() else "(no output)"


def wait_until(
    ready: Callable[[], bool],
    *,
    timeout: float,
    process: subprocess.Popen[bytes] | None = None,
    what: str,
    log: Path | None = None,
) -> None:
    """Poll ``ready`` until it is true; fail early, with the log, if ``process`` dies."""
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                f"{what} exited with code {process.returncode} before it was ready:\n{_log(log)}"
            )
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} was not ready after {timeout:.0f} s:\n{_log(log)}")
        time.sleep(0.1)


def _log(log: Path | None) -> str:
    return tail(log) if log is not None else "(no log)"


@functools.cache
def _checker() -> httpx.Client:
    """The client of every readiness check. One per check would load the CA bundle each time,
    most of what a check costs, and a test polls a starting server dozens of times. No
    keep-alive: a check after a restart must not reuse a connection to the stopped server."""
    return httpx.Client(timeout=2, limits=httpx.Limits(max_keepalive_connections=0))


def http_ok(url: str) -> Callable[[], bool]:
    return http_answers(url, frozenset({200}))


def http_answers(url: str, statuses: frozenset[int]) -> Callable[[], bool]:
    """Ready once ``url`` answers one of ``statuses`` (a degraded server answers /health 503)."""

    def check() -> bool:
        try:
            return _checker().get(url).status_code in statuses
        except httpx.HTTPError:
            return False

    return check


def settled(url: str) -> Callable[[], bool]:
    """Ready once ``/health`` at ``url`` answers 200, or 503 for a reason other than starting
    (up, but a store cannot serve: degraded)."""

    def check() -> bool:
        try:
            response = _checker().get(url)
        except httpx.HTTPError:
            return False
        if response.status_code == 200:
            return True
        try:
            return response.status_code == 503 and response.json().get("status") != "starting"
        except ValueError:
            return False

    return check


def port_open(port: int, host: str = "127.0.0.1") -> Callable[[], bool]:
    def check() -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            return sock.connect_ex((host, port)) == 0

    return check


def stop_process(
    process: subprocess.Popen[bytes], *, grace: float = 15, first_signal: int = signal.SIGTERM
) -> int | None:
    """Stop one child by its PID: ``first_signal`` (SIGTERM), wait ``grace`` seconds, then SIGKILL."""
    if process.poll() is None:
        process.send_signal(first_signal)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    return process.returncode


class ChildProcess:
    """A server a test runs: output appended to ``log_path``, ready when ``ready`` holds, stopped
    by its PID. Subclasses set ``work_dir`` and ``log_path`` and call :meth:`launch`."""

    work_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def launch(
        self,
        command: list[str],
        env: dict[str, str],
        ready: Callable[[], bool],
        what: str,
        timeout: float,
    ) -> None:
        with self.log_path.open("ab") as log:
            log.write(f"\n=== {' '.join(command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                command, cwd=self.work_dir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        try:
            wait_until(ready, timeout=timeout, process=self.process, what=what, log=self.log_path)
        except RuntimeError:
            self.stop()
            raise

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after the grace time; the exit code (None if not running)."""
        if self.process is None:
            return None
        code = stop_process(self.process)
        self.process = None
        return code
