"""The native stack's processes: the supervisor that keeps api, ui and proxy running, and the
helpers ``ccmem stack`` uses to probe and stop them by PID.

The supervisor is one detached process (``ccmem stack supervise``, started by ``ccmem stack
up``). It starts each service as its child with its output appended to
``data/logs/<name>.log``, starts a crashed one again after a growing delay
(:class:`~claude_code_memory.stack.services.Backoff`), records what it sees in ``data/run/stack.json``,
and on SIGTERM stops its children (SIGTERM, then SIGKILL after a grace period) and removes its
files. Children also get SIGTERM from the kernel if the supervisor itself dies (Linux).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING

from ..config import Settings
from . import services as stack_services
from .services import Backoff, ServiceSpec, ServiceState, StackState

if TYPE_CHECKING:
    import httpx

#: How long a service may take to become healthy before the next one starts anyway.
START_GATE_SECONDS = 60.0
POLL_SECONDS = 0.25


# -- looking at processes ----------------------------------------------------------------------
def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped) is not running.
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0] != "Z"
    return True


def command_line(pid: int) -> str:
    """The process's command line ('' when unknown): to tell our process from a reused PID."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        pass
    try:  # no /proc (macOS)
        return subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return ""


def is_ours(pid: int, *needles: str) -> bool:
    """``pid`` runs and its command line holds every needle (ours, not a reused PID)."""
    if not alive(pid):
        return False
    line = command_line(pid)
    return all(needle in line for needle in needles)


def is_supervisor(pid: int) -> bool:
    return is_ours(pid, "claude_code_memory.cli", "stack", "supervise")


def is_service(pid: int) -> bool:
    """A service of ours: a ``ccmem`` command, or the mitmdump ``ccmem proxy`` became (it execs)."""
    return is_ours(pid, "claude_code_memory") or is_ours(pid, "ccmem_proxy")


@functools.cache
def _health_client() -> httpx.Client:
    """One client for this process's health checks: a client per check would load the CA bundle
    each time, and the supervisor checks a starting api every ``POLL_SECONDS``. No keep-alive: a
    restarted api must not be asked over the old one's connection."""
    import httpx  # where used: `ccmem serve` imports this module's CLI, not httpx

    return httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))


def healthy(spec: ServiceSpec, timeout: float = 2.0) -> bool:
    """The api answers 200 on /health; the ui and the proxy accept connections on their port."""
    if spec.probe == "http":
        import httpx

        try:
            return _health_client().get(spec.url + spec.health_path, timeout=timeout).status_code == 200
        except httpx.HTTPError:
            return False
    try:
        with socket.create_connection((spec.address.strip("[]"), spec.port), timeout=timeout):
            return True
    except OSError:
        return False


def port_taken(spec: ServiceSpec) -> bool:
    try:
        with socket.create_connection((spec.address.strip("[]"), spec.port), timeout=1):
            return True
    except OSError:
        return False


