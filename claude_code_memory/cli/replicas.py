"""``ccmem serve --replicas N``: N API processes on one PostgreSQL and one Qdrant server, natively.

Replica ``i`` is ``ccmem serve`` on ``port + i`` with its own data directory
(``<data_dir>/replica-<i>``: logs and mem0's local files; memories live in PostgreSQL and
Qdrant) and ``server.replicas = N``, which makes it share its state through the database
(memories/server_parts.py). This process watches them: a replica that exits is started again
after :data:`RESTART_DELAY_SECONDS`; SIGTERM or Ctrl-C stops them all (SIGTERM, then SIGKILL
after :data:`STOP_GRACE_SECONDS`). Put a load balancer in front for one address (docs/team.md);
the replicas themselves need none to agree.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from ..config import Settings
from ..memories.server_parts import require_shareable
from .common import err

RESTART_DELAY_SECONDS = 1.0
STOP_GRACE_SECONDS = 15.0
POLL_SECONDS = 0.2


def replica_command(settings: Settings, index: int, config: Path | None) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "claude_code_memory.cli",
        "serve",
        "--host",
        settings.server.host,
        "--port",
        str(settings.server.port + index),
        "--data-dir",
        str(settings.data_path / f"replica-{index}"),
    ]
    return command + (["--config", str(config)] if config is not None else [])


def run_replicas(settings: Settings, count: int, config: Path | None) -> None:
    """Start ``count`` replicas and keep them running until this process is told to stop."""
    settings.server.replicas = count
    require_shareable(settings)  # the same refusal each replica would give, once, before any starts
    env = os.environ | {"CCMEM_SERVER__REPLICAS": str(count)}
    if settings.storage.database_url:
        env["DATABASE_URL"] = settings.storage.database_url
    if settings.storage.qdrant_url:
        env["QDRANT_URL"] = settings.storage.qdrant_url
    children: dict[int, subprocess.Popen[bytes]] = {}
    stopping = False

    def stop(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def start(index: int) -> None:
        children[index] = subprocess.Popen(replica_command(settings, index, config), env=env)
        err.print(
            f"replica {index} (pid {children[index].pid}) on "
            f"http://{settings.server.host}:{settings.server.port + index}",
            highlight=False,
        )

    for index in range(count):
        start(index)
    try:
        while not stopping:
            time.sleep(POLL_SECONDS)
            for index, child in list(children.items()):
                if child.poll() is not None and not stopping:
                    err.print(
                        f"replica {index} exited ({child.returncode}); starting it again", highlight=False
                    )
                    time.sleep(RESTART_DELAY_SECONDS)
                    start(index)
    finally:
        for child in children.values():
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for child in children.values():
            try:
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
