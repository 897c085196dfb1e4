"""Hostile input against the real server: every refusal is a 4xx in the one error shape, the
connection keeps serving, and nothing changes.

The cases come from an attack audit that found 500s (and a dropped connection after each):
page numbers whose offset overflows SQLite's 64-bit integer, a LIKE pattern too long for
SQLite, and a lone UTF-16 surrogate escape in valid JSON. Also here: a batch whose bad item
fails alone, one answer for "not yours" and "not there", and reads that create no app.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from claude_code_memory.api.paging import MAX_PAGE
from tests.support.server import MemoryServer

pytestmark = pytest.mark.timeout(300)

HUGE_PAGES = [99999999999999999999, 9223372036854775808, MAX_PAGE + 1]
LONE = "lone \\ud800 x"  # the JSON text of a string holding a lone surrogate escape
BOTH_ACCEPTED = {"Accept": "application/json, text/event-stream"}


class World:
    """One server with two users: alice (a memory in app "cursor", read once) and bob."""

    def __init__(self, server: MemoryServer) -> None:
        self.server = server
        self.admin = client(server, server.admin_token)
        self.alice_token = server.make_token("alice")
        self.alice = client(server, self.alice_token)
        self.bob = client(server, server.make_token("bob"))
        created = self.alice.post(
            "/api/v1/memories", json={"text": "Alice deploys with Kubernetes on Fridays", "app": "cursor"}
        )
        assert created.status_code == 200, created.text
        self.memory_id = created.json()["id"]
        self.app_id = created.json()["app_id"]
        found = self.alice.post("/api/v1/memories/search", json={"query": "deploy", "app": "cursor"})
        assert found.status_code == 200 and found.json()["results"], found.text
        bobs = self.bob.post("/api/v1/memories", json={"text": "Bob keeps bees"})
        assert bobs.status_code == 200, bobs.text

    def counts(self) -> dict[str, Any]:
        """What a refused request must leave as it was."""

        def total(path: str, **params: Any) -> int:
            response = self.admin.get(path, params=params)
            assert response.status_code == 200, response.text
            return response.json()["total"]

        memory = self.admin.get(f"/api/v1/memories/{self.memory_id}")
        return {
            "alice": total("/api/v1/memories", user_id="alice", size=1),
            "bob": total("/api/v1/memories", user_id="bob", size=1),
            "apps": [
                a["name"] for a in self.admin.get("/api/v1/apps", params={"page_size": 100}).json()["apps"]
            ],
            "rules": total("/api/v1/consent/rules"),
            "text": memory.json()["text"],
        }


def client(server: MemoryServer, token: str) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


@pytest.fixture(scope="module")
def world(shared_server: MemoryServer) -> World:
    """Over a real connection, on the server the files share: alice and bob are this file's own
    (no other file on it uses those names), and a refused request changes nothing anywhere."""
    return World(shared_server)


def refused(http: httpx.Client, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """The request, which must be refused with a 4xx in the error shape, on a connection that
    then serves the next request."""
    response = http.request(method, path, **kwargs)
    assert 400 <= response.status_code < 500, f"{method} {path}: {response.status_code} {response.text[:300]}"
    body = response.json()
    assert isinstance(body["detail"], str) and body["detail"] and isinstance(body["error"], str), body
    assert response.headers.get("connection") != "close"
    following = http.get("/api/v1/me")
    assert following.status_code == 200, following.text
    return response


def unchanged(world: World, method: str, path: str, who: str = "alice", **kwargs: Any) -> httpx.Response:
    before = world.counts()
    response = refused(getattr(world, who), method, path, **kwargs)
    assert world.counts() == before
    return response


def raw_json(text: str) -> dict[str, Any]:
    return {"content": text.encode(), "headers": {"Content-Type": "application/json"}}


# -- 1. page numbers whose offset does not fit in 64 bits ---------------------------------------------


def paged_routes(world: World, page: int) -> list[tuple[str, str, str, dict[str, Any]]]:
    mid, app = world.memory_id, world.app_id
    return [
        ("alice", "GET", "/api/v1/memories", {"params": {"page": page}}),
        ("alice", "POST", "/api/v1/memories/filter", {"json": {"page": page}}),
        ("alice", "POST", "/api/v1/memories/browse", {"json": {"page": page}}),
        ("alice", "GET", f"/api/v1/memories/{mid}/access-log", {"params": {"page": page}}),
        ("alice", "GET", f"/api/v1/memories/{mid}/related", {"params": {"page": page}}),
        ("alice", "GET", "/api/v1/apps", {"params": {"page": page}}),
        ("alice", "GET", f"/api/v1/apps/{app}/memories", {"params": {"page": page}}),
        ("alice", "GET", f"/api/v1/apps/{app}/accessed", {"params": {"page": page}}),
        ("alice", "GET", "/api/v1/consent/pending", {"params": {"page": page}}),
        ("alice", "GET", "/api/v1/consent/decisions", {"params": {"page": page}}),
    ]


@pytest.mark.parametrize("page", HUGE_PAGES)
def test_a_page_past_the_largest_is_422(world: World, page: int) -> None:
    for who, method, path, kwargs in paged_routes(world, page):
        response = unchanged(world, method, path, who, **kwargs)
        assert response.status_code == 422 and response.json()["error"] == "bad_input", (path, response.text)
        assert "page" in response.json()["detail"], response.text


def test_the_largest_page_is_an_ordinary_empty_page(world: World) -> None:
    for who, method, path, kwargs in paged_routes(world, MAX_PAGE):
        response = getattr(world, who).request(method, path, **kwargs)
        assert response.status_code == 200, (path, response.text)
        body = response.json()
        listed = next(v for k, v in body.items() if isinstance(v, list) and k != "facets")
        assert listed == [] and body["page"] == MAX_PAGE, (path, body)


# -- 2. LIKE patterns too long for SQLite --------------------------------------------------------------


def test_a_long_substring_filter_is_422(world: World) -> None:
    percents = "%" * 50_001
    # A URL carries underscores unencoded (httpx caps a URL's length); each is escaped for LIKE.
    underscores = "_" * 50_001
    for method, path, kwargs in [
        ("GET", "/api/v1/memories", {"params": {"search_query": underscores}}),
        ("POST", "/api/v1/memories/filter", {"json": {"search_query": percents}}),
        ("POST", "/api/v1/memories/browse", {"json": {"search_query": percents}}),
        ("GET", "/api/v1/apps", {"params": {"name": underscores}}),
    ]:
        response = unchanged(world, method, path, **kwargs)
        assert response.status_code == 422, (path, response.text)


def test_substring_filters_match_percent_and_underscore_literally(world: World) -> None:
    listing = world.alice.post("/api/v1/memories/filter", json={"search_query": "%"}).json()
    assert listing["items"] == []  # no memory holds a '%': it is not a wildcard
    listing = world.alice.post("/api/v1/memories/filter", json={"search_query": "kubernetes"}).json()
    assert [item["id"] for item in listing["items"]] == [world.memory_id]
    at_cap = world.alice.get("/api/v1/memories", params={"search_query": "%" * 1000})
    assert at_cap.status_code == 200 and at_cap.json()["items"] == [], at_cap.text


# -- 3. lone surrogates ----------------------------------------------------------------------------------


def surrogate_cases(world: World) -> list[tuple[str, str, dict[str, Any], str]]:
    mid = world.memory_id
    return [
        ("POST", "/api/v1/memories", raw_json(f'{{"text": "{LONE}"}}'), "text"),
        # In an item, the item fails alone (the batch test below); in the envelope, the batch.
        (
            "POST",
            "/api/v1/memories/batch",
            raw_json(f'{{"app": "{LONE}", "items": [{{"text": "x"}}]}}'),
            "app",
        ),
        ("POST", "/api/v1/memories/search", raw_json(f'{{"query": "{LONE}"}}'), "query"),
        ("POST", "/api/v1/memories/filter", raw_json(f'{{"search_query": "{LONE}"}}'), "search_query"),
        ("POST", "/api/v1/memories/browse", raw_json(f'{{"search_query": "{LONE}"}}'), "search_query"),
        ("PUT", f"/api/v1/memories/{mid}", raw_json(f'{{"memory_content": "{LONE}"}}'), "memory_content"),
        (
            "POST",
            "/api/v1/consent/rules",
            raw_json(f'{{"effect": "allow", "app_pattern": "{LONE}"}}'),
            "app_pattern",
        ),
        ("POST", "/api/v1/memories", raw_json(f'{{"text": "ok", "metadata": {{"{LONE}": 1}}}}'), "metadata"),
        ("POST", "/api/v1/memories", raw_json('{"text": "trailing \\udc00"}'), "text"),
        ("POST", "/api/v1/memories", raw_json('{"text": "reversed \\ude00\\ud83d"}'), "text"),
    ]


def test_a_lone_surrogate_is_422_naming_the_field(world: World) -> None:
    for method, path, kwargs, field in surrogate_cases(world):
        response = unchanged(world, method, path, **kwargs)
        assert response.status_code == 422 and response.json()["error"] == "bad_input", (path, response.text)
        assert field in response.json()["detail"], (path, response.text)


def test_invalid_utf8_in_a_body_is_4xx(world: World) -> None:
    for raw in [b'{"text": "bad \xed\xa0\x80 bytes"}', b'{"text": "bad \xff bytes"}']:
        unchanged(
            world, "POST", "/api/v1/memories", content=raw, headers={"Content-Type": "application/json"}
        )


def test_a_surrogate_in_the_query_string_is_not_a_500(world: World) -> None:
    # Percent-decoding replaces bytes that are not UTF-8, so a query string cannot carry one.
    response = world.alice.get("/api/v1/memories?search_query=%ED%A0%80")
    assert response.status_code == 200 and response.json()["items"] == [], response.text


def test_a_lone_surrogate_in_an_mcp_tool_call_is_refused(world: World) -> None:
    call = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call",'
        f' "params": {{"name": "add_memories", "arguments": {{"text": "{LONE}"}}}}}}'
    )
    kwargs = raw_json(call)
    kwargs["headers"] |= BOTH_ACCEPTED
    response = unchanged(world, "POST", "/mcp/claude-code/http/alice", **kwargs)
    assert "params.arguments.text" in response.json()["detail"], response.text


def test_valid_surrogate_pairs_and_escaped_backslashes_are_text(world: World) -> None:
    for text_json, text in [
        ("emoji \\ud83d\\ude00 ok", "emoji \U0001f600 ok"),
        ("not \\\\ud800 one", "not \\ud800 one"),
    ]:
        created = world.bob.post("/api/v1/memories", **raw_json(f'{{"text": "{text_json}"}}'))
        assert created.status_code == 200, created.text
        assert created.json()["content"] == text
        deleted = world.bob.request("DELETE", "/api/v1/memories", json={"memory_ids": [created.json()["id"]]})
        assert deleted.status_code == 200, deleted.text


# -- 4. a batch's bad item fails alone --------------------------------------------------------------


def test_a_bad_batch_item_fails_alone(world: World) -> None:
    before = world.counts()["bob"]
    response = world.bob.post(
        "/api/v1/memories/batch",
        json={
            "items": [{"text": 5}, {"text": "Bob's hives are by the orchard"}, "not an item", {"infer": True}]
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["created"], body["failed"]) == (1, 3)
    results = body["results"]
    assert [r["index"] for r in results] == [0, 1, 2, 3]
    for index in (0, 2, 3):
        assert results[index]["status"] == 422 and results[index]["code"] == "bad_input", results[index]
        assert results[index]["error"], results[index]
    assert "text" in results[0]["error"] and "text" in results[3]["error"]
    assert results[1]["results"][0]["event"] == "ADD"
    assert world.counts()["bob"] == before + 1


def test_a_batch_item_with_a_lone_surrogate_fails_alone_as_the_single_write_would(world: World) -> None:
    before = world.counts()["bob"]
    single = unchanged(world, "POST", "/api/v1/memories", who="bob", **raw_json(f'{{"text": "{LONE}"}}'))
    items = (
        '[{"text": "Bob sells honey at the market"},'
        f' {{"text": "{LONE}"}},'
        f' {{"text": "Bob labels jars by hand", "metadata": {{"note": "{LONE}"}}}},'
        f' "{LONE}",'
        ' {"text": "Bob keeps the smoker in the shed"}]'
    )
    response = world.bob.post("/api/v1/memories/batch", **raw_json(f'{{"items": {items}}}'))
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["created"], body["failed"]) == (2, 3), body
    results = body["results"]
    assert [r["index"] for r in results] == [0, 1, 2, 3, 4]
    assert results[0]["results"][0]["event"] == results[4]["results"][0]["event"] == "ADD"
    # The single write's refusal of the same text, as the batch's per-item error fields.
    assert results[1]["error"] == single.json()["detail"], (results[1], single.text)
    assert results[1]["problems"] == single.json()["problems"]
    for index, field in ((1, "text"), (2, "metadata.note"), (3, "body")):
        assert (results[index]["status"], results[index]["code"]) == (422, "bad_input"), results[index]
        assert [p["field"] for p in results[index]["problems"]] == [field], results[index]
    assert world.counts()["bob"] == before + 2
    # Outside the items, the batch is refused whole.
    for envelope in [f'{{"app": "{LONE}", "items": [{{"text": "x"}}]}}', f'{{"items": [], "{LONE}": 1}}']:
        refusal = unchanged(world, "POST", "/api/v1/memories/batch", who="bob", **raw_json(envelope))
        assert refusal.status_code == 422 and "surrogate" in refusal.json()["detail"], refusal.text


def test_a_malformed_batch_envelope_is_422_whole(world: World) -> None:
    for body in [
        [{"text": "a list, not an object"}],
        {"no_items": []},
        {"items": "x"},
        {"items": []},
        {"items": [{"text": f"item {i}"} for i in range(501)]},
    ]:
        response = unchanged(world, "POST", "/api/v1/memories/batch", who="bob", json=body)
        assert response.status_code == 422, response.text


# -- 5. "not yours" and "not there" give one answer; reads create no app --------------------------------


def same_answer(world: World, path_of: Any, known: str, method: str = "GET") -> None:
    unknown = str(uuid.uuid4())
    theirs = unchanged(world, method, path_of(known), who="bob")
    nothing = unchanged(world, method, path_of(unknown), who="bob")
    assert theirs.status_code == nothing.status_code == 404, (theirs.text, nothing.text)
    assert theirs.json()["detail"].replace(known, "<id>") == nothing.json()["detail"].replace(unknown, "<id>")


def test_another_users_ids_answer_as_unknown_ones(world: World) -> None:
    same_answer(world, lambda i: f"/api/v1/apps/{i}", world.app_id)
    same_answer(world, lambda i: f"/api/v1/apps/{i}/memories", world.app_id)
    same_answer(world, lambda i: f"/api/v1/apps/{i}?is_active=false", world.app_id, "PUT")
    same_answer(world, lambda i: f"/api/v1/memories/{i}", world.memory_id)
    same_answer(world, lambda i: f"/api/v1/memories/{i}/access-log", world.memory_id)
    same_answer(world, lambda i: f"/api/v1/memories/{i}/history", world.memory_id)
    tokens = world.alice.get("/api/v1/tokens").json()["tokens"]
    same_answer(world, lambda i: f"/api/v1/tokens/{i}", tokens[0]["id"], "DELETE")
    assert world.alice.get("/api/v1/me").status_code == 200  # alice's token still works
    # Naming another user outright is a permission question: still 403.
    assert refused(world.bob, "GET", "/api/v1/memories", params={"user_id": "alice"}).status_code == 403


def test_reads_create_no_app(world: World) -> None:
    before = world.counts()
    search = world.alice.post("/api/v1/memories/search", json={"query": "deploy", "app": "ghost-reader"})
    assert search.status_code == 200 and search.json()["results"], search.text
    stranger = world.admin.post(
        "/api/v1/memories/search", json={"user_id": "nobody", "query": "x", "app": "ghost"}
    )
    assert stranger.status_code == 200 and stranger.json()["results"] == [], stranger.text
    for tool, arguments in [("search_memory", {"query": "deploy"}), ("list_memories", {})]:
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        response = world.alice.post("/mcp/ghost-client/http/alice", json=call, headers=BOTH_ACCEPTED)
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert not result["isError"], result
        assert world.memory_id in json.dumps(result)
    assert world.counts() == before
