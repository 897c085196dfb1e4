"""The memory tool bridge in the addon's hooks (``ccmem_memory_tool_bridge``), called directly.

The translation itself is tested in the main suite (tests/test_memory_bridge.py); here: which
flows it touches, the headers, the stream callable mitmproxy gets, JSON bodies (compressed
too), and the captured turn.
"""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from ccmem_capture.addon import BridgedStream, Tap
from conftest import claude_code_request, event, outbox_rows
from mitmproxy.http import Response
from test_addon import messages_flow, settle

from claude_code_memory.capture.memory_bridge import BETA, MCP_TOOL_NAME, NATIVE_TOOL

MCP_DEFINITION = {"name": MCP_TOOL_NAME, "description": "memory", "input_schema": {"type": "object"}}
CLIENT_BETAS = "claude-code-20250219,context-management-2025-06-27,oauth-2025-04-20"


@pytest.fixture
def bridge(addon):
    capture, tctx = addon
    tctx.configure(capture, ccmem_memory_tool_bridge=True)
    capture.running()
    return capture, tctx


def memory_request(*, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body = claude_code_request("Remember that I deploy on Fridays.")
    body["messages"] += [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_0", "name": MCP_TOOL_NAME, "input": {"command": "view"}}
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content": "empty"}]},
    ]
    body["tools"] = tools if tools is not None else [{"name": "Bash"}, MCP_DEFINITION]
    return body


def send_request(capture, body: dict[str, Any] | bytes, *, path: str = "/v1/messages?beta=true", betas=None):
    flow = messages_flow(body, path=path)
    flow.request.headers["accept-encoding"] = "gzip, deflate, br"
    for beta in betas if betas is not None else [CLIENT_BETAS]:
        flow.request.headers.add("anthropic-beta", beta)
    capture.requestheaders(flow)
    capture.request(flow)
    return flow


def stream_answer(capture, flow, chunks: list[bytes], headers=None):
    """What mitmproxy sends the client for each upstream chunk (and the end) of a streamed answer."""
    flow.response = Response.make(200, b"", headers or {"content-type": "text/event-stream; charset=utf-8"})
    capture.responseheaders(flow)
    stream = flow.response.stream
    assert callable(stream)
    sent = [stream(chunk) for chunk in chunks]
    sent.append(stream(b""))
    capture.response(flow)
    return [piece if isinstance(piece, bytes) else b"".join(piece) for piece in sent], sent


def tool_use_stream(name: str) -> list[bytes]:
    start = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-5-5",
        "content": [],
    }
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}
    return [
        event("message_start", {"type": "message_start", "message": start | {"stop_reason": None}}),
        event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Noted in my memory."},
            },
        ),
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event("content_block_start", {"type": "content_block_start", "index": 1, "content_block": block}),
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"command":"view"}'},
            },
        ),
        event("content_block_stop", {"type": "content_block_stop", "index": 1}),
        event(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
        ),
        event("message_stop", {"type": "message_stop"}),
    ]


# -- requests ----------------------------------------------------------------------------------


def test_off_by_default_requests_and_answers_pass_untouched(addon) -> None:
    capture, _ = addon
    raw = json.dumps(memory_request()).encode()
    flow = send_request(capture, raw)
    assert flow.request.raw_content == raw
    assert flow.request.headers.get_all("anthropic-beta") == [CLIENT_BETAS]
    assert flow.request.headers["accept-encoding"] == "gzip, deflate, br"
    flow.response = Response.make(200, b"", {"content-type": "text/event-stream"})
    capture.responseheaders(flow)
    assert isinstance(flow.response.stream, Tap)


def test_a_request_offering_the_mcp_tool_is_bridged(bridge) -> None:
    capture, _ = bridge
    flow = send_request(capture, memory_request(), betas=["claude-code-20250219", "oauth-2025-04-20"])
    body = json.loads(flow.request.raw_content)
    assert body["tools"] == [{"name": "Bash"}, NATIVE_TOOL]
    assert body["messages"][2]["content"][0]["name"] == "memory"
    assert flow.request.headers["content-length"] == str(len(flow.request.raw_content))
    assert flow.request.headers.get_all("anthropic-beta") == [f"claude-code-20250219,oauth-2025-04-20,{BETA}"]
    assert flow.request.headers["accept-encoding"] == "identity"
    # Credentials and everything else of the request are as the client sent them.
    assert flow.request.headers["x-api-key"].startswith("sk-ant-api03-")


def test_the_clients_beta_is_not_repeated(bridge) -> None:
    capture, _ = bridge
    flow = send_request(capture, memory_request())
    assert flow.request.headers.get_all("anthropic-beta") == [CLIENT_BETAS]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (memory_request(tools=[{"name": "Bash"}]), "/v1/messages?beta=true"),  # no MCP memory tool
        (memory_request(tools=[MCP_DEFINITION, {"name": "memory"}]), "/v1/messages"),  # a clash
        (memory_request(), "/v1/messages/count_tokens?beta=true"),  # out of scope
    ],
)
def test_other_requests_stay_byte_identical(bridge, body, path) -> None:
    capture, _ = bridge
    raw = json.dumps(body, indent=1).encode()
    flow = send_request(capture, raw, path=path)
    assert flow.request.raw_content == raw
    assert flow.request.headers.get_all("anthropic-beta") == [CLIENT_BETAS]
    assert flow.request.headers["accept-encoding"] == "gzip, deflate, br"


