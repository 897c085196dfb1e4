"""Side by side: this checkout against an earlier revision, on the same data, in one run. Prints JSON.

    .venv/bin/python -m bench.perf.ab --baseline HEAD~3 [--size 10000] [--queries 400] [--restarts 5]
    .venv/bin/python -m bench.perf.ab --baseline main --data-dir /tmp/d100k --queries 300

Machines here are noisy: the same code measured minutes apart moves by several milliseconds,
so a change is judged against its baseline in one run. The baseline is checked out with
``git worktree`` into a temporary directory and served by this checkout's ``ccmem`` with
``PYTHONPATH`` pointing at it: its package code, this virtualenv's dependencies (a baseline
that needs other dependencies or another schema migration cannot be compared this way).

The data is a copy, for each side, of one data directory: ``--data-dir`` (as kept by
``bench/perf/server.py --data-dir``), or ``--size`` synthetic memories stored once through this
checkout's server. Both checkouts are byte-compiled first, as install.sh leaves one. Both
servers run at once; searches alternate between them (the order flips every query), every
query asked once, so neither side's embedding cache answers; their p50/p95 are also given by
the time each query names (``rest_search_by_when``). With
``--restarts``, each side is stopped (SIGTERM) and started again that many times, alternately:
seconds until ``/health`` answers, the time of a search asked right then, and how long the
start-up reconciliation then ran (the next restart waits for it). With ``--hooks N``, N
UserPromptSubmit hooks a side, alternating, each side one session throughout; with
``--session-starts N``, N SessionStart hooks a side (a briefing each), after everything else;
with ``--profiles N``, N reads of the profile a side (each refreshes the tiers). Not a test:
numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx

from bench.harness.api import ingest_batches
from bench.harness.machine_speed import measure
from bench.harness.paths import ROOT
from bench.harness.server import Server, rss_mb
from bench.harness.stats import WARMUP, percentiles
from bench.harness.synthetic import WHEN, fresh_queries, synthetic

#: With ``--block``: seconds between one side's block of searches and the other's.
BLOCK_PAUSE_S = 2.0
USER = "bench"


def when_of(query: str) -> str:
    """The time a bench query names (one of ``bench.harness.synthetic.WHEN``), or "none"."""
    return next((when for when in WHEN if when and query.endswith(" " + when)), "none")


def checkout(revision: str, into: Path) -> str:
    """A detached worktree of ``revision`` at ``into``; returns the commit."""
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(into), revision], check=True
    )
    return subprocess.run(
        ["git", "-C", str(into), "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


def build_data(size: int, into: Path) -> None:
    """``size`` synthetic memories of user ``bench``, stored through this checkout's server."""
    server = Server(into)
    try:
        ingest_batches(server, server.token(USER), synthetic(size), batch=500)
    finally:
        server.stop()


def hooks(clients: dict[str, httpx.Client], queries: Iterator[str], count: int) -> dict[str, object]:
    """``count`` UserPromptSubmit hooks a side, alternating, each side one session throughout
    (a session given more memories with each prompt, as a long one is); p50/p95 per side."""
    sessions = {name: uuid.uuid4().hex for name in clients}
    samples: dict[str, list[float]] = {name: [] for name in clients}
    order = list(clients)
    for i, query in enumerate(itertools.islice(queries, count + WARMUP)):
        for name in order if i % 2 == 0 else order[::-1]:
            body = {
                "hook_event_name": "UserPromptSubmit",
                "session_id": sessions[name],
                "cwd": "/tmp/bench-ab/project",
                "prompt": query,
            }
            started = time.perf_counter()
            response = clients[name].post("/api/v1/hooks/claude-code", json=body)
            if i >= WARMUP:
                samples[name].append(time.perf_counter() - started)
            response.raise_for_status()
    return {name: percentiles(v) for name, v in samples.items()}


def session_starts(clients: dict[str, httpx.Client], count: int) -> dict[str, object]:
    """``count`` SessionStart hooks a side, alternating, each a new session (so a briefing
    each), from the project directory of :func:`hooks` and from one of no project in turn."""
    samples: dict[str, list[float]] = {name: [] for name in clients}
    order = list(clients)
    for i in range(count + WARMUP):
        cwd = "/tmp/bench-ab/project" if i % 2 == 0 else "/tmp"
        for name in order if i % 4 < 2 else order[::-1]:
            body = {"hook_event_name": "SessionStart", "session_id": uuid.uuid4().hex, "cwd": cwd}
            started = time.perf_counter()
            response = clients[name].post("/api/v1/hooks/claude-code", json={**body, "source": "startup"})
            if i >= WARMUP:
                samples[name].append(time.perf_counter() - started)
            response.raise_for_status()
    return {name: percentiles(v) for name, v in samples.items()}


