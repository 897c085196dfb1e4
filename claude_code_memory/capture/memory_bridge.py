"""Tool names translated between Claude Code's MCP form and Anthropic's native memory tool.

Claude Code lists our MCP tool as ``mcp__memory__memory_20250818``, a custom tool with a JSON
schema; models are trained on the native client-side tool ``{"type": "memory_20250818",
"name": "memory"}``. The capture proxy rewrites one into the other so that the model uses the
tool it knows while Claude Code runs the MCP tool it has:

* a request (:func:`bridge_request`) gets the native definition in place of the MCP one, the
  history's ``tool_use`` blocks renamed to ``memory``, and the ``context-management-2025-06-27``
  beta in ``anthropic-beta`` (:func:`merge_beta`);
* a response gets ``tool_use`` blocks named ``memory`` renamed back: a JSON body at once
  (:func:`restore_json`), a stream event by event (:class:`StreamRenamer`), holding back at most
  one incomplete event and leaving every byte but the name as upstream sent it.

A request is bridged only when its ``tools`` offer the MCP tool and no other tool is already
called ``memory`` (the answer's names would be ambiguous); every other request, and the
response to it, passes untouched. Pure functions over bytes, standard library only (the proxy
imports this module in its own virtualenv). Nothing here raises on bad input: a body that is
not what the Messages API sends is left alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BETA",
    "MCP_TOOL_NAME",
    "NATIVE_TOOL",
    "NATIVE_TOOL_NAME",
    "BridgedRequest",
    "StreamRenamer",
    "bridge_request",
    "merge_beta",
    "restore_json",
]

#: What Claude Code calls our MCP server's tool (server added as "memory").
MCP_TOOL_NAME = "mcp__memory__memory_20250818"
NATIVE_TOOL_NAME = "memory"
NATIVE_TOOL: dict[str, Any] = {"type": "memory_20250818", "name": NATIVE_TOOL_NAME}
#: The beta the native memory tool needs.
BETA = "context-management-2025-06-27"

# A blank line ends an event; a line ends with CRLF, LF or CR (the SSE specification).
_EVENT_END = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")
_LINE = re.compile(rb"([^\r\n]*)(\r\n|\r|\n|$)")
_NAME = re.compile(rb'("name"[ \t]*:[ \t]*)"memory"')
_NAME_TEXT = re.compile(r'("name"[ \t]*:[ \t]*)"memory"')


@dataclass(frozen=True)
class BridgedRequest:
    """A rewritten request body, and how many history blocks were renamed."""

    body: bytes
    renamed_history: int


# -- requests ----------------------------------------------------------------------------------


def _dumps(value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate the client escaped: keep it escaped
        return json.dumps(value, separators=(",", ":")).encode("ascii")


def _is_tool(tool: Any, name: str) -> bool:
    return isinstance(tool, dict) and tool.get("name") == name


def _rename_tool_use(block: Any, old: str, new: str) -> bool:
    if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == old:
        block["name"] = new
        return True
    return False


def bridge_request(body: bytes) -> BridgedRequest | None:
    """The body with the native memory tool in place of the MCP one, or ``None`` to leave it alone.

    ``None`` for a body that is not a JSON object, has no ``tools`` list, already has a tool
    named ``memory``, or neither offers ``mcp__memory__memory_20250818`` in its tools nor names
    it among Claude Code's *deferred* tools (MCP tools are by default only listed in a system
    reminder, to be loaded with ToolSearch; the native tool is then appended to the tools, and
    Claude Code runs a call of the deferred tool all the same). The replacement keeps the MCP
    definition's ``cache_control`` (a prompt-cache breakpoint), nothing else of it.
    The history's ``tool_use`` blocks (and a ``tool_choice`` naming the tool) are renamed.

    The rest of the body keeps its bytes: the edits are spliced into the client's text, which
    also saves serialising the ~80 KB Claude Code sends; a body whose names are written in a
    way the splice does not recognise (escaped, spaced) is serialised afresh instead.
    """
    if MCP_TOOL_NAME.encode() not in body:
        return None
    try:
        text = body.decode("utf-8")
        members = _top_level(text)
    except (ValueError, UnicodeDecodeError):
        return None
    tools = members.get("tools")
    if tools is None or not isinstance(tools[0], list):
        return None
    if any(_is_tool(tool, NATIVE_TOOL_NAME) for tool in tools[0]):
        return None
    position = next((i for i, tool in enumerate(tools[0]) if _is_tool(tool, MCP_TOOL_NAME)), None)
    native = dict(NATIVE_TOOL)
    if position is not None:
        if "cache_control" in tools[0][position]:
            native["cache_control"] = tools[0][position]["cache_control"]
    elif _DEFERRED.search(text) is None:
        return None
    renamed = 0
    messages = members.get("messages")
    for message in messages[0] if messages and isinstance(messages[0], list) else []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            renamed += _rename_tool_use(block, MCP_TOOL_NAME, NATIVE_TOOL_NAME)
    choice = members.get("tool_choice", (None, 0, 0))[0]
    chosen = isinstance(choice, dict) and choice.get("name") == MCP_TOOL_NAME
    if chosen:
        choice["name"] = NATIVE_TOOL_NAME
    spliced = _splice(
        text, tools, position, native, {"messages": renamed, "tool_choice": int(chosen)}, members
    )
    if spliced is None:
        request = {key: value for key, (value, _, _) in members.items()}
        if position is None:
            request["tools"] = [*tools[0], native]
        else:
            request["tools"] = [*tools[0][:position], native, *tools[0][position + 1 :]]
        return BridgedRequest(_dumps(request), renamed)
    return BridgedRequest(spliced.encode("utf-8"), renamed)


#: Claude Code's system reminder listing the deferred tools (loaded through ToolSearch), with
#: ours among them, as JSON text: a string whose newlines are written ``\\n``.
_DEFERRED = re.compile(
    r"deferred tools are now available via ToolSearch(?:[^\"\\]|\\.)*?\\n"
    + re.escape(MCP_TOOL_NAME)
    + r"(?:\\n|\")"
)
#: A top-level member: its parsed value and where its text starts and ends.
_Member = tuple[Any, int, int]
_DECODER = json.JSONDecoder()


def _skip(text: str, index: int) -> int:
    """The index of the first character at or after ``index`` that is not JSON whitespace."""
    while index < len(text) and text[index] in " \t\n\r":
        index += 1
    return index


def _top_level(text: str) -> dict[str, _Member]:
    """The members of the JSON object ``text`` is, with their spans; ``ValueError`` if it is not one."""
    index = _skip(text, 0)
    if text[index : index + 1] != "{":
        raise ValueError("not a JSON object")
    index = _skip(text, index + 1)
    members: dict[str, _Member] = {}
    if text[index : index + 1] == "}":
        return members
    while True:
        if text[index : index + 1] != '"':
            raise ValueError("expected a key")
        key, index = _DECODER.raw_decode(text, index)
        index = _skip(text, index)
        if text[index : index + 1] != ":":
            raise ValueError("expected a colon")
        start = _skip(text, index + 1)
        if key == "tools" and text[start : start + 1] == "[":
            value, end = _array(text, start)  # each element's span kept, for the splice
        else:
            value, end = _DECODER.raw_decode(text, start)
        members[key] = (value, start, end)
        index = _skip(text, end)
        if text[index : index + 1] == "}":
            break
        if text[index : index + 1] != ",":
            raise ValueError("expected a comma")
        index = _skip(text, index + 1)
    if _skip(text, index + 1) != len(text):
        raise ValueError("text after the object")
    return members


class _Elements(list[Any]):
    """A parsed JSON array that knows where each element's text begins and ends."""

    spans: list[tuple[int, int]]


