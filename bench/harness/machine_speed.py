"""How fast this machine is right now, in the units a search spends its time in. JSON.

    .venv/bin/python -m bench.harness.machine_speed [--rounds 100]

The development machines are virtual and share their host: the same code, measured on the same
machine hours apart, moved by half (the same 7,056 sentences embedded for ``bench/harness/bulk_load.py`` took
9.6 s in one session and 14.5 s in another, nothing changed between). A benchmark's figures
are therefore read against the machine's speed at the time, and ``bench/perf/server.py`` and
``bench/perf/ab.py`` put this reference before and after their runs (``machine_speed``).

Three medians, each of the work a search does most, with nothing else running in the process:

* ``embed_ms``: one short text through the server's own embedder (``engine.embedder``, cache
  off, one thread, as ``ccmem serve`` runs it), each of ``--rounds`` distinct texts once;
* ``scan_ms``: one query against a 10,000 x 384 float32 matrix (the exact scan's product, on
  one BLAS thread as ``ccmem serve`` sets);
* ``python_ms``: a fixed piece of interpreter work (dicts, sorting and string joins over 2,000
  items, as the ranking does).

Lower is faster. Not a test: the figures are the machine's. :func:`measure` runs this in a
process of its own, so the benchmark's process neither loads the model nor shares its cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from bench.harness.paths import ROOT

#: The scan's matrix: rows and dimensions (a 10k store, all-MiniLM-L6-v2's 384).
SCAN_ROWS, DIMS = 10_000, 384


def _median_ms(step: Callable[[int], object], rounds: int) -> float:
    samples = []
    for round_ in range(rounds):
        started = time.perf_counter()
        step(round_)
        samples.append(time.perf_counter() - started)
    return round(statistics.median(samples) * 1000, 3)


def _python_work(seed: int) -> str:
    scores = {f"memory-{index}": ((index * 7919 + seed) % 1000) / 1000 for index in range(2000)}
    ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    return "|".join(name for name, _ in ranked[:200])


def reference(rounds: int = 100) -> dict[str, float | int]:
    """The three medians (module docstring), in this process. Sets one BLAS thread unless the
    environment says otherwise, so call it before NumPy is imported."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import numpy as np

    from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder

    embedder = OnnxMiniLmEmbedder(cache_size=0, threads=1)
    embedder.embed("warm the session up")
    embed_ms = _median_ms(lambda n: embedder.embed(f"Alice deployed PostgreSQL {n} last week"), rounds)
    generator = np.random.default_rng(7)
    matrix = generator.standard_normal((SCAN_ROWS, DIMS), dtype=np.float32)
    query = generator.standard_normal(DIMS, dtype=np.float32)
    scan_ms = _median_ms(lambda _: matrix @ query, rounds)
    python_ms = _median_ms(_python_work, rounds)
    return {"embed_ms": embed_ms, "scan_ms": scan_ms, "python_ms": python_ms, "rounds": rounds}


def measure(rounds: int = 100) -> dict[str, float | int | list[float]]:
    """:func:`reference` in a process of its own, with the load average as it started."""
    load = [round(value, 2) for value in os.getloadavg()]
    done = subprocess.run(
        [sys.executable, "-m", "bench.harness.machine_speed", "--rounds", str(rounds)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return {**json.loads(done.stdout), "load": load}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=100, help="samples of each median")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    print(json.dumps(reference(args.rounds)))


if __name__ == "__main__":
    main()
