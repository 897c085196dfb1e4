"""What the remote-use guards cost a request (docs/remote.md). Prints JSON.

    .venv/bin/python -m bench.perf.edge [--requests 5000] [--tokens 1000] [--out FILE]

``device_token``: ``Identity.authenticate`` for a device token (a named bearer token) over a
migrated SQLite database holding ``--tokens`` tokens: the lookup every request with a token
makes, p50/p95 in microseconds. Its last use is written at most once a minute, so the timed
calls are reads; the one write (the first call) is timed apart.

``rate_limit``: the ``RateLimit`` middleware (both counters: per address and per token) in front
of an ASGI app that answers at once, against the same app without it, called alternately in one
event loop; ``added`` is the difference of the percentiles. ``counter_hit`` is one
``MemoryCounters.hit`` alone.
Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from claude_code_memory.api.rate_limit import RateLimit
from claude_code_memory.auth.identity import Identity
from claude_code_memory.rate_limits.limiter import MemoryCounters, RequestLimits, rate


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_us": round(statistics.median(ordered) * 1e6, 1),
        "p95_us": round(ordered[int(len(ordered) * 0.95) - 1] * 1e6, 1),
        "n": len(ordered),
    }


def device_token(requests: int, tokens: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        identity = Identity.open(f"sqlite:///{Path(directory) / 'memory.db'}", admin_token="bench-admin")
        made = [identity.create_token(f"user{i % 50}", f"device {i}") for i in range(tokens)]
        chosen = f"Bearer {made[len(made) // 2]}"
        started = time.perf_counter()
        identity.authenticate(chosen)  # the first use writes last_used_at
        first = time.perf_counter() - started
        samples = []
        for _ in range(requests):
            started = time.perf_counter()
            identity.authenticate(chosen)
            samples.append(time.perf_counter() - started)
        identity.database.engine.dispose()
    return {
        "tokens_in_database": tokens,
        "first_use_with_write_us": round(first * 1e6, 1),
        **_percentiles(samples),
    }


async def _answer(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def rate_limit(requests: int) -> dict[str, Any]:
    limits = RequestLimits(MemoryCounters(), "1000000/minute", "1000000/minute")
    guarded = RateLimit(_answer, limits=limits, count_loopback=True)
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/api/v1/me",
        "client": ("203.0.113.7", 50000),
        "headers": [(b"authorization", b"Bearer ccm_bench-token-0123456789")],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_: Any) -> None:
        return None

    async def run() -> tuple[list[float], list[float]]:
        bare, limited = [], []
        for _ in range(requests):
            started = time.perf_counter()
            await _answer(scope, receive, send)
            bare.append(time.perf_counter() - started)
            started = time.perf_counter()
            await guarded(scope, receive, send)
            limited.append(time.perf_counter() - started)
        return bare, limited

    bare, limited = asyncio.run(run())
    counters, item = MemoryCounters(), rate("1000000/minute")
    hits = []
    for index in range(requests):
        started = time.perf_counter()
        counters.hit(item, f"address:{index % 100}")
        hits.append(time.perf_counter() - started)
    without, with_limits = _percentiles(bare), _percentiles(limited)
    return {
        "without": without,
        "with_rate_limit": with_limits,
        "added_p50_us": round(with_limits["p50_us"] - without["p50_us"], 1),
        "added_p95_us": round(with_limits["p95_us"] - without["p95_us"], 1),
        "counter_hit": _percentiles(hits),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = {
        "benchmark": "bench_edge",
        "load_average_1m": round(os.getloadavg()[0], 2),
        "device_token": device_token(args.requests, args.tokens),
        "rate_limit": rate_limit(args.requests),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
