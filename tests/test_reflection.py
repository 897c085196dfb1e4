"""Reflection over stored conversations: MCP ``analyze_conversations`` and
``suggest_next_actions`` through the official SDK against the real server, the REST routes the
UI reads, and the optional prose from an OpenAI-compatible endpoint (a fake speaking the wire
format). The pure analysis is tested first, on the same conversations.

Conversations are written as Claude Code's hooks store them (``User: …`` / ``Assistant: …``
turns, a conversation id per session, a project, a time).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from claude_code_memory.memories.reflection import patterns
from claude_code_memory.memories.reflection.analysis import Note, analyze, next_actions
from claude_code_memory.memories.reflection.topics import clusters
from tests.support.fake_openai import FakeOpenAI
from tests.support.server import MemoryServer

pytestmark = pytest.mark.timeout(300)

T0 = datetime(2026, 11, 2, 9, 0)
QUESTION = "Should we use Alembic or hand-written SQL for the migrations?"
ERROR = "ModuleNotFoundError: No module named 'psycopg'"


def turn(user: str, assistant: str) -> str:
    return f"User: {user}\n\nAssistant: {assistant}"


#: Three sessions of one project: the same import error in two of them, a decision, an open
#: question, a TODO, and a last session that stops on the assistant's question.
SESSIONS: dict[str, list[str]] = {
    "s1": [
        turn(
            f"Running `pytest tests/test_api.py` fails with {ERROR}",
            "The test imports the PostgreSQL driver: `pip install psycopg[binary]`, "
            "and add it to requirements.txt.",
        ),
        turn(QUESTION, "Let's revisit that after the schema settles."),
        turn(
            "We decided to use FastAPI for the REST layer instead of Flask.",
            "Good: I updated app/main.py to create the FastAPI app.",
        ),
    ],
    "s2": [
        turn(
            f"`pytest tests/test_db.py` fails again: {ERROR}",
            "The CI image lacks the driver; add psycopg to requirements-dev.txt.",
        ),
        turn(
            "What port does the staging database listen on?",
            "The staging database listens on port 5433, see deploy/staging.yaml.",
        ),
        turn("TODO: rotate the staging credentials before the demo", "Noted."),
    ],
    "s3": [
        turn("Let's switch to uv for installs.", "Switched: `uv pip install -r requirements.txt` works now."),
        turn(
            "Can you refactor the ingest worker next?",
            "Sure. I split worker.py into fetch.py and parse.py. Should I also update docs/ingest.md?",
        ),
    ],
}
ANSWER = turn("So, the migrations?", "We use Alembic for the migrations, not hand-written SQL.")


def items(sessions: dict[str, list[str]], project: str, start: datetime = T0) -> list[dict[str, Any]]:
    out, when = [], start
    for conversation, turns in sessions.items():
        for text in turns:
            when += timedelta(minutes=10)
            out.append(
                {
                    "text": text,
                    "conversation_id": conversation,
                    "project": project,
                    "captured_at": when.isoformat(),
                }
            )
    return out


def notes(sessions: dict[str, list[str]]) -> list[Note]:
    return [
        Note(
            f"m{i:02d}",
            item["text"],
            item["conversation_id"],
            "shop",
            datetime.fromisoformat(item["captured_at"]),
        )
        for i, item in enumerate(items(sessions, "shop"))
    ]


# -- the pure analysis ---------------------------------------------------------------------------
def test_a_turn_splits_into_its_speakers_and_a_note_stays_whole() -> None:
    assert [s.role for s in patterns.segments(turn("a?", "b"))] == ["user", "assistant"]
    assert patterns.segments("Remember: the API runs on port 8080")[0].role == "note"


def test_the_same_error_in_other_words_of_the_same_shape_has_one_key() -> None:
    first = patterns.problems("Traceback … KeyError: 'user_id' at 0x7f3a2b, line 42 in /tmp/abc/app.py")
    second = patterns.problems("again KeyError: 'user_id' at 0x99ff00, line 7 in /home/me/app.py")
    assert {p.key for p in first} & {p.key for p in second}
    assert not patterns.problems("We handle errors gracefully in the new error page design.")


def test_a_failing_command_is_a_problem_and_a_working_one_is_not() -> None:
    assert [p.key for p in patterns.problems("`git push` fails with a rejected ref")] == ["`git push` fails"]
    assert patterns.problems("`git push` went through") == []


def test_analysis_finds_the_recurring_error_the_decision_and_the_open_items() -> None:
    findings = analyze(notes(SESSIONS))
    [recurring] = findings["recurring_problems"]
    assert recurring["problem"] == ERROR and recurring["conversations"] == 2 and not recurring["resolved"]
    assert any("We decided to use FastAPI" in d["decision"] for d in findings["decisions"])
    open_items = {(q["kind"], q["text"]) for q in findings["open_questions"]}
    assert ("question", QUESTION) in open_items
    assert ("todo", "rotate the staging credentials before the demo") in open_items
    # Answered in its own turn: not open. A request put as a question is not a question.
    assert all("staging database listen" not in text for _, text in open_items)
    assert all("refactor the ingest worker" not in text for _, text in open_items)
    assert findings["last_session"]["waiting_on"] == "Should I also update docs/ingest.md?"
    assert findings["files"][0] == {**findings["files"][0], "path": "requirements.txt", "conversations": 2}
    assert {"pytest", "pip install", "uv pip"} <= {c["command"] for c in findings["commands"]}


def test_an_answer_later_in_the_conversation_closes_the_question() -> None:
    answered = {**SESSIONS, "s1": [*SESSIONS["s1"], ANSWER]}
    texts = [q["text"] for q in analyze(notes(answered))["open_questions"]]
    assert QUESTION not in texts
    # A later turn that only puts it off again does not.
    deferred = {
        **SESSIONS,
        "s1": [*SESSIONS["s1"], turn("Migrations?", "Not sure yet about the migrations.")],
    }
    assert QUESTION in [q["text"] for q in analyze(notes(deferred))["open_questions"]]


def test_a_fix_after_the_error_resolves_it() -> None:
    fixed = {**SESSIONS, "s2": [SESSIONS["s2"][0], turn("Installed it, thanks: that fixed it.", "Great.")]}
    [problem] = analyze(notes(fixed))["recurring_problems"]
    assert problem["resolved"] is True
    assert all(p["problem"] != ERROR for p in analyze(notes(fixed))["unresolved_problems"])


def test_next_actions_start_where_the_last_session_stopped() -> None:
    actions = next_actions(analyze(notes(SESSIONS)))
    assert actions[0]["kind"] == "resume" and "docs/ingest.md" in actions[0]["action"]
    kinds = [a["kind"] for a in actions]
    assert kinds.index("problem") < kinds.index("todo") < kinds.index("question")


def test_topics_group_memories_by_shared_terms_deterministically() -> None:
    texts = [
        "the postgres connection pool times out under load",
        "tune the postgres connection pool size",
        "the login form css is broken on mobile",
        "mobile css for the login form needs a fix",
        "postgres connection pool exhausted again",
    ]
    found = clusters(texts)
    groups = sorted(sorted(c.members) for c in found if len(c.members) > 1)
    assert groups == [[0, 1, 4], [2, 3]]
    assert "pool" in found[0].terms() and [c.members for c in clusters(texts)] == [c.members for c in found]


# -- over MCP and REST, against the real server ------------------------------------------------------
@pytest.fixture(scope="module")
def fake_llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply="Two sessions hit the same psycopg import error.", api_key="sk-test-key") as fake:
        yield fake


@pytest.fixture(scope="module")
def reflection_server(
    tmp_path_factory: pytest.TempPathFactory, fake_llm: FakeOpenAI
) -> Iterator[MemoryServer]:
    env = {
        "CCMEM_REFLECTION__LLM__BASE_URL": fake_llm.base_url,
        "CCMEM_REFLECTION__LLM__MODEL": "fake-gpt",
        "CCMEM_REFLECTION__LLM__API_KEY_ENV": "FAKE_LLM_KEY",
        "FAKE_LLM_KEY": "sk-test-key",
    }
    with MemoryServer(tmp_path_factory.mktemp("reflection"), env=env) as server:
        yield server


def seed(server: MemoryServer, token: str, batch: list[dict[str, Any]]) -> None:
    response = httpx.post(
        f"{server.base_url}/api/v1/memories/batch",
        json={"items": batch, "app": "claude-code"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert response.status_code == 200 and response.json()["created"] == len(batch), response.text


def call(server: MemoryServer, user: str, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def scenario() -> dict[str, Any]:
        url = f"{server.base_url}/mcp/claude-code/sse/{user}"
        async with Client(sse_client(url, headers={"Authorization": f"Bearer {token}"})) as session:
            result = await session.call_tool(tool, arguments)
        assert not result.is_error, result.content
        return json.loads(result.content[0].text)  # type: ignore[union-attr]

    return anyio.run(scenario)


def test_reflection_tools_over_mcp(reflection_server: MemoryServer, fake_llm: FakeOpenAI) -> None:
    user = f"reflect-{uuid.uuid4().hex[:6]}"
    token = reflection_server.make_token(user)
    seed(reflection_server, token, items(SESSIONS, "shop"))
    # The same error in another project: a project filter leaves it out.
    seed(reflection_server, token, items({"o1": [turn(f"deploy broke: {ERROR}", "Checking.")]}, "other"))

    found = call(reflection_server, user, token, "analyze_conversations", {"project": "shop"})
    [recurring] = found["recurring_problems"]
    assert recurring["problem"] == ERROR and recurring["conversations"] == 2 and recurring["occurrences"] == 2
    assert any("We decided to use FastAPI" in d["decision"] for d in found["decisions"])
    assert QUESTION in [q["text"] for q in found["open_questions"]]
    everywhere = call(reflection_server, user, token, "analyze_conversations", {})
    assert everywhere["recurring_problems"][0]["conversations"] == 3

    # The prose came from the configured endpoint, which got the findings in the real format.
    assert found["summary"] == fake_llm.reply and found["summary_model"] == "fake-gpt"
    sent = fake_llm.requests[-2]
    assert sent["headers"]["authorization"] == "Bearer sk-test-key"
    assert sent["body"]["model"] == "fake-gpt" and sent["body"]["messages"][0]["role"] == "system"
    assert "psycopg" in sent["body"]["messages"][1]["content"]

    suggested = call(reflection_server, user, token, "suggest_next_actions", {"project": "shop"})
    assert suggested["actions"][0]["kind"] == "resume"
    assert any(a["kind"] == "problem" and ERROR in a["action"] for a in suggested["actions"])
    assert suggested["summary"] == fake_llm.reply

    # Answered later in the same session: no longer open, over REST as over MCP.
    later = T0 + timedelta(hours=5)
    seed(
        reflection_server,
        token,
        [{"text": ANSWER, "conversation_id": "s1", "project": "shop", "captured_at": later.isoformat()}],
    )
    again = call(
        reflection_server, user, token, "analyze_conversations", {"project": "shop", "since": "3650d"}
    )
    assert QUESTION not in [q["text"] for q in again["open_questions"]]
    rest = httpx.get(
        f"{reflection_server.base_url}/api/v1/insights/reflection",
        params={"project": "shop"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert rest.status_code == 200 and QUESTION not in [q["text"] for q in rest.json()["open_questions"]]


def test_bad_since_is_a_tool_error_and_a_422(reflection_server: MemoryServer) -> None:
    user = f"reflect-{uuid.uuid4().hex[:6]}"
    token = reflection_server.make_token(user)
    response = httpx.get(
        f"{reflection_server.base_url}/api/v1/insights/reflection",
        params={"since": "last tuesday"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 422 and "since" in response.json()["detail"]

    async def scenario() -> Any:
        url = f"{reflection_server.base_url}/mcp/claude-code/sse/{user}"
        async with Client(sse_client(url, headers={"Authorization": f"Bearer {token}"})) as session:
            return await session.call_tool("analyze_conversations", {"since": "last tuesday"})

    result = anyio.run(scenario)
    assert result.is_error and "since" in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.integration
def test_an_llm_that_refuses_is_reported_beside_the_findings(fake_llm: FakeOpenAI) -> None:
    from claude_code_memory.config import ReflectionLlmSettings
    from claude_code_memory.memories.reflection.llm_summary import Prose

    prose = Prose(ReflectionLlmSettings(base_url=fake_llm.base_url, model="m", api_key_env="NO_SUCH_KEY_VAR"))
    text, error = prose.write("analysis", {"decisions": []})
    assert text is None and error == "the LLM answered HTTP 401"
