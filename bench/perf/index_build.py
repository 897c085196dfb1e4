"""The vector index built out of process, at the store: search before, during and after. JSON.

    .venv/bin/python -m bench.perf.index_build [--points 100000] [--searches 200]

Fills an Edge shard (``QdrantEdgeStore``, in this process, a temporary directory) with
``--points`` unit vectors of 384 dimensions (random, drawn here: no embedding is computed, so
this measures the vector half only), loads it again, and measures a filtered top-20 search
(``nearest``, as the server's dense half) by exact scan. Then it runs
:meth:`IndexBuilder.build` (engine/index_build.py: copy, HNSW in a child process, catch-up,
swap) while one thread keeps searching and another keeps writing one point at a time, and
reports the searches' latency during the build (the point of building out of process: the
server's threads keep moving), the build's steps, and the search after the swap, with the
share of the exact top 10 that the indexed search finds. Not a test: numbers depend on the
machine and on its load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import threading
import time

import numpy as np

from claude_code_memory.engine import index_build
from claude_code_memory.engine.edge_store import QdrantEdgeStore

DIMS = 384
FILTERS = {"user_id": "bench", "state": "active"}


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIMS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def timed(store: QdrantEdgeStore, queries: np.ndarray) -> tuple[dict[str, float], list[list[str]]]:
    samples, results = [], []
    for query in queries:
        started = time.perf_counter()
        hits = store.nearest(query.tolist(), 20, FILTERS)
        samples.append(time.perf_counter() - started)
        results.append([point_id for point_id, _ in hits])
    return stats(samples), results


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
        "n": len(ordered),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--searches", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    directory = tempfile.mkdtemp(prefix="ccmem-bench-index-")
    index_build.INDEX_FROM = 10**12  # this run builds by hand, not when the store loads
    report: dict[str, object] = {
        "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "points": args.points,
    }
    try:
        store = QdrantEdgeStore("memories", directory, DIMS)
        started = time.perf_counter()
        for start in range(0, args.points, 2000):
            count = min(2000, args.points - start)
            store.insert(unit(rng, count).tolist(), [FILTERS] * count)
        report["fill_s"] = round(time.perf_counter() - started, 1)
        store.close()
        store = QdrantEdgeStore("memories", directory, DIMS)
        queries = unit(rng, args.searches)
        report["exact"], exact = timed(store, queries)

        during: list[float] = []
        writes = 0
        stop = threading.Event()

        def searcher() -> None:
            query_rng = np.random.default_rng(3)
            while not stop.is_set():
                query = unit(query_rng, 1)[0].tolist()
                began = time.perf_counter()
                store.nearest(query, 20, FILTERS)
                during.append(time.perf_counter() - began)
                time.sleep(0.02)

        def writer() -> None:
            nonlocal writes
            write_rng = np.random.default_rng(4)
            while not stop.is_set():
                store.insert(unit(write_rng, 1).tolist(), [FILTERS])
                writes += 1
                time.sleep(0.05)

        threads = [threading.Thread(target=searcher), threading.Thread(target=writer)]
        for thread in threads:
            thread.start()
        try:
            report["build"] = store.index.build()
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        report["search_during_build"] = stats(during)
        report["writes_during_build"] = writes
        report["indexed"], indexed = timed(store, queries)
        overlap = [len(set(a[:10]) & set(b[:10])) / 10 for a, b in zip(exact, indexed, strict=True)]
        report["indexed_top10_overlap_with_exact"] = round(statistics.mean(overlap), 4)
        info = store.col_info()
        report["after"] = {
            key: info[key] for key in ("points_count", "segments_count", "indexed_vectors_count")
        }
        store.close()
        started = time.perf_counter()
        store = QdrantEdgeStore("memories", directory, DIMS)
        report["load_indexed_s"] = round(time.perf_counter() - started, 2)
        store.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
