"""The memory tool bridge's translation (``capture/memory_bridge.py``): requests, JSON bodies, streams.

Streams are the real wire format (``tests/support/fake_anthropic.message_events``, what the fake
upstream sends) cut at every byte position: the output must be the input with only the tool's
name changed, and no complete event may be held back.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from claude_code_memory.capture.memory_bridge import (
    BETA,
    MCP_TOOL_NAME,
    NATIVE_TOOL,
    StreamRenamer,
    bridge_request,
    merge_beta,
    restore_json,
)
from tests.support.fake_anthropic import Reply, message_events, message_json

MCP_DEFINITION = {
    "name": MCP_TOOL_NAME,
    "description": "Anthropic's memory tool on our store.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}
BASH = {"name": "Bash", "description": "Run a command.", "input_schema": {"type": "object"}}


def claude_code_body(*, tools: list[dict[str, Any]] | None = None, history: bool = True) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "Remember my memory of ünïcode 🦊"}]},
    ]
    if history:
        messages += [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"I will call {MCP_TOOL_NAME} to look at my memory."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": MCP_TOOL_NAME,
                        "input": {"command": "view"},
                    },
                    {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "ls"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Directory: /memories"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "a.txt"},
                ],
            },
        ]
    return {
        "model": "claude-opus-5-5",
        "messages": messages,
        "tools": tools if tools is not None else [BASH, MCP_DEFINITION, {"name": "Read"}],
        "stream": True,
    }


# -- requests ----------------------------------------------------------------------------------


def test_the_mcp_tool_becomes_the_native_tool_in_place_and_the_history_follows() -> None:
    body = claude_code_body()
    bridged = bridge_request(json.dumps(body).encode())
    assert bridged is not None
    result = json.loads(bridged.body)
    assert result["tools"] == [BASH, NATIVE_TOOL, {"name": "Read"}]
    assert bridged.renamed_history == 1
    assistant = result["messages"][1]["content"]
    assert assistant[1]["name"] == "memory" and assistant[1]["id"] == "toolu_1"
    assert assistant[2]["name"] == "Bash"  # another tool: untouched
    assert assistant[0]["text"] == body["messages"][1]["content"][0]["text"]  # text naming it: untouched
    assert result["messages"][2] == body["messages"][2]  # tool results go by id
    # Nothing else changed, non-ASCII text included (sent as UTF-8, not escaped).
    assert "ünïcode 🦊".encode() in bridged.body
    expected = json.loads(json.dumps(body))
    expected["tools"][1] = NATIVE_TOOL
    expected["messages"][1]["content"][1]["name"] = "memory"
    assert result == expected


def compact(value: Any) -> bytes:
    """JSON the way Claude Code writes it (JSON.stringify: no spaces, UTF-8)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def test_the_clients_bytes_are_kept_around_the_edits() -> None:
    body = claude_code_body()
    # A user quoting the tool's JSON: escaped quotes, so not a name the bridge may touch.
    quoted = f'"name":"{MCP_TOOL_NAME}"'
    body["messages"][0]["content"].append({"type": "text", "text": quoted})
    bridged = bridge_request(compact(body))
    assert bridged is not None and bridged.renamed_history == 1
    expected = json.loads(json.dumps(body))
    expected["tools"][1] = NATIVE_TOOL
    expected["messages"][1]["content"][1]["name"] = "memory"
    assert bridged.body == compact(expected)  # byte for byte
    assert json.loads(bridged.body)["messages"][0]["content"][-1]["text"] == quoted


def test_unusual_spacing_between_members_is_kept() -> None:
    tools = compact([BASH, MCP_DEFINITION])
    history = compact(claude_code_body()["messages"])
    raw = (
        b'  {\n "model" : "claude-opus-5-5" ,\n\t"tools":' + tools + b' ,"messages" :' + history + b"\r\n}\n"
    )
    bridged = bridge_request(raw)
    assert bridged is not None
    expected = raw.replace(compact(MCP_DEFINITION), compact(NATIVE_TOOL)).replace(
        f'"name":"{MCP_TOOL_NAME}"'.encode(), b'"name":"memory"'
    )
    assert bridged.body == expected


def test_a_tool_choice_naming_the_mcp_tool_names_the_native_one() -> None:
    body = claude_code_body() | {"tool_choice": {"type": "tool", "name": MCP_TOOL_NAME}}
    for raw in (compact(body), json.dumps(body, indent=2).encode()):
        bridged = bridge_request(raw)
        assert bridged is not None
        assert json.loads(bridged.body)["tool_choice"] == {"type": "tool", "name": "memory"}


