"""Search at a point in time over REST and the hooks: ``now`` (as-of) decides what a relative date
in the query means. Three dinners, each on a Saturday a week apart; "what did I cook last
Saturday?" asked on two different Tuesdays finds a different dinner first. A ``now`` that is not
an ISO-8601 datetime is refused (422) with a message naming it.

Runs the app in process with the real stores (SQLite, embedded Qdrant, the ONNX embedder)."""

from __future__ import annotations

import importlib.util
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from claude_code_memory.client import hook_command
from tests.support.in_process import InProcessServer
from tests.support.servers import StartServer

DINNERS = (
    ("I cooked a mushroom risotto for dinner.", "2023-05-06T19:00:00"),
    ("I cooked a lamb curry for dinner.", "2023-05-13T19:00:00"),
    ("I cooked pancakes for dinner.", "2023-05-20T19:00:00"),
)
QUERY = "What did I cook last Saturday?"
#: When the question is asked, and the dinner of the Saturday before.
ASKED = (("2023-05-09T09:00:00Z", "risotto"), ("2023-05-16T11:00:00+02:00", "curry"))


@pytest.fixture(scope="module")
def server(start_module_server: StartServer) -> InProcessServer:
    return start_module_server(in_process=True)


@pytest.fixture(scope="module")
def token(server: InProcessServer) -> str:
    token = server.make_token(f"now-{uuid.uuid4().hex[:8]}")
    client = server.client(token)
    for text, when in DINNERS:
        response = client.post("/api/v1/memories", json={"text": text, "captured_at": when})
        assert response.status_code == 200, response.text
    return token


def dish(text: str) -> str:
    return next(word for word in ("risotto", "curry", "pancakes") if word in text)


def test_rest_search_reads_relative_dates_against_now(server: InProcessServer, token: str) -> None:
    client = server.client(token)
    for asked, expected in ASKED:
        body = {"query": QUERY, "now": asked}
        results = client.post("/api/v1/memories/search", json=body).json()["results"]
        assert dish(results[0]["content"]) == expected, (asked, [r["content"] for r in results])
        # The same as a query parameter.
        results = client.post("/api/v1/memories/search", params={"now": asked}, json={"query": QUERY}).json()[
            "results"
        ]
        assert dish(results[0]["content"]) == expected, (asked, [r["content"] for r in results])


def test_hooks_recall_reads_relative_dates_against_the_prompts_time(
    server: InProcessServer, token: str, tmp_path: Path
) -> None:
    client = server.client(token)
    for asked, expected in ASKED:
        hook_input: dict[str, Any] = {
            "hook_event_name": "UserPromptSubmit",
            "session_id": uuid.uuid4().hex,
            "cwd": str(tmp_path),
            "prompt": QUERY,
        }
        answer = client.post("/api/v1/hooks/claude-code", params={"now": asked}, json=hook_input)
        assert answer.status_code == 200, answer.text
        block = answer.json()["hookSpecificOutput"]["additionalContext"]
        first = min(("risotto", "curry", "pancakes"), key=lambda word: block.find(word) % (len(block) + 1))
        assert first == expected, (asked, block)
        recalled = client.post("/api/v1/hooks/recall", json={"query": QUERY, "now": asked}).json()
        assert dish(recalled["memories"][0]["memory"]) == expected, (asked, recalled)


@pytest.mark.parametrize("bad", ["last Tuesday", "2023-13-40", "12:00"])
def test_a_now_that_is_not_a_datetime_is_refused(server: InProcessServer, token: str, bad: str) -> None:
    client = server.client(token)
    for response in (
        client.post("/api/v1/memories/search", json={"query": QUERY, "now": bad}),
        client.post("/api/v1/memories/search", params={"now": bad}, json={"query": QUERY}),
        client.post("/api/v1/hooks/claude-code", params={"now": bad}, json={"hook_event_name": "Stop"}),
        client.post("/api/v1/hooks/recall", json={"query": QUERY, "now": bad}),
    ):
        assert response.status_code == 422, response.text
        assert "now" in response.text, response.text


def _plugin_script() -> Any:
    path = Path(__file__).resolve().parent.parent / "plugin" / "scripts" / "memory_hook.py"
    spec = importlib.util.spec_from_file_location("memory_hook_now", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("stamped", [hook_command.stamped, _plugin_script().stamped])
def test_the_hook_commands_stamp_the_time_they_ran(
    server: InProcessServer, token: str, stamped: Any, tmp_path: Path
) -> None:
    """Claude Code's hook input carries no time: the command hooks add it, as a ``now`` the
    server takes."""
    url = stamped("http://127.0.0.1:8765/api/v1/hooks/claude-code")
    (now,) = parse_qs(urlsplit(url).query)["now"]
    assert abs((datetime.fromisoformat(now) - datetime.now(UTC)).total_seconds()) < 5, url
    assert "?" not in stamped("http://h/p?user_id=u").split("?", 1)[1]  # joined with &
    hook_input = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "s",
        "cwd": str(tmp_path),
        "prompt": QUERY,
    }
    response = server.client(token).post(urlsplit(url).path + "?" + urlsplit(url).query, json=hook_input)
    assert response.status_code == 200, response.text
