"""Conversation-aware search through REST and MCP: neighbouring turns as context, and dates
named in a query ranking what happened then (real server, real stores)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.chat import ABOUT_THE_REPLY, ABOUT_THE_USER, PLANT_CHAT
from tests.support.in_process import InProcessServer
from tests.support.server import MemoryServer
from tests.support.servers import ApiServer, StartServer


@pytest.fixture(scope="module")
def srv(start_module_server: StartServer) -> ApiServer:
    return start_module_server(in_process=True)


def fresh_user(server: ApiServer) -> tuple[str, str, httpx.Client]:
    user = f"u{uuid.uuid4().hex[:10]}"
    token = server.make_token(user)
    c = server.client(token)
    return user, token, c


def store_session(c: httpx.Client, conversation: str, day: str, turns: list[str]) -> list[str]:
    response = c.post(
        "/api/v1/memories/batch",
        json={
            "app": "chat",
            "items": [
                {"text": t, "conversation_id": conversation, "captured_at": f"{day}T10:{i:02d}:00Z"}
                for i, t in enumerate(turns)
            ],
        },
    )
    assert response.status_code == 200 and response.json()["failed"] == 0, response.text
    return [o["results"][0]["id"] for o in response.json()["results"]]


def search(c: httpx.Client, query: str, **extra: object) -> list[dict]:
    response = c.post("/api/v1/memories/search", json={"query": query, "app": "chat", **extra})
    assert response.status_code == 200, response.text
    return response.json()["results"]


def test_a_hit_brings_its_neighbouring_turns_in_order(srv: ApiServer) -> None:
    _, _, c = fresh_user(srv)
    ids = store_session(
        c,
        "s1",
        "2024-03-02",
        [
            "Ann: I finally adopted a dog last weekend.",
            "Ben: That's great news! What breed is it?",
            "Ann: A three-legged greyhound named Biscuit.",
            "Ben: Biscuit is a lovely name for a greyhound.",
            "Ann: He sleeps twenty hours a day.",
        ],
    )
    store_session(c, "s2", "2024-03-09", ["Ann: My sourdough starter died again.", "Ben: Oh no."])
    hits = search(c, "three-legged greyhound Biscuit", limit=1, context=2)
    assert hits[0]["id"] == ids[2]
    context = hits[0]["context"]
    assert [m["id"] for m in context["before"]] == ids[0:2]
    assert [m["id"] for m in context["after"]] == ids[3:5]
    assert context["before"][0]["captured_at"] == "2024-03-02T10:00:00Z"
    # The first turn has nothing before it; another conversation never leaks in.
    first = search(c, "adopted a dog last weekend", limit=1, context=3)[0]
    assert first["id"] == ids[0] and first["context"]["before"] == []
    assert [m["id"] for m in first["context"]["after"]] == ids[1:4]
    # Without context the result has no context key (OpenMemory's shape), and bad values are 422.
    assert "context" not in search(c, "greyhound", limit=1)[0]
    for bad in (-1, 6, "two"):
        assert c.post("/api/v1/memories/search", json={"query": "dog", "context": bad}).status_code == 422


TRIP = [
    "Ann: We just got back from two weeks of hiking in Patagonia.",
    "Ben: Welcome back! How was the weather?",
    "Ann: Windy every single day, but dry.",
    "Ben: Did you camp or stay in huts?",
    "Ann: Mostly camping, we carried everything ourselves.",
    "Ben: That sounds exhausting.",
    "Ann: Seeing the glacier calve into the lake was unforgettable.",
]
LOOSE = [
    "Ann: My favourite moment of the concert was the encore.",
    "Ann: My favourite moment of the wedding was the first dance.",
    "Ann: I want to go hiking in the Alps next summer.",
    "Ann: The best trip I ever took was to Lisbon.",
]


def ranked_trip(server: ApiServer) -> tuple[list[str], list[str], list[str]]:
    """One user's trip conversation and loose memories; the ids a search for "Patagonia" ranks."""
    _, _, c = fresh_user(server)
    trip = store_session(c, "trip", "2024-05-02", TRIP)
    response = c.post("/api/v1/memories/batch", json={"app": "chat", "items": [{"text": t} for t in LOOSE]})
    assert response.status_code == 200 and response.json()["failed"] == 0, response.text
    loose = [o["results"][0]["id"] for o in response.json()["results"]]
    return trip, loose, [h["id"] for h in search(c, "Patagonia", limit=20)]


