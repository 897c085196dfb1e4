"""Tiers with heat and the profile: the pure rules, then the service on real SQLite and the
embedded vector store (no server), then the LLM path against a fake speaking OpenAI's wire
format (an HTTP server on loopback: integration)."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from claude_code_memory.config import HeatSettings, ProfileLlmSettings, load_settings
from claude_code_memory.domain.memory_state import MemoryState
from claude_code_memory.errors import BadInput, NotFound
from claude_code_memory.memories.profile.heat import Span, Turn, assign, segment_heat
from claude_code_memory.memories.profile.llm import LlmExtractor, parse_facts
from claude_code_memory.memories.profile.rules import extract, fact_hash, facts_of
from claude_code_memory.memories.recall.context import Recalled, render
from claude_code_memory.memories.recall.hook_events import turn_text
from claude_code_memory.memories.server_parts import ServerParts
from claude_code_memory.memories.service import MemoryService
from claude_code_memory.search.request import SearchRequest
from tests.conftest import StartServer

NOW = datetime(2026, 3, 2, 12, 0, 0)


# -- pure -------------------------------------------------------------------------------------


def test_rules_find_user_facts_and_leave_questions_and_requests() -> None:
    assert extract("My name is Dana Whitfield.").category == "identity"  # type: ignore[union-attr]
    assert extract("I prefer tabs over spaces.").category == "preference"  # type: ignore[union-attr]
    assert extract("I always write tests before the implementation.").category == "working_style"  # type: ignore[union-attr]
    assert extract("Do you prefer tabs over spaces?") is None
    assert extract("Can you fix the failing test") is None
    # What the assistant says about its own likes is not the user's profile; its decisions are knowledge.
    assert extract("I prefer tabs over spaces.", "assistant") is None
    knowledge = extract("We decided to use SQLite for the local cache.", "assistant")
    assert knowledge is not None and (knowledge.subject, knowledge.category) == ("assistant", "knowledge")


def test_a_turn_gives_the_users_facts_and_the_assistants_knowledge() -> None:
    text = turn_text(
        [
            ("user", "I use Neovim as my editor. Can you set up the formatter?"),
            ("assistant", "Done. The formatter config lives in pyproject.toml. I prefer ruff."),
        ]
    )
    facts = {(f.subject, f.category, f.text) for f in facts_of(text)}
    assert facts == {
        ("user", "tools", "I use Neovim as my editor."),
        ("assistant", "knowledge", "The formatter config lives in pyproject.toml."),
    }


def test_normalised_wordings_share_a_hash() -> None:
    assert fact_hash("I prefer tabs over spaces.") == fact_hash("  i PREFER tabs over spaces ")
    assert fact_hash("I prefer tabs over spaces.") != fact_hash("I prefer spaces over tabs.")


def test_heat_is_visits_length_and_decaying_recency() -> None:
    weights = HeatSettings(visit_weight=2.0, length_weight=0.5, recency_weight=1.0, recency_tau_hours=10)
    assert segment_heat(3, 4, 0, weights) == pytest.approx(2 * 3 + 0.5 * 4 + 1.0)
    assert segment_heat(0, 0, 10, weights) == pytest.approx(0.36788, rel=1e-4)  # e^-1
    assert segment_heat(0, 0, 1000, weights) < 1e-9


def test_turns_split_into_segments_at_a_gap_or_a_full_segment() -> None:
    gap = timedelta(minutes=30)
    at = [NOW, NOW + timedelta(minutes=10), NOW + timedelta(minutes=50), NOW + timedelta(minutes=55)]
    turns = [Turn(uuid.uuid4(), "c1", when) for when in at]
    plan = assign(turns, {}, gap, max_turns=20)
    assert [span.turns for span in plan.new] == [2, 2] and plan.grown == []
    assert [span.turns for span in assign(turns, {}, gap, max_turns=1).new] == [1, 1, 1, 1]
    # A turn within the gap of an existing segment grows it instead.
    existing = Span("c1", NOW - timedelta(minutes=20), NOW - timedelta(minutes=5), 3, uuid.uuid4())
    plan = assign(turns[:2], {"c1": existing}, gap, max_turns=20)
    assert plan.new == [] and [span.turns for span in plan.grown] == [5]


def test_the_llm_answer_is_checked() -> None:
    content = '```json\n{"facts": [{"subject": "user", "category": "tools", "text": "Uses fish"},' + (
        '{"subject": "user", "category": "knowledge", "text": "x"}, {"subject": "robot", "category": '
        '"tools", "text": "y"}, {"subject": "assistant", "category": "knowledge", "text": " "}]}\n```'
    )
    assert [(f.subject, f.category, f.text) for f in parse_facts(content)] == [("user", "tools", "Uses fish")]


def test_the_briefing_gives_profile_facts_first_within_the_budget() -> None:
    memories = [Recalled(str(uuid.uuid4()), f"memory number {i} " + "x" * 60, NOW) for i in range(20)]
    facts = ["I prefer tabs over spaces.", "My name is Dana. " + "y" * 500]
    for budget in (500, 800, 1200):
        block, shown = render("briefing", memories, budget, facts)
        assert len(block) <= budget
        assert block.index("User profile:") < block.index("- [id ")
        assert "I prefer tabs over spaces." in block
        assert all(memory_id in block for memory_id in shown) and len(shown) >= 1
    assert render("briefing", [], 600, facts)[0].count("- ") == 2  # a profile alone is a briefing


# -- the service --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def service(service: MemoryService) -> MemoryService:
    service.clock = lambda: NOW
    return service


def new_user() -> str:
    return f"u{uuid.uuid4().hex[:10]}"


def add_turn(
    service: MemoryService, user: str, conversation: str, when: datetime, said: str, reply: str
) -> str:
    text = turn_text([("user", said), ("assistant", reply)])
    results = service.writes.add_memory(
        user_id=user, app_name="t", text=text, channel="mcp", conversation_id=conversation, captured_at=when
    )
    return str(results[0]["id"])


def test_short_term_is_the_newest_turns_of_the_newest_conversation(service: MemoryService) -> None:
    user = new_user()
    service.settings.tiers.short_term_turns = 3
    try:
        for i in range(5):
            add_turn(
                service,
                user,
                "old",
                NOW - timedelta(days=1, minutes=-i),
                f"old question {i}",
                f"old answer {i}",
            )
        ids = [
            add_turn(service, user, "new", NOW + timedelta(minutes=i), f"question {i}", f"answer {i}")
            for i in range(5)
        ]
        turns = service.tiers.short_term(user)
        assert [t["memory_id"] for t in turns] == ids[2:]  # oldest first
        assert turns[0]["user_input"] == "question 2" and turns[0]["agent_response"] == "answer 2"
        assert turns[0]["timestamp"] == (NOW + timedelta(minutes=2)).strftime("%Y-%m-%d %H:%M:%S")
        assert [t["user_input"] for t in service.tiers.short_term(user, conversation_id="old")][
            -1
        ] == "old question 4"
        assert service.tiers.short_term(new_user()) == []
    finally:
        service.settings.tiers.short_term_turns = 10


def test_segments_heat_up_with_visits_and_hot_ones_give_their_facts(service: MemoryService) -> None:
    user = new_user()
    # Two runs of one conversation, two hours apart: two segments of 2 turns (heat 2 + recency < 5).
    add_turn(service, user, "c", NOW - timedelta(hours=3), "I prefer tabs over spaces.", "Noted.")
    add_turn(service, user, "c", NOW - timedelta(hours=3, minutes=-5), "Show me the diff.", "Here it is.")
    add_turn(service, user, "c", NOW - timedelta(minutes=10), "I use Neovim as my editor.", "Good to know.")
    add_turn(service, user, "c", NOW - timedelta(minutes=5), "Run the tests.", "They pass.")
    report = service.tiers.refresh(user)
    assert (report.segmented_turns, report.new_segments, report.promoted_segments) == (4, 2, 0)
    assert service.profile.facts(user) == []  # nothing is hot yet
    segments = service.tiers.segments(user)
    assert [s["turns"] for s in segments] == [2, 2] and all(s["heat"] < 5 for s in segments)

    # Three searches return the old segment's turn: three visits make it hot, and it is promoted.
    for _ in range(3):
        [hit] = service.reads.search(
            SearchRequest(user_id=user, app_name="t", query="tabs or spaces", limit=1)
        )
        assert "tabs" in hit["memory"]
    service.access_log.flush()
    report = service.tiers.refresh(user)
    assert report.promoted_segments == 1 and report.new_facts == 1
    [fact] = service.profile.facts(user)
    assert (fact["subject"], fact["category"], fact["text"]) == (
        "user",
        "preference",
        "I prefer tabs over spaces.",
    )
    hottest = service.tiers.segments(user)[0]
    assert hottest["visits"] >= 3 and hottest["heat"] >= 5 and hottest["promoted_at"] is not None
    assert fact["memory_ids"] and all(uuid.UUID(m) for m in fact["memory_ids"])


def test_beyond_capacity_the_coldest_segments_are_archived_never_deleted(service: MemoryService) -> None:
    user = new_user()
    old = add_turn(service, user, "a", NOW - timedelta(days=30), "an old chat", "an old reply")
    add_turn(service, user, "b", NOW - timedelta(hours=1), "a recent chat", "a recent reply")
    add_turn(service, user, "c", NOW, "the newest chat", "the newest reply")
    service.settings.tiers.mid_term_capacity = 2
    try:
        report = service.tiers.refresh(user)
    finally:
        service.settings.tiers.mid_term_capacity = 2000
    assert report.archived_segments == 1
    [archived] = service.tiers.segments(user, state="archived")
    assert archived["conversation_id"] == "a"
    memory = service.reads.get(old, user)
    assert (
        memory.state == MemoryState.archived
        and memory.content == "User: an old chat\n\nAssistant: an old reply"
    )
    assert old not in {
        str(h.memory.id)
        for h in service.pipeline.search(SearchRequest(user_id=user, app_name="t", query="old chat"))
    }


def test_a_deleted_fact_stays_deleted_and_an_edit_retires_the_old_wording(service: MemoryService) -> None:
    user = new_user()
    service.writes.add_memory(user_id=user, app_name="t", text="I prefer pytest to unittest.")
    service.writes.add_memory(user_id=user, app_name="t", text="My shell is fish.")
    assert service.tiers.refresh(user).new_facts == 2
    facts = {f["text"]: f for f in service.profile.facts(user)}
    service.profile.delete(user, facts["I prefer pytest to unittest."]["id"])
    service.profile.edit(user, facts["My shell is fish."]["id"], text="My shell is zsh.", category="tools")

    # The same facts said again, in new memories and new words' case: neither comes back.
    service.writes.add_memory(user_id=user, app_name="t", text="Remember: i prefer PYTEST to unittest!")
    service.writes.add_memory(user_id=user, app_name="t", text="my shell is fish")
    assert service.tiers.refresh(user).new_facts == 0
    assert [(f["text"], f["source"]) for f in service.profile.facts(user)] == [("My shell is zsh.", "user")]

    with pytest.raises(NotFound):
        service.profile.delete(user, facts["I prefer pytest to unittest."]["id"])  # already gone
    with pytest.raises(NotFound):
        service.profile.delete(new_user(), service.profile.facts(user)[0]["id"])  # not theirs
    with pytest.raises(BadInput):
        service.profile.edit(user, service.profile.facts(user)[0]["id"], category="knowledge")


def test_a_fact_goes_with_the_memories_it_came_from(service: MemoryService) -> None:
    user = new_user()
    [result] = service.writes.add_memory(user_id=user, app_name="t", text="I live in Lisbon, so I'm on WET.")
    service.tiers.refresh(user)
    assert [f["category"] for f in service.profile.facts(user)] == ["identity"]
    service.states.delete_memories([result["id"]], user_id=user)
    assert service.profile.facts(user) == []  # at once, not at the next refresh


@pytest.fixture(scope="module")
def trashing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    """A service whose deletes go to the trash (``privacy.trash_days: 7``)."""
    data = tmp_path_factory.mktemp("profile-trash") / "data"
    overrides = {"server.data_dir": str(data), "privacy.trash_days": 7}
    parts = ServerParts(load_settings(config_path=None, environ={}, overrides=overrides))
    parts.service.clock = lambda: NOW
    try:
        yield parts.service
    finally:
        parts.close()


def what_readers_say(service: MemoryService, user: str) -> str:
    """Everything a reader of the profile is given, as one text: the profile, the briefing,
    MemoryOS's get_user_profile and retrieve_memory."""
    briefing = service.hooks.handle(
        user, {"hook_event_name": "SessionStart", "session_id": str(uuid.uuid4()), "source": "startup"}
    )
    said = [
        service.profile.facts(user),
        briefing,
        service.memoryos.user_profile(user_id=user, include_assistant_knowledge=True),
        service.memoryos.retrieve(user_id=user, app_name="t", query="Where do I live, and my shell?"),
    ]
    return json.dumps(said)


