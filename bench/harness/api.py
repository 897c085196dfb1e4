"""What a bench sends a running server: memories one a request or in batches, and searches timed
through REST and through MCP (Streamable HTTP or SSE, the official SDK client)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench.harness.server import Server
from bench.harness.stats import WARMUP, percentiles
from bench.harness.synthetic import Item


def _body(item: Item) -> dict[str, object]:
    return {"text": item} if isinstance(item, str) else item


def ingest(server: Server, token: str, texts: Sequence[Item], workers: int) -> float:
    """One memory per request (texts, or request bodies without ``app``); memories a second."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.base, headers=headers, timeout=30) as client:

        def one(item: Item) -> None:
            response = client.post("/api/v1/memories", json={**_body(item), "app": "bench"})
            response.raise_for_status()

        started = time.perf_counter()
        if workers == 1:
            for text in texts:
                one(text)
        else:
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(one, texts))
        return len(texts) / (time.perf_counter() - started)


def ingest_batches(server: Server, token: str, texts: Sequence[Item], batch: int = 100) -> float:
    """``batch`` memories a request (texts, or batch items); memories a second."""
    if not texts:
        return 0.0
    with httpx.Client(
        base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=300
    ) as client:
        started = time.perf_counter()
        for i in range(0, len(texts), batch):
            response = client.post(
                "/api/v1/memories/batch",
                json={"app": "bench", "items": [_body(t) for t in texts[i : i + batch]]},
            )
            response.raise_for_status()
            assert response.json()["failed"] == 0
        return len(texts) / (time.perf_counter() - started)


def rest_search(server: Server, token: str, queries: list[str]) -> dict[str, float]:
    samples = []
    with httpx.Client(
        base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=30
    ) as client:
        for q in queries[:WARMUP]:
            client.post("/api/v1/memories/search", json={"query": q, "limit": 10})
        for q in queries[WARMUP:]:
            started = time.perf_counter()
            response = client.post("/api/v1/memories/search", json={"query": q, "limit": 10})
            samples.append(time.perf_counter() - started)
            response.raise_for_status()
            assert response.json()["results"], "search returned nothing"
    return percentiles(samples)


async def mcp_search(url: str, token: str, queries: list[str], transport: str) -> dict[str, float]:
    from mcp import ClientSession

    headers = {"Authorization": f"Bearer {token}"}
    if transport == "sse":
        from mcp.client.sse import sse_client

        context = sse_client(url, headers=headers)
    else:
        from mcp.client.streamable_http import streamable_http_client

        context = streamable_http_client(url, http_client=httpx.AsyncClient(headers=headers, timeout=30))
    samples = []
    async with context as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        for q in queries[:WARMUP]:
            await session.call_tool("search_memory", {"query": q})
        for q in queries[WARMUP:]:
            started = time.perf_counter()
            result = await session.call_tool("search_memory", {"query": q, "limit": 10})
            samples.append(time.perf_counter() - started)
            if getattr(result, "is_error", False) or getattr(result, "isError", False):
                raise SystemExit(f"search_memory failed: {result.content}")
    return percentiles(samples)
