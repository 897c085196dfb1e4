"""Tiers with heat and the profile: the pure rules, then the service on real SQLite and the
embedded vector store (no server), then the LLM path against a fake speaking OpenAI's wire
format (an HTTP server on loopback: integration)."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from claude_code_memory.config import HeatSettings, ProfileLlmSettings, load_settings
from claude_code_memory.db.models import MemoryState
from claude_code_memory.errors import BadInput, NotFound
from claude_code_memory.memories.profile.heat import Span, Turn, assign, segment_heat
from claude_code_memory.memories.profile.llm import LlmExtractor, parse_facts
from claude_code_memory.memories.profile.rules import extract, fact_hash, facts_of
from claude_code_memory.memories.recall.context import Recalled, render
from claude_code_memory.memories.recall.hook_events import turn_text
from claude_code_memory.memories.service import MemoryService

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
    results = service.add_memory(
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
        turns = service.short_term(user)
        assert [t["memory_id"] for t in turns] == ids[2:]  # oldest first
        assert turns[0]["user_input"] == "question 2" and turns[0]["agent_response"] == "answer 2"
        assert turns[0]["timestamp"] == (NOW + timedelta(minutes=2)).strftime("%Y-%m-%d %H:%M:%S")
        assert [t["user_input"] for t in service.short_term(user, conversation_id="old")][
            -1
        ] == "old question 4"
        assert service.short_term(new_user()) == []
    finally:
        service.settings.tiers.short_term_turns = 10


def test_segments_heat_up_with_visits_and_hot_ones_give_their_facts(service: MemoryService) -> None:
    user = new_user()
    # Two runs of one conversation, two hours apart: two segments of 2 turns (heat 2 + recency < 5).
    add_turn(service, user, "c", NOW - timedelta(hours=3), "I prefer tabs over spaces.", "Noted.")
    add_turn(service, user, "c", NOW - timedelta(hours=3, minutes=-5), "Show me the diff.", "Here it is.")
    add_turn(service, user, "c", NOW - timedelta(minutes=10), "I use Neovim as my editor.", "Good to know.")
    add_turn(service, user, "c", NOW - timedelta(minutes=5), "Run the tests.", "They pass.")
    report = service.refresh_tiers(user)
    assert (report.segmented_turns, report.new_segments, report.promoted_segments) == (4, 2, 0)
    assert service.profile_facts(user) == []  # nothing is hot yet
    segments = service.segments(user)
    assert [s["turns"] for s in segments] == [2, 2] and all(s["heat"] < 5 for s in segments)

    # Three searches return the old segment's turn: three visits make it hot, and it is promoted.
    for _ in range(3):
        [hit] = service.search(user_id=user, app_name="t", query="tabs or spaces", limit=1)
        assert "tabs" in hit["memory"]
    service.flush_access_log()
    report = service.refresh_tiers(user)
    assert report.promoted_segments == 1 and report.new_facts == 1
    [fact] = service.profile_facts(user)
    assert (fact["subject"], fact["category"], fact["text"]) == (
        "user",
        "preference",
        "I prefer tabs over spaces.",
    )
    hottest = service.segments(user)[0]
    assert hottest["visits"] >= 3 and hottest["heat"] >= 5 and hottest["promoted_at"] is not None
    assert fact["memory_ids"] and all(uuid.UUID(m) for m in fact["memory_ids"])


def test_beyond_capacity_the_coldest_segments_are_archived_never_deleted(service: MemoryService) -> None:
    user = new_user()
    old = add_turn(service, user, "a", NOW - timedelta(days=30), "an old chat", "an old reply")
    add_turn(service, user, "b", NOW - timedelta(hours=1), "a recent chat", "a recent reply")
    add_turn(service, user, "c", NOW, "the newest chat", "the newest reply")
    service.settings.tiers.mid_term_capacity = 2
    try:
        report = service.refresh_tiers(user)
    finally:
        service.settings.tiers.mid_term_capacity = 2000
    assert report.archived_segments == 1
    [archived] = service.segments(user, state="archived")
    assert archived["conversation_id"] == "a"
    memory = service.get(old, user)
    assert (
        memory.state == MemoryState.archived
        and memory.content == "User: an old chat\n\nAssistant: an old reply"
    )
    assert old not in {
        str(h.memory.id) for h in service.search_hits(user_id=user, app_name="t", query="old chat")
    }


def test_a_deleted_fact_stays_deleted_and_an_edit_retires_the_old_wording(service: MemoryService) -> None:
    user = new_user()
    service.add_memory(user_id=user, app_name="t", text="I prefer pytest to unittest.")
    service.add_memory(user_id=user, app_name="t", text="My shell is fish.")
    assert service.refresh_tiers(user).new_facts == 2
    facts = {f["text"]: f for f in service.profile_facts(user)}
    service.delete_fact(user, facts["I prefer pytest to unittest."]["id"])
    service.edit_fact(user, facts["My shell is fish."]["id"], text="My shell is zsh.", category="tools")

    # The same facts said again, in new memories and new words' case: neither comes back.
    service.add_memory(user_id=user, app_name="t", text="Remember: i prefer PYTEST to unittest!")
    service.add_memory(user_id=user, app_name="t", text="my shell is fish")
    assert service.refresh_tiers(user).new_facts == 0
    assert [(f["text"], f["source"]) for f in service.profile_facts(user)] == [("My shell is zsh.", "user")]

    with pytest.raises(NotFound):
        service.delete_fact(user, facts["I prefer pytest to unittest."]["id"])  # already gone
    with pytest.raises(NotFound):
        service.delete_fact(new_user(), service.profile_facts(user)[0]["id"])  # not theirs
    with pytest.raises(BadInput):
        service.edit_fact(user, service.profile_facts(user)[0]["id"], category="knowledge")


def test_a_fact_goes_with_the_memories_it_came_from(service: MemoryService) -> None:
    user = new_user()
    [result] = service.add_memory(user_id=user, app_name="t", text="I live in Lisbon, so I'm on WET.")
    service.refresh_tiers(user)
    assert [f["category"] for f in service.profile_facts(user)] == ["identity"]
    service.delete_memories([result["id"]], user_id=user)
    assert service.profile_facts(user) == []  # at once, not at the next refresh


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
        service.add_memory(user_id=user, app_name="t", text="Working on budgeting software for freelancers")
        assert service.refresh_tiers(user).new_facts == 1
        [fact] = service.profile_facts(user)
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
        service.add_memory(user_id=user, app_name="t", text="I use uv to manage Python environments.")
        assert service.refresh_tiers(user).new_facts == 1
        assert {f["source"] for f in service.profile_facts(user)} == {"llm", "rules"}
    finally:
        service.profile.llm = None
        llm.close()


def test_config_keeps_the_llm_key_out_of_files(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("profile:\n  llm:\n    api_key: sk-123\n")
    with pytest.raises(Exception, match="profile.llm.api_key: unknown setting"):
        load_settings(config_path=tmp_path / "config.yaml", environ={})
    settings = load_settings(config_path=None, environ={"CCMEM_PROFILE__LLM__API_KEY_ENV": "MY_KEY"})
    assert settings.profile.llm.api_key_env == "MY_KEY"
