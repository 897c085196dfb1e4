"""Free disk space under the data directory: writes are refused (HTTP 507) before the disk fills.

Qdrant Edge maps its files into memory. When a write to a mapped page finds no free block, the
kernel sends the process SIGBUS: the server dies without an error or a log line, and a restart
on the same disk dies the same way. Two things need room:

* every write: the write-ahead log, the payload and vector pages, SQLite. A reserve sized to the
  largest request covers it (:func:`write_reserve`; ``performance.min_free_disk_mb`` sets it);
* loading the shard (at start-up, and when the store reloads itself): Edge reads its vector
  chunks, payload indexes, id trackers and deleted-point flags into memory. It creates those
  files sparse, and on tmpfs a read of a file's hole through a shared mapping allocates the
  page. The holes are what the next load claims. Two kinds of sparse file are not read at load
  and are left out: the write-ahead log (``wal/``) and the payload storage
  (``segments/*/payload_storage/``), filled only as writes reach them. (On ext4 or xfs such
  reads allocate nothing, so counting the holes is conservative there.) The measurement that
  found which files fill is in ``docs/disk-space.md``.

Whether a read of a hole claims a block depends on the filesystem: tmpfs does, ext4 and xfs do
not. :func:`reading_holes_claims_blocks` tries it once per directory (a sparse file of a few
pages, read through a shared mapping), and the holes count only where it does.

The reserve, unless ``performance.min_free_disk_mb`` sets it, scales with the largest request
(:func:`write_reserve`): a write request carries at most ``server.max_body_bytes`` of text and
metadata, which land in at most :data:`WRITE_COPIES` places (the SQL row, its full-text index,
mem0's history, the vector store's log and its payload), plus SQLite's write-ahead log, which
grows to its checkpoint size before it is reused (:data:`SQLITE_WAL_BYTES`).

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

#: Places one write's bytes can land (see the module's docstring).
WRITE_COPIES = 5
#: SQLite's log at its automatic checkpoint (1,000 pages of 4 KiB), and a page of slack.
SQLITE_WAL_BYTES = 4 * MIB + 64 * 1024
#: Pages of the probe file :func:`reading_holes_claims_blocks` reads.
_PROBE_PAGES = 16


def write_reserve(max_body_bytes: int, min_free_disk_mb: int | None = None) -> int:
    """Bytes kept free for the next write: ``min_free_disk_mb`` when set, else what the largest
    request can add to the disk."""
    if min_free_disk_mb is not None:
        return min_free_disk_mb * MIB
    return WRITE_COPIES * max_body_bytes + SQLITE_WAL_BYTES


_probed: dict[str, bool] = {}


def reading_holes_claims_blocks(directory: str | Path) -> bool:
    """Whether reading a sparse file's hole through a shared mapping allocates disk blocks on
    the filesystem of ``directory`` (tmpfs: yes; ext4, xfs: no). Tried once per directory;
    when it cannot be tried, yes (the safe answer)."""
    key = str(directory)
    if key not in _probed:
        _probed[key] = _probe(Path(directory))
    return _probed[key]


def _probe(directory: Path) -> bool:
    import mmap

    page = mmap.PAGESIZE
    probe = directory / f".hole-probe-{os.getpid()}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with probe.open("w+b") as handle:
            handle.truncate(_PROBE_PAGES * page)
            with mmap.mmap(handle.fileno(), _PROBE_PAGES * page, mmap.MAP_SHARED, mmap.PROT_READ) as mapped:
                for offset in range(0, _PROBE_PAGES * page, page):
                    mapped[offset]  # noqa: B018 - the read is the experiment
            return os.fstat(handle.fileno()).st_blocks > 0
    except OSError:
        return True
    finally:
        probe.unlink(missing_ok=True)


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
    parent = Path(shard_path).parent
    holes = unclaimed_bytes(shard_path) if reading_holes_claims_blocks(parent) else 0
    free, _ = free_bytes(parent, statvfs)
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
        basis: str = "performance.min_free_disk_mb",
    ) -> None:
        #: Where the reserve comes from, for /health.
        self.basis = basis
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
            f"{_mb(room.needed)} MB ({self.basis} = {_mb(room.reserve)}{claimed}); "
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
            # What needed_mb is made of, to a tenth of a MB (docs/disk-space.md).
            "reserve": {
                "write_mb": round(room.reserve / MIB, 1),
                "next_load_mb": round(room.claimed / MIB, 1),
                "basis": self.basis,
            },
        }


def _mb(value: int) -> int:
    return value // MIB


def engine_guard(engine: Any) -> DiskGuard:
    """The guard for an :class:`~claude_code_memory.engine.factory.Engine`: its data directory,
    its reserve, and the holes of its embedded store (none for a Qdrant server)."""
    settings = engine.settings

    def claimed() -> int:
        shard_path = getattr(engine.store, "shard_path", None) if engine.embedded else None
        if shard_path is None or not reading_holes_claims_blocks(Path(shard_path).parent):
            return 0
        return unclaimed_bytes(shard_path)

    configured = settings.performance.min_free_disk_mb
    return DiskGuard(
        settings.data_path,
        write_reserve(settings.server.max_body_bytes, configured),
        claimed=claimed,
        on_refuse=engine.flush,
        basis="performance.min_free_disk_mb"
        if configured is not None
        else f"{WRITE_COPIES} x server.max_body_bytes + SQLite's log",
    )
