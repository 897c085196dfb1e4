"""Conversation turns out of Anthropic Messages API traffic (``POST /v1/messages``).

Pure functions over bytes and parsed JSON, no I/O, standard library only (the capture proxy
imports this module in its own virtualenv). The proxy gives :func:`extract_turn` the request
body, the response (a JSON message or the server-sent events of a stream, reassembled by
:func:`parse_sse`) and the one header it needs; it gets back a :class:`Turn` or ``None``.

What a turn is. Claude Code runs tools in a loop: the user's prompt, then requests whose newest
user message carries ``tool_result`` blocks (and text Claude Code adds beside them, such as
"Tool loaded."), until the model ends its turn. So a turn is captured when a response ends the
turn (any stop reason but ``tool_use`` / ``pause_turn``): the user text is the newest user
message with text and no tool results, the assistant text is every ``text`` block the assistant
wrote since then (earlier requests of the loop are in the history) plus the response's.
Thinking, images, ``role: "system"`` entries and ``<system-reminder>`` blocks are never taken;
``tool_result`` content only when the rules allow it.

Errors: malformed input raises :class:`CaptureError` (a ``ValueError``); the proxy logs it and
lets the traffic go on.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SESSION_HEADER",
    "CaptureError",
    "CaptureRules",
    "Turn",
    "conversation_id",
    "extract_turn",
    "is_messages_request",
    "parse_message_json",
    "parse_sse",
    "project_of",
    "response_message",
    "user_text",
]

#: The header Claude Code sends with its session id (the conversation).
SESSION_HEADER = "x-claude-code-session-id"
MESSAGES_PATH = "/v1/messages"
#: Stop reasons that mean the model has not finished its turn yet.
TURN_CONTINUES = frozenset({"tool_use", "pause_turn"})

_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)
_WORKING_DIRECTORY = re.compile(
    r"^[ \t>*-]*(?:Primary )?[Ww]orking directory:[ \t]*(\S[^\r\n]*)$", re.MULTILINE
)
_MAX_ID = 128
_MAX_PROJECT = 512


class CaptureError(ValueError):
    """A body that is not what the Messages API sends (bad JSON, a cut or failed stream)."""


@dataclass(frozen=True)
class CaptureRules:
    """What to leave out: models by shell-style pattern, and whether tool results count as user text."""

    skip_models: tuple[str, ...] = ()
    capture_tool_results: bool = False

    def skips(self, model: str | None) -> bool:
        name = (model or "").lower()
        return any(fnmatch.fnmatchcase(name, pattern.lower()) for pattern in self.skip_models)


@dataclass(frozen=True)
class Turn:
    """One captured exchange: what the user said and what the assistant answered."""

    user_text: str
    assistant_text: str
    tools: tuple[str, ...]
    conversation_id: str | None
    project: str | None
    model: str | None

    def payload(self, *, user_id: str | None, app: str, captured_at: str, capture_id: str) -> dict[str, Any]:
        """The body of ``POST /api/v1/capture``."""
        messages = [{"role": "user", "content": self.user_text}]
        if self.assistant_text:
            messages.append({"role": "assistant", "content": self.assistant_text})
        metadata: dict[str, Any] = {"capture_id": capture_id, "source": "proxy"}
        if self.tools:
            metadata["tools"] = list(self.tools)
        body: dict[str, Any] = {
            "app": app,
            "project": self.project,
            "conversation_id": self.conversation_id,
            "model": self.model,
            "messages": messages,
            "captured_at": captured_at,
            "metadata": metadata,
        }
        if user_id:
            body["user_id"] = user_id
        return body


# -- which requests ----------------------------------------------------------------------------


def is_messages_request(method: str, path: str) -> bool:
    """``POST /v1/messages`` with any query string (Claude Code sends ``?beta=true``)."""
    return method.upper() == "POST" and path.split("?", 1)[0].rstrip("/") == MESSAGES_PATH


# -- responses ---------------------------------------------------------------------------------


def parse_message_json(data: bytes) -> dict[str, Any]:
    try:
        message = json.loads(data)
    except ValueError as exc:
        raise CaptureError(f"response is not JSON: {exc}") from None
    if not isinstance(message, dict) or message.get("type") != "message":
        raise CaptureError("response JSON is not a message")
    return message


def _events(data: bytes) -> Iterator[dict[str, Any]]:
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    for record in text.split("\n\n"):
        lines = [line[5:].removeprefix(" ") for line in record.split("\n") if line.startswith("data:")]
        if not lines:
            continue
        try:
            event = json.loads("\n".join(lines))
        except ValueError:
            raise CaptureError("an event's data is not JSON") from None
        if isinstance(event, dict):
            yield event


def parse_sse(data: bytes) -> dict[str, Any]:
    """The message a stream of Messages API events builds, as the non-streaming API would return it.

    Raises :class:`CaptureError` for a stream that reports an ``error`` or ends before
    ``message_stop`` (cut mid-way): half a turn is not captured.
    """
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial_json: dict[int, list[str]] = {}
    finished = False
    for event in _events(data):
        kind = event.get("type")
        if kind == "error":
            error = event.get("error") or {}
            raise CaptureError(f"the stream reported an error: {error.get('type', 'unknown')}")
        if kind == "message_start":
            message = dict(event.get("message") or {})
            message["content"] = []
        elif message is None:
            continue
        elif kind == "content_block_start":
            index = int(event.get("index", len(blocks)))
            blocks[index] = dict(event.get("content_block") or {})
        elif kind == "content_block_delta":
            block = blocks.get(int(event.get("index", -1)))
            delta = event.get("delta") or {}
            if block is None:
                raise CaptureError("a delta for a block that never started")
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + str(delta.get("text", ""))
            elif delta.get("type") == "input_json_delta":
                partial_json.setdefault(int(event["index"]), []).append(str(delta.get("partial_json", "")))
            # thinking_delta / signature_delta / citations_delta: nothing a memory keeps.
        elif kind == "message_delta":
            message.update({k: v for k, v in (event.get("delta") or {}).items() if v is not None})
        elif kind == "message_stop":
            finished = True
    if message is None or not finished:
        raise CaptureError("the stream ended before message_stop")
    for index, pieces in partial_json.items():
        try:
            blocks[index]["input"] = json.loads("".join(pieces) or "{}")
        except ValueError:
            blocks[index]["input"] = {}
    message["content"] = [blocks[index] for index in sorted(blocks)]
    return message


def response_message(data: bytes, content_type: str) -> dict[str, Any]:
    """The message of a decoded ``/v1/messages`` response body, streamed or not."""
    if content_type.split(";", 1)[0].strip().lower() == "text/event-stream":
        return parse_sse(data)
    return parse_message_json(data)


# -- requests ----------------------------------------------------------------------------------


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _clean(text: str) -> str:
    return _REMINDER.sub("", text).strip()


def _tool_result_text(block: dict[str, Any]) -> str:
    return "\n".join(
        _clean(part["text"]) for part in _blocks(block.get("content")) if part.get("type") == "text"
    )


def user_text(content: Any, *, tool_results: bool = False) -> str:
    """The text a user message carries: its text blocks without system reminders (and tool results)."""
    parts: list[str] = []
    for block in _blocks(content):
        if block.get("type") == "text":
            parts.append(_clean(str(block.get("text", ""))))
        elif block.get("type") == "tool_result" and tool_results:
            parts.append(_tool_result_text(block))
    return "\n\n".join(part for part in parts if part)


def _has_tool_result(content: Any) -> bool:
    return any(block.get("type") == "tool_result" for block in _blocks(content))


def _texts(content: Any) -> list[str]:
    return [str(b.get("text", "")).strip() for b in _blocks(content) if b.get("type") == "text"]


def _tool_names(content: Any) -> list[str]:
    kinds = ("tool_use", "server_tool_use", "mcp_tool_use")
    return [str(b.get("name")) for b in _blocks(content) if b.get("type") in kinds and b.get("name")]


def _system_texts(body: Mapping[str, Any]) -> Iterator[str]:
    system = body.get("system")
    if isinstance(system, str):
        yield system
    for block in _blocks(system) if not isinstance(system, str) else []:
        if block.get("type") == "text":
            yield str(block.get("text", ""))
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "system":
            yield from (str(b.get("text", "")) for b in _blocks(message.get("content")))


def project_of(body: Mapping[str, Any]) -> str | None:
    """The working directory the system prompt's environment section names (Claude Code's project)."""
    for text in _system_texts(body):
        found = _WORKING_DIRECTORY.search(text)
        if found:
            return found.group(1).strip()[:_MAX_PROJECT]
    return None


def conversation_id(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """Claude Code's session header, else the session named in ``metadata.user_id``, else that id."""
    session = next((v for k, v in headers.items() if k.lower() == SESSION_HEADER), None)
    if session:
        return session.strip()[:_MAX_ID]
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if not isinstance(user_id, str) or not user_id.strip():
        return None
    try:  # Claude Code 2.x: a JSON document with device, account and session ids
        decoded = json.loads(user_id)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("session_id"):
        return str(decoded["session_id"])[:_MAX_ID]
    if "_session_" in user_id:  # Claude Code 1.x: user_<hash>_account_<uuid>_session_<uuid>
        return user_id.rsplit("_session_", 1)[1][:_MAX_ID]
    return user_id.strip()[:_MAX_ID]


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def extract_turn(
    request: Mapping[str, Any],
    response: Mapping[str, Any],
    *,
    headers: Mapping[str, str],
    rules: CaptureRules,
) -> Turn | None:
    """The turn a request/response pair completes, or ``None`` when there is nothing to capture.

    ``None`` for: a skipped model, a response that continues the turn (``tool_use``), and a
    conversation with no user text (only reminders, images or, by default, tool results).
    """
    if not isinstance(request.get("messages"), list):
        raise CaptureError("request has no messages list")
    model = str(request.get("model") or response.get("model") or "") or None
    if rules.skips(model) or response.get("stop_reason") in TURN_CONTINUES:
        return None
    messages = [
        m for m in request["messages"] if isinstance(m, dict) and m.get("role") in ("user", "assistant")
    ]
    # The prompt: the newest user message with text of its own that does not carry tool results.
    # The user messages of a tool loop carry tool results, and Claude Code adds text of its own
    # beside them ("Tool loaded.", reminders): that is not the user speaking.
    prompt_index = next(
        (
            i
            for i in range(len(messages) - 1, -1, -1)
            if messages[i]["role"] == "user"
            and not _has_tool_result(messages[i].get("content"))
            and user_text(messages[i].get("content"))
        ),
        None,
    )
    if prompt_index is None:
        return None
    tool_results = rules.capture_tool_results
    since = messages[prompt_index + 1 :]
    user_parts = [user_text(messages[prompt_index].get("content"), tool_results=tool_results)]
    if tool_results:
        user_parts += [
            _tool_result_text(block)
            for m in since
            if m["role"] == "user"
            for block in _blocks(m.get("content"))
            if block.get("type") == "tool_result"
        ]
    assistant_contents = [m.get("content") for m in since if m["role"] == "assistant"]
    assistant_contents.append(response.get("content"))
    assistant_text = "\n\n".join(t for content in assistant_contents for t in _texts(content) if t)
    return Turn(
        user_text="\n\n".join(part for part in user_parts if part),
        assistant_text=assistant_text,
        tools=_unique(name for content in assistant_contents for name in _tool_names(content)),
        conversation_id=conversation_id(headers, request),
        project=project_of(request),
        model=model,
    )