def test_spaced_or_escaped_names_are_serialised_afresh_with_the_same_meaning() -> None:
    body = claude_code_body()
    body["messages"][1]["content"].append(
        {"type": "tool_use", "id": "toolu_3", "name": "Write", "input": {"name": MCP_TOOL_NAME}}
    )
    expected = json.loads(json.dumps(body))
    expected["tools"][1] = NATIVE_TOOL
    expected["messages"][1]["content"][1]["name"] = "memory"
    escaped = compact(body).replace(b'"name":"mcp__memory', b'"name":"\\u006dcp__memory')
    for raw in (json.dumps(body, indent=1).encode(), compact(body), escaped):
        bridged = bridge_request(raw)
        assert bridged is not None
        assert json.loads(bridged.body) == expected  # the Write tool's input keeps its text


DEFERRED_REMINDER = (
    "<system-reminder>\nThe following deferred tools are now available via ToolSearch. Their schemas are NOT "
    'loaded. Use ToolSearch with query "select:<name>[,<name>...]" to load tool schemas before '
    "calling them:\nCronCreate\nmcp__memory__add_memories\n{}\nmcp__memory__search_memory\n\n"
    "</system-reminder>"
)


def deferred_body(listed: str) -> dict[str, Any]:
    body = claude_code_body(tools=[BASH, {"name": "ToolSearch"}])
    reminder = {"role": "system", "content": [{"type": "text", "text": DEFERRED_REMINDER.format(listed)}]}
    body["messages"].insert(0, reminder)
    return body


def test_a_deferred_mcp_tool_gets_the_native_tool_appended() -> None:
    """Claude Code lists MCP tools as deferred (to load through ToolSearch) unless tool search is off."""
    body = deferred_body(MCP_TOOL_NAME)
    bridged = bridge_request(compact(body))
    assert bridged is not None and bridged.renamed_history == 1
    expected = json.loads(json.dumps(body))
    expected["tools"].append(NATIVE_TOOL)
    expected["messages"][2]["content"][1]["name"] = "memory"
    assert bridged.body == compact(expected)
    assert json.loads(bridge_request(json.dumps(body, indent=1).encode()).body) == expected  # type: ignore[union-attr]


@pytest.mark.parametrize("listed", ["mcp__memory__add_memories", MCP_TOOL_NAME + "_v2", "x" + MCP_TOOL_NAME])
def test_a_deferred_list_without_the_tool_is_left_alone(listed: str) -> None:
    body = deferred_body(listed)
    body["messages"][1]["content"][0]["text"] += f" {MCP_TOOL_NAME}"  # named, but not a deferred tool
    assert bridge_request(compact(body)) is None


def test_the_prompt_cache_breakpoint_of_the_definition_is_kept() -> None:
    definition = MCP_DEFINITION | {"cache_control": {"type": "ephemeral"}}
    bridged = bridge_request(json.dumps(claude_code_body(tools=[BASH, definition])).encode())
    assert bridged is not None
    assert json.loads(bridged.body)["tools"][1] == NATIVE_TOOL | {"cache_control": {"type": "ephemeral"}}


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"\xff\xfe",
        b"[1, 2]",
        compact(claude_code_body()) + b" trailing",
        b'{"tools":[{"name":"' + MCP_TOOL_NAME.encode() + b'"}],}',
        b'{"tools":[{"name":"' + MCP_TOOL_NAME.encode() + b'"}] "messages":[]}',
        json.dumps({"messages": [], "tools": "nope"}).encode(),
        json.dumps({"messages": []}).encode(),  # no tools (a title request)
        json.dumps(claude_code_body(tools=[BASH])).encode(),  # the history alone does not bridge
        # Another tool already called "memory": the answer's names would be ambiguous.
        json.dumps(claude_code_body(tools=[MCP_DEFINITION, {"name": "memory", "input_schema": {}}])).encode(),
        json.dumps(claude_code_body(tools=[MCP_DEFINITION, NATIVE_TOOL])).encode(),
    ],
)
def test_requests_without_the_mcp_tool_are_left_alone(body: bytes) -> None:
    assert bridge_request(body) is None


def test_a_lone_surrogate_the_client_escaped_stays_escaped() -> None:
    raw = (
        b'{"tools":[{"name":"'
        + MCP_TOOL_NAME.encode()
        + b'"}],"messages":[{"role":"user","content":"\\ud800"}]}'
    )
    bridged = bridge_request(raw)
    assert bridged is not None
    assert b"\\ud800" in bridged.body
    assert json.loads(bridged.body)["messages"][0]["content"] == "\ud800"


