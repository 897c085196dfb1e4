"""``retrieve_memory`` (the MemoryOS tool: three tiers) at 10k memories, through MCP over
Streamable HTTP with the official SDK client, beside ``search_memory`` and the short-term tier
alone (REST). Prints JSON.

    .venv/bin/python -m bench.perf.tiers [--size 10000] [--queries 200] [--turns-per-conversation 10]

A fresh server gets ``--size`` turns (``User: …`` / ``Assistant: …``) in conversations of
``--turns-per-conversation`` turns, a few minutes apart, through ``POST /api/v1/memories/batch``;
one turn in fifty states a preference, so the profile has facts. The first ``get_user_profile``
groups every turn into segments and promotes the hot ones (``first_profile_s``: a one-off, the
same work is incremental afterwards); then each query, never asked before (no embedding cache
hit), is timed end to end from the client. ``--keep DIR`` fills a data directory once and
reuses it (its ``memories`` must match ``--size``). Not a test: numbers depend on the machine (2 shared
cores here: noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from bench.harness.paths import ROOT
from bench.harness.server import Server
from bench.harness.stats import percentiles
from bench.harness.synthetic import fresh_queries, synthetic, take

PREFERENCES = ["I prefer tabs over spaces.", "I use Neovim as my editor.", "My shell is fish."]


def turns(size: int, per_conversation: int) -> list[dict[str, object]]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    said = synthetic(size, seed=5)
    items = []
    for i, text in enumerate(said):
        conversation, position = divmod(i, per_conversation)
        user = PREFERENCES[i // 50 % len(PREFERENCES)] + f" ({i})" if i % 50 == 0 else text
        items.append(
            {
                "text": f"User: {user}\n\nAssistant: Noted, {i}.",
                "conversation_id": f"bench-{conversation}",
                "captured_at": (start + timedelta(hours=conversation, minutes=3 * position)).isoformat(),
            }
        )
    return items


def ingest(server: Server, token: str, items: list[dict[str, object]], batch: int = 500) -> float:
    with httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=300) as c:
        started = time.perf_counter()
        for i in range(0, len(items), batch):
            response = c.post("/api/v1/memories/batch", json={"app": "bench", "items": items[i : i + batch]})
            response.raise_for_status()
            assert response.json()["failed"] == 0, response.text
        return time.perf_counter() - started


async def mcp_calls(url: str, token: str, queries: list[str]) -> dict[str, object]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=300)
    report: dict[str, object] = {}
    async with (
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as s,
    ):
        await s.initialize()
        started = time.perf_counter()
        profile = await s.call_tool("get_user_profile", {})
        report["first_profile_s"] = round(time.perf_counter() - started, 2)  # groups every turn: once
        if profile.is_error:
            raise SystemExit(f"get_user_profile failed: {profile.content}")
        first = await s.call_tool("retrieve_memory", {"query": queries[0]})
        if first.is_error:
            raise SystemExit(f"retrieve_memory failed: {first.content}")
        answer = json.loads(first.content[0].text)  # type: ignore[union-attr]
        report["first_answer"] = {
            "short_term_count": answer["short_term_count"],
            "pages": answer["total_pages_found"],
            "user_knowledge": answer["total_user_knowledge_found"],
        }
        half = len(queries) // 2
        for tool, asked in (("retrieve_memory", queries[1:half]), ("search_memory", queries[half:])):
            samples = []
            for query in asked:
                started = time.perf_counter()
                result = await s.call_tool(tool, {"query": query})
                samples.append(time.perf_counter() - started)
                if result.is_error:
                    raise SystemExit(f"{tool} failed: {result.content}")
            report[tool] = percentiles(samples)
    return report


def short_term(server: Server, token: str, n: int) -> dict[str, float]:
    samples = []
    with httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as c:
        for i in range(n):
            started = time.perf_counter()
            response = c.get("/api/v1/tiers/short-term", params={"conversation_id": f"bench-{i}"})
            samples.append(time.perf_counter() - started)
            assert response.json()["total"] > 0
    return percentiles(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--turns-per-conversation", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="a data directory kept between runs (filled once)")
    args = parser.parse_args()
    filled = args.keep is not None and (args.keep / "data" / "memory.db").exists()
    server = Server(keep=args.keep, code=ROOT)
    try:
        token = server.token("bench")
        ingest_s = 0.0 if filled else ingest(server, token, turns(args.size, args.turns_per_conversation))
        url = f"{server.base}/mcp/bench/http/bench"
        report = asyncio.run(mcp_calls(url, token, take(fresh_queries(), args.queries)))
        report = {
            "memories": args.size,
            "conversations": args.size // args.turns_per_conversation,
            "ingest_s": round(ingest_s, 1),
            **report,
            "short_term_rest": short_term(server, token, min(100, args.size // args.turns_per_conversation)),
            "segments": httpx.get(
                f"{server.base}/api/v1/tiers/segments",
                params={"limit": 1000},
                headers={"Authorization": f"Bearer {token}"},
                timeout=60,
            ).json()["total"],
        }
        print(json.dumps(report, indent=2))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
