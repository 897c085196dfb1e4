"""A process that builds a store's vector index while writing to it, for tests/test_index_build.py
to kill -9 at a chosen step.

    python tests/support/index_build_victim.py DIR POINTS

Opens the store at DIR (POINTS points of 8 dimensions are written first), then starts the index
build in this thread while another thread keeps inserting one point at a time and printing
``acked <id>`` once each insert has returned. The build pauses after each of its steps
(``CCMEM_INDEX_BUILD_PAUSE``) and logs the step to stderr. Prints ``built`` at the end.
"""

from __future__ import annotations

import logging
import random
import sys
import threading
import time

from claude_code_memory.engine.edge_store import QdrantEdgeStore

DIMS = 8


def vector(rng: random.Random) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(DIMS)]


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
    path, points = sys.argv[1], int(sys.argv[2])
    rng = random.Random(5)
    store = QdrantEdgeStore("memories", path, DIMS)
    for start in range(0, points, 500):
        count = min(500, points - start)
        store.insert([vector(rng) for _ in range(count)], [{"user_id": "u"}] * count)
    print("ready", flush=True)

    def writer() -> None:
        while True:
            (point_id,) = store.insert([vector(rng)], [{"user_id": "u", "during": True}])
            print(f"acked {point_id}", flush=True)
            time.sleep(0.01)

    threading.Thread(target=writer, daemon=True).start()
    store.index.build()
    print("built", flush=True)
    time.sleep(60)  # a test kills this process before then


if __name__ == "__main__":
    main()
