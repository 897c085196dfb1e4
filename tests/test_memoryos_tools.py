"""MemoryOS's and min-memory's MCP tools on the real server, over both transports with the
official MCP SDK; the profile's REST routes (a deleted fact stays deleted); the SessionStart
briefing with the profile; and the short-term tier answering while the vector store is down."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client

from tests.support.fake_qdrant import FakeQdrant
from tests.support.server import MemoryServer
from tests.test_mcp import TRANSPORTS, bearer, connect, failed, new_user, ok, run

pytestmark = pytest.mark.timeout(300)

MEMORYOS_TOOLS = {"add_memory", "retrieve_memory", "get_user_profile"}
MIN_MEMORY_TOOLS = {"store_memory", "retrieve_context", "fetch", "get_context_info"}


@pytest.fixture(scope="module")
def qdrant() -> Iterator[FakeQdrant]:
    with FakeQdrant() as server:
        yield server


@pytest.fixture(scope="module")
def memory_server(tmp_path_factory: pytest.TempPathFactory, qdrant: FakeQdrant) -> Iterator[MemoryServer]:
    # Vectors behind a (fake) Qdrant server, so that the last test can take them away.
    env = {"QDRANT_URL": qdrant.url}
    with MemoryServer(tmp_path_factory.mktemp("memoryos-server"), env=env) as server:
        yield server


async def call(session: Client, tool: str, **arguments: Any) -> Any:
    text = ok(await session.call_tool(tool, arguments))
    try:
        return json.loads(text)
    except ValueError:
        return text


async def add_pairs(session: Client, pairs: list[tuple[str, str]], conversation: str) -> None:
    for said, reply in pairs:
        answer = await call(
            session,
            "add_memory",
            user_input=said,
            agent_response=reply,
            meta_data={"conversation_id": conversation},
        )
        assert answer["status"] == "success" and answer["details"]["conversation_id"] == conversation


PAIRS = [
    ("I prefer tabs over spaces.", "Noted, tabs it is."),
    ("Can you rename the config loader?", "Renamed it to settings.py."),
    ("I use Neovim as my editor.", "I will suggest Neovim keybindings."),
    ("Run the test suite please.", "All 212 tests pass."),
    ("What does the flaky test do?", "The retry queue lives in worker/queue.py."),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_memoryos_tools_store_pairs_and_answer_from_the_three_tiers(
    memory_server: MemoryServer, transport: str
) -> None:
    user, token = new_user(memory_server, "os")
    conversation = f"conv-{uuid.uuid4().hex[:6]}"

    async def scenario() -> None:
        async with connect(memory_server, transport, user, token) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) >= MEMORYOS_TOOLS | MIN_MEMORY_TOOLS
            assert set(tools["add_memory"].input_schema["required"]) == {"user_input", "agent_response"}
            assert set(tools["add_memory"].input_schema["properties"]) == {
                "user_input",
                "agent_response",
                "timestamp",
                "meta_data",
            }
            assert set(tools["retrieve_memory"].input_schema["properties"]) == {
                "query",
                "relationship_with_user",
                "style_hint",
                "max_results",
            }
            assert set(tools["get_user_profile"].input_schema["properties"]) == {
                "include_knowledge",
                "include_assistant_knowledge",
            }

            await add_pairs(session, PAIRS, conversation)
            # Reading the profile brings the tiers up to date (a retrieval refreshes them after it answers).
            profile = await call(session, "get_user_profile", include_assistant_knowledge=True)
            answer = await call(session, "retrieve_memory", query="which editor do I use?", max_results=3)
            assert answer["status"] == "success" and answer["query"] == "which editor do I use?"
            # Short-term: the conversation's turns in order, MemoryOS's page shape.
            assert [t["user_input"] for t in answer["short_term_memory"]] == [p[0] for p in PAIRS]
            assert answer["short_term_memory"][0]["agent_response"] == PAIRS[0][1]
            assert answer["short_term_count"] == 5 and "degraded" not in answer
            for key in ("retrieved_pages", "retrieved_user_knowledge", "retrieved_assistant_knowledge"):
                assert isinstance(answer[key], list)
            # Five turns in one segment are hot (5 + recency >= 5): promoted into the profile.
            knowledge = [k["knowledge"] for k in answer["retrieved_user_knowledge"]]
            assert knowledge[0] == "I use Neovim as my editor."  # the fact sharing the query's words
            assert set(knowledge) == {"I prefer tabs over spaces.", "I use Neovim as my editor."}
            assert {"knowledge", "timestamp"} <= set(answer["retrieved_user_knowledge"][0])
            assert "Preferences: I prefer tabs over spaces." in answer["user_profile"]

            assert profile["user_id"] == user and profile["user_knowledge_count"] == 2
            assert [k["knowledge"] for k in profile["assistant_knowledge"]] == [
                "The retry queue lives in worker/queue.py."
            ]
            # A new conversation: short-term is its turn; the first one's turns are mid-term pages.
            await add_pairs(session, [("Let us talk about lunch.", "Sure.")], conversation + "-2")
            answer = await call(session, "retrieve_memory", query="which editor do I use?", max_results=3)
            assert [t["user_input"] for t in answer["short_term_memory"]] == ["Let us talk about lunch."]
            [page, *_] = answer["retrieved_pages"]
            assert page["user_input"] == "I use Neovim as my editor." and len(answer["retrieved_pages"]) == 3
            assert page["agent_response"] == "I will suggest Neovim keybindings." and page["timestamp"]
            assert page["meta_info"]["conversation_id"] == conversation and page["meta_info"]["heat"] >= 5

            bare = await call(session, "get_user_profile", include_knowledge=False)
            assert "user_knowledge" not in bare and "assistant_knowledge" not in bare

            assert "non-empty" in failed(
                await session.call_tool("add_memory", {"user_input": " ", "agent_response": "x"})
            )
            assert "timestamp" in failed(
                await session.call_tool(
                    "add_memory", {"user_input": "a", "agent_response": "b", "timestamp": "yesterday"}
                )
            )
            assert "max_results" in failed(
                await session.call_tool("retrieve_memory", {"query": "x", "max_results": 0})
            )

    run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_min_memory_tools_store_retrieve_and_fetch(memory_server: MemoryServer, transport: str) -> None:
    user, token = new_user(memory_server, "mm")

    async def scenario() -> None:
        async with connect(memory_server, transport, user, token) as session:
            stored = await call(
                session,
                "store_memory",
                text="The billing service retries webhooks three times",
                memory_type="project_context",
                scope="project",
                entity="billing",
                project="shop",
                tags=["webhooks"],
            )
            assert stored["status"] == "stored"
            other = await call(
                session,
                "store_memory",
                text="The billing export runs nightly",
                scope="project",
                project="crm",
            )
            context = await call(session, "retrieve_context", query="billing webhooks", project="shop")
            assert [c["id"] for c in context] == [stored["memory_id"]]  # the other project's is left out
            [hit] = context
            assert (hit["memory_type"], hit["scope"], hit["entity"], hit["project"], hit["tags"]) == (
                "project_context",
                "project",
                "billing",
                "shop",
                ["webhooks"],
            )
            assert await call(session, "fetch", id=other["memory_id"]) == "The billing export runs nightly"
            info = await call(session, "get_context_info")
            assert info["user"] == user and info["platform"] == "http"
            again = await call(session, "store_memory", text="The billing export runs nightly")
            assert again == {"memory_id": other["memory_id"], "status": "already_existed"}
            assert "project is required" in failed(
                await session.call_tool("store_memory", {"text": "x", "scope": "task"})
            )
            assert "not found" in failed(await session.call_tool("fetch", {"id": str(uuid.uuid4())}))

    run(scenario)


def test_rest_profile_edit_and_delete_and_a_deleted_fact_stays_deleted(memory_server: MemoryServer) -> None:
    user, token = new_user(memory_server, "rest")
    other, other_token = new_user(memory_server, "other")
    with httpx.Client(base_url=memory_server.base_url, headers=bearer(token), timeout=60) as c:
        for text in ("My name is Dana Whitfield.", "I prefer pytest to unittest.", "We use PostgreSQL 16."):
            assert c.post("/api/v1/memories", json={"text": text, "app": "chat"}).status_code == 200
        profile = c.get("/api/v1/profile").json()
        facts = {f["text"]: f for f in profile["facts"]}
        assert set(facts) == {
            "My name is Dana Whitfield.",
            "I prefer pytest to unittest.",
            "We use PostgreSQL 16.",
        }
        assert profile["summary"].startswith("Identity: My name is Dana Whitfield.")
        assert facts["I prefer pytest to unittest."]["memory_ids"]

        pytest_fact = facts["I prefer pytest to unittest."]["id"]
        assert c.delete(f"/api/v1/profile/facts/{pytest_fact}").status_code == 204
        edited = c.patch(
            f"/api/v1/profile/facts/{facts['We use PostgreSQL 16.']['id']}",
            json={"text": "We use PostgreSQL 17."},
        )
        assert edited.status_code == 200 and edited.json()["source"] == "user"

        # Said again in new memories: neither the deleted fact nor the edited wording returns.
        for text in ("I prefer pytest to unittest!", "we use postgresql 16"):
            assert c.post("/api/v1/memories", json={"text": text, "app": "chat"}).status_code == 200
        assert c.post("/api/v1/profile/refresh").status_code == 200
        texts = {f["text"] for f in c.get("/api/v1/profile").json()["facts"]}
        assert texts == {"My name is Dana Whitfield.", "We use PostgreSQL 17."}

        # Bad input changes nothing; another user's fact is not found.
        assert (
            c.patch(f"/api/v1/profile/facts/{facts['My name is Dana Whitfield.']['id']}", json={}).status_code
            == 422
        )
        assert c.patch(f"/api/v1/profile/facts/{pytest_fact}", json={"text": "x y z"}).status_code == 404
        assert c.get("/api/v1/profile", params={"category": "nonsense"}).status_code == 422
        assert c.delete("/api/v1/profile/facts/not-a-uuid").status_code == 422
        assert c.get("/api/v1/profile", params={"subject": "user"}).json()["total"] == 2
    with httpx.Client(base_url=memory_server.base_url, headers=bearer(other_token), timeout=60) as c:
        name_fact = facts["My name is Dana Whitfield."]["id"]
        assert c.delete(f"/api/v1/profile/facts/{name_fact}").status_code == 404
        assert c.get("/api/v1/profile").json()["facts"] == []
        assert c.get("/api/v1/profile", params={"user_id": user}).status_code == 403
        assert c.get("/api/v1/tiers/segments").json() == {"items": [], "total": 0}


def test_the_session_start_briefing_gives_the_profile(memory_server: MemoryServer, tmp_path: Any) -> None:
    user, token = new_user(memory_server, "brief")
    with httpx.Client(base_url=memory_server.base_url, headers=bearer(token), timeout=60) as c:
        assert (
            c.post(
                "/api/v1/memories", json={"text": "I always write tests first.", "app": "chat"}
            ).status_code
            == 200
        )
        assert c.post("/api/v1/profile/refresh").json()["new_facts"] == 1
        answer = c.post(
            "/api/v1/hooks/claude-code",
            json={
                "hook_event_name": "SessionStart",
                "session_id": "s1",
                "source": "startup",
                "cwd": str(tmp_path),
            },
        ).json()
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "User profile:\n- I always write tests first.\n" in context
    assert len(context) <= 1200


def test_the_short_term_tier_answers_while_the_vector_store_is_down(
    memory_server: MemoryServer, qdrant: FakeQdrant
) -> None:
    """Last in the module: it stops the module's vector server."""
    user, token = new_user(memory_server, "down")

    async def scenario() -> None:
        async with connect(memory_server, "http", user, token) as session:
            await add_pairs(session, PAIRS[:2], "c-down")
            qdrant.stop()  # every vector search now fails
            answer = await call(session, "retrieve_memory", query="tabs or spaces")
            assert [t["user_input"] for t in answer["short_term_memory"]] == [p[0] for p in PAIRS[:2]]
            assert answer["retrieved_pages"] == [] and "mid-term pages unavailable" in answer["degraded"]
            # ... as a plain search, which needs the vectors, cannot.
            assert "cannot be reached" in failed(await session.call_tool("search_memory", {"query": "tabs"}))

    run(scenario)
    with httpx.Client(base_url=memory_server.base_url, headers=bearer(token), timeout=60) as c:
        turns = c.get("/api/v1/tiers/short-term", params={"conversation_id": "c-down"}).json()
        assert turns["total"] == 2
        assert c.post("/api/v1/memories/search", json={"query": "tabs", "app": "chat"}).status_code == 503
