"""Server benchmark: search latency through REST and MCP, RSS, restart and ingest, by size. JSON.

    .venv/bin/python -m bench.perf.server [--sizes 1000,10000] [--queries 200]
    .venv/bin/python -m bench.perf.server --sizes 10000,100000,1000000 --bulk-load --restart \
        --data-dir DIR

Starts the real server (`ccmem serve`) on a free loopback port with a temporary data directory
(or ``--data-dir``, kept), fills it with synthetic memories of one user up to each size, and at
each size measures end-to-end search latency (query embedding included) through REST
``POST /api/v1/memories/search`` and through the MCP tool ``search_memory`` over Streamable HTTP
and SSE with the official SDK client, the server's RSS, and (``--ingest-sample``) the ingest
rate into the store of that size: one memory per request from one client and from two, and
batches of 100. Every query is asked once in a run, so the server's embedding cache answers none
of them. The memories are turns of conversations (``--turns`` a conversation, each with its
``conversation_id`` and a ``captured_at`` 30 s after the one before), as the capture proxy
writes them, so every ranking step runs: both retrievers, the date windows (three in seven
queries name a time), the neighbours and the conversation share.

Filling: through the API, one memory per request (``--size-ingest single``) or 500 per batch
request (``batch``); or ``--bulk-load``: the server is stopped, ``bench/harness/bulk_load.py`` writes the
rows, keyword index, vectors and history the batch route would have written (precomputed
embeddings, see there) and the server is started again; once the store holds
``storage.vector_index_from`` points the run waits for the server's own out-of-process HNSW
build (its report, from the log, is ``index_build``) before measuring; with ``--renice-build``
the build's child runs at normal priority instead of ``nice 10`` (on a machine other jobs keep
busy, a niced build gets almost no CPU: say so next to its time). ``--restart`` then stops
the server at each size (SIGTERM) and starts it on the same data: seconds until ``/health``
answers and until the first search has answered, then searches and RSS again. Searches are
measured once the start-up reconciliation is done (``start_up_pass_s``: how long it ran beside
the first requests). At the end the
shard is opened offline and its counts (``indexed_vectors_count``) reported. The load average
is recorded around each size. Not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from bench.harness.api import ingest, ingest_batches, mcp_search, rest_search
from bench.harness.bulk_load import bulk_load
from bench.harness.index_build import build_due, index_builds, shard_counts, wait_for_index
from bench.harness.machine_speed import measure
from bench.harness.server import Server, rss_mb
from bench.harness.stats import WARMUP, load
from bench.harness.synthetic import fresh_queries, synthetic, take, turns


def ingest_modes(
    server: Server, n: int, label: str = "", per_conversation: int = 0, seed: int = 99
) -> dict[str, float]:
    """The same kind of data ingested three ways, side by side, each into a fresh user.
    ``seed`` draws the texts: a run again on a kept directory needs another, or every text
    is a duplicate of the last run's (answered without being stored)."""
    texts = synthetic(3 * n, seed=seed)
    items = turns(texts, 0, per_conversation)
    return {
        "single_client_per_s": round(ingest(server, server.token(f"ingest-a{label}"), items[:n], 1), 1),
        "two_clients_per_s": round(ingest(server, server.token(f"ingest-b{label}"), items[n : 2 * n], 2), 1),
        "batch_100_per_s": round(ingest_batches(server, server.token(f"ingest-c{label}"), items[2 * n :]), 1),
    }


def searches(server: Server, token: str, queries: Iterator[str], count: int, sse: bool) -> dict[str, object]:
    n = WARMUP + count
    entry: dict[str, object] = {
        "rest_search": rest_search(server, token, take(queries, n)),
        "mcp_http_search": asyncio.run(
            mcp_search(f"{server.base}/mcp/bench/http/bench", token, take(queries, n), "http")
        ),
    }
    if sse:
        entry["mcp_sse_search"] = asyncio.run(
            mcp_search(f"{server.base}/mcp/bench/sse/bench", token, take(queries, n), "sse")
        )
    entry["rss_mb"] = round(rss_mb(server.process.pid), 1)
    return entry