@pytest.mark.integration
def test_the_conversation_of_the_best_hit_ranks_together(tmp_path: Path) -> None:
    # The length prior is off on both sides: it moves the trip's short turns ("That sounds
    # exhausting.") below the longer loose memories, which is its own test's business.
    # With search.conversation_share off, the retrievers put a loose memory about hiking above
    # turns of the trip the best hit comes from ...
    no_prior = {"CCMEM_SEARCH__LENGTH_PRIOR": "0"}
    off = InProcessServer(tmp_path / "off", env=no_prior | {"CCMEM_SEARCH__CONVERSATION_SHARE": "0"})
    off.start()
    try:
        trip, loose, ranked = ranked_trip(off)
    finally:
        off.stop()
    assert ranked[0] == trip[0]
    alps = ranked.index(loose[2])
    assert alps < ranked.index(trip[6]), "the data no longer shows what the share changes"
    # ... with the default share, every turn of that trip ranks above every loose memory.
    on = InProcessServer(tmp_path / "on", env=no_prior)
    on.start()
    try:
        trip, loose, ranked = ranked_trip(on)
    finally:
        on.stop()
    assert ranked[0] == trip[0]
    assert set(ranked[: len(TRIP)]) == set(trip)
    assert set(ranked[len(TRIP) :]) <= set(loose)


def test_a_date_in_the_query_ranks_what_happened_then(srv: ApiServer) -> None:
    _, _, c = fresh_user(srv)
    june = store_session(c, "june", "2023-06-17", ["Mel: We went camping by the lake with the kids."])
    july = store_session(c, "july", "2023-07-22", ["Mel: We went camping in the mountains with the kids."])
    for n in range(8):
        store_session(c, f"other{n}", f"2023-0{n % 5 + 1}-0{n + 1}", [f"Mel: Camping gear list number {n}."])
    assert search(c, "When did Mel go camping in July?", limit=1)[0]["id"] == july[0]
    assert search(c, "When did Mel go camping in June?", limit=1)[0]["id"] == june[0]
    assert search(c, "camping trip on 22 July 2023", limit=1)[0]["id"] == july[0]
    hit = search(c, "camping in June 2023", limit=1)[0]
    assert hit["id"] == june[0] and hit["provenance"]["captured_at"] == "2023-06-17T10:00:00Z"


def test_mcp_search_memory_takes_context_and_shows_when(shared_server: MemoryServer) -> None:
    srv = shared_server  # an MCP client over HTTP needs a port
    user, token, c = fresh_user(srv)
    ids = store_session(
        c, "talk", "2024-05-01", ["Q: Which port does the API use?", "A: It listens on 8765.", "Q: Thanks!"]
    )

    async def call() -> dict:
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        url = f"{srv.base_url}/mcp/chat/http/{user}"
        async with (
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            result = await session.call_tool(
                "search_memory", {"query": "It listens on 8765", "limit": 1, "context": 1}
            )
            bad = await session.call_tool("search_memory", {"query": "x", "context": 9})
            assert bad.is_error
            return json.loads(result.content[0].text)

    import anyio

    item = anyio.run(call)["results"][0]
    assert item["id"] == ids[1] and item["captured_at"] == "2024-05-01T10:01:00Z"
    assert [m["id"] for m in item["context"]["before"]] == [ids[0]]
    assert [m["id"] for m in item["context"]["after"]] == [ids[2]]


def test_chat_turns_with_roles_answer_by_whom_the_question_is_about(srv: ApiServer) -> None:
    # One memory per turn, written one at a time (the single-write path) with its role in
    # metadata, as a chat client stores them.
    _, _, c = fresh_user(srv)
    ids = []
    for n, (role, text) in enumerate(PLANT_CHAT):
        response = c.post(
            "/api/v1/memories/",
            json={
                "text": text,
                "app": "chat",
                "metadata": {"role": role},
                "conversation_id": "plants",
                "captured_at": f"2023-05-20T20:05:0{n}Z",
            },
        )
        assert response.status_code == 200, response.text
        ids.append(response.json()["id"])
    about_me = search(c, ABOUT_THE_USER)
    assert about_me[0]["id"] == ids[0] and about_me[0]["metadata"]["role"] == "user"
    about_reply = search(c, ABOUT_THE_REPLY)
    assert about_reply[0]["id"] in ids[1:]


def test_project_and_date_filters_apply_inside_both_retrievers(srv: ApiServer) -> None:
    _, _, c = fresh_user(srv)

    def add(text: str, project: str) -> str:
        response = c.post("/api/v1/memories/", json={"text": text, "app": "chat", "project": project})
        assert response.status_code == 200, response.text
        return response.json()["id"]

    web = add("The deploy script for zq-frontend lives in scripts/deploy.sh", "/src/web")
    api = add("The deploy script for zq-backend lives in tools/ship.py", "/src/api")
    only_web = search(c, "deploy script zq", project="/src/web")
    assert [h["id"] for h in only_web] == [web]
    assert [h["id"] for h in search(c, "deploy script zq", project="/src/none")] == []
    created = c.get(f"/api/v1/memories/{api}").json()["created_at"]
    later = search(c, "deploy script zq", from_date=created + 3600)
    assert later == []
    window = search(c, "deploy script zq", from_date=created - 3600, to_date=created + 3600)
    assert {h["id"] for h in window} == {web, api}
    assert c.post("/api/v1/memories/search", json={"query": "x", "from_date": 10**13}).status_code == 422
