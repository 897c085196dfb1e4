"""The vector index (HNSW) built in another process on a copy of the shard, and swapped in.

    IndexBuilder(store).maybe_start()      after a load: start a build when one is due
    IndexBuilder(store).build()            the whole build, in the calling thread (tests, bench)
    python -m claude_code_memory.engine.index_build COPY [--threads N]    the other process

Edge searches a shard without an index by scanning every vector, and its ``optimize()``, which
builds the HNSW graph (a search then costs a small fraction of the scan), holds the interpreter
for the whole build, tens of seconds at 100k points: no request of the server would move
meanwhile (docs/search.md, "Latency"; bench/results/index_build_100k.json). So the server
copies the shard's directory (after a flush; writes wait while it copies), a child process at
low priority loads the copy and optimizes it, and the server notes which points are written
meanwhile. Then, with writes waiting again, it loads the indexed copy, rewrites the noted points
into it from the live shard (or deletes them), flushes and closes it, and swaps the
directories (:func:`.shard_copy.swap_in`): two renames, only once the copy is complete.

Crash safety (a ``kill -9`` at any moment): before the renames the live shard is untouched and
the next open drops the half-made copy; between them the old shard is put back; after them the
copy, complete, is the shard (:func:`.shard_copy.finish_interrupted_swap`). Either way every
write acknowledged before the crash is in the shard that opens: those before the copy in both,
those during the build in the live shard and, once they were rewritten, in the copy too.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from qdrant_edge import EdgeConfig, EdgeShard, Point, UpdateOperation

from . import shard_copy

logger = logging.getLogger(__name__)

#: Fewer points than this are scanned: an exact scan that size is still a small part of a search
#: (docs/search.md, "Measurements behind the code's choices").
INDEX_FROM = 20_000
#: A build is due when the points outside the index reach this share of the shard.
UNINDEXED_SHARE = 0.2
#: Seconds after a load before a due build starts, so that it does not slow a start-up.
START_DELAY = 30.0
#: Rewrite the points written during a build this many at a time.
_PAGE = 500
#: Test hook: ``CCMEM_INDEX_BUILD_PAUSE=STEP:SECONDS`` makes the builder wait after that step
#: (copied, indexed, caught-up), so a test can kill the process there. Never set in production.
_PAUSE_ENV = "CCMEM_INDEX_BUILD_PAUSE"


class IndexedStore(Protocol):
    """What the builder needs of the store whose shard it indexes (``edge_store.QdrantEdgeStore``,
    which owns a builder): declared here so that this module does not import the store."""

    collection_name: str
    #: The ids written while a build runs (None when none runs): caught up before the swap.
    written_since_copy: set[str] | None

    @property
    def embedding_model_dims(self) -> int: ...

    @property
    def shard_path(self) -> Path: ...

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def is_open(self) -> bool: ...

    def require_shard(self) -> EdgeShard: ...

    def detach_shard(self) -> EdgeShard: ...

    def shard_config(self, dims: int) -> EdgeConfig: ...

    def create_col(self, name: str | None, vector_size: int | None) -> None: ...


class IndexBuilder:
    """Builds the index of one store's shard in another process, one build at a time."""

    def __init__(self, store: IndexedStore, *, threads: int = 1, index_from: int | None = None) -> None:
        self.store = store
        self.threads = threads
        self.index_from = INDEX_FROM if index_from is None else index_from
        self.running = False
        self.builds = 0
        self.last: dict[str, Any] | None = None
        self._child: subprocess.Popen[str] | None = None
        #: Moves on when the shard is replaced under a build (reset, erase): that build is void.
        self._generation = 0
        self._guard = threading.Lock()

    def due(self, points: int, indexed: int) -> bool:
        """Whether a build is due (never with ``index_from`` 0)."""
        return 0 < self.index_from <= points and points - indexed >= UNINDEXED_SHARE * points

    def maybe_start(self, points: int, indexed: int) -> bool:
        """Start a build in a background thread when one is due and none runs."""
        if not self.due(points, indexed):
            return False
        with self._guard:
            if self.running:
                return False
            self.running = True
            generation = self._generation
        threading.Thread(target=self._run, args=(generation,), name="index-build", daemon=True).start()
        return True

    def _run(self, generation: int) -> None:
        try:
            deadline = time.monotonic() + START_DELAY
            while time.monotonic() < deadline and generation == self._generation:
                time.sleep(0.5)
            if generation != self._generation:  # the store closed or was replaced meanwhile
                with self._guard:
                    self.running = False
                return
            if not _room_for_copy(self.store.shard_path):
                logger.warning("vector index not built: no room for a copy of %s", self.store.shard_path)
                with self._guard:
                    self.running = False
                return
            self.build(claimed=True)
        except Exception:
            if generation == self._generation:
                logger.exception("vector index build failed; searches scan every vector until the next try")

    def build(self, *, claimed: bool = False) -> dict[str, Any]:
        """Copy, index in another process, catch up and swap; returns what it measured."""
        if not claimed:
            with self._guard:
                if self.running:
                    raise RuntimeError("an index build is already running")
                self.running = True
        store = self.store
        copy_path, _ = shard_copy.beside(store.shard_path, "index")
        started = time.perf_counter()
        report: dict[str, Any] = {}
        generation = self._generation
        try:
            with store.lock:  # writes wait while the directory is copied
                shard = store.require_shard()
                shard.flush()
                shutil.rmtree(copy_path, ignore_errors=True)
                shutil.copytree(store.shard_path, copy_path)
                store.written_since_copy = set()
            report["copy_s"] = round(time.perf_counter() - started, 3)
            _pause("copied")
            built = time.perf_counter()
            report["child"] = self._index_in_child(copy_path)
            report["child_s"] = round(time.perf_counter() - built, 3)
            _pause("indexed")
            swapped = time.perf_counter()
            with store.lock:
                if generation != self._generation or store.written_since_copy is None:
                    raise RuntimeError("the shard was replaced during the index build")
                touched = store.written_since_copy
                copy = EdgeShard.load(str(copy_path), store.shard_config(store.embedding_model_dims))
                try:
                    report["caught_up"] = _catch_up(store.require_shard(), copy, touched)
                    copy.flush()
                finally:
                    copy.close()
                _pause("caught-up")
                live = store.detach_shard()
                try:
                    live.flush()
                finally:
                    live.close()
                shard_copy.swap_in(store.shard_path, "index")
                store.written_since_copy = None
                store.create_col(store.collection_name, store.embedding_model_dims)
            report["swap_s"] = round(time.perf_counter() - swapped, 3)
            report["total_s"] = round(time.perf_counter() - started, 3)
            self.builds += 1
            self.last = report
            logger.info("vector index built and swapped in: %s", report)
            return report
        except BaseException:
            with store.lock:
                store.written_since_copy = None
                if not store.is_open and not store.shard_path.exists():
                    shard_copy.finish_interrupted_swap(store.shard_path)
            shutil.rmtree(copy_path, ignore_errors=True)
            raise
        finally:
            self._child = None
            with self._guard:
                self.running = False

    def _index_in_child(self, copy_path: Path) -> dict[str, Any]:
        command = [
            sys.executable,
            "-m",
            __name__,
            str(copy_path),
            "--dims",
            str(self.store.embedding_model_dims),
            "--threads",
            str(self.threads),
        ]
        self._child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_lower_priority
        )
        out, err = self._child.communicate()
        if self._child.returncode != 0:
            raise RuntimeError(f"index build exited {self._child.returncode}: {err.strip()[-500:]}")
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return result

    def cancel(self) -> None:
        """Void a running build (the shard is being replaced or closed): its child process is
        stopped by its pid, and its copy is never swapped in."""
        with self._guard:
            self._generation += 1
            child = self._child
        _kill(child)

    #: The store closes: a running build stops, the live shard untouched.
    close = cancel


