"""Ingest A/B: single-request and batch write rates of two checkouts, alternated in one run.

    .venv/bin/python -m bench.perf.ingest --a /work/main --b . [--rounds 3] [--n 200]

Starts one real server per checkout (``ccmem serve`` with that checkout on ``PYTHONPATH``,
as bench/perf/ab.py does), then alternates rounds: each round writes ``--n`` fresh memories one
request at a time and ``--n`` more through ``POST /api/v1/memories/batch`` (``--batch`` a
request) into each server, A then B then B then A, so both see the same moments of a shared
machine. Reports per checkout and mode the rate (memories a second, median of the rounds) and
the server's CPU seconds a memory (user + system, from /proc; less sensitive to the load than
a rate), with the load average before and after. Prints JSON. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path

from bench.harness.api import ingest, ingest_batches
from bench.harness.server import Server
from bench.harness.synthetic import synthetic

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def measure(server: Server, token: str, texts: list[str], mode: str, batch: int) -> tuple[float, float]:
    before = cpu_seconds(server.process.pid)
    rate = (
        ingest(server, token, texts, 1) if mode == "single" else ingest_batches(server, token, texts, batch)
    )
    return rate, (cpu_seconds(server.process.pid) - before) / len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="checkout A (e.g. /work/main)")
    parser.add_argument("--b", type=Path, required=True, help="checkout B")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=200, help="memories a mode a round")
    parser.add_argument("--batch", type=int, default=100, help="memories a batch request")
    args = parser.parse_args()
    servers = {"A": Server(code=args.a.resolve()), "B": Server(code=args.b.resolve())}
    texts = iter(synthetic(4 * args.rounds * args.n + 10, seed=123))
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {
        name: {"single": [], "batch": []} for name in servers
    }
    load_before = os.getloadavg()
    try:
        tokens = {name: server.token("ingest") for name, server in servers.items()}
        for name, server in servers.items():  # warm up: model loaded, caches filled
            ingest(server, tokens[name], [next(texts) for _ in range(5)], 1)
        for round_ in range(args.rounds):
            order = ["A", "B"] if round_ % 2 == 0 else ["B", "A"]
            for mode in ("single", "batch"):
                for name in order:
                    chunk = [next(texts) for _ in range(args.n)]
                    samples[name][mode].append(measure(servers[name], tokens[name], chunk, mode, args.batch))
    finally:
        for server in servers.values():
            server.stop()
    report = {
        "checkouts": {"A": str(args.a), "B": str(args.b)},
        "n": args.n,
        "rounds": args.rounds,
        "batch": args.batch,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "results": {
            name: {
                mode: {
                    "per_s_median": round(statistics.median(r for r, _ in runs), 1),
                    "per_s_rounds": [round(r, 1) for r, _ in runs],
                    "cpu_ms_per_memory": round(1000 * statistics.median(c for _, c in runs), 2),
                }
                for mode, runs in modes.items()
            }
            for name, modes in samples.items()
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
