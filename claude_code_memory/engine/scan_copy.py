"""The exact scan's copy of one embedded store's shard (engine/exact_scan.py), and its upkeep.

    copy = ScanCopy(dims, enabled, limit); copy.attach(store_lock, current_shard)
    copy.of(shard)                 the copy, or None while a thread reads it (Edge answers then)
    copy.write(shard, change)      a write the shard took, made in the copy too
    copy.carry(old, new)           the same points opened again as another shard object

Every call is made with the store's lock held (engine/edge_store.py). The reading takes the
lock a page of points at a time and sleeps between pages, so searches (which Edge answers until
the copy is read) and writes go on meanwhile; the writes the shard takes during the reading are
kept and made in the copy once it is read, before a search uses it, so the copy and the shard
stay the same. Each such write is idempotent (a point written whole, fields merged, a vector
replaced, a point removed): one the reading saw already does no harm made again. (Read under the
lock in one go, the first search after a start waited for all of it: 0.8-1.3 s at 10k memories.)
The copy is of one shard object: for another one (a
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
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from qdrant_edge import EdgeShard, ScrollRequest

from .exact_scan import ExactScan, Unfit

logger = logging.getLogger(__name__)

#: The most points the copy holds when no index size is set (``index_from`` 0).
EXACT_SCAN_MAX = 20_000
#: Points read from the shard a page at a time.
_PAGE = 200
#: Seconds the reading sleeps after each page. Each page holds the interpreter while Edge hands
#: its points over as Python objects and NumPy converts them; the searches that come meanwhile
#: need it too, many times each (docs/performance.md, "The first searches after a start").
PAUSE = 0.004


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
        #: While a reading is under way, the writes the shard took since it began (lock held).
        self._pending: list[Callable[[ExactScan], None]] | None = None

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

    def _begin(self, shard: EdgeShard) -> bool:
        """Start reading the copy of ``shard`` (lock held); False when it gets none (indexed, or
        too large): Edge answers its searches."""
        self._shard, self.scan, self._pending = shard, None, None
        info = shard.info()
        if info.indexed_vectors_count or info.points_count >= self.limit():
            return False
        self._pending = []
        return True

    def _finish(self, scan: ExactScan | None) -> None:
        """Make the writes the shard took while it was read in the copy, then let searches use
        it (lock held). ``scan`` None: a payload the copy cannot match, so none for this shard."""
        pending, self._pending = self._pending or [], None
        if scan is None:
            return
        try:
            for change in pending:
                change(scan)
        except Unfit as reason:
            logger.info("vector store: exact scan off for this shard (%s)", reason)
            return
        if len(scan) < self.limit():
            self.scan = scan

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
        """Read the copy of the store's current shard, a page at a time (~1.5 s at 17k points)."""
        assert self._lock is not None and self._current is not None
        try:
            with self._lock:
                shard = self._current()
                if shard is None or self._shard is shard or not self._begin(shard):
                    return
            points: list[tuple[str, Any, Mapping[str, Any]]] = []
            offset: Any = None
            while True:
                with self._lock:
                    if not self._reading(shard):  # another shard now: a search reads that one
                        if self._shard is shard:
                            self._pending = None
                        return
                    page, offset = shard.scroll(
                        ScrollRequest(offset=offset, limit=_PAGE, with_payload=True, with_vector=True)
                    )
                points.extend(_page_points(page))
                time.sleep(PAUSE)
                if offset is None:
                    break
            scan = ExactScan.of(points, self.dims)
            with self._lock:
                if self._reading(shard):
                    self._finish(scan)
        except Exception:  # noqa: BLE001 - the copy only speeds searches up: Edge answers without it
            logger.warning("vector store: could not read the exact scan's copy", exc_info=True)
            with self._lock:
                self._pending = None

    def _reading(self, shard: EdgeShard) -> bool:
        """Whether ``shard`` is still the one being read and the store's (lock held)."""
        assert self._current is not None
        return self._pending is not None and self._shard is shard and self._current() is shard

    def write(self, shard: EdgeShard, change: Callable[[ExactScan], None]) -> None:
        """Make a write the shard took in the copy too; a copy it cannot keep exact is dropped.
        While the copy is read, the write is kept and made once it is."""
        if self._shard is not shard:
            return
        if self.scan is None:
            if self._pending is not None:
                self._pending.append(change)
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


def _page_points(page: list[Any]) -> list[tuple[str, Any, Mapping[str, Any]]]:
    """A scrolled page's points, their vectors as float32 rows when they convert (a page at a
    time, between the reading's pauses; :meth:`ExactScan.of` tells a vector it cannot read)."""
    points = [_point(point) for point in page]
    try:
        rows = np.asarray([vector for _, vector, _ in points], dtype=np.float32)
    except (TypeError, ValueError):
        return points
    if rows.ndim != 2:
        return points
    return [(point_id, rows[n], payload) for n, (point_id, _, payload) in enumerate(points)]


def _point(point: Any) -> tuple[str, Any, Mapping[str, Any]]:
    vector: Any = point.vector
    if isinstance(vector, dict):  # named vectors: the store keeps one, unnamed
        vector = next(iter(vector.values()), None)
    return str(point.id), vector, point.payload or {}
