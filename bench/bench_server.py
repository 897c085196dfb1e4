"""Server benchmark: ingest rate and search latency through REST and MCP, with RSS. Prints JSON.

    .venv/bin/python bench/bench_server.py [--sizes 1000,10000] [--queries 200]
    .venv/bin/python bench/bench_server.py --sizes 10000,100000 --size-ingest batch --restart


Starts the real server (`ccmem serve`) on a free loopback port with a temporary data directory,
ingests synthetic memories through `POST /api/v1/memories` (one request per memory, as a client
would), then at each size measures end-to-end search latency (query embedding included) through
REST `POST /api/v1/memories/search` and through the MCP tool `search_memory` over Streamable
HTTP and SSE with the official SDK client. Every query is asked once in a run, so the server's
embedding cache answers none of them. ``--size-ingest batch`` fills the sizes through
``POST /api/v1/memories/batch`` (500 a request) to reach 100k in minutes rather than an hour.
``--restart`` then stops the server (SIGTERM) at the largest size and starts it again on the
same data: the time until ``/health`` answers, the first search after it, and the RSS after a
round of searches. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CCMEM = ROOT / ".venv" / "bin" / "ccmem"

SUBJECTS = [
    "I",
    "My sister",
    "Our team",
    "The backend service",
    "My manager",
    "The CI pipeline",
    "Alice",
    "Bob",
]
VERBS = [
    "prefers",
    "switched to",
    "keeps forgetting",
    "wants to learn",
    "deployed",
    "is debugging",
    "recommended",
]
OBJECTS = [
    "pytest fixtures",
    "PostgreSQL 16",
    "a hiking trip to Norway",
    "vegetarian lasagna",
    "the Rust borrow checker",
    "dark mode in every editor",
    "Kubernetes on bare metal",
    "a piano lesson on Thursdays",
    "TypeScript strict mode",
    "the quarterly budget review",
    "sourdough bread",
    "a flaky integration test",
    "Qdrant payload indexes",
    "the Berlin marathon",
    "Neovim with LSP",
    "an allergy to peanuts",
    "GraphQL subscriptions",
    "jazz records",
]
WHEN = ["yesterday", "last week", "every morning", "since March", "on weekends", "before the release", ""]
#: Searches before each measured round (not counted).
WARMUP = 5


def synthetic(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        words = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(WHEN)]
        words.append(f"(note {i})")
        lines.append(" ".join(w for w in words if w))
    return lines


def fresh_queries(seed: int = 11) -> Iterator[str]:
    """Search queries that are never asked twice in a run (7,056 of them), so the server's
    embedding cache answers none and every search pays for its query's embedding."""
    combos = [
        " ".join(w for w in (s, v, o, when) if w)
        for s in SUBJECTS
        for v in VERBS
        for o in OBJECTS
        for when in WHEN
    ]
    random.Random(seed).shuffle(combos)
    return iter(combos)


def take(queries: Iterator[str], n: int) -> list[str]:
    taken = list(itertools.islice(queries, n))
    if len(taken) < n:
        raise SystemExit("out of distinct queries: use fewer --queries or sizes")
    return taken


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000, 2),
        "n": len(ordered),
    }


class Server:
    def __init__(
        self, keep: Path | None = None, settings: dict[str, str] | None = None, code: Path | None = None
    ) -> None:
        """A server on a temporary directory, or on ``keep`` (created if missing, not removed).
        ``settings`` are config keys (``search.conversation_share``) and values for this server,
        passed as ``CCMEM_SECTION__KEY`` variables. ``code``: another checkout whose package
        this virtualenv's ``ccmem`` runs (``PYTHONPATH``; see bench_ab.py)."""
        self.keep = keep is not None
        self.data_dir = keep.resolve() if keep is not None else Path(tempfile.mkdtemp(prefix="ccmem-bench-"))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.admin = secrets.token_urlsafe(24)
        self.base = f"http://127.0.0.1:{self.port}"
        # Another checkout reads its own config.yaml: this one's may hold keys it does not know.
        config = (code or ROOT) / "config.yaml"
        self.env = {**os.environ, "CCMEM_ADMIN_TOKEN": self.admin, "CCMEM_CONFIG": str(config)}
        for key, value in (settings or {}).items():
            self.env["CCMEM_" + key.upper().replace(".", "__")] = value
        if code is not None:
            self.env["PYTHONPATH"] = str(code)
        self.log = open(self.data_dir / "server.log", "w")  # noqa: SIM115 - closed in stop()
        self.start()

    def start(self) -> float:
        """Start ``ccmem serve`` on the data dir; seconds until ``/health`` answered 200."""
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [str(CCMEM), "serve", "--port", str(self.port), "--data-dir", str(self.data_dir / "data")],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base}/health", timeout=1).status_code == 200:
                    return time.perf_counter() - started
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        raise SystemExit("server did not start; see " + str(self.data_dir / "server.log"))

    def restart(self) -> dict[str, float]:
        """Stop by SIGTERM (timed), start again on the same data (timed to healthy)."""
        started = time.perf_counter()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(120)
        stop_s = time.perf_counter() - started
        return {"stop_s": round(stop_s, 2), "start_to_healthy_s": round(self.start(), 2)}

    def token(self, user: str) -> str:
        out = subprocess.run(
            [str(CCMEM), "token", "create", "--user", user, "--data-dir", str(self.data_dir / "data")],
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        if not self.keep:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def ingest(server: Server, token: str, texts: list[str], workers: int) -> float:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.base, headers=headers, timeout=30) as client:

        def one(text: str) -> None:
            response = client.post("/api/v1/memories", json={"text": text, "app": "bench"})
            response.raise_for_status()

        started = time.perf_counter()
        if workers == 1:
            for text in texts:
                one(text)
        else:
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(one, texts))
        return len(texts) / (time.perf_counter() - started)


