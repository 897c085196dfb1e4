"""The mitmproxy addon: tap ``POST /v1/messages`` responses as they stream, capture the turn after.

Hooks, in the order a flow meets them:

* ``requestheaders``: is this flow in scope (``POST /v1/messages``, any query string, to one of
  ``ccmem_upstream_hosts``)? Only then is it marked; everything else passes untouched.
* ``request`` (only with ``ccmem_memory_tool_bridge``): an in-scope request that offers our MCP
  memory tool is rewritten for Anthropic's native memory tool (``capture/memory_bridge.py``);
  the flow is marked *bridged* and the original body kept for the capture.
* ``responseheaders``: an in-scope response gets a *tap* as ``flow.response.stream``: each
  chunk is copied aside and passed on unchanged, at once, still encoded — SSE is never held
  back and a compressed body reaches the client exactly as upstream sent it. Out-of-scope
  responses are streamed too (``stream = True``): the MCP server's SSE may come through here.
* ``response``: the exchange (request body, tapped bytes, status, content type and encoding,
  the session id — no other header) goes to the delivery thread, which extracts the turn,
  redacts it, stores it in the durable outbox and sends it to the memory API.

A bridged response gets its ``memory`` tool uses renamed back before the tap sees them: a stream
event by event as it passes (:class:`BridgedStream`), a JSON body in ``response`` (it is not
streamed: it has to be whole to be rewritten). So the captured turn names the tool as Claude
Code knows it, ``mcp__memory__memory_20250818``, and is built from the request Claude Code sent.

Credentials (``x-api-key``, ``authorization``, cookies) are never read, stored or logged. An
error in the addon is logged and the flow goes on. Options are ``--set ccmem_...=`` (see
``load``); the API token comes only from the ``CCMEM_PROXY_TOKEN`` environment variable.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mitmproxy import ctx, exceptions, http
from mitmproxy.net import encoding

from claude_code_memory.capture.anthropic import (
    SESSION_HEADER,
    CaptureError,
    CaptureRules,
    extract_turn,
    is_messages_request,
    response_message,
)
from claude_code_memory.capture.memory_bridge import StreamRenamer, bridge_request, merge_beta, restore_json
from claude_code_memory.policy.redact import redact

from .outbox import Outbox
from .sender import Delivery, Exchange

log = logging.getLogger("ccmem.capture")

TOKEN_ENV = "CCMEM_PROXY_TOKEN"
IN_SCOPE = "ccmem_capture"
TAP = "ccmem_tap"
BRIDGED = "ccmem_memory_bridge"
ORIGINAL_REQUEST = "ccmem_original_request"
#: A response bigger than this is passed on but not captured (a turn is never this large).
MAX_CAPTURE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class CaptureConfig:
    """The addon's settings, validated, from its mitmproxy options and the environment."""

    hosts: frozenset[str]
    rules: CaptureRules
    api_url: str
    token: str | None
    user_id: str | None
    app: str
    outbox_path: Path
    outbox_max_rows: int
    retry_max_seconds: float
    mask_pii: bool = False
    memory_tool_bridge: bool = False

    @classmethod
    def from_options(cls, options: Any, environ: dict[str, str]) -> CaptureConfig:
        hosts = frozenset(_items(options.ccmem_upstream_hosts, lower=True))
        if not hosts:
            raise exceptions.OptionsError("ccmem_upstream_hosts: name at least one host (comma-separated)")
        api_url = options.ccmem_api_url.strip().rstrip("/")
        if not api_url.startswith(("http://", "https://")):
            raise exceptions.OptionsError(f"ccmem_api_url: {api_url!r} is not an http(s) URL")
        if options.ccmem_outbox_max_rows < 1:
            raise exceptions.OptionsError(
                f"ccmem_outbox_max_rows: must be at least 1, not {options.ccmem_outbox_max_rows}"
            )
        try:  # a string: mitmproxy's --set parses no floats
            retry_max_seconds = float(options.ccmem_retry_max_seconds)
        except ValueError:
            retry_max_seconds = -1.0
        if not retry_max_seconds > 0:
            raise exceptions.OptionsError(
                f"ccmem_retry_max_seconds: {options.ccmem_retry_max_seconds!r} is not a positive number"
            )
        outbox = options.ccmem_outbox or str(Path(options.confdir).expanduser() / "outbox.db")
        return cls(
            hosts=hosts,
            rules=CaptureRules(
                skip_models=tuple(_items(options.ccmem_skip_models)),
                capture_tool_results=options.ccmem_capture_tool_results,
            ),
            api_url=api_url,
            token=environ.get(TOKEN_ENV) or None,
            user_id=options.ccmem_user_id or None,
            app=options.ccmem_app or "claude-code",
            outbox_path=Path(outbox).expanduser().resolve(),
            outbox_max_rows=options.ccmem_outbox_max_rows,
            retry_max_seconds=retry_max_seconds,
            mask_pii=options.ccmem_mask_pii,
            memory_tool_bridge=options.ccmem_memory_tool_bridge,
        )