@pytest.mark.parametrize(
    ("values", "merged"),
    [
        ([], BETA),
        (["claude-code-20250219"], f"claude-code-20250219,{BETA}"),
        (
            [f"claude-code-20250219, {BETA},interleaved-thinking-2025-05-14"],
            f"claude-code-20250219,{BETA},interleaved-thinking-2025-05-14",
        ),
        (["a,b", " c , a", ""], f"a,b,c,{BETA}"),
    ],
)
def test_the_beta_is_merged_with_the_clients_once(values: list[str], merged: str) -> None:
    assert merge_beta(values) == merged


# -- JSON responses ----------------------------------------------------------------------------

REPLY = Reply(
    [
        {"type": "text", "text": 'Let me look at my memory: "name":"memory" is how I am called.'},
        {
            "type": "tool_use",
            "id": "toolu_a",
            "name": "memory",
            "input": {"command": "view", "path": "/memories"},
        },
        {"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": "echo memory"}},
        {
            "type": "tool_use",
            "id": "toolu_c",
            "name": "memory",
            "input": {"command": "view", "path": "/memories/a"},
        },
    ],
    stop_reason="tool_use",
)


def test_a_json_answer_gets_the_mcp_name_back_and_nothing_else_changes() -> None:
    body = json.dumps(message_json(REPLY, "claude-opus-5-5", "msg_1")).encode()
    restored = restore_json(body)
    assert restored is not None
    expected = body.replace(b'"name": "memory", "input"', f'"name": "{MCP_TOOL_NAME}", "input"'.encode())
    assert expected.count(MCP_TOOL_NAME.encode()) == 2
    assert restored == expected  # byte for byte: the text quoting the name is untouched


def test_a_name_in_a_tools_input_is_not_mistaken_for_the_blocks() -> None:
    reply = Reply(
        [{"type": "tool_use", "id": "t", "name": "memory", "input": {"name": "memory"}}], "tool_use"
    )
    restored = restore_json(json.dumps(message_json(reply, "m", "msg_1")).encode())
    assert restored is not None
    assert json.loads(restored)["content"] == [
        {"type": "tool_use", "id": "t", "name": MCP_TOOL_NAME, "input": {"name": "memory"}}
    ]


def test_an_escaped_name_is_renamed_too() -> None:
    body = b'{"type":"message","content":[{"type":"tool_use","id":"t","name":"memor\\u0079","input":{}}]}'
    restored = restore_json(body)
    assert restored is not None and json.loads(restored)["content"][0]["name"] == MCP_TOOL_NAME


@pytest.mark.parametrize(
    "body",
    [
        json.dumps(message_json(Reply.text("My memory is fine."), "m", "msg_1")).encode(),
        json.dumps(
            message_json(Reply.tool_use("Bash", {"name": "memory"}, tool_use_id="t"), "m", "msg_1")
        ).encode(),
        b'{"type":"error","error":{"type":"overloaded_error","message":"name: memory"}}',
        b'{"type":"message","content":"tool_use memory"}',
        b"<html>502</html>",
        b"\x1f\x8b\x08\x00compressed",
    ],
)
def test_json_bodies_without_a_memory_tool_use_are_left_alone(body: bytes) -> None:
    assert restore_json(body) is None


# -- streams -----------------------------------------------------------------------------------


def stream_of(reply: Reply) -> bytes:
    return b"".join(message_events(reply, "claude-opus-5-5", "msg_1"))


def renamed(stream: bytes) -> bytes:
    """What the bridge must make of ``stream``: the name in each content_block_start, nothing else."""
    start = b'"content_block":{"type":"tool_use",'
    out = []
    for record in stream.split(b"\n\n"):
        if start in record:
            record = record.replace(b'"name":"memory"', f'"name":"{MCP_TOOL_NAME}"'.encode())
        out.append(record)
    return b"\n\n".join(out)


STREAM = stream_of(REPLY)
EXPECTED = renamed(STREAM)


def feed(chunks: list[bytes]) -> tuple[bytes, StreamRenamer]:
    renamer = StreamRenamer()
    return b"".join(renamer(chunk) for chunk in [*chunks, b""]), renamer


