"""The addon's hooks, called directly with mitmproxy's own test helpers (``taddons``, ``tflow``).

No network: the memory API URL points at a closed loopback port, so captured turns stay in the
outbox, where the tests read them. Delivery to the real API is tested in the main suite.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from ccmem_capture.addon import MAX_CAPTURE_BYTES, CaptureAddon, Tap
from ccmem_capture.outbox import Outbox
from conftest import SESSION, claude_code_request, outbox_rows, sse
from mitmproxy import exceptions
from mitmproxy.http import Headers, Response
from mitmproxy.test import tflow, tutils

API_KEY = "sk-ant-api03-" + "Q" * 80 + "-AAAAAAAA"
SECRET = "sk-ant-api03-" + "Zb3" * 30 + "-BBBBBBBB"


def messages_flow(
    body: dict[str, Any] | bytes,
    *,
    host: str = "api.anthropic.com",
    path: str = "/v1/messages?beta=true",
    method: str = "POST",
) -> Any:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = tutils.treq(host=host, port=443, scheme=b"https", method=method.encode(), path=path.encode())
    request.headers = Headers(
        [
            (b"x-api-key", API_KEY.encode()),
            (b"authorization", b"Bearer " + API_KEY.encode()),
            (b"cookie", b"session=" + API_KEY.encode()),
            (b"x-claude-code-session-id", SESSION.encode()),
            (b"content-type", b"application/json"),
        ]
    )
    request.content = content
    return tflow.tflow(req=request)


def respond(
    capture: CaptureAddon, flow: Any, chunks: list[bytes], *, status: int = 200, headers=None
) -> bytes:
    """Run the response hooks the way mitmproxy does for a streamed body; return what the client got."""
    flow.response = Response.make(status, b"", headers or {"content-type": "text/event-stream"})
    capture.responseheaders(flow)
    stream = flow.response.stream
    delivered = b"".join(stream(chunk) if callable(stream) else chunk for chunk in [*chunks, b""])
    capture.response(flow)
    return delivered


def settle(capture: CaptureAddon) -> None:
    """Wait until the delivery thread has recorded everything submitted so far."""
    assert capture.delivery is not None
    # Stopping drains the queue into the outbox; the test then reads the file.
    capture.done()


# -- scope -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "method", "path", "in_scope"),
    [
        ("api.anthropic.com", "POST", "/v1/messages", True),
        ("api.anthropic.com", "POST", "/v1/messages?beta=true", True),
        ("localhost", "POST", "/v1/messages?beta=true", True),
        ("api.anthropic.com", "POST", "/v1/messages/count_tokens?beta=true", False),
        ("api.anthropic.com", "GET", "/v1/models", False),
        ("api.anthropic.com", "HEAD", "/", False),
        ("example.com", "POST", "/v1/messages", False),
    ],
)
def test_only_messages_posts_to_upstream_hosts_are_tapped(addon, host, method, path, in_scope) -> None:
    capture, _ = addon
    flow = messages_flow(claude_code_request("hi"), host=host, path=path, method=method)
    capture.requestheaders(flow)
    flow.response = Response.make(200, b"", {"content-type": "text/event-stream"})
    capture.responseheaders(flow)
    if in_scope:
        assert isinstance(flow.response.stream, Tap)
    else:
        # Passed on untouched, and streamed rather than buffered.
        assert flow.response.stream is True


def test_tap_passes_every_chunk_unchanged_and_keeps_a_copy() -> None:
    tap = Tap()
    chunks = [b"event: ping\n", b"data: {}\n\n", gzip.compress(b"binary \x00\xff"), b""]
    assert all(tap(chunk) is chunk for chunk in chunks)
    assert tap.body() == b"".join(chunks)


def test_tap_stops_copying_past_the_limit_but_still_passes_on() -> None:
    tap = Tap()
    big = b"x" * (MAX_CAPTURE_BYTES // 2 + 1)
    assert tap(big) is big and tap(big) is big
    assert tap.overflow and tap.body() == b""


# -- capture -----------------------------------------------------------------------------------


def test_a_streamed_turn_is_redacted_into_the_outbox(addon, outbox_path: Path) -> None:
    capture, _ = addon
    flow = messages_flow(claude_code_request(f"Deploy with key {SECRET} please"))
    capture.requestheaders(flow)
    chunks = sse("Done. Deployed with the key you gave me.")
    assert respond(capture, flow, chunks) == b"".join(chunks)
    settle(capture)
    [row] = outbox_rows(outbox_path)
    assert row["messages"][0]["content"] == "Deploy with key [REDACTED:anthropic_api_key] please"
    assert row["messages"][1] == {"role": "assistant", "content": "Done. Deployed with the key you gave me."}
    assert row["conversation_id"] == SESSION
    assert row["project"] == "/home/alice/shop"
    assert row["model"] == "claude-opus-5-5"
    assert row["app"] == "claude-code"
    assert len(row["metadata"]["capture_id"]) == 32
    # No credential of the request reaches the disk, in any file of the outbox.
    for path in outbox_path.parent.iterdir():
        data = path.read_bytes()
        assert API_KEY.encode() not in data and SECRET.encode() not in data, path
        assert b"proxy-token-for-tests" not in data


def test_the_payload_counts_what_the_proxy_redacted(addon, outbox_path: Path) -> None:
    """The server sees only the masks; ``redactions`` tells it how many secrets were behind them."""
    capture, _ = addon
    for prompt in (f"Deploy with key {SECRET} and {API_KEY} please", "Nothing secret here"):
        flow = messages_flow(claude_code_request(prompt))
        capture.requestheaders(flow)
        respond(capture, flow, sse("Done."))
    settle(capture)
    secret, plain = outbox_rows(outbox_path)
    assert secret["messages"][0]["content"].count("[REDACTED:anthropic_api_key]") == 2
    assert secret["redactions"] == 2
    assert plain["redactions"] == 0


def test_personal_data_is_masked_when_the_server_masks_it(addon, outbox_path) -> None:
    capture, tctx = addon
    tctx.configure(capture, ccmem_mask_pii=True)
    capture.running()
    flow = messages_flow(claude_code_request("Mail me at alice.smith@fastmail.com"))
    capture.requestheaders(flow)
    respond(capture, flow, sse("Will do."))
    settle(capture)
    [row] = outbox_rows(outbox_path)
    assert "alice.smith@fastmail.com" not in row["messages"][0]["content"]
    assert "[REDACTED:email]" in row["messages"][0]["content"]


def test_a_gzip_json_response_reaches_the_client_compressed_and_is_captured(addon, outbox_path) -> None:
    capture, _ = addon
    body = claude_code_request("What is 2+2?") | {"stream": False}
    flow = messages_flow(body)
    capture.requestheaders(flow)
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-5-5",
        "content": [{"type": "text", "text": "Four."}],
        "stop_reason": "end_turn",
    }
    compressed = gzip.compress(json.dumps(message).encode())
    halves = [compressed[:10], compressed[10:]]
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    assert respond(capture, flow, halves, headers=headers) == compressed
    settle(capture)
    [row] = outbox_rows(outbox_path)
    assert row["messages"] == [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "Four."},
    ]


@pytest.mark.parametrize("status", [400, 429, 500, 529])
def test_upstream_errors_store_nothing(addon, outbox_path, status) -> None:
    capture, _ = addon
    flow = messages_flow(claude_code_request("hello"))
    capture.requestheaders(flow)
    error = json.dumps(
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    ).encode()
    assert (
        respond(capture, flow, [error], status=status, headers={"content-type": "application/json"}) == error
    )
    settle(capture)
    assert outbox_rows(outbox_path) == []


def test_a_stream_cut_mid_way_stores_nothing(addon, outbox_path) -> None:
    capture, _ = addon
    flow = messages_flow(claude_code_request("hello"))
    capture.requestheaders(flow)
    chunks = sse("This answer is cut off", stop=False)
    assert respond(capture, flow, chunks) == b"".join(chunks)
    capture.error(flow)
    settle(capture)
    assert outbox_rows(outbox_path) == []


def test_skipped_models_and_tool_only_turns_store_nothing(addon, outbox_path) -> None:
    capture, _ = addon
    haiku = messages_flow(claude_code_request("Write a 3-word title", model="claude-haiku-4-5-20251001"))
    capture.requestheaders(haiku)
    respond(capture, haiku, sse("Colour Preference Chat", model="claude-haiku-4-5-20251001"))
    settle(capture)
    assert outbox_rows(outbox_path) == []


def test_an_addon_error_is_logged_and_the_flow_goes_on(addon, outbox_path, caplog) -> None:
    capture, _ = addon
    flow = messages_flow(b"this is not json")
    capture.requestheaders(flow)
    chunks = sse("fine")
    with caplog.at_level(logging.WARNING, logger="ccmem.capture"):
        assert respond(capture, flow, chunks) == b"".join(chunks)
        settle(capture)
    assert outbox_rows(outbox_path) == []
    assert "could not record a turn" in caplog.text
    assert API_KEY not in caplog.text
    # A hook given a flow it cannot handle raises nothing either.
    broken = messages_flow(claude_code_request("x"))
    broken.request = None
    capture.requestheaders(broken)
    capture.response(broken)


# -- options and outbox ------------------------------------------------------------------------


def test_bad_options_are_refused_with_the_option_named(addon) -> None:
    capture, tctx = addon
    with pytest.raises(exceptions.OptionsError, match="ccmem_api_url"):
        tctx.configure(capture, ccmem_api_url="ftp://example.com")
    with pytest.raises(exceptions.OptionsError, match="ccmem_upstream_hosts"):
        tctx.configure(capture, ccmem_upstream_hosts=" , ")
    with pytest.raises(exceptions.OptionsError, match="ccmem_outbox_max_rows"):
        tctx.configure(capture, ccmem_outbox_max_rows=0)
    for bad in ("soon", "0", "-1", "nan"):
        with pytest.raises(exceptions.OptionsError, match="ccmem_retry_max_seconds"):
            tctx.configure(capture, ccmem_retry_max_seconds=bad)


def test_the_token_comes_from_the_environment_only(addon) -> None:
    capture, tctx = addon
    assert capture.config is not None and capture.config.token == "proxy-token-for-tests"
    # No option takes it: a command line is visible to every user of the machine.
    names = list(tctx.options.keys())  # noqa: SIM118 (OptManager is not iterable)
    assert "ccmem_api_url" in names
    assert [name for name in names if name.startswith("ccmem_") and "token" in name] == []


def test_outbox_is_private_and_bounded(tmp_path: Path, caplog) -> None:
    path = tmp_path / "outbox.db"
    outbox = Outbox(path, max_rows=3)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    dropped = [outbox.add(f"id{i}", {"n": i}) for i in range(5)]
    assert dropped == [0, 0, 0, 1, 1]
    assert [row.payload["n"] for row in outbox.oldest(10)] == [2, 3, 4]
    outbox.add("id4", {"n": 99})  # the same capture id again: stored once
    assert outbox.count() == 3
    for sidecar in tmp_path.iterdir():
        assert stat.S_IMODE(os.stat(sidecar).st_mode) == 0o600, sidecar
    outbox.close()
    reopened = Outbox(path, max_rows=3)
    assert [row.capture_id for row in reopened.oldest(10)] == ["id2", "id3", "id4"]
    reopened.close()