def stop_pids(pids: list[int], grace: float) -> list[int]:
    """SIGTERM every PID, wait up to ``grace`` seconds, SIGKILL the rest. The ones killed."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.1)
    killed = [pid for pid in pids if alive(pid)]
    for pid in killed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return killed


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the supervisor dies, whatever kills it (Linux)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


# -- the supervisor ----------------------------------------------------------------------------
@dataclass
class _Child:
    spec: ServiceSpec
    state: ServiceState
    backoff: Backoff
    process: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None
    began: float = 0.0
    was_healthy: bool = False


class Supervisor:
    """Runs ``specs`` as children until SIGTERM or SIGINT; see the module docstring."""

    def __init__(self, settings: Settings, specs: list[ServiceSpec], *, grace: float = 10.0) -> None:
        self.settings = settings
        self.grace = grace
        self.logs = stack_services.logs_dir(settings)
        self.pid_path = stack_services.pid_file(settings)
        self.state_path = stack_services.state_file(settings)
        self.children = [
            _Child(
                spec,
                ServiceState(spec.name, spec.port, spec.url, str(self.logs / f"{spec.name}.log")),
                Backoff(),
            )
            for spec in specs
        ]
        self.state = StackState(os.getpid(), time.time(), {c.spec.name: c.state for c in self.children})
        self.stopping = False

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def run(self) -> int:
        existing = stack_services.read_pid(self.pid_path)
        if existing and existing != os.getpid() and is_supervisor(existing):
            print(f"a stack supervisor already runs (pid {existing})", file=sys.stderr)
            return 1
        stack_services.private_dir(self.logs)
        stack_services.private_dir(self.pid_path.parent)
        stack_services.write_pid(self.pid_path, os.getpid())
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self._say(f"supervising {', '.join(c.spec.name for c in self.children)}")
        try:
            while not self.stopping:
                if self._tick():
                    stack_services.write_state(self.state_path, self.state)
                time.sleep(POLL_SECONDS)
        finally:
            self._stop_children()
            with contextlib.suppress(FileNotFoundError):
                self.state_path.unlink()
            if stack_services.read_pid(self.pid_path) == os.getpid():
                self.pid_path.unlink()
            self._say("stopped")
        return 0

    def _tick(self) -> bool:
        """One look at every child; True when the state changed."""
        changed = False
        now = time.time()
        for index, child in enumerate(self.children):
            if child.process is None:
                if self._may_start(index, now):
                    self._start(child)
                    changed = True
                continue
            code = child.process.poll()
            if code is None:
                if child.state.status == "starting" and healthy(child.spec, timeout=0.5):
                    child.state.status = "running"
                    child.was_healthy = True
                    changed = True
                continue
            ran_for = time.monotonic() - child.began
            delay = child.backoff.after_exit(ran_for)
            self._say(
                f"{child.spec.name} (pid {child.process.pid}) exited with {code}; again in {delay:.0f} s"
            )
            self._close_log(child)
            child.process = None
            child.state.pid = None
            child.state.last_exit = code
            child.state.status = "restarting"
            child.state.next_start_at = now + delay
            changed = True
        return changed

    def _may_start(self, index: int, now: float) -> bool:
        child = self.children[index]
        if child.state.next_start_at is not None:
            return now >= child.state.next_start_at
        # The first start waits for the service before it (the ui and the proxy use the api).
        if index == 0:
            return True
        before = self.children[index - 1]
        if before.process is None and before.state.started_at is None:
            return False
        return before.was_healthy or now - (before.state.started_at or now) >= START_GATE_SECONDS

    def _start(self, child: _Child) -> None:
        log = stack_services.open_log(Path(child.state.log))
        restart = f" (restart {child.state.restarts + 1})" if child.state.next_start_at is not None else ""
        log.write(
            f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting {child.spec.name}{restart} ===\n".encode()
        )
        log.flush()
        child.process = subprocess.Popen(
            list(child.spec.argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **child.spec.env},
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - no threads in the supervisor
            close_fds=True,
        )
        child.log = log
        child.began = time.monotonic()
        if child.state.next_start_at is not None:
            child.state.restarts += 1
        child.state.pid = child.process.pid
        child.state.status = "starting"
        child.state.started_at = time.time()
        child.state.next_start_at = None
        self._say(f"started {child.spec.name} (pid {child.process.pid}) on port {child.spec.port}")

    def _stop_children(self) -> None:
        running = [c for c in reversed(self.children) if c.process is not None and c.process.poll() is None]
        pids = [c.process.pid for c in running if c.process is not None]
        if pids:
            self._say(f"stopping {', '.join(f'{c.spec.name} (pid {c.state.pid})' for c in running)}")
        killed = stop_pids(pids, self.grace)
        if killed:
            self._say(f"killed after {self.grace:.0f} s: {', '.join(map(str, killed))}")
        for child in self.children:
            if child.process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.process.wait(timeout=5)
                self._close_log(child)
                child.process = None
                child.state.pid = None
                child.state.status = "stopped"

    @staticmethod
    def _close_log(child: _Child) -> None:
        if child.log is not None:
            child.log.close()
            child.log = None

    @staticmethod
    def _say(message: str) -> None:
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} stack: {message}", flush=True)
