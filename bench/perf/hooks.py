"""The Claude Code hook endpoint's latency per event at 1k and 10k memories, and what the hooks
add to a ``claude -p`` run. Prints JSON.

    .venv/bin/python -m bench.perf.hooks [--sizes 1000,10000] [--requests 200] [--claude-runs 10]

For each size a fresh server gets that many synthetic memories (half of them in the project the
hook inputs' ``cwd`` names), then ``POST /api/v1/hooks/claude-code`` is timed from the client
over loopback: SessionStart (a new session each time: a briefing), UserPromptSubmit (a query
never asked before, so the embedding cache answers none) and Stop (a new turn captured into the
consent queue).

At the first size, ``claude_p``: the wall time of the pinned Claude Code CLI (``claude -p``,
tests/e2e) against the fake Anthropic upstream of the e2e tests, with our hooks installed by
``ccmem hooks install`` and the server up, and without hooks; the runs alternate (on, off, then
off, on, ...) so a slow spell of the machine falls on both. Each prompt is asked once with hooks
and once without, and never before (the embedding cache answers none). ``--claude-runs 0``
skips it. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from bench.harness.paths import CCMEM
from bench.harness.server import Server
from bench.harness.stats import WARMUP, percentiles
from bench.harness.synthetic import fresh_queries, synthetic, take
from tests.support.fake_anthropic import FakeAnthropic, always_text
from tests.support.node_clients import run_claude

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


def claude_home(server: Server | None) -> Path:
    """A HOME whose ``project`` is a git work tree, with our hooks installed when ``server``."""
    home = Path(tempfile.mkdtemp(prefix="bench-claude-"))
    (home / "project" / ".git").mkdir(parents=True)
    if server is not None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
        if os.environ.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        subprocess.run(
            [str(CCMEM), "hooks", "install", "--url", server.base],
            env=env,
            cwd=home,
            check=True,
            timeout=60,
            capture_output=True,  # stdout is the report's JSON
        )
    return home


def claude_wall_time(server: Server, token: str, prompts: list[str]) -> dict[str, object]:
    """Median wall time of ``claude -p`` with the hooks (server up) and without, interleaved."""
    homes = {"hooks_on": claude_home(server), "hooks_off": claude_home(None)}
    samples: dict[str, list[float]] = {name: [] for name in homes}
    with FakeAnthropic(always_text("OK.")) as upstream:
        for n, prompt in enumerate(prompts):
            order = list(homes) if n % 2 == 0 else list(reversed(homes))
            for name in order:
                started = time.perf_counter()
                run = run_claude(
                    prompt, home=homes[name], upstream_url=upstream.base_url, env={"CCMEM_TOKEN": token}
                )
                elapsed = time.perf_counter() - started
                if run.returncode != 0 or run.event("result").get("subtype") != "success":
                    raise SystemExit(f"claude -p failed ({name}):\n{run.describe()}")
                samples[name].append(elapsed)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    return {
        "runs": len(prompts),
        **{
            name: {"median_s": round(medians[name], 3), "min_s": round(min(values), 3)}
            for name, values in samples.items()
        },
        "added_median_s": round(medians["hooks_on"] - medians["hooks_off"], 3),
    }


def measure(size: int, requests: int, queries: list[str], claude_prompts: list[str]) -> dict[str, object]:
    server = Server()
    try:
        token = server.token("bench")
        # Named "project" like the work tree claude_home gives Claude Code: one project for both.
        cwd = Path(tempfile.mkdtemp(prefix="bench-hooks-")) / "project"
        (cwd / ".git").mkdir(parents=True)
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
        if claude_prompts:
            results["claude_p"] = claude_wall_time(server, token, claude_prompts)
        return results
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument(
        "--claude-runs", type=int, default=10, help="claude -p runs each way, at the first size (0: none)"
    )
    args = parser.parse_args()
    queries = fresh_queries()
    report = [
        measure(
            int(size),
            args.requests,
            take(queries, args.requests + WARMUP),
            take(queries, args.claude_runs) if n == 0 else [],
        )
        for n, size in enumerate(args.sizes.split(","))
    ]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
