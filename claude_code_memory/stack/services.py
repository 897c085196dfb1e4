"""The native stack, the decisions without the processes: which services, on which ports, how
their health is judged, when a crashed one is started again, and the state file that
``ccmem stack status`` reads.

The supervisor (:mod:`claude_code_memory.stack.supervisor`) starts the processes; ``ccmem stack``
(:mod:`claude_code_memory.cli.stack`) is the command line. Everything here is pure but
:func:`read_state` / :func:`write_state` (one small JSON file).

Layout under the state directory (``server.state_dir``, by default the data directory)::

    data/run/stack.pid     the supervisor's PID (only while it runs)
    data/run/stack.json    its view of the services: PIDs, restarts, last exit codes
    data/run/stack.lock    held by a starter while it looks for a supervisor and starts one
    data/logs/<name>.log   each service's output; stack.log is the supervisor's own
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

from ..config import Settings
from ..errors import BadInput

#: The services in the order they start (the UI and the proxy talk to the API).
SERVICE_ORDER = ("api", "ui", "proxy")

#: The ``ccmem`` command each service runs.
COMMANDS = {"api": "serve", "ui": "ui", "proxy": "proxy"}

#: A child that ran at least this long before it exited was healthy: its backoff starts over.
STABLE_AFTER_SECONDS = 30.0
BACKOFF_FIRST_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 30.0

ServiceStatus = Literal["starting", "running", "restarting", "stopped"]


@dataclass(frozen=True)
class ServiceSpec:
    """One service of the stack: what runs, and where to look for it."""

    name: str
    argv: tuple[str, ...]
    host: str
    port: int
    #: ``http``: GET ``health_path`` must answer 200; ``tcp``: the port must accept connections.
    probe: Literal["http", "tcp"]
    health_path: str = ""
    #: Set in the service's environment, over the supervisor's.
    env: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        """Where a client on this machine reaches it (a wildcard bind is reached on loopback)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else "::1" if self.host == "::" else self.host
        return f"[{host}]" if ":" in host else host

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}"


def ccmem_argv(command: str, config: Path | None) -> tuple[str, ...]:
    """The command line of ``ccmem <command>`` with this interpreter (no PATH lookup)."""
    argv = [sys.executable, "-m", "claude_code_memory.cli", command]
    if config is not None:
        argv += ["--config", str(config)]
    return tuple(argv)


def plan(
    settings: Settings, available: set[str], chosen: list[str] | None = None, config: Path | None = None
) -> list[ServiceSpec]:
    """The services to run: ``chosen`` (default: all of ``available``), in start order.

    ``available`` is the set of services whose commands this installation has; naming one
    that is not there is a :class:`BadInput`.
    """
    names = list(chosen) if chosen else [name for name in SERVICE_ORDER if name in available]
    unknown = [name for name in names if name not in SERVICE_ORDER]
    if unknown:
        raise BadInput(f"unknown service {unknown[0]!r}; the stack has {', '.join(SERVICE_ORDER)}")
    missing = [name for name in names if name not in available]
    if missing:
        raise BadInput(
            f"service {missing[0]!r} is not available here: this installation has no "
            f"`ccmem {COMMANDS[missing[0]]}` command"
        )
    if len(set(names)) != len(names):
        raise BadInput("each service may be named once")
    # With the api in the stack, the ui and the proxy talk to it, wherever config.yaml's
    # ui.api_url and proxy.api_url point (they would go stale when server.port changes).
    api_url = ""
    if "api" in names:
        host = settings.server.host
        loopback = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else host
        api_url = f"http://{loopback}:{settings.server.port}"
    specs = {
        "api": ServiceSpec(
            "api",
            ccmem_argv("serve", config),
            settings.server.host,
            settings.server.port,
            "http",
            "/health",
        ),
        "ui": ServiceSpec(
            "ui",
            ccmem_argv("ui", config),
            settings.ui.host,
            settings.ui.port,
            "tcp",
            env={"CCMEM_UI__API_URL": api_url} if api_url else {},
        ),
        "proxy": ServiceSpec(
            "proxy",
            ccmem_argv("proxy", config),
            settings.proxy.host,
            settings.proxy.port,
            "tcp",
            env={"CCMEM_PROXY__API_URL": api_url} if api_url else {},
        ),
    }
    ordered = [specs[name] for name in SERVICE_ORDER if name in names]
    ports = [spec.port for spec in ordered]
    for spec in ordered:
        if ports.count(spec.port) > 1:
            clash = [other.name for other in ordered if other.port == spec.port]
            raise BadInput(f"{' and '.join(clash)} are both set to port {spec.port}; give each its own")
    return ordered


# -- restarts ----------------------------------------------------------------------------------
@dataclass
class Backoff:
    """Delays between restarts of a crashing child: 1, 2, 4 ... 30 s, from 1 s again once it
    has stayed up for :data:`STABLE_AFTER_SECONDS`."""

    failures: int = 0

    def after_exit(self, ran_for: float) -> float:
        """The delay before the next start, given how long the child that just exited ran."""
        if ran_for >= STABLE_AFTER_SECONDS:
            self.failures = 0
        delay = min(BACKOFF_FIRST_SECONDS * 2**self.failures, BACKOFF_MAX_SECONDS)
        self.failures += 1
        return delay


# -- the state file ----------------------------------------------------------------------------
@dataclass
class ServiceState:
    name: str
    port: int
    url: str
    log: str
    pid: int | None = None
    status: ServiceStatus = "starting"
    restarts: int = 0
    last_exit: int | None = None
    started_at: float | None = None
    next_start_at: float | None = None


@dataclass
class StackState:
    supervisor_pid: int
    started_at: float
    services: dict[str, ServiceState] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> StackState:
        raw = json.loads(text)
        services = {name: ServiceState(**value) for name, value in raw.get("services", {}).items()}
        return cls(supervisor_pid=int(raw["supervisor_pid"]), started_at=raw["started_at"], services=services)


def run_dir(settings: Settings) -> Path:
    return settings.state_path / "run"


def logs_dir(settings: Settings) -> Path:
    return settings.state_path / "logs"


def pid_file(settings: Settings) -> Path:
    return run_dir(settings) / "stack.pid"


def state_file(settings: Settings) -> Path:
    return run_dir(settings) / "stack.json"


def private_dir(path: Path) -> None:
    """``path`` made (with its parents) and kept mode 0700: logs and PIDs are the user's alone."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_uid == os.geteuid():
        path.chmod(0o700)


def open_log(path: Path) -> BinaryIO:
    """``path`` opened to append, made mode 0600 when missing (whatever the umask)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")


def lock_file(settings: Settings) -> Path:
    return run_dir(settings) / "stack.lock"


def write_private(path: Path, text: str, partial: Path | None = None) -> None:
    """``path`` written mode 0600 from its first byte, whatever the umask of the process (``ccmem
    up`` runs in the user's shell or a hook's, not under the server's private umask); through
    ``partial`` and one rename when given, so a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    target = partial or path
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.chmod(target, 0o600)  # a file left by an older version keeps its mode through O_TRUNC
    if partial is not None:
        os.replace(partial, path)


def write_state(path: Path, state: StackState) -> None:
    """Replace the state file in one step, so a reader never sees half of it."""
    write_private(path, state.to_json(), partial=path.with_suffix(".tmp"))


def read_state(path: Path) -> StackState | None:
    """The last state the supervisor wrote; None when there is none (or it is unreadable)."""
    try:
        return StackState.from_json(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def write_pid(path: Path, pid: int) -> None:
    write_private(path, f"{pid}\n")


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None
