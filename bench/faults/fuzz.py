"""Fault check: hostile input on every route that took it badly. Prints JSON.

    .venv/bin/python -m bench.faults.fuzz

Starts the real server (``ccmem serve``) on a free loopback port with a temporary data
directory, makes a user, a memory and an app, then fires each case of the audit that found
500s: page numbers whose offset overflows a signed 64-bit integer (every paginated route), a
substring filter longer than SQLite's LIKE pattern limit, a lone UTF-16 surrogate in a JSON
body (every route that takes text, REST and MCP), and a batch with one bad item. After each
case the same connection must serve ``GET /api/v1/me``: a case whose connection was closed or
reset counts in ``dropped_connections``. ``responses_500`` and ``dropped_connections`` must be
0; ``unexpected`` lists cases whose status was not the expected one. The server is stopped by
its PID at the end.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

import httpx

from bench.harness.scratch_server import MCP_ACCEPT, scratch_server

HUGE_PAGES = [99999999999999999999, 9223372036854775808, 92233720368547759]
LONE = "lone \\ud800 x"  # JSON text of a string with a lone surrogate escape


def raw(text: str, **headers: str) -> dict[str, Any]:
    return {"content": text.encode(), "headers": {"Content-Type": "application/json", **headers}}


def tool_call(name: str, arguments_json: str) -> str:
    return (
        f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/call",'
        f' "params": {{"name": "{name}", "arguments": {arguments_json}}}}}'
    )


def cases(memory_id: str, app_id: str) -> list[tuple[str, str, str, dict[str, Any], range]]:
    """(name, method, path, request arguments, expected statuses)."""
    refused = range(422, 423)
    out: list[tuple[str, str, str, dict[str, Any], range]] = []
    for page in HUGE_PAGES:
        for method, path, key in [
            ("GET", "/api/v1/memories", "params"),
            ("POST", "/api/v1/memories/filter", "json"),
            ("POST", "/api/v1/memories/browse", "json"),
            ("GET", f"/api/v1/memories/{memory_id}/access-log", "params"),
            ("GET", f"/api/v1/memories/{memory_id}/related", "params"),
            ("GET", "/api/v1/apps", "params"),
            ("GET", f"/api/v1/apps/{app_id}/memories", "params"),
            ("GET", f"/api/v1/apps/{app_id}/accessed", "params"),
            ("GET", "/api/v1/consent/pending", "params"),
            ("GET", "/api/v1/consent/decisions", "params"),
        ]:
            out.append((f"page={page}", method, path, {key: {"page": page}}, refused))
    percents, underscores = "%" * 50_001, "_" * 50_001  # a URL carries "_" unencoded
    out += [
        ("long LIKE", "GET", "/api/v1/memories", {"params": {"search_query": underscores}}, refused),
        ("long LIKE", "POST", "/api/v1/memories/filter", {"json": {"search_query": percents}}, refused),
        ("long LIKE", "POST", "/api/v1/memories/browse", {"json": {"search_query": percents}}, refused),
        ("long LIKE", "GET", "/api/v1/apps", {"params": {"name": underscores}}, refused),
    ]
    mcp = "/mcp/claude-code/http/fuzz"
    for name, method, path, body in [
        ("create", "POST", "/api/v1/memories", f'{{"text": "{LONE}"}}'),
        ("create metadata key", "POST", "/api/v1/memories", f'{{"text": "ok", "metadata": {{"{LONE}": 1}}}}'),
        ("batch", "POST", "/api/v1/memories/batch", f'{{"items": [{{"text": "{LONE}"}}]}}'),
        ("search", "POST", "/api/v1/memories/search", f'{{"query": "{LONE}"}}'),
        ("filter", "POST", "/api/v1/memories/filter", f'{{"search_query": "{LONE}"}}'),
        ("browse", "POST", "/api/v1/memories/browse", f'{{"search_query": "{LONE}"}}'),
        ("update", "PUT", f"/api/v1/memories/{memory_id}", f'{{"memory_content": "{LONE}"}}'),
        ("consent rule", "POST", "/api/v1/consent/rules", f'{{"effect": "allow", "app_pattern": "{LONE}"}}'),
        ("approve", "POST", f"/api/v1/consent/{memory_id}/approve", f'{{"text": "{LONE}"}}'),
        ("mcp add", "POST", mcp, tool_call("add_memories", f'{{"text": "{LONE}"}}')),
        ("mcp search", "POST", mcp, tool_call("search_memory", f'{{"query": "{LONE}"}}')),
    ]:
        headers = MCP_ACCEPT if path.startswith("/mcp/") else {}
        # A batch stores its good items; the bad one gets its own 422 in the 200 answer.
        expected = range(200, 201) if name == "batch" else refused
        out.append((f"surrogate {name}", method, path, raw(body, **headers), expected))
    out.append(
        (
            "surrogate bytes",
            "POST",
            "/api/v1/memories",
            {"content": b'{"text": "\xed\xa0\x80"}', "headers": {"Content-Type": "application/json"}},
            refused,
        )
    )
    out.append(
        ("surrogate query string", "GET", "/api/v1/memories?search_query=%ED%A0%80", {}, range(200, 201))
    )
    out.append(
        (
            "batch one bad item",
            "POST",
            "/api/v1/memories/batch",
            {"json": {"items": [{"text": 5}, {"text": "a good item"}]}},
            range(200, 201),
        )
    )
    return out


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    with scratch_server("ccmem-fuzz-", "fuzz") as (base, token):
        report = fire(base, token)
    print(json.dumps(report, indent=2))


def fire(base: str, token: str) -> dict[str, Any]:
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
        memory = http.post("/api/v1/memories", json={"text": "The fuzz user deploys on Fridays"}).json()
        http.post("/api/v1/memories/search", json={"query": "deploy"})
        statuses: Counter[str] = Counter()
        dropped, unexpected, count = 0, [], 0
        for name, method, path, kwargs, expected in cases(memory["id"], memory["app_id"]):
            count += 1
            try:
                response = http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                statuses["no response"] += 1
                dropped += 1
                unexpected.append({"case": name, "path": path, "status": repr(exc)})
                continue
            statuses[str(response.status_code)] += 1
            if response.status_code not in expected:
                unexpected.append({"case": name, "path": path.split("?")[0], "status": response.status_code})
            try:
                following = http.get("/api/v1/me")
                closed = response.headers.get("connection") == "close" or following.status_code != 200
            except httpx.TransportError:
                closed = True
            dropped += closed
    return {
        "cases": count,
        "status_counts": dict(sorted(statuses.items())),
        "responses_500": sum(n for status, n in statuses.items() if status.startswith("5")),
        "dropped_connections": dropped,
        "unexpected": unexpected,
    }


if __name__ == "__main__":
    main()
