"""Free disk space under the data directory: writes are refused (HTTP 507) before the disk fills.

Qdrant Edge maps its files into memory. When a write to a mapped page finds no free block, the
kernel sends the process SIGBUS: the server dies without an error or a log line, and a restart
on the same disk dies the same way. Two things need room:

* every write: the write-ahead log, the payload and vector pages, SQLite. A request needs little,
  so a fixed reserve (``performance.min_free_disk_mb``) covers it, and the replay of the log after
  a crash;
* loading the shard (at start-up, and when the store reloads itself): Edge reads its vector
  chunks, payload indexes, id trackers and deleted-point flags into memory. It creates those
  files sparse, and on tmpfs a read of a file's hole through a shared mapping allocates the
  page. The holes are what the next load claims. Two kinds of sparse file are not read at load
  and are left out: the write-ahead log (``wal/``) and the payload storage
  (``segments/*/payload_storage/``), filled only as writes reach them. (On ext4 or xfs such
  reads allocate nothing, so counting the holes is conservative there.) The measurement that
  found which files fill is in ``docs/disk-space.md``.

So a write needs ``reserve + holes`` free. :func:`decide` is that rule; :class:`DiskGuard` reads
the figures (one ``statvfs`` and a stat of each file of the shard's segments) and raises
:class:`~claude_code_memory.errors.InsufficientStorage` when the rule says no.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InsufficientStorage

logger = logging.getLogger(__name__)

MIB = 1024 * 1024
#: Room a load needs beyond the holes it fills: the replay of a clean shutdown's short log.
LOAD_MARGIN = 1 * MIB
#: Directories of a segment whose sparse files a load does not read (filled only by writes).
UNREAD_AT_LOAD = frozenset({"payload_storage"})

#: The holes of the vector store (a stat of every segment file, hundreds after an HNSW build,
#: on every write request: docs/search.md, "At 10k, 100k and 1M memories") are counted again
#: after this many seconds, or at once when the disk has less than :data:`CLAIMED_MARGIN` to
#: spare beyond what a write needs: no second of writes claims that much, so a figure a second
#: old is safe there.
CLAIMED_TTL = 1.0
CLAIMED_MARGIN = 256 * MIB

Statvfs = Callable[[str], Any]


@dataclass(frozen=True, slots=True)
class Room:
    """The disk under the data directory, and what a write needs of it (bytes)."""

    free: int
    total: int
    reserve: int
    claimed: int

    @property
    def needed(self) -> int:
        return self.reserve + self.claimed

    @property
    def writable(self) -> bool:
        return decide(self.free, self.reserve, self.claimed)


def decide(free: int, reserve: int, claimed: int) -> bool:
    """May a write go ahead with ``free`` bytes left, a ``reserve`` to keep and ``claimed`` bytes
    the vector store takes when it next loads? A reserve of 0 turns the check off."""
    return reserve <= 0 or free >= reserve + claimed


def free_bytes(path: str | Path, statvfs: Statvfs = os.statvfs) -> tuple[int, int]:
    """``(free, total)`` bytes of the filesystem holding ``path``, as an unprivileged user sees it."""
    stat = statvfs(str(path))
    return stat.f_bavail * stat.f_frsize, stat.f_blocks * stat.f_frsize


def unclaimed_bytes(shard_path: str | Path) -> int:
    """Bytes of the shard's segment files not yet backed by disk blocks: what loading it claims."""
    total = 0
    for directory, subdirectories, files in os.walk(Path(shard_path) / "segments"):
        subdirectories[:] = [name for name in subdirectories if name not in UNREAD_AT_LOAD]
        for name in files:
            try:
                stat = os.stat(os.path.join(directory, name))
            except FileNotFoundError:  # the store replaced the file meanwhile
                continue
            total += max(0, stat.st_size - stat.st_blocks * 512)
    return total


