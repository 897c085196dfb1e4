"""Where the tests' temporary files go: a tmpfs when the machine has one with room.

Every server a test starts makes a fresh data directory: SQLite commits, Qdrant Edge's payload
indexes and every point written end in an ``fsync``, and on these VMs' disks an ``fsync`` costs
milliseconds (docs/testing.md has the numbers). On ``/dev/shm`` it costs nothing, and the code
under test does the same work. ``--basetemp``, ``TMPDIR`` or ``PYTEST_DEBUG_TEMPROOT`` chosen by
whoever runs the tests win; ``CCMEM_TEST_ON_DISK=1`` keeps the system's temporary directory.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

SHARED_MEMORY = Path("/dev/shm")
#: Leave at least this much of the tmpfs free (Chromium and PostgreSQL use it too).
MIN_FREE_BYTES = 4 << 30


def choose(basetemp: str | None) -> Path | None:
    """Point ``TMPDIR`` (this process's ``tempfile`` and every child's) at a directory on the
    tmpfs and return it; None, changing nothing, when the caller chose or there is no room."""
    if basetemp or os.environ.get("CCMEM_TEST_ON_DISK") == "1":
        return None
    if os.environ.get("TMPDIR") or os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return None
    if not _tmpfs_with_room(SHARED_MEMORY):
        return None
    root = SHARED_MEMORY / "ccmem-tests"
    root.mkdir(exist_ok=True)
    # PostgreSQL runs as its own user in a directory made here (tests/support/postgres.py).
    root.chmod(0o1777)
    os.environ["TMPDIR"] = str(root)
    tempfile.tempdir = None  # read TMPDIR again
    return root


def _tmpfs_with_room(path: Path) -> bool:
    if not (path.is_dir() and os.access(path, os.W_OK | os.X_OK)):
        return False
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return False
    if not any(line.split()[1:3] == [str(path), "tmpfs"] for line in mounts if len(line.split()) > 2):
        return False
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize >= MIN_FREE_BYTES