def _kill(child: subprocess.Popen[str] | None) -> None:
    if child is not None and child.poll() is None:
        child.kill()
        child.wait()


def _room_for_copy(shard_path: Path) -> bool:
    """Whether the disk holds a second copy of the shard, with a quarter to spare."""
    size = sum(f.stat().st_size for f in shard_path.rglob("*") if f.is_file())
    return shutil.disk_usage(shard_path).free > size * 1.25 + (64 << 20)


def _lower_priority() -> None:
    os.nice(10)


def _pause(step: str) -> None:
    wanted, _, seconds = os.environ.get(_PAUSE_ENV, "").partition(":")
    if wanted == step and seconds:
        logger.warning("index build: %s; pausing %s s (%s)", step, seconds, _PAUSE_ENV)
        time.sleep(float(seconds))


def _catch_up(live: EdgeShard, copy: EdgeShard, touched: set[str]) -> int:
    """Rewrite into ``copy`` the points written to ``live`` since it was copied: the live
    point when there is one, else a delete."""
    ids = sorted(touched)
    for start in range(0, len(ids), _PAGE):
        page: list[int | uuid.UUID | str] = list(ids[start : start + _PAGE])
        records = {str(r.id): r for r in live.retrieve(page, True, True)}
        points = [
            Point(r.id, r.vector, dict(r.payload or {})) for r in records.values() if r.vector is not None
        ]
        if points:
            copy.update(UpdateOperation.upsert_points(points))
        gone: list[int | uuid.UUID | str] = [p for p in page if str(p) not in records]
        if gone:
            copy.update(UpdateOperation.delete_points(gone))
    return len(ids)


def index_shard(path: Path, dims: int, threads: int) -> dict[str, Any]:
    """Load the shard at ``path``, build its index (HNSW, ``threads`` threads) and close it."""
    from qdrant_edge import Distance, EdgeConfig, EdgeVectorParams, HnswIndexConfig

    config = EdgeConfig(
        vectors=EdgeVectorParams(size=dims, distance=Distance.Cosine),
        # Qdrant's defaults, on ``threads`` threads: the child runs beside the server.
        hnsw_config=HnswIndexConfig(
            m=16, ef_construct=100, full_scan_threshold=10_000, max_indexing_threads=threads
        ),
    )
    started = time.perf_counter()
    shard = EdgeShard.load(str(path), config)
    try:
        shard.optimize()
        shard.flush()
        info = shard.info()
        return {
            "points": info.points_count,
            "indexed_vectors": info.indexed_vectors_count,
            "segments": info.segments_count,
            "seconds": round(time.perf_counter() - started, 3),
        }
    finally:
        shard.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the HNSW index of a copy of an Edge shard.")
    parser.add_argument("path", type=Path)
    parser.add_argument("--dims", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(json.dumps(index_shard(args.path, args.dims, args.threads)))


if __name__ == "__main__":
    main()