def room_to_load(shard_path: str | Path, statvfs: Statvfs = os.statvfs) -> tuple[bool, str]:
    """Whether loading the shard at ``shard_path`` fits on its disk, and why not."""
    holes = unclaimed_bytes(shard_path)
    free, _ = free_bytes(Path(shard_path).parent, statvfs)
    if free >= holes + LOAD_MARGIN:
        return True, ""
    return False, (
        f"the vector store is not loaded: its disk has {_mb(free)} MB free and loading it needs "
        f"{_mb(holes + LOAD_MARGIN)} MB; free some space under the data directory (it loads then)"
    )


class DiskGuard:
    """Refuses writes when the disk under the data directory runs low (see the module's docstring).

    ``claimed`` tells how many bytes the vector store takes when it next loads; ``on_refuse`` runs
    once each time writes start being refused (the engine flushes, so a restart on this disk has
    no log to replay).
    """

    def __init__(
        self,
        data_path: str | Path,
        reserve_bytes: int,
        claimed: Callable[[], int] = lambda: 0,
        on_refuse: Callable[[], None] | None = None,
        statvfs: Statvfs = os.statvfs,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.data_path = Path(data_path)
        self.reserve_bytes = reserve_bytes
        self._claimed = claimed
        self._on_refuse = on_refuse
        self._statvfs = statvfs
        self._clock = clock
        self._refusing = False
        #: The last count of the holes, and when it was taken (see :data:`CLAIMED_TTL`).
        self._kept: tuple[float, int] | None = None

    def room(self) -> Room:
        free, total = free_bytes(self.data_path, self._statvfs)
        claimed = self._claimed_now(free) if self.reserve_bytes > 0 else 0
        return Room(free=free, total=total, reserve=self.reserve_bytes, claimed=claimed)

    def _claimed_now(self, free: int) -> int:
        now, kept = self._clock(), self._kept
        fresh = kept is not None and now - kept[0] < CLAIMED_TTL
        if kept is not None and fresh and free >= self.reserve_bytes + kept[1] + CLAIMED_MARGIN:
            return kept[1]
        claimed = self._claimed()
        self._kept = (now, claimed)
        return claimed

    def require_room(self) -> None:
        """Raise :class:`InsufficientStorage` unless a write fits; call before each write request."""
        room = self.room()
        if room.writable:
            if self._refusing:
                logger.info("disk: %d MB free again, writes accepted", _mb(room.free))
            self._refusing = False
            return
        if not self._refusing:
            self._refusing = True
            logger.warning("disk: %s", self._refusal(room))
            if self._on_refuse is not None:
                self._on_refuse()
        raise InsufficientStorage(self._refusal(room))

    def _refusal(self, room: Room) -> str:
        claimed = ""
        if room.claimed:
            claimed = f", plus {_mb(room.claimed)} MB the vector store claims when it next loads"
        return (
            f"not enough disk space: {_mb(room.free)} MB free under the data directory, writes need "
            f"{_mb(room.needed)} MB (performance.min_free_disk_mb = {_mb(room.reserve)}{claimed}); "
            "writes are refused until space is freed, reads still work"
        )

    def status(self) -> dict[str, Any]:
        """What ``/health`` reports under ``disk``."""
        room = self.room()
        return {
            "free_mb": _mb(room.free),
            "total_mb": _mb(room.total),
            "min_free_mb": _mb(room.reserve),
            "needed_mb": _mb(room.needed),
            "writes_refused": not room.writable,
        }


def _mb(value: int) -> int:
    return value // MIB


def engine_guard(engine: Any) -> DiskGuard:
    """The guard for an :class:`~claude_code_memory.engine.factory.Engine`: its data directory,
    its reserve, and the holes of its embedded store (none for a Qdrant server)."""
    settings = engine.settings

    def claimed() -> int:
        shard_path = getattr(engine.store, "shard_path", None) if engine.embedded else None
        return unclaimed_bytes(shard_path) if shard_path is not None else 0

    return DiskGuard(
        settings.data_path,
        settings.performance.min_free_disk_mb * MIB,
        claimed=claimed,
        on_refuse=engine.flush,
    )
