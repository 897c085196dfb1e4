"""The Claude Code hook endpoint's latency per event at 1k and 10k memories. Prints JSON.

    .venv/bin/python bench/bench_hooks.py [--sizes 1000,10000] [--requests 200]

For each size a fresh server gets that many synthetic memories (half of them in the project the
hook inputs' ``cwd`` names), then ``POST /api/v1/hooks/claude-code`` is timed from the client
over loopback: SessionStart (a new session each time: a briefing), UserPromptSubmit (a query
never asked before, so the embedding cache answers none) and Stop (a new turn captured into the
consent queue). Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import WARMUP, Server, fresh_queries, percentiles, synthetic, take  # noqa: E402

PATH = "/api/v1/hooks/claude-code"


def ingest(server: Server, token: str, texts: list[str], project: str) -> None:
    with httpx.Client(
        base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=300
    ) as client:
        for i in range(0, len(texts), 500):
            items = [
                {"text": t, "project": project if n % 2 else None} for n, t in enumerate(texts[i : i + 500])
            ]
            client.post("/api/v1/memories/batch", json={"app": "bench", "items": items}).raise_for_status()


def timed(client: httpx.Client, bodies: list[dict[str, object]]) -> tuple[dict[str, float], int]:
    samples, with_context = [], 0
    for n, body in enumerate(bodies):
        started = time.perf_counter()
        response = client.post(PATH, json=body)
        elapsed = time.perf_counter() - started
        response.raise_for_status()
        if n >= WARMUP:
            samples.append(elapsed)
            with_context += bool(response.json())
    return percentiles(samples), with_context


def measure(size: int, requests: int, queries: list[str]) -> dict[str, object]:
    server = Server()
    try:
        token = server.token("bench")
        cwd = Path(tempfile.mkdtemp(prefix="bench-project-"))
        (cwd / ".git").mkdir()
        ingest(server, token, synthetic(size), cwd.name)
        base = {"cwd": str(cwd), "transcript_path": "/dev/null"}
        count = requests + WARMUP
        starts = [
            base | {"hook_event_name": "SessionStart", "session_id": str(uuid.uuid4()), "source": "startup"}
            for _ in range(count)
        ]
        session = str(uuid.uuid4())
        prompts = [
            base | {"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": q}
            for q in queries
        ]
        results: dict[str, object] = {"memories": size}
        with httpx.Client(
            base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as client:
            results["SessionStart"], injected = timed(client, starts)
            results["SessionStart"]["with_context"] = injected  # type: ignore[index]
            results["UserPromptSubmit"], injected = timed(client, prompts)
            results["UserPromptSubmit"]["with_context"] = injected  # type: ignore[index]
            stops = []
            for n in range(count):
                sid = str(uuid.uuid4())
                client.post(
                    PATH,
                    json=base
                    | {
                        "hook_event_name": "UserPromptSubmit",
                        "session_id": sid,
                        "prompt": f"turn {n} {uuid.uuid4().hex}",
                    },
                )
                stops.append(
                    base
                    | {"hook_event_name": "Stop", "session_id": sid, "last_assistant_message": f"reply {n}"}
                )
            results["Stop"], _ = timed(client, stops)
        return results
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    queries = fresh_queries()
    report = [
        measure(int(size), args.requests, take(queries, args.requests + WARMUP))
        for size in args.sizes.split(",")
    ]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
