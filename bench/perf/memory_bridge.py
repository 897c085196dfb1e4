"""What the memory tool bridge costs a streaming client: bridge on versus off versus no proxy.

    .venv/bin/python -m bench.perf.memory_bridge [--streams 50] [--first-delay 0.1]
        [--event-delay 0.01] [--micro 2000]

A fake Anthropic upstream on 127.0.0.1 (tests/support/fake_anthropic.py, the real SSE format)
streams a realistic answer to every ``POST /v1/messages``: a text preamble in 12-character
deltas, then a ``tool_use`` of the native ``memory`` tool with its input in 10-character
pieces, waiting ``--first-delay`` before the first event and ``--event-delay`` between events.
The request is Claude Code-sized (about 80 KB: system prompt, 25 tool schemas among them
``mcp__memory__memory_20250818``, a long history with earlier memory tool uses), so with the
bridge on every request is rewritten and every answer renamed.

Four targets, run interleaved (the order rotates every round, so drift hits all alike):
``direct`` (no proxy), ``bridge_off`` and ``bridge_on`` (two ``ccmem proxy`` processes, real
mitmdump with the capture addon, reverse mode, ``proxy.memory_tool_bridge`` off and on; the
memory API is not running), and ``bridge_on_passthrough``: the bridge-on proxy given the same
request without our tool, which it passes untouched. Two processes on two shared cores differ
by more than the bridge costs, so the same-process pair (``bridge_on`` minus
``bridge_on_passthrough``) is the fairer measure. For each stream the client notes when every
event arrives. Reported (JSON on stdout):

* ``ttft_ms``: time to the first text delta (includes the request rewrite), median and p95;
* ``gap_ms``: the gaps between consecutive events (ideal: ``--event-delay``), median and p95;
* ``bridge_added_ms``: bridge_on minus bridge_off and minus bridge_on_passthrough, medians
  and p95s (target: <= 1 ms);
* ``names_seen``: the tool name each target's client saw (the bridge must show the MCP name);
* ``in_process_us``: the translation alone, without network or mitmproxy, timed in this
  process: one request rewrite, one stream's renaming, per event (µs, median of ``--micro``).

The machine's noise: 2 shared cores; loopback timings of a few ms move by about as much as the
effect measured here. Compare the in-process numbers for the bridge's own cost.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from claude_code_memory.capture.memory_bridge import (
    MCP_TOOL_NAME,
    StreamRenamer,
    bridge_request,
)
from tests.support.capture_proxy import CaptureProxy
from tests.support.fake_anthropic import (
    FakeAnthropic,
    Reply,
    message_events,
)
from tests.support.processes import free_port

PREAMBLE = (
    "Before I start, let me check the memory directory for anything I noted about this "
    "project last time: conventions, the deploy steps and what you asked me to remember."
)
MEMORY_INPUT = {
    "command": "create",
    "path": "/memories/project-notes.md",
    "file_text": "# Project notes\n- Deploys on Fridays after the 14:00 freeze.\n- Prefers tabs.\n",
}


def reply(_body: dict[str, Any]) -> Reply:
    return Reply(
        [
            {"type": "text", "text": PREAMBLE},
            {"type": "tool_use", "id": "toolu_bench01", "name": "memory", "input": MEMORY_INPUT},
        ],
        stop_reason="tool_use",
    )


def claude_code_body() -> dict[str, Any]:
    """A request the size and shape Claude Code sends (~80 KB), offering the MCP memory tool."""
    schema = {
        "type": "object",
        "properties": {
            f"option_{i}": {"type": "string", "description": "An option of the tool. " * 6} for i in range(8)
        },
    }
    tools = [
        {"name": f"Tool{i}", "description": "Does a thing. " * 40, "input_schema": schema} for i in range(24)
    ]
    tools.insert(12, {"name": MCP_TOOL_NAME, "description": "Memory files. " * 30, "input_schema": schema})
    messages: list[dict[str, Any]] = []
    for turn in range(12):
        messages.append(
            {"role": "user", "content": [{"type": "text", "text": f"Step {turn}: " + "please " * 80}]}
        )
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Working on it. " * 30},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{turn:04d}",
                        "name": MCP_TOOL_NAME,
                        "input": {"command": "view", "path": "/memories"},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{turn:04d}", "content": "x " * 400}
                ],
            }
        )
    messages.append({"role": "user", "content": [{"type": "text", "text": "Now note the deploy rule."}]})
    return {
        "model": "claude-opus-5-5",
        "max_tokens": 32000,
        "stream": True,
        "system": [{"type": "text", "text": "You are Claude Code. " * 400}],
        "tools": tools,
        "messages": messages,
        "metadata": {"user_id": json.dumps({"session_id": "bench"})},
    }


def one_stream(client: httpx.Client, url: str, body: bytes) -> tuple[float, list[float], str]:
    """Seconds to the first text delta, the gaps between events, and the tool name seen."""
    headers = {
        "x-api-key": "bench-key",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
        "content-type": "application/json",
    }
    arrivals: list[float] = []
    first_text: float | None = None
    name = ""
    started = time.perf_counter()
    with client.stream("POST", f"{url}/v1/messages?beta=true", content=body, headers=headers) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            now = time.perf_counter()
            arrivals.append(now)
            if first_text is None and '"text_delta"' in line:
                first_text = now
            if '"content_block_start"' in line and '"tool_use"' in line:
                name = json.loads(line[5:])["content_block"]["name"]
    if first_text is None:
        raise RuntimeError("no text delta arrived")
    return first_text - started, [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)], name


def summary(values: list[float], scale: float = 1000) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered) * scale, 3),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * scale, 3),
        "n": len(ordered),
    }


def in_process(body: bytes, repeats: int) -> dict[str, float]:
    """The translation alone: one request, one whole stream (as mitmproxy's chunks), per event."""
    events = list(message_events(reply({}), "claude-opus-5-5", "msg_bench"))

    def timed(action: Any) -> float:
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            action()
            samples.append(time.perf_counter() - started)
        return statistics.median(samples)

    def rename_stream() -> None:
        renamer = StreamRenamer()
        for event in events:
            renamer(event)
        renamer(b"")

    stream = timed(rename_stream)
    return {
        "request_bytes": len(body),
        "request_rewrite_us": round(timed(lambda: bridge_request(body)) * 1e6, 1),
        "stream_events": len(events),
        "stream_rename_us": round(stream * 1e6, 1),
        "per_event_us": round(stream / len(events) * 1e6, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=50, help="streams per target")
    parser.add_argument("--first-delay", type=float, default=0.1)
    parser.add_argument("--event-delay", type=float, default=0.01)
    parser.add_argument("--micro", type=int, default=2000, help="repeats of the in-process timings")
    args = parser.parse_args()
    body = json.dumps(claude_code_body(), separators=(",", ":")).encode()  # as JSON.stringify writes it

    with tempfile.TemporaryDirectory(prefix="bench-bridge-") as tmp:
        work = Path(tmp)
        upstream = FakeAnthropic(reply, first_event_delay=args.first_delay, event_delay=args.event_delay)
        with upstream:
            dead_api = f"http://127.0.0.1:{free_port()}"
            proxies = {
                name: CaptureProxy(
                    work / name,
                    mode="reverse",
                    api_url=dead_api,
                    token="bench",
                    reverse_upstream=upstream.base_url,
                    memory_tool_bridge=on,
                )
                for name, on in (("bridge_off", False), ("bridge_on", True))
            }
            for proxy in proxies.values():
                proxy.start()
            try:
                targets = {"direct": upstream.base_url, **{name: p.url for name, p in proxies.items()}}
                # The bridge-on proxy again, with a request it leaves alone: the same process,
                # so the difference to bridge_on is the bridge's work and nothing else.
                targets["bridge_on_passthrough"] = proxies["bridge_on"].url
                bodies = {name: body for name in targets}
                bodies["bridge_on_passthrough"] = body.replace(
                    MCP_TOOL_NAME.encode(), b"mcp__other__tool_20250818"
                )
                clients = {name: httpx.Client(timeout=60, trust_env=False) for name in targets}
                results: dict[str, dict[str, Any]] = {
                    name: {"ttft": [], "gaps": [], "names": set()} for name in targets
                }
                for name, url in targets.items():
                    one_stream(
                        clients[name], url, bodies[name]
                    )  # warm-up: connections, the proxies' first flow
                order = list(targets)
                for round_number in range(args.streams):
                    shift = round_number % len(order)
                    for name in order[shift:] + order[:shift]:
                        ttft, gaps, seen = one_stream(clients[name], targets[name], bodies[name])
                        results[name]["ttft"].append(ttft)
                        results[name]["gaps"].extend(gaps)
                        results[name]["names"].add(seen)
                for client in clients.values():
                    client.close()
            finally:
                for proxy in proxies.values():
                    proxy.stop()

    ttft = {name: summary(r["ttft"]) for name, r in results.items()}
    gaps = {name: summary(r["gaps"]) for name, r in results.items()}
    added = {
        f"{metric}_vs_{baseline}": {
            stat: round(table["bridge_on"][stat] - table[baseline][stat], 3) for stat in ("median", "p95")
        }
        for metric, table in (("ttft_ms", ttft), ("gap_ms", gaps))
        for baseline in ("bridge_off", "bridge_on_passthrough")
    }
    print(
        json.dumps(
            {
                "upstream": {
                    "first_event_delay_ms": args.first_delay * 1000,
                    "event_delay_ms": args.event_delay * 1000,
                    "request_bytes": len(body),
                },
                "streams_per_target": args.streams,
                "ttft_ms": ttft,
                "gap_ms": gaps,
                "bridge_added_ms": added,
                "proxy_added_ttft_median_ms": round(
                    ttft["bridge_off"]["median"] - ttft["direct"]["median"], 3
                ),
                "names_seen": {name: sorted(r["names"]) for name, r in results.items()},
                "in_process_us": in_process(body, args.micro),
                "machine": "2 shared cores (about 7 other jobs): loopback timings are noisy",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
