"""Server benchmark: search latency through REST and MCP, RSS, restart and ingest, by size. JSON.

    .venv/bin/python bench/bench_server.py [--sizes 1000,10000] [--queries 200]
    .venv/bin/python bench/bench_server.py --sizes 10000,100000,1000000 --bulk-load --restart \
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
request (``batch``); or ``--bulk-load``: the server is stopped, ``bulk_load.py`` writes the
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
import ast
import asyncio
import contextlib
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
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_speed import measure  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CCMEM = ROOT / ".venv" / "bin" / "ccmem"
if not CCMEM.exists():  # a worktree without its own virtualenv: the running one's ccmem
    CCMEM = Path(sys.executable).parent / "ccmem"

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
#: Where the synthetic conversations start; each turn is 30 s after the one before.
FIRST_TURN = datetime(2024, 1, 1, tzinfo=UTC)


def synthetic(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        words = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(WHEN)]
        words.append(f"(note {i})")
        lines.append(" ".join(w for w in words if w))
    return lines


def provenance(index: int, per_conversation: int) -> dict[str, str]:
    """Where synthetic memory ``index`` was said: its conversation (``per_conversation`` turns
    each) and when (30 s after the turn before); nothing with ``per_conversation`` 0."""
    if not per_conversation:
        return {}
    return {
        "conversation_id": f"bench-{index // per_conversation}",
        "captured_at": (FIRST_TURN + timedelta(seconds=30 * index)).isoformat().replace("+00:00", "Z"),
    }


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

    def start_up_pass(self) -> float:
        """Wait for the start-up reconciliation (it runs beside the first requests after a start,
        and searches share the interpreter with it); its seconds, from ``/health``."""
        while True:
            report = httpx.get(f"{self.base}/health", timeout=30).json().get("reconciliation")
            if report is not None and report["state"] != "running":
                if report["state"] != "done":
                    raise SystemExit(f"the start-up reconciliation {report['state']}: {report.get('error')}")
                return round(float(report["seconds"]), 2)
            time.sleep(0.2)

    def stop_only(self) -> None:
        """Stop the server (SIGTERM) and keep its data and log, to start it again later."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(120)

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


Item = str | dict[str, object]


@contextlib.contextmanager
def server_on_copy(data_dir: Path, prefix: str) -> Iterator[Server]:
    """A server (hygiene schedule off) on a copy of a kept ``--data-dir`` (never changed);
    stopped and the copy removed afterwards."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    shutil.copytree(data_dir / "data", work / "data")
    server = Server(work, settings={"hygiene.schedule_hours": "0"})
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


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


def turns(texts: Sequence[str], first: int, per_conversation: int) -> list[Item]:
    """The texts as conversation turns (``provenance``), the first one being turn ``first``."""
    return [{"text": text, **provenance(first + i, per_conversation)} for i, text in enumerate(texts)]


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


def searches(server: Server, token: str, queries: Iterator[str], count: int, sse: bool) -> dict[str, object]:
    n = WARMUP + count
    entry: dict[str, object] = {
        "rest_search": rest_search(server, token, take(queries, n)),
        "mcp_http_search": asyncio.run(
            _mcp_search(f"{server.base}/mcp/bench/http/bench", token, take(queries, n), "http")
        ),
    }
    if sse:
        entry["mcp_sse_search"] = asyncio.run(
            _mcp_search(f"{server.base}/mcp/bench/sse/bench", token, take(queries, n), "sse")
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


def index_builds(server: Server) -> list[dict[str, object]]:
    """The reports of the server's HNSW builds (engine/index_build.py logs each one)."""
    marker = "vector index built and swapped in: "
    text = (server.data_dir / "server.log").read_text(errors="replace")
    return [
        ast.literal_eval(line.split(marker, 1)[1].strip()) for line in text.splitlines() if marker in line
    ]


def wait_for_index(server: Server, builds_before: int, timeout: float, renice: bool) -> dict[str, object]:
    """Wait until the server has swapped in one more HNSW index than ``builds_before``.
    ``renice``: run the build's child process at the server's priority rather than ``nice 10``
    (on a machine other jobs keep busy, a niced build gets almost no CPU)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        builds = index_builds(server)
        if len(builds) > builds_before:
            return {**builds[-1], "waited_s": round(time.perf_counter() - started, 1), "reniced": renice}
        if server.process.poll() is not None:
            raise SystemExit("the server stopped while waiting for its index build")
        if renice:
            for child in _children(server.process.pid, "index_build"):
                for task in Path(f"/proc/{child}/task").glob("*"):  # nice is per thread
                    with contextlib.suppress(OSError):
                        os.setpriority(os.PRIO_PROCESS, int(task.name), 0)
        time.sleep(2)
    raise SystemExit(f"no index build within {timeout:.0f} s; see {server.data_dir / 'server.log'}")


def _children(parent: int, marker: str) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == parent and marker.encode() in command:
            found.append(int(stat.parent.name))
    return found


def shard_counts(data: Path) -> dict[str, object]:
    """The stopped server's shard opened offline: points, segments and indexed vectors."""
    sys.path.insert(0, str(ROOT))
    from claude_code_memory.engine.edge_store import QdrantEdgeStore

    store = QdrantEdgeStore("memories", data / "vectors", 384, index_from=0)
    try:
        info = store.col_info()
        return {key: info[key] for key in ("points_count", "segments_count", "indexed_vectors_count")}
    finally:
        store.close()


def build_due(counts: dict[str, object]) -> bool:
    """Whether a server opening a shard with these counts (:func:`shard_counts`) will build its
    HNSW index (engine/index_build.py: from ``storage.vector_index_from`` points, when a fifth
    of them are outside the index)."""
    sys.path.insert(0, str(ROOT))
    from claude_code_memory.config import load_settings
    from claude_code_memory.engine.index_build import UNINDEXED_SHARE

    index_from = load_settings(ROOT / "config.yaml").storage.vector_index_from
    points, indexed = int(counts["points_count"]), int(counts["indexed_vectors_count"])  # type: ignore[call-overload]
    return 0 < index_from <= points and points - indexed >= UNINDEXED_SHARE * points


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


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
        help="fill the sizes with bulk_load.py while the server is stopped (precomputed embeddings)",
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
            # The machine's speed before and after (bench/machine_speed.py): read the figures
            # against it, the same code moves by half between hours on a shared host.
            "machine_speed": {"before": measure()},
            "turns_per_conversation": args.turns,
            "fill": "bulk_load.py (precomputed embeddings)"
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
                from bulk_load import bulk_load

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
