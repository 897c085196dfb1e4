"""MCP dialects benchmark: what each tool set costs in context, and stateless vs session requests. JSON.

    .venv/bin/python -m bench.perf.mcp_dialects [--size 10000] [--queries 200] [--out FILE]

Starts the real server (``bench.harness.server.Server``: ``ccmem serve`` on a free loopback port, a
temporary data directory) and measures:

* ``tools_list``: for the default list (what every endpoint listed before dialects: "before")
  and each ``?tools=`` dialect ("after"), the bytes of ``tools/list``'s ``tools`` array as the
  server sends it (compact JSON), and an estimate of the tokens a model pays for it: bytes / 4,
  or tiktoken's ``cl100k_base`` count when tiktoken is installed (neither is Claude's own
  tokenizer; the ratio between dialects is what to read).
* ``tools_list_per_request``: the transport's own cost, ``tools/list`` one POST at a time
  (no handshake, no search) as 2025-11-25 and as 2026-07-28 requests.
* ``search``: with ``--size`` memories of one user (``bench/harness/bulk_load.py``, as ``bench/perf/server.py
  --bulk-load`` fills them), the latency of the ``search_memory`` tool (claude-code dialect)
  per request, p50/p95, three ways: the 2026-07-28 stateless request (one POST with its
  ``Mcp-Method``/``Mcp-Name`` headers and ``_meta``, no handshake, no session), a 2025-11-25
  client after its ``initialize`` (the official SDK's client over Streamable HTTP), and an SSE
  session (the SDK's client). Every query is asked once, so the embedding cache answers none.

Not a test: numbers depend on the machine and its load (recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

from bench.harness.server import Server
from bench.harness.stats import load, percentiles
from bench.harness.synthetic import fresh_queries, take
from claude_code_memory.mcp import dialects

ACCEPT = {"Accept": "application/json, text/event-stream"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
WARMUP = 5


def tokens(text: str) -> tuple[int, str]:
    try:
        import tiktoken  # type: ignore[import-not-found]
    except ImportError:
        return round(len(text.encode()) / 4), "bytes/4"
    return len(tiktoken.get_encoding("cl100k_base").encode(text)), "tiktoken cl100k_base"


def tools_list(base: str, user: str, token: str, dialect: str | None) -> dict[str, Any]:
    url = f"{base}/mcp/bench/http/{user}" + (f"?tools={dialect}" if dialect else "")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Authorization": f"Bearer {token}", "Mcp-Protocol-Version": "2025-11-25"} | ACCEPT
    response = httpx.post(url, json=body, headers=headers, timeout=60)
    response.raise_for_status()
    listed = response.json()["result"]["tools"]
    wire = json.dumps(listed, separators=(",", ":"), ensure_ascii=False)
    count, method = tokens(wire)
    return {"tools": len(listed), "bytes": len(wire.encode()), "tokens_est": count, "tokenizer": method}


def listing(base: str, user: str, token: str, revision: str, count: int) -> dict[str, float]:
    """``tools/list`` of claude-code, one POST each, no handshake: the transport's own cost per
    request for each era (no search, no embedding). 2025 requests go to the stateless legacy
    path (our server needs no ``initialize`` first); 2026 ones carry the per-request envelope."""
    url = f"{base}/mcp/bench/http/{user}?tools=claude-code"
    headers = {"Authorization": f"Bearer {token}", "Mcp-Protocol-Version": revision} | ACCEPT
    params: dict[str, Any] = {}
    if revision == "2026-07-28":
        headers["Mcp-Method"] = "tools/list"
        params = {"_meta": META}
    samples = []
    with httpx.Client(headers=headers, timeout=60) as http:
        for number in range(count + WARMUP):
            started = time.perf_counter()
            response = http.post(
                url, json={"jsonrpc": "2.0", "id": number, "method": "tools/list", "params": params}
            )
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            if "result" not in response.json():
                raise SystemExit(f"tools/list failed: {response.text}")
            if number >= WARMUP:
                samples.append(elapsed)
    return percentiles(samples)


def stateless(base: str, user: str, token: str, queries: list[str]) -> dict[str, float]:
    url = f"{base}/mcp/bench/http/{user}?tools=claude-code"
    headers = {
        "Authorization": f"Bearer {token}",
        "Mcp-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "search_memory",
    } | ACCEPT
    samples = []
    with httpx.Client(headers=headers, timeout=60) as http:
        for number, query in enumerate(queries):
            body = {
                "jsonrpc": "2.0",
                "id": number,
                "method": "tools/call",
                "params": {"name": "search_memory", "arguments": {"query": query}, "_meta": META},
            }
            started = time.perf_counter()
            response = http.post(url, json=body)
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            if response.json()["result"].get("isError"):
                raise SystemExit(f"search failed: {response.text}")
            if number >= WARMUP:
                samples.append(elapsed)
    return percentiles(samples)


async def _session(base: str, user: str, token: str, queries: list[str], transport: str) -> dict[str, float]:
    import httpx2
    from mcp import Client
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    url = f"{base}/mcp/bench/{transport}/{user}?tools=claude-code"
    headers = {"Authorization": f"Bearer {token}"}
    samples = []

    async def ask(session: Client) -> None:
        for number, query in enumerate(queries):
            started = time.perf_counter()
            result = await session.call_tool("search_memory", {"query": query})
            elapsed = time.perf_counter() - started
            if result.is_error:
                raise SystemExit(f"search failed: {result.content}")
            if number >= WARMUP:
                samples.append(elapsed)

    if transport == "sse":
        async with Client(sse_client(url, headers=headers), mode="legacy") as session:
            await ask(session)
    else:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as session,
        ):
            await ask(session)
    return percentiles(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()

    server = Server()
    try:
        token = server.token("bench")
        report: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}}
        report["tools_list"] = {
            "before (default list)": tools_list(server.base, "bench", token, None),
            **{name: tools_list(server.base, "bench", token, name) for name in dialects.NAMES},
        }
        per_request: dict[str, Any] = {"load_before": load()}
        for revision in ("2025-11-25", "2026-07-28"):
            per_request[revision] = listing(server.base, "bench", token, revision, args.queries)
        report["tools_list_per_request"] = per_request
        if args.size:
            from bench.harness.bulk_load import bulk_load

            server.stop_only()
            report["fill"] = bulk_load(server.data_dir / "data", total=args.size, turns=0)
            server.start()
        queries = fresh_queries()
        count = args.queries + WARMUP
        report["search"] = {"size": args.size, "queries": args.queries, "load_before": load()}
        report["search"]["stateless_2026_07_28"] = stateless(
            server.base, "bench", token, take(queries, count)
        )
        report["search"]["session_2025_11_25_http"] = anyio.run(
            _session, server.base, "bench", token, take(queries, count), "http"
        )
        report["search"]["session_sse"] = anyio.run(
            _session, server.base, "bench", token, take(queries, count), "sse"
        )
        report["search"]["load_after"] = load()
    finally:
        server.stop()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
