"""The test harness itself: the fake Anthropic upstream speaks the real wire format and drives the
real Claude Code CLI, and the PostgreSQL fixture gives a working password login on loopback.

When an end-to-end test fails, these say whether the harness or the server is to blame.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.support.fake_anthropic import FakeAnthropic, Reply, ToolThenAnswer, always_text
from tests.support.node_clients import run_claude
from tests.support.postgres import PostgresDatabase


def parse_sse(text: str) -> list[tuple[str, dict]]:
    events = []
    for chunk in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


@pytest.mark.integration
def test_fake_upstream_streams_a_tool_use_as_the_api_does() -> None:
    script = ToolThenAnswer("mcp__memory__search_memory", {"query": "editor settings"}, "done")
    body = {
        "model": "claude-test",
        "stream": True,
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "mcp__memory__search_memory", "input_schema": {"type": "object"}}],
    }
    with FakeAnthropic(script) as upstream:
        response = httpx.post(f"{upstream.base_url}/v1/messages?beta=true", json=body, timeout=10)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert "ping" in names
    assert all(name == data["type"] for name, data in events)
    tool_index = next(
        data["index"]
        for name, data in events
        if name == "content_block_start" and data["content_block"]["type"] == "tool_use"
    )
    partial = "".join(
        data["delta"]["partial_json"]
        for name, data in events
        if name == "content_block_delta" and data["index"] == tool_index
    )
    assert json.loads(partial) == {"query": "editor settings"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert upstream.message_requests[0].query == "beta=true"
    assert upstream.message_requests[0].body == body


@pytest.mark.integration
def test_fake_upstream_answers_json_when_not_streaming() -> None:
    with FakeAnthropic(lambda body: Reply.text("plain answer")) as upstream:
        head = httpx.head(upstream.base_url + "/", timeout=10)
        response = httpx.post(
            f"{upstream.base_url}/v1/messages",
            json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
            timeout=10,
        )

    assert head.status_code == 200
    message = response.json()
    assert message["type"] == "message" and message["stop_reason"] == "end_turn"
    assert message["content"] == [{"type": "text", "text": "plain answer"}]


@pytest.mark.e2e
def test_claude_code_talks_to_the_fake_upstream(tmp_path: Path) -> None:
    with FakeAnthropic(always_text("Hello from the fake upstream.")) as upstream:
        run = run_claude("Say hello.", home=tmp_path, upstream_url=upstream.base_url)

    assert run.returncode == 0, run.describe()
    result = run.event("result")
    assert result.get("subtype") == "success" and result.get("result") == "Hello from the fake upstream.", (
        run.describe()
    )
    first = upstream.message_requests[0]
    assert first.body["stream"] is True
    assert first.headers.get("x-api-key") == "dummy"


@pytest.mark.postgres
def test_postgres_fixture_gives_a_password_login_on_loopback(
    postgres: PostgresDatabase, postgres_url: str
) -> None:
    with psycopg.connect(postgres_url, connect_timeout=5) as connection:
        user, address = connection.execute("SELECT current_user, inet_server_addr()").fetchone()
        connection.execute("CREATE TABLE probe (id int)")

    assert user == postgres.user
    assert str(address) == "127.0.0.1"
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(postgres_url.replace(postgres.password, "wrong-password"), connect_timeout=5)
