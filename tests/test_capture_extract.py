"""Turns out of Anthropic Messages traffic: the pure extraction the capture proxy runs.

The bodies are built the way Claude Code 2.1 sends them (a ``role: "system"`` entry with the
environment section, ``<system-reminder>`` blocks, ``metadata.user_id`` as a JSON document,
``?beta=true``) and the streams by the fake upstream's real SSE encoder.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from claude_code_memory.capture.anthropic import (
    CaptureError,
    CaptureRules,
    conversation_id,
    extract_turn,
    is_messages_request,
    parse_sse,
    project_of,
    response_message,
)
from tests.support.fake_anthropic import Reply, message_events, message_json

SESSION = "c719158a-266e-4c5e-8954-6edf545e1164"
RULES = CaptureRules(skip_models=("claude-haiku*", "claude-3-5-haiku*"))
REMINDER = (
    "<system-reminder>\nAs you answer the user's questions, you can use this context.\n</system-reminder>"
)


def environment(workdir: str = "/home/alice/projects/shop") -> dict[str, Any]:
    text = (
        "# Environment\nYou have been invoked in the following environment: \n"
        f" - Primary working directory: {workdir}\n - Is a git repository: true\n - Platform: linux\n"
    )
    return {"role": "system", "content": [{"type": "text", "text": text}]}


def request(*messages: dict[str, Any], model: str = "claude-opus-5-5", stream: bool = True) -> dict[str, Any]:
    user_id = json.dumps({"device_id": "ab" * 32, "account_uuid": "", "session_id": SESSION})
    return {
        "model": model,
        "messages": list(messages),
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.330.ee0;"},
            {"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK."},
        ],
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        "metadata": {"user_id": user_id},
        "max_tokens": 32000,
        "thinking": {"type": "adaptive"},
        "stream": stream,
    }


def user(*blocks: dict[str, Any] | str) -> dict[str, Any]:
    content = [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks]
    return {"role": "user", "content": content}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def sse(reply: Reply, model: str = "claude-opus-5-5") -> bytes:
    return b"".join(message_events(reply, model, "msg_01"))


def streamed(reply: Reply) -> dict[str, Any]:
    return parse_sse(sse(reply))


def turn_of(
    body: dict[str, Any], reply: Reply, rules: CaptureRules = RULES, headers: dict[str, str] | None = None
):
    return extract_turn(body, streamed(reply), headers=headers or {}, rules=rules)


# -- scope -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/v1/messages", True),
        ("POST", "/v1/messages?beta=true", True),
        ("post", "/v1/messages/?beta=true&x=1", True),
        ("GET", "/v1/messages", False),
        ("POST", "/v1/messages/count_tokens?beta=true", False),
        ("POST", "/v1/complete", False),
        ("POST", "/v1/messages/batches", False),
    ],
)
def test_only_post_messages_is_in_scope(method: str, path: str, expected: bool) -> None:
    assert is_messages_request(method, path) is expected


# -- streams -----------------------------------------------------------------------------------


def test_sse_reassembles_text_and_tool_use() -> None:
    reply = Reply(
        [
            {"type": "text", "text": "Let me look that up for you, it takes a moment."},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls -la /tmp"}},
        ],
        stop_reason="tool_use",
    )
    message = streamed(reply)
    assert message["content"][0] == {"type": "text", "text": reply.content[0]["text"]}
    assert message["content"][1]["name"] == "Bash"
    assert message["content"][1]["input"] == {"command": "ls -la /tmp"}
    assert message["stop_reason"] == "tool_use"
    assert message["model"] == "claude-opus-5-5"


def test_sse_with_crlf_and_thinking_keeps_no_thinking() -> None:
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [],
                "stop_reason": None,
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "secret plan"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQB"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Teal it is."}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]
    data = "".join(f"event: {e['type']}\r\ndata: {json.dumps(e)}\r\n\r\n" for e in events).encode()
    message = parse_sse(data)
    turn = extract_turn(request(user("Colour?")), message, headers={}, rules=RULES)
    assert turn is not None
    assert turn.assistant_text == "Teal it is."
    assert "secret plan" not in json.dumps(
        turn.payload(user_id=None, app="a", captured_at="t", capture_id="c")
    )


def test_a_stream_cut_mid_way_is_not_a_message() -> None:
    data = sse(Reply.text("This answer will be cut off before it ends."))
    cut = data[: data.index(b"event: content_block_stop")]
    with pytest.raises(CaptureError, match="message_stop"):
        parse_sse(cut)


def test_a_stream_that_reports_an_error_is_not_a_message() -> None:
    data = sse(Reply.text("Half"))
    error = (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    with pytest.raises(CaptureError, match="overloaded_error"):
        parse_sse(data[: len(data) // 2].rsplit(b"\n\n", 1)[0] + b"\n\n" + error)


def test_plain_json_response() -> None:
    body = json.dumps(message_json(Reply.text("Plain answer."), "claude-opus-5-5", "msg_2")).encode()
    message = response_message(body, "application/json")
    assert message["content"] == [{"type": "text", "text": "Plain answer."}]
    with pytest.raises(CaptureError):
        response_message(gzip.compress(body), "application/json")  # the proxy decodes first
    with pytest.raises(CaptureError):
        response_message(b'{"type":"error","error":{"type":"rate_limit_error"}}', "application/json")


# -- turns -------------------------------------------------------------------------------------


def test_claude_code_turn() -> None:
    body = request(environment(), user(REMINDER, "Remember that my favourite colour is teal"))
    turn = turn_of(body, Reply.text("Noted: teal."), headers={"X-Claude-Code-Session-Id": SESSION})
    assert turn is not None
    assert turn.user_text == "Remember that my favourite colour is teal"
    assert turn.assistant_text == "Noted: teal."
    assert turn.conversation_id == SESSION
    assert turn.project == "/home/alice/projects/shop"
    assert turn.model == "claude-opus-5-5"
    assert turn.tools == ()
    payload = turn.payload(
        user_id="alice", app="claude-code", captured_at="2026-11-22T08:00:00", capture_id="c1"
    )
    assert payload["messages"] == [
        {"role": "user", "content": "Remember that my favourite colour is teal"},
        {"role": "assistant", "content": "Noted: teal."},
    ]
    assert payload["metadata"] == {"capture_id": "c1", "source": "proxy"}
    assert payload["user_id"] == "alice"


def test_inline_reminders_images_and_string_content() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    body = request(user(image, f"What is in this picture?{REMINDER} Be brief."))
    turn = turn_of(body, Reply.text("A cat."))
    assert turn is not None and turn.user_text == "What is in this picture? Be brief."
    assert "iVBOR" not in turn.user_text
    plain = request({"role": "user", "content": "Just a string prompt"}, stream=False)
    assert turn_of(plain, Reply.text("ok")).user_text == "Just a string prompt"


def test_tool_loop_is_one_turn_captured_when_the_model_ends_it() -> None:
    prompt = user(REMINDER, "What does my config say?")
    call = assistant(
        {"type": "thinking", "thinking": "private", "signature": "x"},
        {"type": "text", "text": "Let me read it."},
        {"type": "tool_use", "id": "toolu_9", "name": "Read", "input": {"file_path": "/etc/app.conf"}},
    )
    # Claude Code puts text of its own beside tool results ("Tool loaded."): not the user speaking.
    result = user(
        {"type": "tool_result", "tool_use_id": "toolu_9", "content": "port = 8080"}, REMINDER, "Tool loaded."
    )
    # The request that asks for the tool call: the turn is not over.
    first = Reply.tool_use(
        "Read", {"file_path": "/etc/app.conf"}, tool_use_id="toolu_9", preamble="Let me read it."
    )
    assert turn_of(request(environment(), prompt), first) is None
    # The request that carries the result gets the final answer: one turn, the whole loop.
    turn = turn_of(request(environment(), prompt, call, result), Reply.text("It listens on port 8080."))
    assert turn is not None
    assert turn.user_text == "What does my config say?"
    assert turn.assistant_text == "Let me read it.\n\nIt listens on port 8080."
    assert turn.tools == ("Read",)
    assert "private" not in turn.assistant_text
    assert "port = 8080" not in turn.user_text  # tool results are off by default
    with_results = CaptureRules(capture_tool_results=True)
    turn = turn_of(request(prompt, call, result), Reply.text("Port 8080."), rules=with_results)
    assert turn is not None and turn.user_text == "What does my config say?\n\nport = 8080"


def test_nothing_to_capture() -> None:
    # Only reminders, only an image, only tool results: no new user text.
    assert turn_of(request(user(REMINDER)), Reply.text("ok")) is None
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    assert turn_of(request(user(image)), Reply.text("ok")) is None
    only_result = user(
        {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "x"}]}
    )
    assert turn_of(request(only_result), Reply.text("ok")) is None
    # System-role entries are never user text.
    assert turn_of(request(environment()), Reply.text("ok")) is None


@pytest.mark.parametrize(
    "model", ["claude-haiku-4-5-20251001", "claude-3-5-haiku-20241022", "CLAUDE-HAIKU-5"]
)
def test_skipped_models(model: str) -> None:
    assert turn_of(request(user("Write a title"), model=model), Reply.text("Title")) is None


def test_conversation_id_sources() -> None:
    assert conversation_id({"x-claude-code-session-id": "s-1"}, {}) == "s-1"
    assert conversation_id({}, request(user("x"))) == SESSION
    legacy = {"metadata": {"user_id": "user_abc123_account_def_session_0f9e-11"}}
    assert conversation_id({}, legacy) == "0f9e-11"
    assert conversation_id({}, {"metadata": {"user_id": "plain-id"}}) == "plain-id"
    assert conversation_id({}, {}) is None


def test_project_from_system_prompt_string_or_blocks() -> None:
    assert (
        project_of({"system": "Env:\nWorking directory: /srv/app\nPlatform: linux", "messages": []})
        == "/srv/app"
    )
    blocks = {
        "system": [{"type": "text", "text": "<env>\nWorking directory: /w/x y\n</env>"}],
        "messages": [],
    }
    assert project_of(blocks) == "/w/x y"
    assert project_of(request(environment("/p/q"), user("hi"))) == "/p/q"
    assert project_of({"system": "nothing here", "messages": []}) is None


def test_bad_request_bodies_raise() -> None:
    with pytest.raises(CaptureError):
        extract_turn({"model": "m"}, {"content": []}, headers={}, rules=RULES)
    with pytest.raises(CaptureError):
        parse_sse(b"event: message_start\ndata: {not json\n\n")