def _array(text: str, start: int) -> tuple[_Elements, int]:
    """The JSON array at ``start``, element by element, and where it ends."""
    elements = _Elements()
    elements.spans = []
    index = _skip(text, start + 1)
    if text[index : index + 1] == "]":
        return elements, index + 1
    while True:
        value, end = _DECODER.raw_decode(text, index)
        elements.append(value)
        elements.spans.append((index, end))
        index = _skip(text, end)
        if text[index : index + 1] == "]":
            return elements, index + 1
        if text[index : index + 1] != ",":
            raise ValueError("expected a comma")
        index = _skip(text, index + 1)


_MCP_NAME_TEXT = re.compile(r'"name":"' + MCP_TOOL_NAME + '"')


def _splice(
    text: str,
    tools: _Member,
    position: int | None,
    native: dict[str, Any],
    renames: dict[str, int],
    members: dict[str, _Member],
) -> str | None:
    """``text`` with the definition replaced and the names renamed in place, or ``None``.

    Names are found as ``"name":"mcp__memory__memory_20250818"``: unescaped quotes only occur
    in JSON's structure, never inside a string, so this cannot match text the user wrote. The
    count must equal the renames the parsed body calls for, else ``None``.
    """
    edits: list[tuple[int, int, str]] = []
    definition = json.dumps(native, separators=(",", ":"))
    if position is not None:
        tool_start, tool_end = tools[0].spans[position]
        edits.append((tool_start, tool_end, definition))
    else:  # appended, after the last tool (the array ends with its "]")
        edits.append((tools[2] - 1, tools[2] - 1, ("," if tools[0] else "") + definition))
    for key, expected in renames.items():
        if key not in members:
            continue
        _, start, end = members[key]
        found = list(_MCP_NAME_TEXT.finditer(text, start, end))
        if len(found) != expected:
            return None
        edits += [(m.start(), m.end(), f'"name":"{NATIVE_TOOL_NAME}"') for m in found]
    pieces: list[str] = []
    cursor = 0
    for start, end, replacement in sorted(edits):
        pieces += [text[cursor:start], replacement]
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def merge_beta(values: Iterable[str]) -> str:
    """One ``anthropic-beta`` value: the client's betas (all its headers) plus ours, each once."""
    betas = [beta.strip() for value in values for beta in value.split(",") if beta.strip()]
    return ",".join(dict.fromkeys([*betas, BETA]))