def test_a_whole_stream_gets_the_mcp_name_in_each_tool_use_and_nothing_else() -> None:
    assert EXPECTED.count(MCP_TOOL_NAME.encode()) == 2 and EXPECTED != STREAM
    out, renamer = feed([STREAM])
    assert out == EXPECTED
    assert renamer.renamed == 2


def test_split_at_every_byte_position_the_output_is_the_same() -> None:
    for cut in range(len(STREAM) + 1):
        out, _ = feed([STREAM[:cut], STREAM[cut:]])
        assert out == EXPECTED, cut


def test_byte_by_byte_and_random_chunks_give_the_same_output() -> None:
    assert feed([STREAM[i : i + 1] for i in range(len(STREAM))])[0] == EXPECTED
    generator = random.Random(19)
    for _ in range(200):
        cuts = sorted(generator.sample(range(1, len(STREAM)), generator.randint(1, 40)))
        chunks = [STREAM[a:b] for a, b in zip([0, *cuts], [*cuts, len(STREAM)], strict=True)]
        assert feed(chunks)[0] == EXPECTED


def test_every_complete_event_goes_out_at_once() -> None:
    """No buffering: after each chunk, out is everything up to the last complete event received."""
    renamer = StreamRenamer()
    sent = b""
    out = b""
    for cut in range(0, len(STREAM), 7):
        sent += STREAM[cut : cut + 7]
        out += renamer(STREAM[cut : cut + 7])
        complete = sent[: sent.rfind(b"\n\n") + 2] if b"\n\n" in sent else b""
        assert out == renamed(complete), cut
        assert len(renamer.held) == len(sent) - len(complete)


def test_a_stream_without_the_tool_passes_byte_identical() -> None:
    stream = stream_of(
        Reply(
            [
                {
                    "type": "text",
                    "text": 'My memory says "tool_use" and "name":"memory"; content_block_start',
                },
                {"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"name": "memory"}},
            ],
            stop_reason="tool_use",
        )
    )
    for cut in range(0, len(stream), 5):
        out, renamer = feed([stream[:cut], stream[cut:]])
        assert out == stream and renamer.renamed == 0


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"])
def test_crlf_and_cr_framing_is_kept(newline: bytes) -> None:
    stream = STREAM.replace(b"\n", newline)
    expected = EXPECTED.replace(b"\n", newline)
    for cut in range(len(stream) + 1):
        assert feed([stream[:cut], stream[cut:]])[0] == expected, cut


def test_data_without_a_space_comments_and_ids_are_kept() -> None:
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "t", "name": "memory", "input": {}},
    }
    event = (
        b": keep-alive\nevent: content_block_start\nid: 7\ndata:"
        + json.dumps(block).encode()
        + b"\nretry: 10\n\n"
    )
    out, _ = feed([event])
    assert out == event.replace(b'"name": "memory"', f'"name": "{MCP_TOOL_NAME}"'.encode())


def test_an_event_split_over_data_lines_becomes_one_data_line() -> None:
    event = (
        b"event: content_block_start\n"
        b'data: {"type":"content_block_start","index":0,\n'
        b'data: "content_block":{"type":"tool_use","id":"t","name":"memory","input":{}}}\n\n'
    )
    out, _ = feed([event])
    assert out.startswith(b"event: content_block_start\ndata: {") and out.endswith(b"}\n\n")
    assert out.count(b"data:") == 1
    data = json.loads(out.split(b"data: ", 1)[1])
    assert data["content_block"]["name"] == MCP_TOOL_NAME


@pytest.mark.parametrize(
    "stream",
    [
        b"event: error\ndata: "
        b'{"type":"error","error":{"type":"overloaded_error","message":"tool_use memory"}}\n\n',
        b"event: content_block_start\ndata: "
        b'{"type":"content_block_start","content_block":{"type":"tool_use","name":"memory"\n\n',
        b"event: content_block_start\ndata: \xff\xfe tool_use\n\n",
        b"event: message_start\n\n tool_use",
        b"",
    ],
)
def test_errors_and_malformed_events_pass_unchanged(stream: bytes) -> None:
    for cut in range(len(stream) + 1):
        assert feed([stream[:cut], stream[cut:]])[0] == stream


def test_a_cut_stream_flushes_the_incomplete_event_unchanged_at_the_end() -> None:
    cut = STREAM[: STREAM.index(b'"name":"memory"') + 5]
    renamer = StreamRenamer()
    out = renamer(cut)
    assert renamer.held and out + renamer.held == cut
    assert out + renamer(b"") == cut
    assert renamer(b"") == b""