def restart(server: Server, token: str, queries: Iterator[str], count: int, sse: bool) -> dict[str, object]:
    """Stop and start on the same data: to healthy, to the first search answered, then searches."""
    report: dict[str, object] = dict(server.restart())
    with httpx.Client(
        base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=120
    ) as client:
        started = time.perf_counter()
        first = client.post("/api/v1/memories/search", json={"query": next(queries), "limit": 10})
        first.raise_for_status()
        first_s = time.perf_counter() - started
    report["first_search_s"] = round(first_s, 3)
    report["start_to_first_search_s"] = round(report["start_to_healthy_s"] + first_s, 2)  # type: ignore[operator]
    report["start_up_pass_s"] = server.start_up_pass()
    report.update(searches(server, token, queries, count, sse))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workers", type=int, default=1, help="concurrent ingest clients for the size runs")
    parser.add_argument(
        "--ingest-sample", type=int, default=600, help="memories per ingest mode, at each size"
    )
    parser.add_argument(
        "--ingest-seed",
        type=int,
        default=99,
        help="draws the ingested texts; change it to run again on a kept --data-dir",
    )
    parser.add_argument(
        "--size-ingest",
        choices=["single", "batch"],
        default="batch",
        help="fill the sizes through the API one memory per request, or 500 per batch request",
    )
    parser.add_argument(
        "--bulk-load",
        action="store_true",
        help="fill the sizes with bench/harness/bulk_load.py, the server stopped (precomputed embeddings)",
    )
    parser.add_argument("--turns", type=int, default=20, help="turns per conversation (0: text only)")
    parser.add_argument("--restart", action="store_true", help="measure a restart at each size")
    parser.add_argument(
        "--renice-build",
        action="store_true",
        help="run the server's index build at normal priority (a machine shared with other jobs)",
    )
    parser.add_argument("--no-sse", action="store_true", help="leave out MCP over SSE")
    parser.add_argument(
        "--build-timeout", type=float, default=4 * 3600, help="seconds to wait for an index build"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="keep the data here (not removed); a later run fills only what is missing",
    )
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    sse = not args.no_sse

    shard = args.data_dir / "data" / "vectors" / "memories" if args.data_dir else None
    due_at_start = shard is not None and shard.exists() and build_due(shard_counts(shard.parent.parent))
    server = Server(args.data_dir)
    data = server.data_dir / "data"
    try:
        token = server.token("bench")
        corpus = synthetic(sizes[-1])
        queries = fresh_queries()
        report: dict[str, object] = {
            "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
            # The machine's speed before and after (bench/harness/machine_speed.py): read the figures
            # against it, the same code moves by half between hours on a shared host.
            "machine_speed": {"before": measure()},
            "turns_per_conversation": args.turns,
            "fill": "bench/harness/bulk_load.py (precomputed embeddings)"
            if args.bulk_load
            else f"API ({args.size_ingest})",
            "rss_mb_idle": round(rss_mb(server.process.pid), 1),
            "sizes": {},
        }
        for size in sizes:
            stored = httpx.get(
                f"{server.base}/api/v1/stats", headers={"Authorization": f"Bearer {token}"}, timeout=60
            ).json()["total_memories"]
            if stored > size:
                continue
            entry: dict[str, object] = {"load_before": load()}
            builds = len(index_builds(server))
            due, due_at_start = due_at_start, False
            if args.bulk_load and size > stored:
                server.stop_only()
                entry["bulk_load"] = bulk_load(data, total=size, turns=args.turns)
                due = build_due(shard_counts(data))
                entry["start_to_healthy_s"] = round(server.start(), 2)
            elif size > stored:
                items = turns(corpus[stored:size], stored, args.turns)
                if args.size_ingest == "batch":
                    entry["ingest_per_s"] = round(ingest_batches(server, token, items, batch=500), 1)
                else:
                    entry["ingest_per_s"] = round(ingest(server, token, items, args.workers), 1)
            if due:
                entry["index_build"] = wait_for_index(server, builds, args.build_timeout, args.renice_build)
            entry["start_up_pass_s"] = server.start_up_pass()
            entry.update(searches(server, token, queries, args.queries, sse))
            if args.ingest_sample:
                entry["ingest_modes"] = ingest_modes(
                    server, args.ingest_sample, f"-{size}", args.turns, args.ingest_seed
                )
            if args.restart:
                entry["restart"] = restart(server, token, queries, args.queries, sse)
            entry["load_after"] = load()
            report["sizes"][str(size)] = entry  # type: ignore[index]
            print(json.dumps({"progress": size, **entry}), file=sys.stderr)
        report["index_builds"] = index_builds(server)
        server.stop_only()
        report["shard"] = shard_counts(data)
        report["machine_speed"]["after"] = measure()  # type: ignore[index]
        print(json.dumps(report, indent=2))
    except BaseException:
        print((server.data_dir / "server.log").read_text()[-4000:], file=sys.stderr)
        raise
    finally:
        server.stop()


if __name__ == "__main__":
    main()