# -- streamed answers --------------------------------------------------------------------------


def test_a_streamed_answer_is_renamed_event_by_event_and_captured_with_the_mcp_name(
    bridge, outbox_path
) -> None:
    capture, _ = bridge
    flow = send_request(capture, memory_request())
    events = tool_use_stream("memory")
    # Upstream cuts the events anywhere: mid-event, several at once.
    whole = b"".join(events)
    chunks = [whole[i : i + 37] for i in range(0, len(whole), 37)]
    delivered, raw_returns = stream_answer(capture, flow, chunks)
    assert isinstance(flow.response.stream, BridgedStream)
    expected = whole.replace(b'"name":"memory"', f'"name":"{MCP_TOOL_NAME}"'.encode())
    assert b"".join(delivered) == expected
    # Never b"" mid-stream: mitmproxy would send it as the chunk that ends a chunked body.
    assert all(piece != b"" for piece in raw_returns[:-1])
    settle(capture)
    [row] = outbox_rows(outbox_path)
    assert row["metadata"]["tools"] == [MCP_TOOL_NAME]
    assert row["messages"][0]["content"] == "Remember that I deploy on Fridays."


def test_an_answer_to_an_unbridged_request_keeps_its_names(bridge) -> None:
    capture, _ = bridge
    flow = send_request(capture, memory_request(tools=[{"name": "Bash"}]))
    chunks = tool_use_stream("memory")
    delivered, _ = stream_answer(capture, flow, chunks)
    assert isinstance(flow.response.stream, Tap)
    assert b"".join(delivered) == b"".join(chunks)


def test_a_compressed_stream_passes_unchanged_with_a_warning(bridge, caplog) -> None:
    capture, _ = bridge
    flow = send_request(capture, memory_request())
    compressed = gzip.compress(b"".join(tool_use_stream("memory")))
    headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
    with caplog.at_level(logging.WARNING, logger="ccmem.capture"):
        delivered, _ = stream_answer(capture, flow, [compressed[:20], compressed[20:]], headers)
    assert b"".join(delivered) == compressed
    assert "compressed stream" in caplog.text


def test_a_renamer_failure_passes_the_rest_unchanged(caplog) -> None:
    tap = Tap()
    stream = BridgedStream(tap)
    events = tool_use_stream("memory")

    class Broken:
        held = b"held "

        def __call__(self, chunk: bytes) -> bytes:
            raise RuntimeError("bug")

    stream.renamer = Broken()  # type: ignore[assignment]
    with caplog.at_level(logging.ERROR, logger="ccmem.capture"):
        assert stream(events[0]) == b"held " + events[0]
        assert stream(events[1]) == events[1]
    assert "renaming the stream failed" in caplog.text
    assert tap.body() == b"held " + events[0] + events[1]


# -- JSON answers ------------------------------------------------------------------------------


def json_answer(name: str) -> bytes:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-5-5",
        "content": [
            {"type": "text", "text": "Looking at my memory."},
            {"type": "tool_use", "id": "toolu_1", "name": name, "input": {"command": "view"}},
        ],
        "stop_reason": "end_turn",
    }
    return json.dumps(message).encode()


@pytest.mark.parametrize("encoding", ["identity", "gzip", "br", "deflate", "zstd"])
def test_a_json_answer_is_renamed_in_any_encoding_and_captured(bridge, outbox_path, encoding) -> None:
    capture, _ = bridge
    flow = send_request(capture, memory_request() | {"stream": False})
    headers = {"content-type": "application/json"}
    if encoding != "identity":
        headers["content-encoding"] = encoding
    flow.response = Response.make(200, b"", headers)
    capture.responseheaders(flow)
    assert not flow.response.stream  # buffered: the whole body is needed
    flow.response.content = json_answer("memory")  # encoded as the header says
    capture.response(flow)
    assert flow.response.headers.get("content-encoding", "identity") == encoding
    assert flow.response.headers["content-length"] == str(len(flow.response.raw_content))
    assert flow.response.content == json_answer(MCP_TOOL_NAME)
    settle(capture)
    [row] = outbox_rows(outbox_path)
    assert row["metadata"]["tools"] == [MCP_TOOL_NAME]


def test_a_json_error_passes_unchanged(bridge, outbox_path: Path) -> None:
    capture, _ = bridge
    flow = send_request(capture, memory_request() | {"stream": False})
    error = b'{"type":"error","error":{"type":"overloaded_error","message":"memory"}}'
    flow.response = Response.make(529, b"", {"content-type": "application/json"})
    capture.responseheaders(flow)
    flow.response.content = error
    capture.response(flow)
    assert flow.response.raw_content == error
    settle(capture)
    assert outbox_rows(outbox_path) == []
