"""`ClaudeCodeMemoryManager` and `ClaudeCodeWithMemory` against the real server on loopback.

The server runs with its defaults, so consent is on: a captured turn waits in the consent queue
(``GET /api/v1/consent/pending``) unless a standing allow rule lets it through, when it is
stored and searchable. Fallback is tested by stopping the server under a live integration and
starting it again on the same port; "memory off" by pointing at a socket that must see no
connection at all.

The fallback tests stop the module's server, so they come last.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from claude_code_memory.client.conversation_memory import (
    ClaudeCodeMemoryManager,
    ClaudeCodeWithMemory,
    Turn,
    format_context,
    latest_turn,
)
from claude_code_memory.client.mcp_client import TRANSPORTS, Mem0MCPClient
from claude_code_memory.config import Settings
from claude_code_memory.errors import BadInput, Unavailable
from claude_code_memory.memories.recall.context import NOTICE, TAG
from tests.support.server import MemoryServer

pytestmark = pytest.mark.timeout(120)

LOGGER = "claude_code_memory.client.conversation_memory"
RECHECK = 0.2
FACTS = [
    "I drink oolong tea every afternoon",
    "My laptop runs Debian with the Sway window manager",
    "The staging database lives on host pg-staging-2",
    "I write commit messages in the imperative mood",
    "My daughter's football practice is on Tuesdays",
    "I prefer pytest over unittest for new projects",
    "The office wifi password rotates every month",
    "I am allergic to peanuts",
]


@pytest.fixture(scope="module")
def memory_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("manager-server")) as server:
        yield server


@pytest.fixture(scope="module")
def carol(memory_server: MemoryServer) -> tuple[str, str]:
    user = f"carol-{uuid.uuid4().hex[:6]}"
    return user, memory_server.make_token(user)


@pytest.fixture
def client(memory_server: MemoryServer) -> Iterator[Mem0MCPClient]:
    """A client for a user of the test's own, with the admin token (which may act for anyone)."""
    user = f"user-{uuid.uuid4().hex[:8]}"
    with Mem0MCPClient(memory_server.base_url, user, memory_server.admin_token, timeout=10) as client:
        yield client


@pytest.fixture
def carol_client(memory_server: MemoryServer, carol) -> Iterator[Mem0MCPClient]:
    """Carol's own client, with her token: only the owner may read her consent queue."""
    with Mem0MCPClient(memory_server.base_url, *carol, timeout=10) as client:
        client.delete_all()
        yield client


def settings_for(server_url: str, **sections: dict[str, Any]) -> Settings:
    return Settings.model_validate({"mem0": {"mcp": {"base_url": server_url}}, **sections})


def conversation(question: str, answer: str | None = None) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "An older question"},
        {"role": "assistant", "content": "An older answer"},
        {"role": "user", "content": question},
    ]
    if answer is not None:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
    return messages


