"""The transcript reader over generated transcripts in the format Claude Code writes."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

from claude_code_memory.client.claude_import import run_import
from claude_code_memory.client.claude_transcripts import BadLine, Turn, read_turns

SESSION = "0b7c6a52-1111-4222-8333-444455556666"


def _entry(kind: str, content: object, **extra: object) -> str:
    message: dict[str, object] = {"role": kind, "content": content}
    if "message_id" in extra:
        message["id"] = extra.pop("message_id")
    return json.dumps(
        {
            "type": kind,
            "sessionId": SESSION,
            "cwd": "/home/alice/code/shop",
            "timestamp": "2026-03-01T10:00:00.000Z",
            "message": message,
            **extra,
        }
    )


def transcript_lines() -> list[str]:
    return [
        json.dumps({"type": "summary", "summary": "shop work"}),
        _entry("user", "<command-name>/clear</command-name>"),
        _entry("user", "Caveat: meta", isMeta=True),
        _entry(
            "user", [{"type": "text", "text": "<system-reminder>ignore me</system-reminder>Fix the cart bug"}]
        ),
        _entry("assistant", [{"type": "thinking", "thinking": "secret thoughts"}], message_id="m1"),
        _entry("assistant", [{"type": "text", "text": "Looking."}], message_id="m1"),
        _entry("assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}], message_id="m1"),
        _entry("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "TOOL OUTPUT"}]),
        "{not json",
        "[1, 2]",
        _entry(
            "assistant", [{"type": "text", "text": "Fixed: the total was rounded twice."}], message_id="m2"
        ),
        _entry("user", "Thanks, and the tax?"),
        _entry("assistant", [{"type": "text", "text": "Tax is fine."}], message_id="m3"),
    ]


def test_turns_leave_out_noise_and_report_bad_lines() -> None:
    items = list(read_turns(transcript_lines()))
    turns = [item for item in items if isinstance(item, Turn)]
    bad = [item for item in items if isinstance(item, BadLine)]
    assert [(t.prompt, t.reply) for t in turns] == [
        ("Fix the cart bug", "Fixed: the total was rounded twice."),
        ("Thanks, and the tax?", "Tax is fine."),
    ]
    assert [(b.line, b.reason) for b in bad] == [(8, "not JSON"), (9, "not a JSON object")]
    assert turns[0].session_id == SESSION and turns[0].cwd == "/home/alice/code/shop"
    assert turns[0].timestamp is not None and turns[0].timestamp.year == 2026
    text = " ".join(t.prompt + t.reply for t in turns)
    for noise in ("TOOL OUTPUT", "secret thoughts", "ignore me", "/clear", "Caveat"):
        assert noise not in text


def test_resume_goes_on_from_the_saved_line(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-alice-code-shop"
    folder.mkdir(parents=True)
    (folder / f"{SESSION}.jsonl").write_text("\n".join(transcript_lines()) + "\n")
    sent: list[dict[str, object]] = []

    def send_one_then_fail(body: dict[str, object]) -> dict[str, object]:
        if sent:
            raise RuntimeError("killed")
        sent.append(body)
        return {"status": "pending", "id": "x"}

    state = tmp_path / "state"
    with contextlib.suppress(RuntimeError):
        run_import(send_one_then_fail, root=tmp_path / "projects", state_dir=state)
    assert len(sent) == 1
    rest: list[dict[str, object]] = []
    report = run_import(
        lambda b: rest.append(b) or {"status": "pending"}, root=tmp_path / "projects", state_dir=state
    )
    assert [b["messages"][0]["content"] for b in rest] == ["Thanks, and the tax?"]  # type: ignore[index]
    assert report.counts["pending"] == 1
    again = run_import(lambda b: rest.append(b) or {}, root=tmp_path / "projects", state_dir=state)
    assert again.read == 0 and len(rest) == 1


def test_a_line_nested_too_deep_is_a_bad_line_and_the_turns_go_on() -> None:
    lines = transcript_lines()
    lines.insert(3, "[" * 5000 + "]" * 5000)
    items = list(read_turns(lines))
    assert BadLine(3, "nested too deep") in items
    assert [t.prompt for t in items if isinstance(t, Turn)] == ["Fix the cart bug", "Thanks, and the tax?"]


def _dry_run(root: Path, state: Path) -> dict[str, object]:
    """A dry run in a thread: a read that would hang fails the test instead of stalling it."""
    result: dict[str, object] = {}
    worker = threading.Thread(
        target=lambda: result.update(run_import(None, root=root, state_dir=state).as_dict()), daemon=True
    )
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "the import hung"
    return result


def test_only_regular_files_in_real_folders_are_read(tmp_path: Path) -> None:
    """A pipe named *.jsonl is not opened (it would wait for a writer for ever); a link to a
    folder or a file outside the projects folder is not followed; each is named as skipped."""
    root = tmp_path / "projects"
    own = root / "-home-alice-code-shop"
    own.mkdir(parents=True)
    (own / f"{SESSION}.jsonl").write_text("\n".join(transcript_lines()) + "\n")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "folder").mkdir(parents=True)
    (elsewhere / "folder" / "other.jsonl").write_text("\n".join(transcript_lines()) + "\n")
    (elsewhere / "file.jsonl").write_text("\n".join(transcript_lines()) + "\n")
    os.mkfifo(own / "pipe.jsonl")
    (own / "linked.jsonl").symlink_to(elsewhere / "file.jsonl")
    (root / "-linked-folder").symlink_to(elsewhere / "folder", target_is_directory=True)

    report = _dry_run(root, tmp_path / "state")
    assert (report["transcripts"], report["read"]) == (1, 2), report
    skipped = {
        (Path(str(item["transcript"])).name, item["line"], item["reason"]) for item in report["skipped_lines"]
    }  # type: ignore[attr-defined]
    reason = "not a regular file (a link, a pipe or a device)"
    assert {
        ("pipe.jsonl", None, reason),
        ("linked.jsonl", None, reason),
        ("-linked-folder", None, reason),
    } <= skipped


def test_a_file_swapped_for_a_pipe_or_a_link_is_not_opened(tmp_path: Path) -> None:
    """The open itself refuses what the listing let in (a swap between listing and reading)."""
    from claude_code_memory.client.claude_transcripts import read_lines

    pipe, target, link = tmp_path / "pipe.jsonl", tmp_path / "target.jsonl", tmp_path / "link.jsonl"
    os.mkfifo(pipe)
    target.write_text("{}\n")
    link.symlink_to(target)
    for path in (pipe, link):
        with contextlib.suppress(OSError):
            read_lines(path)
            raise AssertionError(f"{path.name} was read")
    assert read_lines(target) == ["{}\n"]