def profiles(clients: dict[str, httpx.Client], count: int) -> dict[str, object]:
    """``count`` reads of the profile a side (``GET /api/v1/profile``, which refreshes the tiers
    first), alternating; the first (the store's first grouping into segments) is not timed."""
    samples: dict[str, list[float]] = {name: [] for name in clients}
    order = list(clients)
    for i in range(count + 1):
        for name in order if i % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            response = clients[name].get("/api/v1/profile")
            if i:
                samples[name].append(time.perf_counter() - started)
            response.raise_for_status()
    return {name: percentiles(v) for name, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", required=True, help="git revision to compare this checkout with")
    parser.add_argument("--data-dir", type=Path, help="a kept bench/perf/server.py data directory (copied)")
    parser.add_argument("--size", type=int, default=10_000, help="synthetic memories without --data-dir")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--restarts", type=int, default=0)
    parser.add_argument(
        "--block",
        type=int,
        default=1,
        help="searches asked of one side in a row before the other's (1: alternate every query)",
    )
    parser.add_argument(
        "--hooks",
        type=int,
        default=0,
        help="also time this many UserPromptSubmit hooks, one session a side (as bench/perf/hooks.py)",
    )
    parser.add_argument(
        "--session-starts",
        type=int,
        default=0,
        help="also time this many SessionStart hooks a side (a new session, so a briefing, each), last",
    )
    parser.add_argument(
        "--profiles",
        type=int,
        default=0,
        help="also time this many profile reads a side (each refreshes the tiers), after the searches",
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ccmem-ab-"))
    tree = work / "baseline"
    servers: dict[str, Server] = {}
    try:
        commit = checkout(args.baseline, tree)
        source = args.data_dir
        if source is None:
            source = work / "source"
            build_data(args.size, source)
        sides = {"baseline": tree, "this": ROOT}
        for code in sides.values():
            # As install.sh leaves a checkout: compiled, so restarts compare like with like.
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(code / "claude_code_memory")], check=True
            )
        for name, code in sides.items():
            shutil.copytree(source, work / name / "copy")
            servers[name] = Server(work / name / "copy", code=code)
        tokens = {name: server.token(USER) for name, server in servers.items()}
        report: dict[str, object] = {
            "baseline": {"revision": args.baseline, "commit": commit},
            "machine_speed": {"before": measure()},
        }

        if args.restarts:
            seconds: dict[str, list[float]] = {name: [] for name in servers}
            passes: dict[str, list[float]] = {name: [] for name in servers}
            firsts: dict[str, list[float]] = {name: [] for name in servers}
            asked_first = fresh_queries(seed=29)
            for _ in range(args.restarts):
                for name, server in servers.items():
                    seconds[name].append(server.restart()["start_to_healthy_s"])
                    # A search as soon as the server answers, as a client waiting for it asks.
                    started = time.perf_counter()
                    response = httpx.post(
                        f"{server.base}/api/v1/memories/search",
                        json={"query": next(asked_first), "limit": 10},
                        headers={"Authorization": f"Bearer {tokens[name]}"},
                        timeout=60,
                    )
                    firsts[name].append(round((time.perf_counter() - started) * 1000, 1))
                    response.raise_for_status()
                    passes[name].append(server.start_up_pass())  # the next restart waits for it
            report["restart_s"] = {
                name: {"median": round(statistics.median(v), 2), "each": v} for name, v in seconds.items()
            }
            report["start_up_pass_s"] = {
                name: {"median": round(statistics.median(v), 2), "each": v} for name, v in passes.items()
            }
            report["first_search_ms"] = {
                name: {"median": round(statistics.median(v), 1), "each": v} for name, v in firsts.items()
            }

        clients = {
            name: httpx.Client(
                base_url=server.base, headers={"Authorization": f"Bearer {tokens[name]}"}, timeout=60
            )
            for name, server in servers.items()
        }
        queries = fresh_queries()
        for query in itertools.islice(queries, WARMUP):
            for client in clients.values():
                client.post("/api/v1/memories/search", json={"query": query, "limit": 10}).raise_for_status()
        samples: dict[str, list[float]] = {name: [] for name in servers}
        by_when: dict[str, dict[str, list[float]]] = {name: {} for name in servers}
        order = list(servers)
        block = max(1, args.block)
        asked = list(itertools.islice(queries, args.queries))
        for i in range(0, len(asked), block):
            for name in order if (i // block) % 2 == 0 else order[::-1]:
                if block > 1:
                    time.sleep(BLOCK_PAUSE_S)  # the other side's background work is done
                for query in asked[i : i + block]:
                    started = time.perf_counter()
                    response = clients[name].post(
                        "/api/v1/memories/search", json={"query": query, "limit": 10}
                    )
                    samples[name].append(time.perf_counter() - started)
                    by_when[name].setdefault(when_of(query), []).append(samples[name][-1])
                    response.raise_for_status()
                    assert response.json()["results"], "search returned nothing"
        report["rest_search"] = {name: percentiles(v) for name, v in samples.items()}
        # By the time the query names (bench.harness.synthetic.WHEN; "none": no time): "yesterday" and
        # "last week" are relative dates, which look deeper and rank by the candidates' moments.
        report["rest_search_by_when"] = {
            when: {name: percentiles(by_when[name][when]) for name in servers}
            for when in sorted(by_when["this"])
        }
        if block > 1:
            report["rest_search_block"] = block
        if args.hooks:
            report["user_prompt_submit"] = hooks(clients, queries, args.hooks)
        if args.profiles:
            report["profile_read"] = profiles(clients, args.profiles)
        if args.session_starts:
            report["session_start"] = session_starts(clients, args.session_starts)
        report["rss_mb"] = {name: round(rss_mb(server.process.pid), 1) for name, server in servers.items()}
        report["machine_speed"]["after"] = measure()  # type: ignore[index]
        print(json.dumps(report, indent=2))
    finally:
        for server in servers.values():
            server.stop()
        if tree.exists():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
