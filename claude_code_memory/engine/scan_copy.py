"""The exact scan's copy of one embedded store's shard (engine/exact_scan.py), and its upkeep.

    copy = ScanCopy(dims, enabled, limit); copy.attach(store_lock, current_shard)
    copy.of(shard)                 the copy, or None while a thread reads it (Edge answers then)
    copy.write(shard, change)      a write the shard took, made in the copy too
    copy.carry(old, new)           the same points opened again as another shard object

Every call is made with the store's lock held (engine/edge_store.py), and so is the reading,
so the copy and the shard change together. The copy is of one shard object: for another one (a
compaction, an index swap) it is read again once a search asks, in a thread, while Edge answers;
a reload, which opens the same points again, carries it over. Nothing reads it during start-up
(a start-up that read it took 0.5-1 s longer at 10k): the server starts the reading once its
start-up reconciliation is done (``prepare_search``), else the first search does.
It is dropped, and the store asks Edge, when a payload cannot be matched as Edge would, or once
the shard holds ``limit()`` points (the index builder's size: from there Edge's HNSW index
answers faster than any scan).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

from qdrant_edge import EdgeShard, ScrollRequest

from .exact_scan import ExactScan, Unfit

logger = logging.getLogger(__name__)

#: The most points the copy holds when no index size is set (``index_from`` 0).
EXACT_SCAN_MAX = 20_000
#: Points read from the shard a page at a time.
_PAGE = 1000


class ScanCopy:
    def __init__(self, dims: int, enabled: bool, limit: Callable[[], int]) -> None:
        self.dims = dims
        self.enabled = enabled
        self.limit = limit
        self.scan: ExactScan | None = None
        #: The shard the copy is of (or was found unfit for).
        self._shard: EdgeShard | None = None
        self._lock: AbstractContextManager[Any] | None = None
        self._current: Callable[[], EdgeShard | None] | None = None
        self._reader: threading.Thread | None = None
        self._guard = threading.Lock()

    def of(self, shard: EdgeShard) -> ExactScan | None:
        """The copy of this shard when it has been read; None when off, not read yet (a thread
        reads it meanwhile), the shard is indexed or too large, or a payload cannot be read as
        Edge does. A search never waits for the reading: Edge answers until it is done."""
        if not self.enabled:
            return None
        if self._shard is shard:
            return self.scan
        self._start_reading()
        return None

    def _read(self, shard: EdgeShard) -> None:
        """Read the copy of ``shard`` (lock held): ~0.6 s at 12k points."""
        self._shard, self.scan = shard, None
        info = shard.info()
        if info.indexed_vectors_count or info.points_count >= self.limit():
            return
        self.scan = ExactScan.of(_points(shard), self.dims)

    def settle(self, timeout: float = 60) -> None:
        """Wait for a reading under way (tests and benchmarks)."""
        reader = self._reader
        if reader is not None:
            reader.join(timeout)

    def attach(self, lock: AbstractContextManager[Any], shard: Callable[[], EdgeShard | None]) -> None:
        """The store's lock and its current shard, for the thread that reads the copy."""
        self._lock, self._current = lock, shard

    def _start_reading(self) -> None:
        with self._guard:
            if self._lock is None or (self._reader is not None and self._reader.is_alive()):
                return
            self._reader = threading.Thread(target=self._read_current, name="exact-scan", daemon=True)
            self._reader.start()

    def _read_current(self) -> None:
        assert self._lock is not None and self._current is not None
        try:
            with self._lock:
                current = self._current()
                if current is not None and self._shard is not current:
                    self._read(current)
        except Exception:  # noqa: BLE001 - the copy only speeds searches up: Edge answers without it
            logger.warning("vector store: could not read the exact scan's copy", exc_info=True)

    def write(self, shard: EdgeShard, change: Callable[[ExactScan], None]) -> None:
        """Make a write the shard took in the copy too; a copy it cannot keep exact is dropped."""
        if self.scan is None or self._shard is not shard:
            return
        try:
            change(self.scan)
        except Unfit as reason:
            logger.info("vector store: exact scan off for this shard (%s)", reason)
            self.scan = None
            return
        if len(self.scan) >= self.limit():
            self.scan = None  # the index builder takes over from here

    def carry(self, old: EdgeShard, new: EdgeShard | None) -> None:
        """The points of ``old`` opened again as ``new``: the copy stays as it is."""
        if new is not None and self._shard is old and self.scan is not None:
            self._shard = new


def _points(shard: EdgeShard) -> Iterator[tuple[str, Any, Mapping[str, Any]]]:
    offset: Any = None
    while True:
        points, offset = shard.scroll(
            ScrollRequest(offset=offset, limit=_PAGE, with_payload=True, with_vector=True)
        )
        for point in points:
            vector: Any = point.vector
            if isinstance(vector, dict):  # named vectors: the store keeps one, unnamed
                vector = next(iter(vector.values()), None)
            yield str(point.id), vector, point.payload or {}
        if offset is None:
            return
