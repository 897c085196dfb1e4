"""What MCP adds to a search over REST, and how much of it is the server's. Prints JSON.

    .venv/bin/python -m bench.perf.mcp_overhead --data-dir D [--queries 400]

``D`` is a data directory kept by ``bench/perf/server.py --data-dir`` (copied, never changed). The
server (``ccmem serve``, this checkout, hygiene schedule off) starts on the copy; one client
then asks each query twice, alternating which goes first: ``POST /api/v1/memories/search`` and
the ``search_memory`` tool as one JSON-RPC ``tools/call`` POST to the Streamable HTTP endpoint
(httpx, no SDK: what the server's MCP side costs over REST), both with ``limit`` 10. Then the
official SDK's client asks the same number of fresh queries through the same endpoint (what a
Python MCP client adds on this machine, whose two cores it shares with the server). p50/p95
of each. Every query is asked once per way, so the embedding cache answers none. Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.harness.api import mcp_search
from bench.harness.server import server_on_copy
from bench.harness.stats import load, percentiles
from bench.harness.synthetic import fresh_queries, take

PROTOCOL = "2025-06-18"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    report: dict[str, object] = {"load_before": load(), "queries": args.queries}
    with server_on_copy(args.data_dir, "ccmem-mcp-overhead-") as server:
        token = server.token("bench")
        queries = fresh_queries(seed=int(time.time()))
        url = f"{server.base}/mcp/bench/http/bench"
        auth = {"Authorization": f"Bearer {token}"}
        rpc_headers = {
            **auth,
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
        }
        with httpx.Client(base_url=server.base, headers=auth, timeout=30) as client:
            calls = iter(range(1, 10**9))

            def rest(query: str) -> None:
                response = client.post("/api/v1/memories/search", json={"query": query, "limit": 10})
                response.raise_for_status()
                assert response.json()["results"], "search returned nothing"

            def rpc(query: str) -> None:
                arguments = {"query": query, "limit": 10}
                body = {
                    "jsonrpc": "2.0",
                    "id": next(calls),
                    "method": "tools/call",
                    "params": {"name": "search_memory", "arguments": arguments},
                }
                response = client.post(url, json=body, headers=rpc_headers)
                response.raise_for_status()
                answer = response.json()
                assert "result" in answer and not answer["result"].get("isError"), answer

            ways: list[tuple[str, Callable[[str], None]]] = [("rest", rest), ("mcp_one_post", rpc)]
            for _, ask in ways:
                for query in take(queries, 10):
                    ask(query)
            samples: dict[str, list[float]] = {name: [] for name, _ in ways}
            for n, query in enumerate(take(queries, args.queries)):
                for name, ask in ways if n % 2 == 0 else ways[::-1]:
                    started = time.perf_counter()
                    ask(query)
                    samples[name].append(time.perf_counter() - started)
        report.update({name: percentiles(values) for name, values in samples.items()})
        # The SDK's client warms up on its first queries (bench.harness.stats.WARMUP) and times the rest.
        sdk_queries = take(queries, args.queries + 5)
        report["mcp_sdk_client"] = asyncio.run(mcp_search(url, token, sdk_queries, "http"))
        report["load_after"] = load()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
