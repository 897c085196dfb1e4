"""The dense half of a search alone and in turn: does the model keep the scan out of the cache?

    .venv/bin/python -m bench.perf.dense_half --data-dir DIR [--rounds 300]

``DIR`` is a data directory kept by ``bench/perf/server.py --data-dir`` (copied, never changed). The
server's parts run in this process on the copy (hygiene schedule off, one BLAS thread as
``ccmem serve`` sets). The two steps of a search's dense half, each in a loop of its own and
then one after the other as a search runs them: the query's embedding (fresh queries: the
embedding cache answers none) and the exact scan of the store's vectors for the 20 nearest of
the bench user's active memories. If each runs slower in turn than alone, the two do not fit
in the processor's cache together and each reads its data from memory again: the model's
weights (int8) and the scan's matrix (float32, ``points`` x 384). With ``--idle-ms 2,10``, each
step also runs alone with the process idle that long before each call (a search comes after a
pause, not in a loop): how much of a step's time in a search is the pause before it, not the
other step. Prints JSON: p50/p95 in ms of
each step per mode, the sizes of both, the load average. Not a test: numbers depend on the
machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as `ccmem serve` (docs/performance.md)
from bench.harness.paths import ROOT
from bench.harness.stats import load, percentiles
from bench.harness.synthetic import fresh_queries

USER = "bench"
FILTERS = {"user_id": USER, "state": "active"}


def timed(step: Callable[..., Any], *arguments: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = step(*arguments)
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument(
        "--idle-ms",
        default="",
        help="comma-separated pauses (ms) before each call of a step alone, e.g. 2,10 (none by default)",
    )
    args = parser.parse_args()
    pauses = [float(ms) / 1000 for ms in args.idle_ms.split(",") if ms.strip()]
    from claude_code_memory.config import load_settings
    from claude_code_memory.engine.onnx_model import default_model_path
    from claude_code_memory.memories.server_parts import ServerParts

    report: dict[str, Any] = {"load_before": load(), "rounds": args.rounds}
    work = Path(tempfile.mkdtemp(prefix="ccmem-dense-half-"))
    try:
        shutil.copytree(args.data_dir / "data", work / "data")
        settings = load_settings(
            config_path=ROOT / "config.yaml",
            environ={},
            overrides={"server.data_dir": str(work / "data"), "hygiene.schedule_hours": 0},
        )
        parts = ServerParts(settings)
        try:
            engine = parts.service.pipeline.vectors.engine
            embedder, store = engine.embedder, engine.store
            queries = fresh_queries()
            vector = embedder.embed(next(queries), "search")
            store.prepare_search()
            store.scan_copy.settle()
            report["points"] = int(engine.count())
            report["scan_matrix_mb"] = round(report["points"] * 384 * 4 / 2**20, 1)
            report["model_mb"] = round(default_model_path().stat().st_size / 2**20, 1)
            vectors = [embedder.embed(next(queries), "search") for _ in range(50)]
            for warm in vectors[:20]:
                store.nearest(warm, 20, FILTERS)
            modes: dict[str, dict[str, list[float]]] = {}
            plan = [(mode, 0.0) for mode in ("embed alone", "scan alone", "in turn")]
            for pause in pauses:
                plan += [
                    (f"{step} alone, {pause * 1000:g} ms idle before each", pause)
                    for step in ("embed", "scan")
                ]
            plan += [("embed alone again", 0.0), ("scan alone again", 0.0)]
            for mode, pause in plan:
                embeds: list[float] = []
                scans: list[float] = []
                for round_ in range(args.rounds):
                    if pause:
                        time.sleep(pause)
                    if "scan" not in mode:
                        vector, seconds = timed(embedder.embed, next(queries), "search")
                        embeds.append(seconds)
                    else:
                        vector = vectors[round_ % len(vectors)]
                    if "embed" not in mode:
                        _, seconds = timed(store.nearest, vector, 20, FILTERS)
                        scans.append(seconds)
                modes[mode] = {"embed": embeds, "scan": scans}
            report["modes"] = {
                mode: {step: percentiles(samples) for step, samples in steps.items() if samples}
                for mode, steps in modes.items()
            }
        finally:
            parts.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["load_after"] = load()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
