"""Fixtures for the addon's unit tests (run in the proxy's own virtualenv: ``proxy/.venv``).

``sse(...)`` writes the Messages API's streamed wire format, event by event, the way the real
API (and ``tests/support/fake_anthropic.py``) sends it.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PROXY_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = PROXY_DIR.parent
for entry in (str(PROXY_DIR), str(REPO_ROOT)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

SESSION = "5f1d2a9e-8c7b-4d3e-9a10-2b3c4d5e6f70"


def event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def sse(text: str, *, model: str = "claude-opus-5-5", stop: bool = True) -> list[bytes]:
    """The events of a streamed text answer, one ``bytes`` per event (what a tap sees)."""
    start = {"id": "msg_01", "type": "message", "role": "assistant", "model": model, "content": []}
    events = [
        event("message_start", {"type": "message_start", "message": start | {"stop_reason": None}}),
        event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        event("ping", {"type": "ping"}),
    ]
    for i in range(0, len(text), 12):
        delta = {"type": "text_delta", "text": text[i : i + 12]}
        events.append(
            event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events.append(event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    if stop:
        events.append(
            event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 9},
                },
            )
        )
        events.append(event("message_stop", {"type": "message_stop"}))
    return events


def claude_code_request(prompt: str, *, model: str = "claude-opus-5-5") -> dict[str, Any]:
    environment = "# Environment\n - Primary working directory: /home/alice/shop\n - Platform: linux\n"
    return {
        "model": model,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>\nContext.\n</system-reminder>"},
                    {"type": "text", "text": prompt},
                ],
            },
            {"role": "system", "content": [{"type": "text", "text": environment}]},
        ],
        "system": [{"type": "text", "text": "You are a Claude agent."}],
        "metadata": {"user_id": json.dumps({"device_id": "d", "session_id": SESSION})},
        "max_tokens": 32000,
        "stream": True,
    }


def outbox_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    with sqlite3.connect(path, timeout=10) as db:
        return [json.loads(row[0]) for row in db.execute("SELECT payload FROM outbox ORDER BY id")]


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


# -- the addon, configured as ccmem proxy would (shared by the test modules) -------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def outbox_path(tmp_path: Path) -> Path:
    return tmp_path / "proxy" / "outbox.db"


@pytest.fixture
def addon(outbox_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    from ccmem_capture.addon import CaptureAddon  # after sys.path has the addon's directory
    from mitmproxy.test import taddons

    monkeypatch.setenv("CCMEM_PROXY_TOKEN", "proxy-token-for-tests")
    capture = CaptureAddon()
    with taddons.context(capture) as tctx:
        tctx.configure(
            capture,
            confdir=str(tmp_path / "conf"),
            ccmem_api_url=f"http://127.0.0.1:{closed_port()}",
            ccmem_upstream_hosts="api.anthropic.com, LOCALHOST",
            ccmem_outbox=str(outbox_path),
            ccmem_retry_max_seconds="30",
        )
        capture.running()
        yield capture, tctx
        capture.done()
