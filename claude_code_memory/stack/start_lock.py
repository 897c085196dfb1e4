"""One starter at a time: the lock ``ccmem stack up`` (and so ``ccmem up``) holds around "is a
supervisor running? else start one".

Without it, two starters that look at the same moment both see no supervisor and both start one
(two Claude Code hooks of one session, two sessions opened after a reboot, a hook and a person
typing ``ccmem up``): the second one's api fails on the taken port, or, worse, both run. With it,
the second starter waits until the first has spawned its supervisor and written its PID, then
sees it and does nothing. The lock is ``fcntl.flock`` on ``run/stack.lock`` under the state
directory: the kernel releases it when its holder exits, however it exits, so a starter killed
half-way leaves no stale lock behind (a PID file alone cannot tell "starting" from "died").
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import Unavailable

#: How long a second starter waits for the first (it holds the lock for the spawn only).
WAIT_SECONDS = 60.0
POLL_SECONDS = 0.05


@contextlib.contextmanager
def held(path: Path, wait: float = WAIT_SECONDS) -> Iterator[None]:
    """Hold the exclusive lock on ``path`` (made 0600 when missing) for the ``with`` block;
    :class:`Unavailable` when another holder keeps it longer than ``wait`` seconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Unavailable(
                        f"another `ccmem stack up` holds {path} for more than {wait:.0f} s; "
                        "try again when it is done"
                    ) from None
                time.sleep(POLL_SECONDS)
        yield
    finally:
        # Closing the descriptor releases the lock.
        os.close(descriptor)
