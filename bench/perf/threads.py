"""How searches scale with threads in one process: searches a second and CPU per search. JSON.

    .venv/bin/python -m bench.perf.threads --data-dir DIR [--threads 1,2,4] [--searches 240]
        [--gil-profile FILE --gil-threads 2]

``DIR`` is a data directory kept by ``bench/perf/server.py --data-dir`` (copied, never changed). The
search pipeline (``Search.search``, what REST, MCP and the hooks call) runs in this
process, without HTTP, on the copy (hygiene schedule off), from 1, 2, 4 ... threads at once,
each query asked once (the embedding cache answers none). For each thread count: searches a
second, this process's CPU per search (every thread: the keyword thread, the embedder, the
access-log writer) and the cores it kept busy. On a machine with more cores than one, a search
that held the interpreter lock only briefly would scale with threads; what it does not gain is
the lock's (or another serialising step's) doing.

``--gil-profile FILE`` then runs ``--gil-threads`` threads for ``--gil-seconds`` under py-spy in
``--gil`` mode (only the thread holding the interpreter lock is sampled) and reports the
package's frames by their share of those samples: what holds the lock. Not a test: numbers
depend on the machine and its load (recorded).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.harness.paths import ROOT
from bench.harness.stats import load
from bench.harness.synthetic import fresh_queries

USER = "bench"


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


class Searcher:
    """The server's parts on a copy of a data directory, and a shared supply of fresh queries."""

    def __init__(self, source: Path, work: Path, settings: dict[str, str] | None = None) -> None:
        from claude_code_memory.config import load_settings
        from claude_code_memory.memories.server_parts import ServerParts

        shutil.copytree(source, work / "copy")
        settings = load_settings(
            config_path=ROOT / "config.yaml",
            environ={},
            overrides={
                "server.data_dir": str(work / "copy" / "data"),
                "hygiene.schedule_hours": 0,
                **(settings or {}),
            },
        )
        self.parts = ServerParts(settings)
        self._queries: Iterator[str] = fresh_queries()
        self._lock = threading.Lock()

    def search(self, count: int) -> None:
        from claude_code_memory.search.request import SearchRequest

        for _ in range(count):
            with self._lock:
                query = next(self._queries)
            asked = SearchRequest(user_id=USER, app_name="bench", query=query, limit=10)
            self.parts.service.pipeline.search(asked)

    def run(self, threads: int, searches: int) -> dict[str, float]:
        each = max(1, searches // threads)
        workers = [threading.Thread(target=self.search, args=(each,)) for _ in range(threads)]
        cpu, started = cpu_seconds(), time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        elapsed, cpu = time.perf_counter() - started, cpu_seconds() - cpu
        done = each * threads
        return {
            "searches_per_s": round(done / elapsed, 1),
            "cpu_ms_per_search": round(1000 * cpu / done, 1),
            "cores_busy": round(cpu / elapsed, 2),
        }

    def close(self) -> None:
        self.parts.close()


def gil_profile(searcher: Searcher, threads: int, seconds: float, out: Path) -> dict[str, Any]:
    """py-spy ``--gil`` on this process while ``threads`` threads search: the share of the
    lock-holding samples under each of the package's frames (inclusive), and of all samples."""
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        raise SystemExit("--gil-profile needs py-spy in this virtualenv (requirements-dev.txt)")
    stop = threading.Event()

    def keep_searching() -> None:
        while not stop.is_set():
            searcher.search(1)

    workers = [threading.Thread(target=keep_searching) for _ in range(threads)]
    for worker in workers:
        worker.start()
    rate = 200
    command = [str(spy), "record", "--pid", str(os.getpid()), "--gil", "--duration", str(int(seconds))]
    command += ["--rate", str(rate), "--format", "raw", "--nonblocking", "--output", str(out)]
    try:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        stop.set()
        for worker in workers:
            worker.join()
    shares: collections.Counter[str] = collections.Counter()
    total = 0
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        total += int(count)
        seen = set()
        for frame in stack.split(";"):
            if "claude_code_memory" in frame:
                where = frame.split("claude_code_memory/")[-1].split(":")[0]
                name = f"{frame.split(' (')[0]} ({where})"
                if name not in seen:
                    seen.add(name)
                    shares[name] += int(count)
    return {
        "threads": threads,
        "seconds": seconds,
        "lock_held_share_of_time": round(total / (rate * int(seconds)), 2),
        "share_of_lock_held_samples": {
            name: round(count / total, 3) for name, count in shares.most_common(25) if total
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="kept by bench.perf.server --data-dir")
    parser.add_argument("--threads", default="1,2,4")
    parser.add_argument("--searches", type=int, default=240, help="per thread count, split among the threads")
    parser.add_argument("--gil-profile", type=Path, help="py-spy --gil raw stacks here")
    parser.add_argument("--gil-threads", type=int, default=2)
    parser.add_argument("--gil-seconds", type=float, default=15)
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a config key (repeatable)"
    )
    parser.add_argument("--out", type=Path, help="write the JSON here too")
    args = parser.parse_args()
    if any("=" not in item for item in args.set):
        parser.error("--set KEY=VALUE")
    settings = dict(item.split("=", 1) for item in args.set)
    counts = [int(n) for n in args.threads.split(",")]
    if not (args.data_dir / "data").is_dir() or min(counts) < 1 or args.searches < 1:
        parser.error("--data-dir must hold data/ (bench.perf.server --data-dir); threads and searches >= 1")
    report: dict[str, Any] = {"machine": {"cpus": os.cpu_count()}, "settings": settings}
    report["load_before"] = load()
    with tempfile.TemporaryDirectory(prefix="ccmem-threads-") as work:
        searcher = Searcher(args.data_dir, Path(work), settings)
        try:
            searcher.search(20)  # warm: the model, the caches of SQLite and the shard
            report["threads"] = {str(n): searcher.run(n, args.searches) for n in counts}
            if args.gil_profile:
                report["gil"] = gil_profile(searcher, args.gil_threads, args.gil_seconds, args.gil_profile)
        finally:
            searcher.close()
    report["load_after"] = load()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