# -- responses ---------------------------------------------------------------------------------


def _renamed_json_text(text: str, expected: Any) -> str:
    """``text`` with its ``"name":"memory"`` made the MCP name, byte for byte, else re-serialised.

    The substitution is kept only when the result parses to exactly what renaming the parsed
    value gives (``expected``); an escaped name or a ``"name":"memory"`` inside a tool's input
    falls back to serialising ``expected`` afresh.
    """
    candidate, count = _NAME_TEXT.subn(rf'\1"{MCP_TOOL_NAME}"', text)
    if count:
        try:
            if json.loads(candidate) == expected:
                return candidate
        except ValueError:
            pass
    return _dumps(expected).decode("utf-8")


def _rename_block(block: Any) -> bool:
    return _rename_tool_use(block, NATIVE_TOOL_NAME, MCP_TOOL_NAME)


def restore_json(body: bytes) -> bytes | None:
    """A JSON message with its ``memory`` tool uses named ``mcp__memory__memory_20250818``, or ``None``.

    ``None`` when there is nothing to rename (an error body, a message without the tool, not JSON).
    """
    if _NAME.search(body) is None and b"\\u" not in body:
        return None
    try:
        text = body.decode("utf-8")
        message = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(message, dict) or message.get("type") != "message":
        return None
    content = message.get("content")
    renamed = [_rename_block(block) for block in content] if isinstance(content, list) else []
    if not any(renamed):
        return None
    return _renamed_json_text(text, message).encode("utf-8")


def _restore_event(record: bytes) -> bytes:
    """One event (its lines and the blank line that ends it), renamed if it starts a ``memory`` tool use."""
    if b"tool_use" not in record:
        return record
    lines = [(m.group(1), m.group(2)) for m in _LINE.finditer(record) if m.group(0)]
    data_lines = [i for i, (line, _) in enumerate(lines) if line.startswith(b"data:")]
    if not data_lines:
        return record
    pieces = [lines[i][0][5:] for i in data_lines]
    pieces = [piece[1:] if piece.startswith(b" ") else piece for piece in pieces]
    try:
        text = b"\n".join(pieces).decode("utf-8")
        event = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return record
    if not isinstance(event, dict) or event.get("type") != "content_block_start":
        return record
    if not _rename_block(event.get("content_block")):
        return record
    renamed = _renamed_json_text(text, event).encode("utf-8")
    first = data_lines[0]
    prefix = lines[first][0][: len(lines[first][0]) - len(pieces[0])]  # "data:" or "data: "
    # One data line stays one data line, the rest of the record as it was. Several data lines
    # (never sent by the API) become one carrying the whole renamed JSON.
    kept = [
        (prefix + renamed, ending) if i == first else (line, ending)
        for i, (line, ending) in enumerate(lines)
        if i == first or i not in data_lines
    ]
    return b"".join(line + ending for line, ending in kept)


class StreamRenamer:
    """A response stream's bytes in, the same bytes out with ``memory`` tool uses renamed.

    Call it with each chunk as it arrives and with ``b""`` at the end (mitmproxy's
    ``flow.response.stream`` contract). Every complete event goes out at once; only an event
    still missing its end is held back, so a client sees each event as soon as it could parse
    it. Whatever is held back at the end goes out unchanged.
    """

    def __init__(self) -> None:
        self._pending = b""
        self.renamed = 0

    @property
    def held(self) -> bytes:
        """The incomplete event held back so far."""
        return self._pending

    def __call__(self, chunk: bytes) -> bytes:
        if not chunk:
            rest, self._pending = self._pending, b""
            return rest
        data = self._pending + chunk if self._pending else chunk
        end = 0
        for match in _EVENT_END.finditer(data):
            end = match.end()
        if end == len(data) and data.endswith(b"\r"):
            end = _last_end_before_final_cr(data)
        self._pending = data[end:]
        if not end:
            return b""
        return self._restore(data[:end])

    def _restore(self, complete: bytes) -> bytes:
        if b"tool_use" not in complete:  # the common case: text deltas, pings
            return complete
        out: list[bytes] = []
        start = 0
        for match in _EVENT_END.finditer(complete):
            record = complete[start : match.end()]
            restored = _restore_event(record)
            if restored is not record:
                self.renamed += 1
            out.append(restored)
            start = match.end()
        out.append(complete[start:])
        return b"".join(out)


def _last_end_before_final_cr(data: bytes) -> int:
    """Where the last event ends when ``data``'s final CR may be half of a CRLF still to come."""
    end = 0
    for match in _EVENT_END.finditer(data, 0, len(data) - 1):
        end = match.end()
    return end
