"""Fault check: nested, huge and malformed JSON on every route that takes a body. Prints JSON.

    .venv/bin/python -m bench.faults.nested_json [--depth 50000]

Starts the real server (``ccmem serve``) on a free loopback port with a temporary data
directory, reads its routes from ``/openapi.json`` (every POST, PUT, PATCH and DELETE; path
parameters get a real memory's id) and adds the MCP endpoint's POST routes for both transports
(streamable HTTP, and the SSE transport's message path of a live SSE session). Each route gets:
``--depth`` levels of arrays, of objects, the same inside a valid-looking field, ``--depth``
brackets never closed, one level over the server's limit, bodies over the size cap, and
malformed ones (cut short, invalid UTF-8, empty).

Must be 0: ``responses_500``; ``dropped_connections`` (after each case the same connection
must serve ``GET /api/v1/me``); ``hook_answers_not_empty`` (the Claude Code hook route answers
200 ``{}`` to every such body); ``wrong_shape`` (any other refusal is a 4xx in the error shape
``{"detail", "error"}``; the MCP streamable transport may answer a JSON-RPC error instead);
``memories_changed`` (nothing is stored by any of it). ``check_cost`` is what the depth check
costs in process on ordinary bodies, beside ``json.loads`` of the same body. The server is
stopped by its PID at the end.
"""

from __future__ import annotations

import argparse
import json
import queue
import threading
import timeit
from collections import Counter
from typing import Any

import httpx

from bench.harness.scratch_server import MCP_ACCEPT, scratch_server
from claude_code_memory.api.json_guard import MAX_JSON_DEPTH, nesting_exceeds
from claude_code_memory.config import load_settings

HOOK_PATH = "/api/v1/hooks/claude-code"