def pending_texts(server: MemoryServer, token: str) -> list[str]:
    response = httpx.get(
        f"{server.base_url}/api/v1/consent/pending", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200, response.text
    return [item["content"] for item in response.json()["items"]]


# -- the manager --------------------------------------------------------------------------------


def test_process_conversation_recalls_and_queues_the_turn(
    memory_server: MemoryServer, carol, carol_client: Mem0MCPClient
):
    client = carol_client
    for fact in FACTS:
        client.add(fact)
    settings = settings_for(memory_server.base_url, memory={"max_context_memories": 3})
    manager = ClaudeCodeMemoryManager(client, settings, project="/work/demo", conversation_id="c-1")
    question, answer = f"What tea do I drink? ({uuid.uuid4().hex[:6]})", "You drink oolong."

    memories = manager.process_conversation(conversation(question, answer))

    assert 1 <= len(memories) <= 3
    assert memories[0]["memory"] == "I drink oolong tea every afternoon"
    assert manager.last_capture is not None and manager.last_capture.status == "pending"
    assert f"User: {question}\n\nAssistant: {answer}" in pending_texts(memory_server, carol[1])
    # A pending turn is not a memory until approved.
    assert question not in [item["memory"] for item in client.list()]

    manager.process_conversation(conversation(question, answer))
    assert manager.last_capture.status == "duplicate"
    manager.close()


def test_a_turn_an_allow_rule_lets_through_is_stored_and_searchable(
    memory_server: MemoryServer, carol, carol_client: Mem0MCPClient
):
    client = carol_client
    rule = httpx.post(
        f"{memory_server.base_url}/api/v1/consent/rules",
        json={"app_pattern": "notes-*", "effect": "allow"},
        headers={"Authorization": f"Bearer {carol[1]}"},
    )
    assert rule.status_code == 201, rule.text
    manager = ClaudeCodeMemoryManager(client, settings_for(memory_server.base_url), app="notes-cli")
    marker = uuid.uuid4().hex[:8]

    manager.process_conversation(conversation(f"Remember that the build cache key is {marker}"))

    assert manager.last_capture.status == "stored" and manager.last_capture.id
    [hit] = client.search(f"build cache key {marker}", limit=1)
    assert hit["id"] == manager.last_capture.id
    assert hit["memory"] == f"User: Remember that the build cache key is {marker}"
    manager.close()


def test_nothing_is_stored_when_not_asked_to(memory_server: MemoryServer, carol, carol_client: Mem0MCPClient):
    client = carol_client
    before = len(pending_texts(memory_server, carol[1]))
    manager = ClaudeCodeMemoryManager(client, settings_for(memory_server.base_url))
    manager.process_conversation(conversation(f"Question {uuid.uuid4().hex}"), store=False)
    assert manager.last_capture is None
    quiet = ClaudeCodeMemoryManager(
        client, settings_for(memory_server.base_url, memory={"auto_store": False})
    )
    quiet.process_conversation(conversation(f"Question {uuid.uuid4().hex}", "Answer"))
    assert quiet.last_capture is None
    assert len(pending_texts(memory_server, carol[1])) == before
    manager.close()
    quiet.close()


def test_search_on_query_off_recalls_nothing(memory_server: MemoryServer, client):
    client.add("I drink oolong tea every afternoon")
    settings = settings_for(memory_server.base_url, memory={"search_on_query": False, "auto_store": False})
    manager = ClaudeCodeMemoryManager(client, settings)
    assert manager.process_conversation(conversation("What tea do I drink?")) == []
    assert manager.get_context_for_query("What tea do I drink?") == ""
    assert manager.summarize_session()["searches"] == 0
    manager.close()


def test_context_is_the_hooks_labelled_block_above_the_floor_once(memory_server: MemoryServer, client):
    """The manager's recall is the UserPromptSubmit hook's: the same block, floor and once-only."""
    settings = settings_for(memory_server.base_url, memory={"max_context_memories": 3})
    manager = ClaudeCodeMemoryManager(client, settings)
    assert manager.get_context_for_query("what do I drink?") == ""  # no memories yet

    for fact in FACTS:
        client.add(fact)
    question = "What tea do I drink in the afternoon?"
    context = manager.get_context_for_query(question)

    head, notice, *lines, tail = context.splitlines()
    assert (head, tail) == (f'<{TAG} kind="recall">', f"</{TAG}>") and notice == NOTICE
    assert 1 <= len(lines) <= 3 and all(line.startswith("- [id ") for line in lines)
    assert lines[0].endswith("] I drink oolong tea every afternoon")
    assert not any("peanuts" in line or "football" in line for line in lines)  # below the floor
    assert len(context) <= settings.claude_code.prompt_budget
    # Given once per conversation, as the hook gives a memory once per session.
    assert manager.get_context_for_query(question) == ""
    other = ClaudeCodeMemoryManager(client, settings, conversation_id=f"c-{uuid.uuid4().hex[:6]}")
    assert "oolong" in other.get_context_for_query(question)
    manager.close()
    other.close()


def test_the_manager_and_the_hooks_share_a_session(memory_server: MemoryServer, carol, carol_client):
    """A conversation id is a hook session: what the hook gave is not given again by the
    manager, and a turn the manager captured is a duplicate for the Stop hook."""
    user, token = carol
    carol_client.add("The shop deploys with the zebrafinch build tool")
    session = f"s-{uuid.uuid4().hex[:8]}"
    prompt = f"Which build tool does the shop deploy with? ({uuid.uuid4().hex[:6]})"

    def hook(body: dict[str, Any]) -> dict[str, Any]:
        base = {"session_id": session, "cwd": "/nonexistent/shop", "transcript_path": "/dev/null"}
        response = httpx.post(
            f"{memory_server.base_url}/api/v1/hooks/claude-code",
            json=base | body,
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert response.status_code == 200, response.text
        return response.json()

    given = hook({"hook_event_name": "UserPromptSubmit", "prompt": prompt})
    assert "zebrafinch" in given["hookSpecificOutput"]["additionalContext"]
    manager = ClaudeCodeMemoryManager(
        carol_client, settings_for(memory_server.base_url), conversation_id=session
    )
    assert manager.process_conversation(conversation(prompt, "With zebrafinch.")) == []
    assert manager.last_capture.status == "pending"

    hook({"hook_event_name": "Stop", "last_assistant_message": "With zebrafinch."})
    queued = [text for text in pending_texts(memory_server, token) if prompt in text]
    assert queued == [f"User: {prompt}\n\nAssistant: With zebrafinch."]
    manager.close()


def test_recall_route_checks_its_input(memory_server: MemoryServer, carol):
    url = f"{memory_server.base_url}/api/v1/hooks/recall"
    headers = {"Authorization": f"Bearer {carol[1]}"}
    for body in ({}, {"query": ""}, {"query": "tea", "limit": 0}, {"query": "tea", "app": "bad app"}):
        assert httpx.post(url, json=body, headers=headers, timeout=30).status_code == 422, body
    assert httpx.post(url, json={"query": "tea"}, timeout=30).status_code == 401
    other = {"query": "tea", "user_id": "someone-else"}
    assert httpx.post(url, json=other, headers=headers, timeout=30).status_code == 403


def test_summarize_session_counts_what_happened(memory_server: MemoryServer, client):
    tea = client.add("I drink oolong tea every afternoon")[0]["id"]
    laptop = client.add("My laptop runs Debian with the Sway window manager")[0]["id"]
    settings = settings_for(memory_server.base_url, memory={"max_context_memories": 1})
    manager = ClaudeCodeMemoryManager(client, settings)
    question = f"Which tea do I drink? ({uuid.uuid4().hex[:6]})"

    manager.process_conversation(conversation(question, "Oolong."))  # recalls tea; pending
    manager.process_conversation(conversation(question, "Oolong."))  # tea given already; duplicate
    manager.get_context_for_query("Which window manager runs on my Debian laptop?")  # recalls laptop

    summary = manager.summarize_session()
    assert summary == {
        "turns_processed": 2,
        "searches": 3,
        "memories_retrieved": 2,
        "captures": {"stored": 0, "pending": 1, "duplicate": 1, "refused": 0},
        "most_used_memories": [
            {"id": tea, "memory": "I drink oolong tea every afternoon", "times_retrieved": 1},
            {
                "id": laptop,
                "memory": "My laptop runs Debian with the Sway window manager",
                "times_retrieved": 1,
            },
        ],
        "errors": [],
    }
    manager.close()


def test_a_refused_turn_is_reported_not_raised(memory_server: MemoryServer, client, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    manager = ClaudeCodeMemoryManager(client, settings_for(memory_server.base_url), app="x" * 65)
    client.add("I drink oolong tea every afternoon")

    memories = manager.process_conversation(conversation("Which tea?", "Oolong."))

    assert [m["memory"] for m in memories] == ["I drink oolong tea every afternoon"]
    assert manager.last_capture.status == "refused" and "HTTP 422" in manager.last_capture.detail
    summary = manager.summarize_session()
    assert summary["captures"]["refused"] == 1
    assert [(e["operation"], e["error"]) for e in summary["errors"]] == [("capture", "refused")]
    assert "did not keep this turn" in caplog.text
    manager.close()


def test_a_conversation_without_a_user_message_is_bad_input(memory_server: MemoryServer, client):
    manager = ClaudeCodeMemoryManager(client, settings_for(memory_server.base_url))
    with pytest.raises(BadInput, match="no user message"):
        manager.process_conversation([{"role": "assistant", "content": "Hello"}])
    manager.close()


def test_latest_turn_is_the_newest_user_message_and_its_reply():
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "first reply"},
        {"role": "user", "content": [{"type": "text", "text": "second"}, {"type": "image", "source": {}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]},
        {"role": "assistant", "content": "second reply"},
    ]
    assert latest_turn(messages) == Turn("second", "second reply")
    assert latest_turn(messages[:5]) == Turn("second")
    assert latest_turn([*messages, {"role": "user", "content": "  "}]) == Turn("second", "second reply")
    with pytest.raises(ValueError):
        latest_turn([{"role": "system", "content": "x"}])


def test_format_context_keeps_one_bullet_per_memory():
    memories = [
        {"id": "1", "memory": "User: where is the script?\n\nAssistant: in scripts/ship.sh"},
        {"id": "2", "memory": "   "},
        {"id": "3", "memory": "plain"},
        {"id": "4", "memory": "over the cap"},
    ]
    assert format_context(memories, 2) == (
        "Relevant memories:\n- User: where is the script?\n  Assistant: in scripts/ship.sh\n- plain"
    )
    assert format_context([], 5) == ""


# -- availability --------------------------------------------------------------------------------


@pytest.mark.integration
def test_memory_integration_off_makes_no_network_calls():
    with socket.socket() as watcher:
        watcher.bind(("127.0.0.1", 0))
        watcher.listen(8)
        watcher.setblocking(False)
        settings = settings_for(
            f"http://127.0.0.1:{watcher.getsockname()[1]}", claude_code={"memory_integration": False}
        )
        with ClaudeCodeWithMemory(settings, "dave", "token", recheck_interval=0) as memory:
            assert memory.process_conversation(conversation("What tea do I drink?", "Oolong.")) == []
            assert memory.get_context_for_query("What tea do I drink?") == ""
            assert memory.available is False
            assert memory.summarize_session()["memory_integration"] is False
        with pytest.raises(BlockingIOError):
            watcher.accept()  # nobody ever connected

    bogus = settings_for("http://memory.invalid:1", claude_code={"memory_integration": False})
    with ClaudeCodeWithMemory(bogus, "dave", "token") as memory:
        assert memory.get_context_for_query("anything") == ""


def test_without_fallback_a_down_server_raises(free_port):
    settings = settings_for(f"http://127.0.0.1:{free_port()}", claude_code={"fallback_mode": False})
    with pytest.raises(Unavailable, match="not running"):
        ClaudeCodeWithMemory(settings, "dave", "token", timeout=2)


def test_fallback_keeps_working_while_the_server_is_down_and_picks_memory_back_up(
    memory_server: MemoryServer, carol, carol_client: Mem0MCPClient, caplog
):
    """One outage, seen by an integration on each transport and by one without fallback."""
    carol_client.add("I drink oolong tea every afternoon")
    settings = settings_for(memory_server.base_url)
    strict_settings = settings_for(memory_server.base_url, claude_code={"fallback_mode": False})
    integrations = [
        ClaudeCodeWithMemory(settings, *carol, transport=transport, recheck_interval=RECHECK, timeout=5)
        for transport in TRANSPORTS
    ]
    strict = ClaudeCodeWithMemory(strict_settings, *carol, timeout=5)
    question = conversation("What tea do I drink?")

    def logged(level: int, text: str) -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.name == LOGGER and r.levelno == level and text in r.getMessage()
        ]

    try:
        for memory in integrations:
            assert memory.available
            assert memory.process_conversation(question, store=False)[0]["memory"].startswith(
                "I drink oolong"
            )
        caplog.set_level(logging.INFO, logger=LOGGER)

        memory_server.stop()
        for _ in range(3):
            for memory in integrations:
                assert memory.process_conversation(question) == []
                assert memory.get_context_for_query("What tea do I drink?") == ""
            time.sleep(RECHECK * 1.5)  # so that the next calls check again, and fail again
        with pytest.raises(Unavailable, match=memory_server.base_url):
            strict.get_context_for_query("What tea do I drink?")
        assert len(logged(logging.WARNING, "")) == len(integrations)
        for memory in integrations:
            assert memory.available is False
            [warning] = logged(logging.WARNING, memory.client.url)
            assert warning.startswith("memory unavailable, continuing without it")
            assert f"cannot connect to the memory server at {memory_server.base_url}" in warning

        memory_server.start()
        time.sleep(RECHECK * 1.5)
        for memory in integrations:
            assert "oolong" in memory.get_context_for_query("What tea do I drink?")
            assert memory.available
            assert memory.process_conversation(question, store=False) == []  # tea: given just above
            assert (
                logged(logging.INFO, "available again").count(f"memory available again ({memory.client.url})")
                == 1
            )
            summary = memory.summarize_session()
            assert summary["turns_without_memory"] == 3 and summary["memory_available"] is True
        assert len(logged(logging.WARNING, "")) == len(integrations)  # none since
    finally:
        if memory_server.process is None:
            memory_server.start()
        for memory in [*integrations, strict]:
            memory.close()
