"""Where a request's CPU time goes, per path: a sampling profile (py-spy) of the real server
process while one path at a time is driven. Prints JSON; results in bench/results/.

    .venv/bin/python -m bench.perf.profile_paths --data-dir DIR [--requests 150] [--rate 250]

``DIR`` is a data directory kept by ``bench/perf/server.py --data-dir`` (copied, never changed). The
server (``ccmem serve``, this checkout) starts on the copy with the hygiene schedule off, so a
background scan does not mix into the samples; then, each under its own profile: REST search,
MCP ``search_memory`` over Streamable HTTP, the UserPromptSubmit hook, the SessionStart hook
(a briefing), ingest one memory per
request and in batches of 100. For each path: requests a second (one client, on this machine
under its load: compare paths, not machines), and the share of the server's busy samples
(idle threads left out) under each frame, inclusive and self, top ``--top``. py-spy samples
from outside the process (no instrumentation overhead); it needs ``py-spy`` (requirements-dev)
and permission to read the server's memory (the same user; ptrace allowed).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.harness.api import ingest, ingest_batches, mcp_search
from bench.harness.paths import ROOT
from bench.harness.server import Server, server_on_copy
from bench.harness.stats import load
from bench.harness.synthetic import fresh_queries, synthetic, take, turns

PY_SPY = ROOT / ".venv" / "bin" / "py-spy"


def frame_name(frame: str) -> str:
    """``function (file.py:line)`` as ``function (package/file.py)``, lines folded together."""
    name, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0]
    parts = path.split("/")
    return f"{name} ({'/'.join(parts[-2:])})"


def summarise(raw: Path, top: int) -> dict[str, object]:
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = [frame_name(f) for f in stack.split(";")]
        total += n
        for name in set(frames):
            inclusive[name] += n
        own[frames[-1]] += n
    share = (lambda n: round(n / total, 3)) if total else (lambda n: 0.0)
    return {
        "busy_samples": total,
        "inclusive": {name: share(n) for name, n in inclusive.most_common(top)},
        "self": {name: share(n) for name, n in own.most_common(top)},
    }


def profiled(pid: int, rate: int, work: Callable[[], float], top: int) -> dict[str, object]:
    """Run ``work`` (returns requests a second) under py-spy attached to ``pid``."""
    with tempfile.TemporaryDirectory(prefix="ccmem-prof-") as tmp:
        raw = Path(tmp) / "raw.txt"
        spy = subprocess.Popen(
            [str(PY_SPY), "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw"]
            + ["--nonblocking", "-o", str(raw)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1.0)  # attached before the first request
        per_s = work()
        spy.send_signal(signal.SIGINT)
        spy.wait(60)
        return {"per_s": round(per_s, 1), **summarise(raw, top)}


def rest(server: Server, token: str, queries: list[str]) -> float:
    with httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
        started = time.perf_counter()
        for q in queries:
            c.post("/api/v1/memories/search", json={"query": q, "limit": 10}).raise_for_status()
        return len(queries) / (time.perf_counter() - started)


def mcp(server: Server, token: str, queries: list[str]) -> float:
    started = time.perf_counter()
    asyncio.run(mcp_search(f"{server.base}/mcp/bench/http/bench", token, queries, "http"))
    return len(queries) / (time.perf_counter() - started)


def hook(server: Server, token: str, queries: list[str]) -> float:
    session = uuid.uuid4().hex
    with httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
        started = time.perf_counter()
        for q in queries:
            body = {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": "/tmp", "prompt": q}
            c.post("/api/v1/hooks/claude-code", json=body).raise_for_status()
        return len(queries) / (time.perf_counter() - started)


def briefing(server: Server, token: str, count: int) -> float:
    """SessionStart hooks, a new session each (a briefing each), from a directory of no project."""
    with httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=120) as c:
        started = time.perf_counter()
        for _ in range(count):
            body = {"hook_event_name": "SessionStart", "session_id": uuid.uuid4().hex, "cwd": "/tmp"}
            c.post("/api/v1/hooks/claude-code", json={**body, "source": "startup"}).raise_for_status()
        return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=150)
    parser.add_argument("--rate", type=int, default=250, help="samples a second")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--paths", default="", help="names of the paths to profile, comma-separated (all)")
    args = parser.parse_args()
    report: dict[str, object] = {"load_before": load(), "requests": args.requests}
    with server_on_copy(args.data_dir, "ccmem-prof-data-") as server:
        token = server.token("bench")
        queries = fresh_queries(seed=int(time.time()))
        pid = server.process.pid
        n = args.requests
        take(queries, 20)  # the first queries warm nothing: the server's own warm-up runs at start
        rest(server, token, take(queries, 10))
        mcp(server, token, take(queries, 30))  # the MCP endpoint is built on its first request
        items = turns(synthetic(3 * n, seed=int(time.time()) % 1000 + 500), 0, 20)
        ingest_token = server.token("ingest")
        paths: dict[str, Callable[[], float]] = {
            "rest_search": lambda: rest(server, token, take(queries, n)),
            "mcp_http_search": lambda: mcp(server, token, take(queries, n)),
            "hook_user_prompt_submit": lambda: hook(server, token, take(queries, n)),
            "hook_session_start": lambda: briefing(server, token, n),
            "ingest_single": lambda: ingest(server, ingest_token, items[:n], 1),
            "ingest_batch_100": lambda: ingest_batches(server, ingest_token, items[n : 3 * n]),
        }
        chosen = [name for name in args.paths.split(",") if name] or list(paths)
        report["paths"] = {name: profiled(pid, args.rate, paths[name], args.top) for name in chosen}
        report["load_after"] = load()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
