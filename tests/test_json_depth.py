"""Deeply nested JSON: refused before anything parses it, never a 500.

The pure check against a parser's own depth, then a real server: the Claude Code hook route
answers 200 ``{}`` to 50,000 levels (it answered 500 and reset the connection), every other
route that takes a body, REST and both MCP transports, a 422 in the error shape, and a body
as deep as the limit still works.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from claude_code_memory.api.json_guard import MAX_JSON_DEPTH, nesting_exceeds
from tests.support.server import MemoryServer

pytestmark = pytest.mark.timeout(300)

DEEP = 50_000


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(item) for item in value), default=0)
    return 0


def nested(levels: int, rng: random.Random) -> Any:
    """A value ``levels`` deep whose strings are full of brackets, quotes and backslashes."""
    noise = "".join(rng.choice('[]{}"\\ x') for _ in range(rng.randrange(12)))
    if levels == 0:
        return rng.choice([noise, 1, None, True])
    inner = [nested(levels - 1, rng)] + [
        nested(rng.randrange(min(levels, 3)), rng) for _ in range(rng.randrange(3))
    ]
    rng.shuffle(inner)
    if rng.random() < 0.5:
        return inner
    return {f"{noise}{index}": item for index, item in enumerate(inner)}


# -- the check --------------------------------------------------------------------------------
def test_the_check_agrees_with_the_depth_of_the_parsed_value() -> None:
    rng = random.Random(30)
    for _ in range(200):
        value = nested(rng.randrange(MAX_JSON_DEPTH - 5, MAX_JSON_DEPTH + 6), rng)
        body = json.dumps(value, separators=(",", ":") if rng.random() < 0.5 else None).encode()
        assert nesting_exceeds(body) == (depth(value) > MAX_JSON_DEPTH), body[:200]


@pytest.mark.parametrize(
    ("body", "too_deep"),
    [
        (b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH, False),
        (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), True),
        (b'{"a":' * (MAX_JSON_DEPTH + 1) + b"1" + b"}" * (MAX_JSON_DEPTH + 1), True),
        (b"[" * DEEP, True),  # never closed: a parser enters every level before it finds the end
        (b"[" * (MAX_JSON_DEPTH + 1), True),
        (b"]" * DEEP + b"[" * 3, False),
        (b'{"text": "' + b"[" * DEEP + b'"}', False),  # brackets in a string are text
        (b'{"text": "\\" ' + b"[" * DEEP + b'"}', False),  # an escaped quote does not end it
        (b'{"text": "\\\\", "x": ' + b"[" * DEEP + b"]" * DEEP + b"}", True),  # an escaped backslash does
        (b'{"text": "never closed ' + b"[" * DEEP, False),
        (b'["' + b"[" * DEEP, False),
        (b"[]" * DEEP, False),
        (b"", False),
    ],
)
def test_the_check_on_bodies_a_parser_recurses_into(body: bytes, too_deep: bool) -> None:
    assert nesting_exceeds(body) is too_deep


# -- a real server ----------------------------------------------------------------------------
class World:
    def __init__(self, server: MemoryServer) -> None:
        self.server = server
        self.token = server.make_token("deep")
        self.http = httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {self.token}"}, timeout=120
        )
        created = self.http.post("/api/v1/memories", json={"text": "The deep user keeps notes on nesting"})
        assert created.status_code == 200, created.text
        self.memory_id = created.json()["id"]

    def stored(self) -> list[str]:
        listed = self.http.get("/api/v1/memories", params={"size": 100})
        pending = self.http.get("/api/v1/consent/pending")
        return sorted(item["id"] for item in listed.json()["items"]) + [str(pending.json()["total"])]

    def post(self, path: str, body: bytes, **headers: str) -> httpx.Response:
        response = self.http.post(path, content=body, headers={"Content-Type": "application/json", **headers})
        assert response.headers.get("connection") != "close", (path, response.status_code)
        following = self.http.get("/api/v1/me")
        assert following.status_code == 200, following.text
        return response


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with MemoryServer(tmp_path_factory.mktemp("json-depth")) as server:
        yield World(server)


def hook_input(event: str, inside: bytes) -> bytes:
    return (
        f'{{"hook_event_name": "{event}", "session_id": "s1", "cwd": "/tmp", "x": '.encode() + inside + b"}"
    )


@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop", "SessionStart"])
def test_the_hook_route_answers_nested_json_with_an_empty_200(world: World, event: str) -> None:
    before = world.stored()
    for inside in (b"[" * DEEP + b"]" * DEEP, b"[" * DEEP, b'{"a":' * DEEP + b"1" + b"}" * DEEP):
        for body in (inside, hook_input(event, inside)):
            response = world.post("/api/v1/hooks/claude-code", body)
            assert (response.status_code, response.json()) == (200, {}), response.text
    assert world.stored() == before


def test_the_hook_route_answers_any_body_it_cannot_take_with_an_empty_200(world: World) -> None:
    before = world.stored()
    too_big = b'{"hook_event_name": "Stop", "x": "' + b"a" * 2_100_000 + b'"}'
    lone = b'{"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "\\ud800"}'
    for body in (too_big, lone, b'{"hook_event_name": ', b"\xff"):
        response = world.post("/api/v1/hooks/claude-code", body)
        assert (response.status_code, response.json()) == (200, {}), response.text
    assert world.stored() == before


def json_routes(world: World) -> list[tuple[str, str]]:
    spec = world.http.get("/openapi.json").json()
    found = []
    for path, operations in spec["paths"].items():
        for method in operations:
            if method.upper() in ("POST", "PUT", "PATCH", "DELETE") and path != "/api/v1/hooks/claude-code":
                filled = path
                while "{" in filled:
                    start, end = filled.index("{"), filled.index("}")
                    filled = filled[:start] + world.memory_id + filled[end + 1 :]
                found.append((method.upper(), filled))
    return found


def test_every_other_route_refuses_nested_json_with_422_in_the_error_shape(world: World) -> None:
    before = world.stored()
    routes = json_routes(world)
    assert len(routes) > 30, routes
    mcp = [("POST", "/mcp/claude-code/http/deep"), ("POST", f"/mcp/messages/?session_id={uuid.uuid4().hex}")]
    for method, path in routes + mcp:
        for body in (b"[" * DEEP + b"]" * DEEP, b'{"text": "x", "metadata": ' + b"[" * DEEP + b"}"):
            response = world.http.request(
                method,
                path,
                content=body,
                headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
            )
            assert response.status_code == 422, (method, path, response.status_code, response.text[:300])
            answer = response.json()
            assert answer["error"] == "bad_input" and f"deeper than {MAX_JSON_DEPTH}" in answer["detail"], (
                answer
            )
    assert world.http.get("/api/v1/me").status_code == 200
    assert world.stored() == before


def test_a_body_as_deep_as_the_limit_is_stored_and_read_back(world: World) -> None:
    metadata: dict[str, Any] = {}
    innermost = metadata
    for _ in range(MAX_JSON_DEPTH - 2):  # the body and the metadata object are two levels
        innermost["a"] = {}
        innermost = innermost["a"]
    body = json.dumps({"text": "A note with deep metadata", "metadata": metadata}).encode()
    assert not nesting_exceeds(body)
    created = world.post("/api/v1/memories", body)
    assert created.status_code == 200, created.text
    read = world.http.get(f"/api/v1/memories/{created.json()['id']}")
    assert read.status_code == 200 and depth(read.json()["metadata_"]) == MAX_JSON_DEPTH - 1, read.text
    over = json.dumps({"text": "One level more", "metadata": {"b": metadata}}).encode()
    assert world.post("/api/v1/memories", over).status_code == 422
