"""The capture proxy's outbox and delivery thread against the real memory API.

``proxy/ccmem_capture/outbox.py`` and ``sender.py`` use only the standard library, so they run
here in the main virtualenv too, imported as ``proxy.ccmem_capture`` (the mitmproxy hooks are
tested in ``proxy/tests``).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

# proxy/ has no __init__.py: a namespace package, found from the repository root like tests/.
from proxy.ccmem_capture.outbox import Outbox
from proxy.ccmem_capture.sender import Delivery, Exchange
from tests.support.server import MemoryServer


def payload(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "app": "claude-code",
        "project": "/home/alice/shop",
        "conversation_id": "conv-1",
        "model": "claude-opus-5-5",
        "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}],
        "captured_at": "2026-11-22T08:00:00",
        "metadata": {"capture_id": text[:8], "source": "proxy"},
        **extra,
    }


def exchange(text: str) -> Exchange:
    # The builder below ignores the bytes and returns a ready payload: the extraction itself is
    # tested in test_capture_extract.py and proxy/tests.
    return Exchange(text.encode(), 200, "application/json", "", b"", None, "2026-11-22T08:00:00")


def builder(payloads: dict[str, dict[str, Any]]) -> Callable[[Exchange], tuple[str, dict[str, Any]] | None]:
    def build(item: Exchange) -> tuple[str, dict[str, Any]] | None:
        key = item.request_body.decode()
        return (key, payloads[key]) if key in payloads else None

    return build


def pending_texts(server: MemoryServer, token: str) -> list[str]:
    response = httpx.get(
        f"{server.base_url}/api/v1/consent/pending",
        params={"size": 100},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    response.raise_for_status()
    return sorted(item["content"] for item in response.json()["items"])


def wait(predicate: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def server(shared_server: MemoryServer) -> MemoryServer:
    """The delivery posts over the network; each test has a user of its own on the files' server."""
    return shared_server


def test_delivery_acknowledged_rows_are_deleted_refused_ones_dropped(
    server: MemoryServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token = server.make_token(f"alice-{uuid.uuid4().hex[:8]}")  # a user of its own on the shared server
    payloads = {
        "first": payload("first: I prefer tabs over spaces."),
        "refused": payload("refused", messages=[]),  # the API answers 422: never retried
        "second": payload("second: deploys happen on Fridays."),
    }
    outbox = Outbox(tmp_path / "outbox.db", max_rows=100)
    delivery = Delivery(outbox, builder(payloads), api_url=server.base_url, token=token, retry_max_seconds=1)
    with caplog.at_level(logging.INFO, logger="ccmem.capture"):
        delivery.start()
        for key in ("first", "refused", "nothing-to-capture", "second"):
            delivery.submit(exchange(key))
        wait(lambda: len(pending_texts(server, token)) == 2)
        wait(lambda: "refused a turn with 422" in caplog.text)
        delivery.stop()
    assert pending_texts(server, token) == [
        "User: first: I prefer tabs over spaces.\n\nAssistant: Noted.",
        "User: second: deploys happen on Fridays.\n\nAssistant: Noted.",
    ]
    assert Outbox(tmp_path / "outbox.db", max_rows=100).count() == 0
    assert token not in caplog.text


def test_a_refused_token_keeps_the_turn_until_a_good_one_delivers_it(
    server: MemoryServer, tmp_path: Path
) -> None:
    token = server.make_token(f"alice-{uuid.uuid4().hex[:8]}")  # a user of its own on the shared server
    payloads = {"kept": payload("kept: the staging database is called orion.")}
    path = tmp_path / "outbox.db"
    bad = Delivery(
        Outbox(path, max_rows=100),
        builder(payloads),
        api_url=server.base_url,
        token="ccm_wrong",
        retry_max_seconds=1,
    ).start()
    bad.submit(exchange("kept"))
    time.sleep(2.5)  # several attempts, each answered 401
    bad.stop()
    assert Outbox(path, max_rows=100).oldest(1)[0].attempts >= 2
    assert pending_texts(server, token) == []
    good = Delivery(
        Outbox(path, max_rows=100),
        builder(payloads),
        api_url=server.base_url,
        token=token,
        retry_max_seconds=1,
    ).start()
    wait(lambda: len(pending_texts(server, token)) == 1)
    good.stop()
    assert Outbox(path, max_rows=100).count() == 0
    assert pending_texts(server, token) == [
        "User: kept: the staging database is called orion.\n\nAssistant: Noted."
    ]


def test_a_full_outbox_drops_the_oldest_and_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    payloads = {f"turn{i}": payload(f"turn{i}") for i in range(5)}
    outbox = Outbox(tmp_path / "outbox.db", max_rows=3)
    dead = "http://127.0.0.1:9"  # nothing listens on the discard port on loopback
    delivery = Delivery(outbox, builder(payloads), api_url=dead, token="t", retry_max_seconds=60)
    with caplog.at_level(logging.WARNING, logger="ccmem.capture"):
        delivery.start()
        for i in range(5):
            delivery.submit(exchange(f"turn{i}"))
        delivery.stop()
    assert "outbox full (3 turns); dropped the 1 oldest undelivered" in caplog.text
    kept = Outbox(tmp_path / "outbox.db", max_rows=3).oldest(10)
    assert [row.capture_id for row in kept] == ["turn2", "turn3", "turn4"]
