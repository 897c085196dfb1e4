"""Replicas benchmark: two API replicas against one, and a replica killed under load. JSON.

    .venv/bin/python -m bench.perf.replicas [--memories 2000] [--clients 20] [--seconds 30]
        [--out bench/results/replicas.json]

Starts Debian's PostgreSQL (tests/support/postgres.py), the Qdrant stand-in
(tests/support/fake_qdrant.py) in a process of its own, and real ``ccmem serve`` replicas on
them (``server.replicas = 2``); loads ``--memories`` synthetic memories of one user through the
batch route; then:

1. **search, one replica vs two**: ``--clients`` threads search for ``--seconds`` (each query
   new, so no cache answers), all against replica 0, then half against each replica: p50/p95
   latency, throughput, and the ratio two/one;
2. **a replica killed under a mixed load**: the same clients through Caddy (the team profile's
   own deploy/Caddyfile, TLS from its local CA, tests/support/edge.py), 70% searches and 30%
   writes; replica 1 gets SIGKILL a third of the way in. Reported: writes acknowledged, and of
   those lost (every acknowledged id is read back from the surviving replica: target 0), client
   errors and the window in which they came (seconds after the kill of the first and last).

No Qdrant server can run here: the stand-in answers searches from qdrant-client's in-process
implementation, in Python, one process for both replicas. It is slower than a real server and
it is shared, so it bounds what the second replica can add: say so next to the numbers. The
machine has 2 cores shared with other work: the load average is recorded before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.harness.paths import ROOT
from tests.support.edge import CaddyEdge
from tests.support.postgres import PostgresCluster
from tests.support.server import MemoryServer

WORDS = [
    "deploy",
    "staging",
    "database",
    "port",
    "cache",
    "queue",
    "worker",
    "release",
    "train",
    "billing",
    "invoice",
    "webhook",
    "retry",
    "timeout",
    "migration",
    "index",
    "schema",
    "token",
    "rotate",
    "secret",
    "vault",
    "backup",
    "restore",
    "replica",
    "lease",
    "lock",
    "search",
    "ranking",
    "embedding",
    "vector",
    "keyword",
    "fusion",
    "latency",
    "budget",
    "alert",
    "pager",
    "rota",
    "wiki",
    "runbook",
]

FAKE_QDRANT = (
    "import sys, time\n"
    "from tests.support.fake_qdrant import FakeQdrant\n"
    "q = FakeQdrant().start()\n"
    "print(q.port, flush=True)\n"
    "while True: time.sleep(3600)\n"
)


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))) + f" #{rng.randint(0, 10**9)}"


def percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {}
    ordered = sorted(samples)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)

    return {"p50_ms": at(0.50), "p95_ms": at(0.95), "p99_ms": at(0.99)}


def load(server: MemoryServer, token: str, count: int) -> float:
    rng = random.Random(3)
    started = time.perf_counter()
    with server.client(token, timeout=600) as client:
        for first in range(0, count, 500):
            items = [{"text": sentence(rng)} for _ in range(min(500, count - first))]
            response = client.post("/api/v1/memories/batch", json={"app": "bench", "items": items})
            response.raise_for_status()
    return round(time.perf_counter() - started, 1)


def search_load(clients: list[httpx.Client], seconds: float) -> dict[str, Any]:
    """Each client searches in a loop for ``seconds``; latency percentiles and throughput."""
    latencies: list[float] = []
    errors: dict[str, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def run(index: int) -> None:
        rng = random.Random(index)
        while time.monotonic() < deadline:
            query = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.choice(WORDS)} {rng.randint(0, 10**6)}"
            started = time.perf_counter()
            try:
                status = clients[index].post("/api/v1/memories/search", json={"query": query}).status_code
                failure = None if status == 200 else str(status)
            except httpx.HTTPError as exc:
                failure = type(exc).__name__
            took = time.perf_counter() - started
            with lock:
                if failure is None:
                    latencies.append(took)
                else:
                    errors[failure] = errors.get(failure, 0) + 1

    began = time.perf_counter()
    with ThreadPoolExecutor(len(clients)) as pool:
        list(pool.map(run, range(len(clients))))
    elapsed = time.perf_counter() - began
    return {
        "searches": len(latencies),
        "errors": errors,
        "throughput_per_s": round(len(latencies) / elapsed, 1),
        **percentiles(latencies),
    }


def mixed_load_with_kill(
    clients: list[httpx.Client], seconds: float, kill: Callable[[], None], kill_at: float
) -> dict[str, Any]:
    acknowledged: list[str] = []
    errors: list[tuple[float, str]] = []
    searches = 0
    lock = threading.Lock()
    start = time.monotonic()
    deadline = start + seconds
    killed_at: list[float] = []

    def killer() -> None:
        time.sleep(kill_at)
        killed_at.append(time.monotonic())
        kill()

    def run(index: int) -> None:
        nonlocal searches
        rng = random.Random(1000 + index)
        while time.monotonic() < deadline:
            write = rng.random() < 0.3
            try:
                if write:
                    response = clients[index].post(
                        "/api/v1/memories/", json={"text": sentence(rng), "app": "bench"}
                    )
                else:
                    response = clients[index].post(
                        "/api/v1/memories/search",
                        json={"query": f"{rng.choice(WORDS)} {rng.randint(0, 10**6)}"},
                    )
                failure = None if response.status_code == 200 else str(response.status_code)
            except httpx.HTTPError as exc:
                failure = type(exc).__name__
            with lock:
                if failure is not None:
                    errors.append((time.monotonic(), failure))
                elif write:
                    body = response.json()
                    acknowledged.append(str(body.get("id") or body["results"][0]["id"]))
                else:
                    searches += 1

    thread = threading.Thread(target=killer)
    thread.start()
    with ThreadPoolExecutor(len(clients)) as pool:
        list(pool.map(run, range(len(clients))))
    thread.join()
    kill_time = killed_at[0]
    after = [round(when - kill_time, 2) for when, _ in errors]
    kinds: dict[str, int] = {}
    for _, kind in errors:
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "seconds": seconds,
        "killed_after_s": kill_at,
        "writes_acknowledged": len(acknowledged),
        "searches_answered": searches,
        "client_errors": len(errors),
        "error_kinds": kinds,
        "errors_from_s_after_kill": min(after) if after else None,
        "errors_until_s_after_kill": max(after) if after else None,
        "acknowledged": acknowledged,
    }


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-replicas-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    result: dict[str, Any] = {
        "memories": args.memories,
        "clients": args.clients,
        "seconds_per_phase": args.seconds,
        "cpus": os.cpu_count(),
        "load_before": loadavg(),
        "vector_store": "tests/support/fake_qdrant.py (qdrant-client in-process, one Python process)",
    }
    cluster = PostgresCluster().start()
    fake = subprocess.Popen(
        [sys.executable, "-c", FAKE_QDRANT],
        cwd=ROOT,  # tests.support from the checkout: ``-c`` puts the working directory first
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    servers: list[MemoryServer] = []
    edge: CaddyEdge | None = None
    try:
        assert fake.stdout is not None
        qdrant_url = f"http://127.0.0.1:{int(fake.stdout.readline())}"
        database = cluster.new_database()
        admin = uuid.uuid4().hex
        env = {
            "DATABASE_URL": database.url,
            "QDRANT_URL": qdrant_url,
            "CCMEM_ADMIN_TOKEN": admin,
            "CCMEM_SERVER__REPLICAS": "2",
            "CCMEM_SERVER__LOG_LEVEL": "warning",
        }
        servers = [MemoryServer(work / f"replica{i}", env=env) for i in range(2)]
        for server in servers:
            server.admin_token = admin
            server.start()
        token = servers[0].make_token("bench")
        result["load_seconds"] = load(servers[0], token, args.memories)

        one = [servers[0].client(token, timeout=120) for _ in range(args.clients)]
        two = [servers[i % 2].client(token, timeout=120) for i in range(args.clients)]
        search_load(one[:2], 3)  # warm both replicas' models and pools
        search_load(two[:2], 3)
        result["search_one_replica"] = search_load(one, args.seconds)
        result["load_after_one"] = loadavg()
        result["search_two_replicas"] = search_load(two, args.seconds)
        result["load_after_two"] = loadavg()
        result["throughput_ratio_two_over_one"] = round(
            result["search_two_replicas"]["throughput_per_s"]
            / result["search_one_replica"]["throughput_per_s"],
            2,
        )

        edge = CaddyEdge(work / "edge", [f"127.0.0.1:{server.port}" for server in servers]).start()
        through_edge = [edge.client(token, timeout=120) for _ in range(args.clients)]

        def kill() -> None:
            victim = servers[1].process
            assert victim is not None
            victim.send_signal(signal.SIGKILL)

        killed = mixed_load_with_kill(through_edge, args.seconds, kill, args.seconds / 3)
        acknowledged = killed.pop("acknowledged")
        with servers[0].client(token, timeout=60) as survivor:
            lost = [i for i in acknowledged if survivor.get(f"/api/v1/memories/{i}").status_code != 200]
        killed["acknowledged_writes_lost"] = len(lost)
        result["kill_one_replica_mixed_load_through_caddy"] = killed
        result["load_after"] = loadavg()
    finally:
        if edge is not None:
            edge.stop()
        for server in servers:
            server.stop()
        fake.terminate()
        fake.wait(timeout=30)
        cluster.stop()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
