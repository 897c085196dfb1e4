"""Memory for a conversation: what to recall before answering, what to keep after.

:class:`ClaudeCodeMemoryManager` works one conversation turn at a time over a
:class:`~.mcp_client.Mem0MCPClient`:

* it **recalls** for the newest user message (when ``memory.search_on_query``) with the
  server's hook recall, ``POST /api/v1/hooks/recall`` — the same code that answers Claude
  Code's ``UserPromptSubmit`` hook: up to ``memory.max_context_memories`` memories above the
  server's relevance floor (``claude_code.recall_min_similarity``), the project's first, each
  given once per conversation (``conversation_id``, else one of the manager's own), within
  ``claude_code.prompt_budget``; its context is the hooks' labelled ``<recalled-memories>``
  block;
* it **keeps** the turn (the newest user message and the assistant's reply) by sending it to
  ``POST /api/v1/capture`` (when ``memory.auto_store``), so it passes the server's policy
  gate like every captured turn: redaction, size caps and, with ``privacy.require_consent``,
  the consent queue. The Stop hook stores a turn as the same text, so a turn both capture is
  stored once; ``conversation_id`` plays the hook's ``session_id``. What happened is the
  turn's :class:`CaptureResult`: ``stored``, ``pending`` (waiting for the user's approval),
  ``duplicate`` or ``refused``;
* it counts what it did for :meth:`~ClaudeCodeMemoryManager.summarize_session`.

:class:`ClaudeCodeWithMemory` puts availability around it: ``claude_code.memory_integration``
switches memory off altogether, and with ``claude_code.fallback_mode`` a server that is down
means "answer without memory" (one warning, then silence until it is back), not an error.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, Unpack

import httpx

from ..config import Settings
from ..errors import BadInput, MemoryStackError, Unauthorised, Unavailable, error_for_status
from .mcp_client import Mem0MCPClient, Memories, Transport, response_detail, unreachable_error

logger = logging.getLogger(__name__)

CONTEXT_HEADING = "Relevant memories:"
MOST_USED = 5
CAPTURE_PATH = "/api/v1/capture"
RECALL_PATH = "/api/v1/hooks/recall"

CaptureStatus = Literal["stored", "pending", "duplicate", "filtered", "refused"]
Message = Mapping[str, Any]
"""A chat message: ``{"role": "user" | "assistant" | ..., "content": str | [blocks]}``."""


@dataclass(frozen=True)
class CaptureResult:
    """What the server did with a captured turn.

    ``stored``: now a searchable memory (``id``). ``pending``: queued for the user's approval
    (``id`` is the pending item's). ``duplicate``: the same text was already stored or queued.
    ``filtered``: the server's capture filter took it for junk and kept nothing (docs/hygiene.md).
    ``refused``: the gate said no (a paused app, an oversize turn with
    ``capture_oversize: reject``, an invalid field); ``detail`` has the server's reason.
    """

    status: CaptureStatus
    id: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class Turn:
    """The part of a conversation a turn is about: the newest user message and its reply."""

    user: str
    assistant: str | None = None


def message_text(content: Any) -> str:
    """The text of a message's ``content``: a string, or Anthropic-style content blocks."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, Sequence):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type", "text") == "text":
                parts.append(str(block.get("text", "")))
        return "\n".join(part.strip() for part in parts if part.strip())
    return ""


def latest_turn(messages: Sequence[Message]) -> Turn:
    """The newest user message with text, and the first assistant reply after it, if any.

    Raises ``ValueError`` when no user message has text.
    """
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") != "user":
            continue
        user = message_text(messages[index].get("content"))
        if not user:
            continue
        for later in messages[index + 1 :]:
            if later.get("role") == "assistant" and (reply := message_text(later.get("content"))):
                return Turn(user, reply)
        return Turn(user)
    raise ValueError("the conversation has no user message with text")


def format_context(memories: Memories, limit: int, heading: str = CONTEXT_HEADING) -> str:
    """A context block of at most ``limit`` memories, one bullet each; ``""`` for none.

    A memory of several lines (a captured turn) stays one bullet, its lines indented.
    """
    bullets = []
    for memory in memories:
        lines = [line.rstrip() for line in str(memory.get("memory") or "").splitlines() if line.strip()]
        if lines:
            bullets.append("\n".join([f"- {lines[0]}", *(f"  {line}" for line in lines[1:])]))
        if len(bullets) == limit:
            break
    return "\n".join([heading, *bullets]) if bullets else ""


class ClaudeCodeMemoryManager:
    """Recall and keep memories for one conversation; see the module docstring.

    ``capture_url`` defaults to the client's server plus ``/api/v1/capture``, ``recall_url`` to
    its ``/api/v1/hooks/recall``, and ``token`` to the client's. ``app`` (default: the
    client's name), ``project`` and ``conversation_id`` travel with each captured turn as its
    provenance; recall reads as the client's app.

    Server errors are raised as the client raises them (``Unavailable``, ``Unauthorised``, …)
    after being counted in the session summary; a turn the gate refuses is not an error but a
    ``refused`` :class:`CaptureResult`.
    """

    def __init__(
        self,
        client: Mem0MCPClient,
        settings: Settings,
        *,
        capture_url: str | None = None,
        token: str | None = None,
        app: str | None = None,
        project: str | None = None,
        conversation_id: str | None = None,
        recall_url: str | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.capture_url = capture_url or f"{client.base_url}{CAPTURE_PATH}"
        self.recall_url = recall_url or f"{client.base_url}{RECALL_PATH}"
        #: The session the server's recall keeps what it gave under (a memory is given once).
        self.recall_session = conversation_id or f"ccmem-manager-{uuid.uuid4()}"
        self.app = app or client.client_name
        self.project = project
        self.conversation_id = conversation_id
        self.last_capture: CaptureResult | None = None
        self._http = httpx.Client(
            headers={"Authorization": f"Bearer {token or client.token}"}, timeout=client.timeout
        )
        self._lock = threading.Lock()
        self._turns = 0
        self._searches = 0
        self._retrieved: Counter[str] = Counter()
        self._texts: dict[str, str] = {}
        self._captures: Counter[str] = Counter({"stored": 0, "pending": 0, "duplicate": 0, "refused": 0})
        self._errors: list[dict[str, str]] = []

    @property
    def limit(self) -> int:
        return self.settings.memory.max_context_memories

    # -- the turn -------------------------------------------------------------------------------
    def process_conversation(self, messages: Sequence[Message], store: bool = True) -> Memories:
        """Memories relevant to the newest user message, and keep the turn.

        Recalls (when ``memory.search_on_query``) up to ``memory.max_context_memories``
        memories, best first, none this conversation was given before (module docstring).
        When ``store`` and ``memory.auto_store``, sends the newest user message and the
        assistant's reply after it (if there is one yet) to the capture endpoint;
        :attr:`last_capture` says what happened (``None`` when nothing was sent). Call it with
        ``store=False`` before the reply exists if you call it again after (the second call
        recalls nothing new: the first one's memories were given already).
        ``BadInput`` when no message is a user message with text.
        """
        try:
            turn = latest_turn(messages)
        except ValueError as exc:
            raise BadInput(str(exc)) from None
        with self._lock:
            self._turns += 1
            self.last_capture = None
        memories = self._recall(turn.user) if self.settings.memory.search_on_query else []
        if store and self.settings.memory.auto_store:
            result = self._capture(turn)
            with self._lock:
                self.last_capture = result
        return memories

    def get_context_for_query(self, query: str) -> str:
        """The hooks' ``<recalled-memories>`` block for ``query`` (at most
        ``memory.max_context_memories`` memories, labelled as recalled data), or ``""`` when
        nothing new is relevant or ``memory.search_on_query`` is off."""
        if not self.settings.memory.search_on_query or not query.strip():
            return ""
        return self._recall_with_context(query)[1]

    def _recall(self, query: str) -> Memories:
        return self._recall_with_context(query)[0]

    def _recall_with_context(self, query: str) -> tuple[Memories, str]:
        body: dict[str, Any] = {
            "user_id": self.client.user_id,
            "app": self.client.client_name,  # reads as the client's app, as its MCP tools do
            "query": query,
            "session_id": self.recall_session,
            "limit": self.limit,
        }
        if self.project is not None:
            body["project"] = self.project
        try:
            answer = self._post_recall(body)
        except MemoryStackError as error:
            self._record_error("search", error.code, error.message)
            raise
        hits: Memories = answer["memories"]
        with self._lock:
            self._searches += 1
            for hit in hits:
                self._retrieved[hit["id"]] += 1
                self._texts[hit["id"]] = str(hit.get("memory", ""))
        return hits, str(answer.get("context") or "")

    def _post_recall(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = self._http.post(self.recall_url, json=body)
        except httpx.HTTPError as exc:
            raise unreachable_error(self.client.base_url, self.client.timeout, exc) from exc
        if response.status_code == 200:
            try:
                answer = response.json()
                valid = isinstance(answer["memories"], list)
            except (ValueError, KeyError, TypeError):
                valid = False
            if not valid:
                raise Unavailable(f"{self.recall_url} answered with no memories: {response.text[:200]!r}")
            return dict(answer)
        detail = response_detail(response.content)
        if response.status_code == 401:
            raise Unauthorised(f"the memory server refused the token for {self.recall_url}: {detail}")
        if response.status_code == 404:
            raise Unavailable(
                f"{self.recall_url} is not the memory server's recall endpoint (HTTP 404): "
                "a server older than this client?"
            )
        raise error_for_status(response.status_code, detail)

    def _capture(self, turn: Turn) -> CaptureResult:
        messages = [{"role": "user", "content": turn.user}]
        if turn.assistant:
            messages.append({"role": "assistant", "content": turn.assistant})
        body: dict[str, Any] = {"user_id": self.client.user_id, "app": self.app, "messages": messages}
        if self.project is not None:
            body["project"] = self.project
        if self.conversation_id is not None:
            body["conversation_id"] = self.conversation_id
        try:
            result = self._post_capture(body)
        except MemoryStackError as error:
            self._record_error("capture", error.code, error.message)
            raise
        with self._lock:
            self._captures[result.status] += 1
        if result.status == "refused":
            self._record_error("capture", "refused", result.detail or "")
            logger.warning("the memory server did not keep this turn: %s", result.detail)
        return result

    def _post_capture(self, body: dict[str, Any]) -> CaptureResult:
        try:
            response = self._http.post(self.capture_url, json=body)
        except httpx.HTTPError as exc:
            raise unreachable_error(self.client.base_url, self.client.timeout, exc) from exc
        if response.status_code == 200:
            try:
                answer = response.json()
                status = answer["status"]
            except (ValueError, KeyError, TypeError):
                status = None
            if status not in ("stored", "pending", "duplicate", "filtered"):
                shown = response.text[:200]
                raise Unavailable(f"{self.capture_url} answered with no capture status: {shown!r}")
            return CaptureResult(status=status, id=answer.get("id"))
        detail = response_detail(response.content)
        if response.status_code == 401:
            raise Unauthorised(f"the memory server refused the token for {self.capture_url}: {detail}")
        if response.status_code == 404:
            raise Unavailable(f"{self.capture_url} is not the memory server's capture endpoint (HTTP 404)")
        if response.status_code in (400, 403, 409, 413, 422):
            return CaptureResult(status="refused", detail=f"{detail} (HTTP {response.status_code})")
        raise error_for_status(response.status_code, detail)

    # -- the session ----------------------------------------------------------------------------
    def summarize_session(self) -> dict[str, Any]:
        """What this manager did so far (counted locally; no LLM, no server call).

        ``turns_processed`` (calls of :meth:`process_conversation`), ``searches``,
        ``memories_retrieved`` (distinct memory ids recalled), ``captures`` (turns by what the
        server did with them: stored / pending / duplicate / refused), ``most_used_memories``
        (up to five ``{id, memory, times_retrieved}``, most recalled first) and ``errors``
        (``{operation, error, message}``, oldest first).
        """
        with self._lock:
            most_used = [
                {"id": memory_id, "memory": self._texts.get(memory_id, ""), "times_retrieved": count}
                for memory_id, count in self._retrieved.most_common(MOST_USED)
            ]
            return {
                "turns_processed": self._turns,
                "searches": self._searches,
                "memories_retrieved": len(self._retrieved),
                "captures": dict(self._captures),
                "most_used_memories": most_used,
                "errors": list(self._errors),
            }

    def _record_error(self, operation: str, code: str, message: str) -> None:
        with self._lock:
            self._errors.append({"operation": operation, "error": code, "message": message})

    def close(self) -> None:
        """Close the capture HTTP client (not the MCP client, which the caller owns)."""
        self._http.close()


class ManagerOptions(TypedDict, total=False):
    """What :class:`ClaudeCodeWithMemory` hands on to its :class:`ClaudeCodeMemoryManager`:
    where captures go, and the provenance each captured turn travels with."""

    capture_url: str | None
    app: str | None
    project: str | None
    conversation_id: str | None


class ClaudeCodeWithMemory:
    """Memory for a Claude Code integration that keeps working when the server does not.

    * ``claude_code.memory_integration: false``: memory is off. Nothing touches the network;
      :meth:`process_conversation` returns ``[]`` and :meth:`get_context_for_query` ``""``.
    * The server is checked with ``GET /health`` on construction and then at most every
      ``recheck_interval`` seconds; a failed call also counts as "down".
    * Down, with ``claude_code.fallback_mode: true``: the methods return no memories and store
      nothing, after ONE warning (logged, not printed) per outage; when a later check finds
      the server back, memory is used again and "memory available again" is logged at INFO.
    * Down, with ``claude_code.fallback_mode: false``: construction and calls raise
      ``Unavailable``.

    Other errors (a bad token, bad input) are raised whatever the mode: they need fixing,
    not waiting out.
    """

    def __init__(
        self,
        settings: Settings,
        user_id: str,
        token: str,
        *,
        transport: Transport = "http",
        timeout: float = 10.0,
        recheck_interval: float = 30.0,
        client: Mem0MCPClient | None = None,
        **manager: Unpack[ManagerOptions],
    ) -> None:
        """``manager``: ``capture_url``, ``app``, ``project`` and ``conversation_id``, as
        :class:`ClaudeCodeMemoryManager` takes them."""
        self.settings = settings
        self.enabled = settings.claude_code.memory_integration
        self.fallback_mode = settings.claude_code.fallback_mode
        self.recheck_interval = recheck_interval
        # Neither constructor touches the network: with memory off, nothing ever will.
        self.client = client or Mem0MCPClient.from_settings(
            settings, user_id, token, transport=transport, timeout=timeout
        )
        self.manager = ClaudeCodeMemoryManager(self.client, settings, token=token, **manager)
        self._lock = threading.Lock()
        self._available = False
        self._checked_at: float | None = None
        self._outage_reported = False
        self._turns_without_memory = 0
        self.last_error: Unavailable | None = None
        if self.enabled and not self._check(force=True) and not self.fallback_mode:
            error = self.last_error or Unavailable(f"the memory server at {self.client.base_url} is down")
            self.close()
            raise error

    @property
    def available(self) -> bool:
        """Whether memory is in use now (re-checked with ``/health`` at most every
        ``recheck_interval`` seconds); always ``False`` when the integration is off."""
        return self.enabled and self._check()

    def process_conversation(self, messages: Sequence[Message], store: bool = True) -> Memories:
        """:meth:`ClaudeCodeMemoryManager.process_conversation`, or ``[]`` without memory."""
        if self._ready():
            try:
                return self.manager.process_conversation(messages, store=store)
            except Unavailable as error:
                if not self.fallback_mode:
                    raise
                self._went_down(error)
        with self._lock:
            self._turns_without_memory += 1
        return []

    def get_context_for_query(self, query: str) -> str:
        """:meth:`ClaudeCodeMemoryManager.get_context_for_query`, or ``""`` without memory."""
        if self._ready():
            try:
                return self.manager.get_context_for_query(query)
            except Unavailable as error:
                if not self.fallback_mode:
                    raise
                self._went_down(error)
        return ""

    def summarize_session(self) -> dict[str, Any]:
        """The manager's summary plus ``memory_integration``, ``memory_available`` (as last
        known, no new check) and ``turns_without_memory`` (turns answered in fallback or off)."""
        summary = self.manager.summarize_session()
        with self._lock:
            summary |= {
                "memory_integration": self.enabled,
                "memory_available": self.enabled and self._available,
                "turns_without_memory": self._turns_without_memory,
            }
        return summary

    def close(self) -> None:
        self.manager.close()
        self.client.close()

    def __enter__(self) -> ClaudeCodeWithMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- availability ---------------------------------------------------------------------------
    def _ready(self) -> bool:
        """Whether to use memory for this call. Without fallback, always try (and raise)."""
        if not self.enabled:
            return False
        if not self.fallback_mode:
            return True
        return self._check()

    def _check(self, force: bool = False) -> bool:
        now = time.monotonic()
        with self._lock:
            if not force and self._checked_at is not None and now - self._checked_at < self.recheck_interval:
                return self._available
            self._checked_at = now
        try:
            self.client.health()
        except Unavailable as error:
            self._went_down(error)
            return False
        self._came_back()
        return True

    def _went_down(self, error: Unavailable) -> None:
        """Note an outage; in fallback mode, warn once until memory is back."""
        with self._lock:
            self._available = False
            self._checked_at = time.monotonic()
            self.last_error = error
            warn = self.fallback_mode and not self._outage_reported
            self._outage_reported = self._outage_reported or warn
        if warn:
            logger.warning(
                "memory unavailable, continuing without it (%s): %s. Checking again every %g s.",
                self.client.url,
                error.message,
                self.recheck_interval,
            )

    def _came_back(self) -> None:
        with self._lock:
            self._available = True
            self.last_error = None
            recovered, self._outage_reported = self._outage_reported, False
        if recovered:
            logger.info("memory available again (%s)", self.client.url)