def bodies(depth: int, max_body: int) -> dict[str, bytes]:
    over = MAX_JSON_DEPTH + 1
    return {
        "nested arrays": b"[" * depth + b"]" * depth,
        "nested objects": b'{"a":' * depth + b"1" + b"}" * depth,
        "nested in a field": b'{"text": "x", "metadata": ' + b"[" * depth + b"]" * depth + b"}",
        "nested hook input": b'{"hook_event_name": "Stop", "session_id": "s", "x": '
        + b"[" * depth
        + b"]" * depth
        + b"}",
        "never closed": b"[" * depth,
        "one level over the limit": b'{"text": "x", "metadata": {"a": '
        + b"[" * (over - 2)
        + b"]" * (over - 2)
        + b"}}",
        "over the size cap": b'{"text": "' + b"a" * (max_body + 1024) + b'"}',
        "over the size cap, nested": b"[" * (max_body // 2 + 1024) + b"]" * (max_body // 2 + 1024),
        "cut short": b'{"text": "x"',
        "no value": b'{"text": }',
        "invalid UTF-8": b'{"text": "bad \xff bytes"}',
        "empty": b"",
    }


class SseSession:
    """An open SSE stream of the MCP endpoint; ``path`` is the message path it announced."""

    def __init__(self, base: str, token: str) -> None:
        self._announced: queue.Queue[str] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(base, token), daemon=True)
        self._thread.start()
        self.path = self._announced.get(timeout=60)

    def _run(self, base: str, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        with (
            httpx.Client(base_url=base, timeout=None) as client,
            client.stream("GET", "/mcp/claude-code/sse/fuzz", headers=headers) as stream,
        ):
            for line in stream.iter_lines():
                if line.startswith("data: /"):
                    self._announced.put(line[len("data: ") :])
                if self._stop.is_set():
                    return

    def close(self) -> None:
        self._stop.set()


def routes(http: httpx.Client, memory_id: str) -> list[tuple[str, str]]:
    spec = http.get("/openapi.json").json()
    found = []
    for path, operations in spec["paths"].items():
        for method in operations:
            if method.upper() in ("POST", "PUT", "PATCH", "DELETE"):
                filled = path
                while "{" in filled:
                    start, end = filled.index("{"), filled.index("}")
                    filled = filled[:start] + memory_id + filled[end + 1 :]
                found.append((method.upper(), filled))
    return found


def error_shaped(response: httpx.Response, mcp: bool) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    if isinstance(body, dict) and isinstance(body.get("detail"), str) and isinstance(body.get("error"), str):
        return True
    return mcp and isinstance(body, dict) and body.get("jsonrpc") == "2.0" and "error" in body


def fire(base: str, token: str, depth: int, max_body: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=120) as http:
        memory = http.post("/api/v1/memories", json={"text": "The fuzz user deploys on Fridays"}).json()
        targets = routes(http, memory["id"])
        sse = SseSession(base, token)
        targets += [("POST", "/mcp/claude-code/http/fuzz"), ("POST", sse.path)]

        def stored() -> Any:
            listed = http.get("/api/v1/memories", params={"size": 100}).json()
            pending = http.get("/api/v1/consent/pending").json()
            return sorted(item["id"] for item in listed["items"]), pending.get("total")

        before = stored()
        statuses: Counter[str] = Counter()
        problems: dict[str, list[dict[str, Any]]] = {
            "dropped_connections": [],
            "hook_answers_not_empty": [],
            "wrong_shape": [],
            "responses_500": [],
        }
        cases = 0
        for name, body in bodies(depth, max_body).items():
            for method, path in targets:
                cases += 1
                mcp = path.startswith("/mcp/")
                case = {"case": name, "route": f"{method} {path.split('?')[0]}"}
                extra = {"Content-Type": "application/json", **(MCP_ACCEPT if mcp else {})}
                try:
                    response = http.request(method, path, content=body, headers=extra)
                except httpx.TransportError as exc:
                    problems["dropped_connections"].append({**case, "error": repr(exc)})
                    continue
                statuses[str(response.status_code)] += 1
                if response.status_code >= 500:
                    problems["responses_500"].append({**case, "status": response.status_code})
                if path == HOOK_PATH:
                    if response.status_code != 200 or response.content.strip() != b"{}":
                        problems["hook_answers_not_empty"].append(
                            {**case, "status": response.status_code, "body": response.text[:200]}
                        )
                elif response.status_code >= 400 and not error_shaped(response, mcp):
                    shape = {**case, "status": response.status_code, "body": response.text[:200]}
                    problems["wrong_shape"].append(shape)
                try:
                    following = http.get("/api/v1/me")
                    if response.headers.get("connection") == "close" or following.status_code != 200:
                        problems["dropped_connections"].append({**case, "closed": True})
                except httpx.TransportError as exc:
                    problems["dropped_connections"].append({**case, "error": repr(exc)})
        after = stored()
        sse.close()
    return {
        "cases": cases,
        "routes": len(targets),
        "depth": depth,
        "status_counts": dict(sorted(statuses.items())),
        **{key: len(found) for key, found in problems.items()},
        "memories_changed": int(before != after),
        "examples": {key: found[:5] for key, found in problems.items() if found},
    }


def check_cost() -> dict[str, Any]:
    """Microseconds per call of the depth check and of ``json.loads``, on ordinary bodies."""
    create = json.dumps({"text": "Alice deploys with Kubernetes on Fridays " * 5, "metadata": {"k": "v"}})
    long_text = json.dumps({"text": "word " * 2000, "app": "claude-code"})
    item = {"text": "a memory of the batch " * 20, "metadata": {"source": {"file": "a.py", "lines": [1, 2]}}}
    batch = json.dumps({"items": [item] * 500})
    hook = json.dumps(
        {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "fix [the] {bug} " * 200}
    )
    out = {}
    for name, text in {
        "create": create,
        "10 KB text": long_text,
        "batch of 500": batch,
        "hook": hook,
    }.items():
        body = text.encode()
        runs = 200 if len(body) > 100_000 else 5000
        check = timeit.timeit(lambda body=body: nesting_exceeds(body), number=runs) / runs * 1e6
        parse = timeit.timeit(lambda body=body: json.loads(body), number=runs) / runs * 1e6
        out[name] = {"bytes": len(body), "check_us": round(check, 2), "json_loads_us": round(parse, 2)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=50_000)
    args = parser.parse_args()
    max_body = load_settings(environ={}).server.max_body_bytes
    with scratch_server("ccmem-nested-", "fuzz") as (base, token):
        report = fire(base, token, args.depth, max_body)
    report["check_cost"] = check_cost()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