def _items(value: str, *, lower: bool = False) -> list[str]:
    items = [item.strip() for item in value.split(",") if item.strip()]
    return [item.lower() for item in items] if lower else items


class Tap:
    """``flow.response.stream``: keep a copy of every chunk, pass it on unchanged."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.overflow = False

    def __call__(self, chunk: bytes) -> bytes:
        if not self.overflow:
            self.size += len(chunk)
            if self.size > MAX_CAPTURE_BYTES:
                self.overflow = True
                self.chunks.clear()
            else:
                self.chunks.append(chunk)
        return chunk

    def body(self) -> bytes:
        return b"".join(self.chunks)


class BridgedStream:
    """``flow.response.stream`` of a bridged stream: rename ``memory`` tool uses, then tap.

    Mid-stream it returns ``[]`` rather than ``b""`` while an event is incomplete: mitmproxy
    would send an empty chunk of a chunked response, which is the end of the body. Should the
    renamer fail, what it held back goes out and the rest of the stream passes unchanged.
    """

    def __init__(self, tap: Tap) -> None:
        self.tap = tap
        self.renamer: StreamRenamer | None = StreamRenamer()

    def __call__(self, chunk: bytes) -> bytes | list[bytes]:
        out = chunk
        if self.renamer is not None:
            held = self.renamer.held
            try:
                out = self.renamer(chunk)
            except Exception:
                log.exception("memory bridge: renaming the stream failed; the rest passes unchanged")
                out = held + chunk
                self.renamer = None
        if not out:
            return out if not chunk else []
        self.tap(out)
        return out


def build_capture(exchange: Exchange, config: CaptureConfig) -> tuple[str, dict[str, Any]] | None:
    """The outbox row for an exchange: ``(capture_id, body of POST /api/v1/capture)``, or ``None``.

    Runs on the delivery thread. Upstream errors (any status but 200), cut or failed streams
    and turns with nothing to keep give ``None``; the text is redacted before it is stored, and
    ``redactions`` says how many secrets that masked.
    """
    if exchange.status_code != 200:
        return None
    raw = exchange.response_body
    if exchange.content_encoding and exchange.content_encoding.lower() != "identity":
        decoded = encoding.decode(raw, exchange.content_encoding)
        raw = decoded.encode() if isinstance(decoded, str) else decoded
    try:
        request_body = json.loads(exchange.request_body)
    except ValueError:
        raise CaptureError("request body is not JSON") from None
    if not isinstance(request_body, dict):
        raise CaptureError("request body is not a JSON object")
    message = response_message(raw, exchange.content_type)
    headers = {SESSION_HEADER: exchange.session_id} if exchange.session_id else {}
    turn = extract_turn(request_body, message, headers=headers, rules=config.rules)
    if turn is None:
        return None
    capture_id = uuid.uuid4().hex
    payload = turn.payload(
        user_id=config.user_id, app=config.app, captured_at=exchange.captured_at, capture_id=capture_id
    )
    redactions = 0
    for item in payload["messages"]:
        redacted = redact(item["content"], pii=config.mask_pii)
        item["content"] = redacted.text
        redactions += len(redacted.findings)
    if payload.get("project"):
        redacted = redact(payload["project"])
        payload["project"] = redacted.text
        redactions += len(redacted.findings)
    # The server sees only the markers: it adds this count to its own (older servers ignore it).
    payload["redactions"] = redactions
    return capture_id, payload


#: mitmproxy's info lines for every connection opened and closed: a health check (Docker's, the
#: stack's) makes two every few seconds, which buried everything else in proxy.log.
CONNECTION_LINES = ("client connect", "client disconnect")


class QuietConnections(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno <= logging.INFO and record.msg in CONNECTION_LINES)


def quiet_connection_lines() -> None:
    server_log = logging.getLogger("mitmproxy.proxy.server")
    if not any(isinstance(f, QuietConnections) for f in server_log.filters):
        server_log.addFilter(QuietConnections())


class CaptureAddon:
    def __init__(self) -> None:
        self.config: CaptureConfig | None = None
        self.delivery: Delivery | None = None
        self._running = False

    # -- options ---------------------------------------------------------------------------------
    def load(self, loader: Any) -> None:
        quiet_connection_lines()
        loader.add_option(
            "ccmem_api_url", str, "http://127.0.0.1:8765", "Memory API that receives captured turns."
        )
        loader.add_option(
            "ccmem_upstream_hosts",
            str,
            "api.anthropic.com",
            "Comma-separated hosts whose POST /v1/messages is captured.",
        )
        loader.add_option("ccmem_user_id", str, "", "User the turns belong to (empty: the token's user).")
        loader.add_option("ccmem_app", str, "claude-code", "App name recorded on captured memories.")
        loader.add_option(
            "ccmem_skip_models",
            str,
            "claude-3-5-haiku*,claude-haiku*",
            "Comma-separated shell-style model patterns never captured.",
        )
        loader.add_option(
            "ccmem_capture_tool_results", bool, False, "Also capture tool_result content of the user turn."
        )
        loader.add_option(
            "ccmem_mask_pii", bool, False, "Also mask personal data (the server's privacy.mask_pii)."
        )
        loader.add_option(
            "ccmem_memory_tool_bridge",
            bool,
            False,
            "Offer the model Anthropic's native memory tool in place of mcp__memory__memory_20250818.",
        )
        loader.add_option("ccmem_outbox", str, "", "SQLite outbox file (default: <confdir>/outbox.db).")
        loader.add_option("ccmem_outbox_max_rows", int, 10000, "Most undelivered turns kept; oldest dropped.")
        loader.add_option(
            "ccmem_retry_max_seconds", str, "60", "Longest wait between delivery retries (seconds)."
        )

    def configure(self, updated: set[str]) -> None:
        if self.config is not None and not any(
            name.startswith("ccmem_") or name == "confdir" for name in updated
        ):
            return
        config = CaptureConfig.from_options(ctx.options, dict(os.environ))
        if config != self.config:
            self.config = config
            if self._running:
                self._start_delivery()

    def running(self) -> None:
        # The outbox opens once the options are final (not at the first configure, which has
        # mitmproxy's defaults), and again whenever they change.
        self._running = True
        self._start_delivery()

    def _start_delivery(self) -> None:
        config = self.config
        assert config is not None
        self._stop_delivery()
        outbox = Outbox(config.outbox_path, max_rows=config.outbox_max_rows)
        self.delivery = Delivery(
            outbox,
            lambda exchange: build_capture(exchange, config),
            api_url=config.api_url,
            token=config.token,
            retry_max_seconds=config.retry_max_seconds,
        ).start()
        if not config.token:
            log.warning("capture: %s is not set; the memory API will refuse captured turns", TOKEN_ENV)
        log.info(
            "capture: POST /v1/messages on %s -> %s (outbox %s, %d waiting)",
            ", ".join(sorted(config.hosts)),
            config.api_url,
            config.outbox_path,
            outbox.count(),
        )

    def done(self) -> None:
        self._stop_delivery()

    def _stop_delivery(self) -> None:
        if self.delivery is not None:
            self.delivery.stop()
            self.delivery = None

    # -- flows -----------------------------------------------------------------------------------
    def requestheaders(self, flow: http.HTTPFlow) -> None:
        try:
            config = self.config
            if (
                config is not None
                and flow.request.host.lower() in config.hosts
                and is_messages_request(flow.request.method, flow.request.path)
            ):
                flow.metadata[IN_SCOPE] = True
        except Exception:
            log.exception("capture: requestheaders failed; the flow goes on uncaptured")

    def request(self, flow: http.HTTPFlow) -> None:
        try:
            config = self.config
            if config is None or not config.memory_tool_bridge or not flow.metadata.get(IN_SCOPE):
                return
            original = flow.request.get_content(strict=False) or b""
            bridged = bridge_request(original)
            if bridged is None:
                return
            flow.request.set_content(bridged.body)  # and Content-Length
            headers = flow.request.headers
            headers["anthropic-beta"] = merge_beta(headers.get_all("anthropic-beta"))
            # A compressed stream could not be renamed as it passes: ask for it plain.
            headers["accept-encoding"] = "identity"
            flow.metadata[BRIDGED] = True
            flow.metadata[ORIGINAL_REQUEST] = original
        except Exception:
            log.exception("memory bridge: request failed; the flow goes on unbridged")

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        try:
            if flow.response is None or flow.response.stream:
                return
            if not flow.metadata.get(IN_SCOPE):
                flow.response.stream = True
                return
            tap = Tap()
            flow.metadata[TAP] = tap
            if not flow.metadata.get(BRIDGED):
                flow.response.stream = tap
            elif _media_type(flow.response) != "text/event-stream":
                pass  # buffered: ``response`` renames the whole JSON body
            elif flow.response.headers.get("content-encoding", "identity").lower() != "identity":
                log.warning("memory bridge: a compressed stream passes with the native tool name")
                flow.response.stream = tap
            else:
                flow.response.stream = BridgedStream(tap)
        except Exception:
            log.exception("capture: responseheaders failed; the flow goes on uncaptured")

    def response(self, flow: http.HTTPFlow) -> None:
        try:
            tap = flow.metadata.pop(TAP, None)
            if tap is None or flow.response is None:
                return
            if flow.metadata.get(BRIDGED) and not flow.response.stream:
                self._restore_body(flow.response)
                tap(flow.response.raw_content or b"")
            if self.delivery is None:
                return
            if tap.overflow:
                log.warning("capture: response larger than %d bytes; not captured", MAX_CAPTURE_BYTES)
                return
            self.delivery.submit(
                Exchange(
                    request_body=flow.metadata.get(ORIGINAL_REQUEST)
                    or flow.request.get_content(strict=False)
                    or b"",
                    status_code=flow.response.status_code,
                    content_type=flow.response.headers.get("content-type", ""),
                    content_encoding=flow.response.headers.get("content-encoding", ""),
                    response_body=tap.body(),
                    session_id=flow.request.headers.get(SESSION_HEADER),
                    captured_at=datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="seconds"),
                )
            )
        except Exception:
            log.exception("capture: response failed; the turn is not captured")

    @staticmethod
    def _restore_body(response: http.Response) -> None:
        try:
            restored = restore_json(response.get_content(strict=False) or b"")
            if restored is not None:
                response.set_content(restored)  # encoded again as upstream encoded it
        except Exception:
            log.exception("memory bridge: renaming the response failed; it passes unchanged")

    def error(self, flow: http.HTTPFlow) -> None:
        # A stream cut mid-way or a dropped connection: the half turn is not captured.
        if flow.metadata.pop(TAP, None) is not None:
            path = flow.request.path.split("?", 1)[0]
            log.info("capture: %s %s failed (%s); not captured", flow.request.method, path, flow.error)


def _media_type(message: http.Message) -> str:
    return message.headers.get("content-type", "").split(";", 1)[0].strip().lower()
