"""Where the tests' temporary files go: a tmpfs when the machine has one with room.

Every server a test starts makes a fresh data directory: SQLite commits, Qdrant Edge's payload
indexes and every point written end in an ``fsync``, and on these VMs' disks an ``fsync`` costs
milliseconds (docs/testing.md has the numbers). On ``/dev/shm`` it costs nothing, and the code
under test does the same work. ``--basetemp``, ``TMPDIR`` or ``PYTEST_DEBUG_TEMPROOT`` chosen by
whoever runs the tests win; ``CCMEM_TEST_ON_DISK=1`` keeps the system's temporary directory.

A test about what files take on a disk (the vector store's compaction) asks for
:func:`on_disk`: a tmpfs allocates a copied store's files differently.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SHARED_MEMORY = Path("/dev/shm")
#: The system's temporary directory, kept for :func:`on_disk` (xdist workers inherit it).
DISK_TMPDIR = "CCMEM_TEST_DISK_TMPDIR"
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
    try:
        root.mkdir(exist_ok=True)
        if root.stat().st_uid == os.geteuid():
            # PostgreSQL runs as its own user in a directory made here (tests/support/postgres.py).
            root.chmod(0o1777)
    except OSError:
        return None
    if not os.access(root, os.W_OK | os.X_OK):
        return None
    os.environ[DISK_TMPDIR] = tempfile.gettempdir()
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


@contextmanager
def on_disk(prefix: str) -> Iterator[Path]:
    """A new directory in the system's temporary directory (on its disk), removed afterwards."""
    where = Path(tempfile.mkdtemp(prefix=f"ccmem-test-{prefix}-", dir=os.environ.get(DISK_TMPDIR)))
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)