def ingest_batches(server: Server, token: str, texts: list[str], batch: int = 100) -> float:
    if not texts:
        return 0.0
    with httpx.Client(
        base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=120
    ) as client:
        started = time.perf_counter()
        for i in range(0, len(texts), batch):
            response = client.post(
                "/api/v1/memories/batch",
                json={"app": "bench", "items": [{"text": t} for t in texts[i : i + batch]]},
            )
            response.raise_for_status()
            assert response.json()["failed"] == 0
        return len(texts) / (time.perf_counter() - started)


def ingest_modes(server: Server, n: int) -> dict[str, float]:
    """The same kind of data ingested three ways, side by side, each into a fresh user."""
    texts = synthetic(3 * n, seed=99)
    return {
        "single_client_per_s": round(ingest(server, server.token("ingest-a"), texts[:n], 1), 1),
        "two_clients_per_s": round(ingest(server, server.token("ingest-b"), texts[n : 2 * n], 2), 1),
        "batch_100_per_s": round(ingest_batches(server, server.token("ingest-c"), texts[2 * n :]), 1),
    }


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


async def _mcp_search(url: str, token: str, queries: list[str], transport: str) -> dict[str, float]:
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workers", type=int, default=1, help="concurrent ingest clients for the size runs")
    parser.add_argument("--ingest-sample", type=int, default=600, help="memories per ingest mode")
    parser.add_argument(
        "--size-ingest",
        choices=["single", "batch"],
        default="single",
        help="fill the sizes one memory per request, or 500 per batch request",
    )
    parser.add_argument("--restart", action="store_true", help="measure a restart at the largest size")
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="keep the data here (not removed); a later run ingests only what is missing (use "
        "--ingest-sample 0 to skip the ingest modes)",
    )
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))

    server = Server(args.data_dir)
    try:
        token = server.token("bench")
        corpus = synthetic(sizes[-1])
        queries = fresh_queries()
        report: dict[str, object] = {
            "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
            "rss_mb_idle": round(rss_mb(server.process.pid), 1),
            "ingest_modes": ingest_modes(server, args.ingest_sample) if args.ingest_sample else None,
            "sizes": {},
        }
        print(json.dumps({"ingest_modes": report["ingest_modes"]}), file=sys.stderr)
        stored = httpx.get(
            f"{server.base}/api/v1/stats", headers={"Authorization": f"Bearer {token}"}, timeout=30
        ).json()["total_memories"]
        for size in sizes:
            if stored > size:
                continue
            if args.size_ingest == "batch":
                rate = ingest_batches(server, token, corpus[stored:size], batch=500)
            else:
                rate = ingest(server, token, corpus[stored:size], args.workers)
            stored = size
            n = WARMUP + args.queries
            entry = {
                "ingest_per_s": round(rate, 1),
                "rest_search": rest_search(server, token, take(queries, n)),
                "mcp_http_search": asyncio.run(
                    _mcp_search(f"{server.base}/mcp/bench/http/bench", token, take(queries, n), "http")
                ),
                "mcp_sse_search": asyncio.run(
                    _mcp_search(f"{server.base}/mcp/bench/sse/bench", token, take(queries, n), "sse")
                ),
                "rss_mb": round(rss_mb(server.process.pid), 1),
            }
            report["sizes"][str(size)] = entry  # type: ignore[index]
            print(json.dumps({"progress": size, **entry}), file=sys.stderr)
        if args.restart:
            restart = server.restart()
            with httpx.Client(
                base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=60
            ) as client:
                started = time.perf_counter()
                first = client.post("/api/v1/memories/search", json={"query": next(queries), "limit": 10})
                first.raise_for_status()
                restart["first_search_s"] = round(time.perf_counter() - started, 3)
            restart["rest_search_after"] = rest_search(server, token, take(queries, WARMUP + args.queries))  # type: ignore[assignment]
            restart["rss_mb"] = round(rss_mb(server.process.pid), 1)
            restart["size"] = sizes[-1]
            report["restart"] = restart
        print(json.dumps(report, indent=2))
    except BaseException:
        print((server.data_dir / "server.log").read_text()[-4000:], file=sys.stderr)
        raise
    finally:
        server.stop()


if __name__ == "__main__":
    main()