@pytest.mark.integration
def test_a_trashed_memory_says_nothing_until_it_is_restored(trashing: MemoryService) -> None:
    service, user = trashing, new_user()
    [lisbon] = service.writes.add_memory(user_id=user, app_name="t", text="I live in Lisbon, so I'm on WET.")
    [shell] = service.writes.add_memory(user_id=user, app_name="t", text="My shell is fish.")
    [shell_again] = service.writes.add_memory(user_id=user, app_name="t", text="my shell is fish")
    service.writes.add_memory(user_id=user, app_name="t", text="I prefer pytest to unittest.")
    service.tiers.refresh(user)
    facts = {f["text"]: f for f in service.profile.facts(user)}
    assert set(facts) == {
        "I live in Lisbon, so I'm on WET.",
        "My shell is fish.",
        "I prefer pytest to unittest.",
    }
    assert "Lisbon" in what_readers_say(service, user)

    service.states.delete_memories([lisbon["id"], shell["id"]], user_id=user)
    said = what_readers_say(service, user)
    assert "Lisbon" not in said and lisbon["id"] not in said and shell["id"] not in said
    # A fact another memory still says stays, naming only that memory.
    assert {f["text"]: f["memory_ids"] for f in service.profile.facts(user)} == {
        "My shell is fish.": [shell_again["id"]],
        "I prefer pytest to unittest.": facts["I prefer pytest to unittest."]["memory_ids"],
    }
    service.tiers.refresh(user)  # a refresh neither extracts it again nor brings it back
    assert "Lisbon" not in what_readers_say(service, user)
    hidden = facts["I live in Lisbon, so I'm on WET."]["id"]
    with pytest.raises(NotFound):  # not there to correct either
        service.profile.edit(user, hidden, category="preference")

    # Restored: its facts speak again, as they were (no extraction needed).
    assert service.trash.restore([lisbon["id"], shell["id"]], user_id=user)["conflicts"] == []
    assert [f for f in service.profile.facts(user) if "Lisbon" in f["text"]] == [
        facts["I live in Lisbon, so I'm on WET."]
    ]
    assert "Lisbon" in what_readers_say(service, user)
    assert sorted(
        next(f for f in service.profile.facts(user) if f["text"] == "My shell is fish.")["memory_ids"]
    ) == sorted([shell["id"], shell_again["id"]])

    # Trashed again, then purged: gone for good, and a restore has nothing to bring back.
    service.states.delete_memories([lisbon["id"]], user_id=user)
    service.trash.purge([lisbon["id"]], user_id=user)
    assert service.trash.restore([lisbon["id"]], user_id=user)["restored"] == []
    assert "Lisbon" not in what_readers_say(service, user)


