"""The exact scan's copy of one embedded store's shard (engine/exact_scan.py), and its upkeep.

    copy = ScanCopy(dims, enabled, limit)
    copy.of(shard)                 the copy, read from the shard the first time it is asked for
    copy.write(shard, change)      a write the shard took, made in the copy too
    copy.carry(old, new)           the same points opened again as another shard object

Every call is made with the store's lock held (engine/edge_store.py), so the copy and the shard
change together. The copy is of one shard object: another one (a compaction, an index swap)
is read again when first asked; a reload, which opens the same points again, carries it over.
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

    def of(self, shard: EdgeShard) -> ExactScan | None:
        """The copy of this shard; None when off, the shard is indexed or too large, or a
        payload cannot be read as Edge does."""
        if not self.enabled:
            return None
        if self._shard is shard:
            return self.scan
        self._shard, self.scan = shard, None
        info = shard.info()
        if info.indexed_vectors_count or info.points_count >= self.limit():
            return None
        self.scan = ExactScan.of(_points(shard), self.dims)
        return self.scan

    def read_ahead(self, lock: AbstractContextManager[Any], shard: Callable[[], EdgeShard | None]) -> None:
        """Read the copy in a background thread as soon as ``lock`` is free: beside the rest of a
        start-up (the model's loading), not in the first search (~0.6 s at 10k points)."""
        if not self.enabled:
            return

        def read() -> None:
            try:
                with lock:
                    current = shard()
                    if current is not None:
                        self.of(current)
            except Exception:  # noqa: BLE001 - only ahead of time: the first search reads it, or asks Edge
                logger.warning("vector store: could not read the exact scan's copy ahead", exc_info=True)

        threading.Thread(target=read, name="exact-scan", daemon=True).start()

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
