"""The delivery thread: captured flows in, acknowledged turns out.

The proxy's event loop must never wait on parsing, SQLite or the memory API, so the addon only
hands each finished ``/v1/messages`` exchange (:class:`Exchange`: raw bytes, no headers beyond
the session id) to :meth:`Delivery.submit`. One background thread then, in order:

1. turns the exchange into the body of ``POST /api/v1/capture`` (``build`` — extraction and
   redaction; ``None`` means nothing to capture) and writes it to the :class:`Outbox`;
2. sends the oldest outbox rows to the API with the proxy's token, deleting each row when the
   API acknowledges it (2xx). A connection error, a timeout, 401/403, 408, 429 or a 5xx keeps
   the row and waits (exponential backoff up to ``retry_max_seconds``); any other 4xx means the
   API will never take that body, so it is dropped and logged.

``stop()`` (mitmproxy's ``done``) writes whatever is still queued to the outbox and returns:
rows not yet delivered are sent by the next start.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .outbox import Outbox

log = logging.getLogger("ccmem.capture")

CAPTURE_PATH = "/api/v1/capture"
RETRYABLE = frozenset({401, 403, 404, 408, 425, 429})
FIRST_BACKOFF = 0.5
SEND_TIMEOUT = 10.0


@dataclass(frozen=True)
class Exchange:
    """One finished ``POST /v1/messages``: what the extraction needs and nothing else."""

    request_body: bytes
    status_code: int
    content_type: str
    content_encoding: str
    response_body: bytes
    session_id: str | None
    captured_at: str


Builder = Callable[[Exchange], "tuple[str, dict[str, Any]] | None"]


class Delivery:
    def __init__(
        self,
        outbox: Outbox,
        build: Builder,
        *,
        api_url: str,
        token: str | None,
        retry_max_seconds: float,
    ) -> None:
        self.outbox = outbox
        self.build = build
        self.url = api_url.rstrip("/") + CAPTURE_PATH
        self.token = token
        self.retry_max_seconds = retry_max_seconds
        self._incoming: queue.Queue[Exchange | None] = queue.Queue()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ccmem-delivery", daemon=True)
        self._backoff = 0.0
        self._next_attempt = 0.0
        # Never the environment's proxies: the proxy must not send memories through itself.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> Delivery:
        self._thread.start()
        return self

    def submit(self, exchange: Exchange) -> None:
        self._incoming.put(exchange)

    def stop(self, timeout: float = 20.0) -> None:
        self._stopping.set()
        self._incoming.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("capture: the delivery thread did not stop within %.0f s", timeout)
        else:
            self.outbox.close()

    # -- the loop --------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            wait = max(0.0, self._next_attempt - time.monotonic()) if self.outbox.count() else None
            try:
                item = self._incoming.get(timeout=wait)
            except queue.Empty:
                item = None
            self._record(item)
            self._drain_queue()
            if self._stopping.is_set():
                return
            self._send_due()

    def _drain_queue(self) -> None:
        while True:
            try:
                self._record(self._incoming.get_nowait())
            except queue.Empty:
                return

    def _record(self, exchange: Exchange | None) -> None:
        if exchange is None:
            return
        try:
            built = self.build(exchange)
            if built is None:
                return
            capture_id, payload = built
            dropped = self.outbox.add(capture_id, payload)
        except Exception as exc:  # one bad exchange must not stop the thread
            log.warning("capture: could not record a turn: %s: %s", exc.__class__.__name__, exc)
            return
        if dropped:
            log.warning(
                "capture: outbox full (%d turns); dropped the %d oldest undelivered",
                self.outbox.max_rows,
                dropped,
            )
        log.info("capture: turn %s queued for delivery", capture_id)

    def _send_due(self) -> None:
        while not self._stopping.is_set() and time.monotonic() >= self._next_attempt:
            rows = self.outbox.oldest(1)
            if not rows:
                return
            row = rows[0]
            outcome = self._send(row.payload)
            if outcome == "ok":
                self.outbox.delete(row.id)
                self._backoff = 0.0
                log.info("capture: turn %s delivered", row.capture_id)
            elif outcome == "rejected":
                self.outbox.delete(row.id)
            else:
                self.outbox.note_attempt(row.id)
                self._backoff = min(max(self._backoff * 2, FIRST_BACKOFF), self.retry_max_seconds)
                self._next_attempt = time.monotonic() + self._backoff
                return
            if not self._incoming.empty():
                return  # record new turns first; the loop comes back here at once

    def _send(self, payload: dict[str, Any]) -> str:
        """``ok``, ``rejected`` (never retried) or ``retry``."""
        headers = {"Content-Type": "application/json", "User-Agent": "ccmem-capture-proxy"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(
            self.url, data=json.dumps(payload).encode(), headers=headers, method="POST"
        )
        try:
            with self._opener.open(request, timeout=SEND_TIMEOUT) as response:
                response.read()
                return "ok"
        except urllib.error.HTTPError as exc:
            status = exc.code
            detail = _error_detail(exc)
        except (OSError, ValueError) as exc:
            log.info(
                "capture: memory API unreachable at %s (%s); will retry", self.url, exc.__class__.__name__
            )
            return "retry"
        if status in RETRYABLE or status >= 500:
            level = logging.WARNING if status in (401, 403, 404) else logging.INFO
            log.log(level, "capture: memory API answered %d (%s); will retry", status, detail)
            return "retry"
        log.warning("capture: memory API refused a turn with %d (%s); dropped", status, detail)
        return "rejected"


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read() or b"{}")
    except (OSError, ValueError):
        return exc.reason or "no detail"
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("error") or body
        return str(detail)[:300]
    return str(body)[:300]