def test_over_rest_a_trashed_memory_leaves_the_profile_and_the_briefing(
    start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(env={"CCMEM_PRIVACY__TRASH_DAYS": "7"})
    token = server.make_token("trasher")
    start = {"hook_event_name": "SessionStart", "source": "startup", "cwd": str(tmp_path)}
    with httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as c:
        created = c.post("/api/v1/memories", json={"text": "My name is Dana Whitfield.", "app": "chat"})
        memory_id = created.json()["id"]

        def seen() -> tuple[list[str], str]:
            facts = [f["text"] for f in c.get("/api/v1/profile").json()["facts"]]
            briefing = c.post("/api/v1/hooks/claude-code", json=start | {"session_id": str(uuid.uuid4())})
            return facts, json.dumps(briefing.json())

        facts, briefing = seen()
        assert facts == ["My name is Dana Whitfield."] and "Dana Whitfield" in briefing
        deleted = c.request("DELETE", "/api/v1/memories", json={"memory_ids": [memory_id]})
        assert deleted.status_code == 200, deleted.text
        assert [item["id"] for item in c.get("/api/v1/trash").json()["items"]] == [memory_id]
        facts, briefing = seen()
        assert facts == [] and "Dana" not in briefing
        assert c.post("/api/v1/trash/restore", json={"memory_ids": [memory_id]}).json()["restored"] == [
            memory_id
        ]
        facts, briefing = seen()
        assert facts == ["My name is Dana Whitfield."] and "Dana Whitfield" in briefing


# -- the LLM path (a fake OpenAI-compatible server on loopback) ----------------------------------


class FakeOpenAI(ThreadingHTTPServer):
    """``POST /v1/chat/completions`` answered in OpenAI's wire format with ``answer``'s facts."""

    def __init__(self, answer: list[dict[str, str]]) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.answer = answer
        super().__init__(("127.0.0.1", 0), _OpenAIHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _OpenAIHandler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((dict(self.headers), body))
        if self.path != "/v1/chat/completions":
            self.send_response(404)
            self.end_headers()
            return
        completion = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": json.dumps({"facts": self.server.answer})},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(completion).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.integration
def test_the_llm_extracts_when_configured_and_the_rules_answer_when_it_fails(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeOpenAI([{"subject": "user", "category": "project", "text": "Builds a budgeting app"}])
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test-123")
    llm = LlmExtractor(ProfileLlmSettings(base_url=fake.url, model="tiny", api_key_env="FAKE_LLM_KEY"))
    user = new_user()
    try:
        service.profile.llm = llm
        service.writes.add_memory(
            user_id=user, app_name="t", text="Working on budgeting software for freelancers"
        )
        assert service.tiers.refresh(user).new_facts == 1
        [fact] = service.profile.facts(user)
        assert (fact["category"], fact["text"], fact["source"]) == (
            "project",
            "Builds a budgeting app",
            "llm",
        )
        headers, body = fake.requests[-1]
        assert headers["Authorization"] == "Bearer sk-test-123"
        assert body["model"] == "tiny" and body["messages"][0]["role"] == "system"
        assert body["messages"][1] == {
            "role": "user",
            "content": "Working on budgeting software for freelancers",
        }

        fake.shutdown()
        fake.server_close()  # the endpoint is gone: the rules answer for this memory
        service.writes.add_memory(user_id=user, app_name="t", text="I use uv to manage Python environments.")
        assert service.tiers.refresh(user).new_facts == 1
        assert {f["source"] for f in service.profile.facts(user)} == {"llm", "rules"}
    finally:
        service.profile.llm = None
        llm.close()


def test_config_keeps_the_llm_key_out_of_files(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("profile:\n  llm:\n    api_key: sk-123\n")
    with pytest.raises(Exception, match="profile.llm.api_key: unknown setting"):
        load_settings(config_path=tmp_path / "config.yaml", environ={})
    settings = load_settings(config_path=None, environ={"CCMEM_PROFILE__LLM__API_KEY_ENV": "MY_KEY"})
    assert settings.profile.llm.api_key_env == "MY_KEY"
