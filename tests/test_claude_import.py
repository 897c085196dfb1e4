"""``ccmem import claude-code`` against a real server: the consent queue, a secret redacted,
a turn the Stop hook captured folded as a duplicate, an idempotent second run, ``--approve``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .support.server import MemoryServer

SECRET = "sk-ant-api03-" + "Q" * 90


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("claude-import")) as running:
        yield running


def _line(kind: str, text: str, session: str, cwd: Path, message_id: str | None = None) -> str:
    message: dict[str, Any] = {"role": kind, "content": [{"type": "text", "text": text}]}
    if message_id:
        message["id"] = message_id
    return json.dumps(
        {
            "type": kind,
            "sessionId": session,
            "cwd": str(cwd),
            "timestamp": "2026-02-03T04:05:06Z",
            "message": message,
        }
    )


def write_history(root: Path, cwd: Path, session: str) -> None:
    folder = root / ("-" + str(cwd).strip("/").replace("/", "-"))
    folder.mkdir(parents=True)
    lines = [
        _line("user", f"Which build tool does {cwd.name} use?", session, cwd),
        _line("assistant", f"{cwd.name} builds with the wrenfinch tool.", session, cwd, "m1"),
        _line("user", f"Use this key for the {cwd.name} deploy: {SECRET}", session, cwd),
        _line("assistant", "Noted, the deploy key is set.", session, cwd, "m2"),
        "{broken",
    ]
    (folder / f"{session}.jsonl").write_text("\n".join(lines) + "\n")


def run(server: MemoryServer, token: str, root: Path, state: Path, *extra: str) -> dict[str, Any]:
    done: subprocess.CompletedProcess[str] = server.ccmem(
        "import", "claude-code", "--root", str(root), "--state-dir", str(state), "--json",
        "--url", server.base_url, "--token", token, *extra, check=False, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + server.log()
    return json.loads(done.stdout)


def pending(server: MemoryServer, token: str, project: str) -> list[dict[str, Any]]:
    answer = httpx.get(
        f"{server.base_url}/api/v1/consent/pending",
        params={"project": project, "size": 100},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["items"]


def test_import_queues_redacts_folds_hook_captures_and_runs_once(
    server: MemoryServer, tmp_path: Path
) -> None:
    token = server.make_token(f"ada-{uuid.uuid4().hex[:6]}")
    project = tmp_path / "kestrel"
    (project / ".git").mkdir(parents=True)
    session = str(uuid.uuid4())
    headers = {"Authorization": f"Bearer {token}"}
    hook = f"{server.base_url}/api/v1/hooks/claude-code"
    base = {"session_id": session, "cwd": str(project), "transcript_path": "/dev/null"}
    # The Stop hook saw the first turn live.
    prompt = {"hook_event_name": "UserPromptSubmit", "prompt": "Which build tool does kestrel use?"}
    assert httpx.post(hook, json=base | prompt, headers=headers, timeout=30).status_code == 200
    stop = {"hook_event_name": "Stop", "last_assistant_message": "kestrel builds with the wrenfinch tool."}
    assert httpx.post(hook, json=base | stop, headers=headers, timeout=30).status_code == 200
    assert len(pending(server, token, "kestrel")) == 1

    root, state = tmp_path / "projects", tmp_path / "state"
    write_history(root, project, session)
    dry = run(server, token, root, state, "--dry-run")
    assert dry["read"] == 2 and dry["imported"] == 0
    first = run(server, token, root, state)
    assert (first["read"], first["imported"], first["pending"], first["duplicates"]) == (2, 1, 1, 1)
    assert first["skipped_reasons"] == {"not JSON": 1}
    items = pending(server, token, "kestrel")
    texts = [item["text"] if "text" in item else item.get("content", "") for item in items]
    assert len(items) == 2, items
    assert not any(SECRET in text for text in texts)
    assert any("Use this key for the kestrel deploy" in text for text in texts)

    second = run(server, token, root, state)
    assert (second["read"], second["imported"]) == (0, 0)
    # A fresh state (state lost) still imports nothing: the gate's dedup folds every turn.
    third = run(server, token, root, tmp_path / "fresh-state")
    assert (third["imported"], third["duplicates"]) == (0, 2)


def test_approve_stores_the_turns_approved(server: MemoryServer, tmp_path: Path) -> None:
    token = server.make_token(f"bo-{uuid.uuid4().hex[:6]}")
    project = tmp_path / "heron"
    (project / ".git").mkdir(parents=True)
    root = tmp_path / "projects"
    write_history(root, project, str(uuid.uuid4()))
    report = run(server, token, root, tmp_path / "state", "--approve")
    assert (report["imported"], report["approved"]) == (2, 2)
    assert pending(server, token, "heron") == []


def test_a_turn_imported_and_a_turn_captured_by_the_hooks_get_one_project(
    server: MemoryServer, tmp_path: Path
) -> None:
    """A session started in a folder that is not a git repository, then a ``cd`` into its
    ``src``: the hooks and the import both name it after the start folder (by its last part)."""
    token = server.make_token(f"ed-{uuid.uuid4().hex[:6]}")
    started_in = tmp_path / "sandpiper_notes"
    (started_in / "src").mkdir(parents=True)
    session = str(uuid.uuid4())
    root = tmp_path / "projects"
    transcript = root / re.sub(r"[^A-Za-z0-9]", "-", str(started_in)) / f"{session}.jsonl"
    transcript.parent.mkdir(parents=True)
    cwd = started_in / "src"
    transcript.write_text(
        "\n".join(
            [
                _line("user", "Which port does sandpiper use?", session, cwd),
                _line("assistant", "sandpiper listens on 7411.", session, cwd, "m1"),
                _line("user", "Who owns sandpiper?", session, cwd),
                _line("assistant", "The data team owns sandpiper.", session, cwd, "m2"),
            ]
        )
        + "\n"
    )
    headers = {"Authorization": f"Bearer {token}"}
    hook = f"{server.base_url}/api/v1/hooks/claude-code"
    base = {"session_id": session, "cwd": str(cwd), "transcript_path": str(transcript)}
    prompt = {"hook_event_name": "UserPromptSubmit", "prompt": "Which port does sandpiper use?"}
    assert httpx.post(hook, json=base | prompt, headers=headers, timeout=30).status_code == 200
    stop = {"hook_event_name": "Stop", "last_assistant_message": "sandpiper listens on 7411."}
    assert httpx.post(hook, json=base | stop, headers=headers, timeout=30).status_code == 200

    report = run(server, token, root, tmp_path / "state")
    assert (report["imported"], report["duplicates"]) == (1, 1)
    items = pending(server, token, "sandpiper_notes")
    assert len(items) == 2, items
    assert {item["conversation_id"] for item in items} == {session}


def test_consent_approve_by_project(server: MemoryServer, tmp_path: Path) -> None:
    token = server.make_token(f"cy-{uuid.uuid4().hex[:6]}")
    root = tmp_path / "projects"
    for name in ("osprey", "plover"):
        (tmp_path / name / ".git").mkdir(parents=True)
        write_history(root, tmp_path / name, str(uuid.uuid4()))
    report = run(server, token, root, tmp_path / "state")
    assert report["pending"] == 4
    done = server.ccmem(
        "consent", "approve", "--project", "osprey", "--json", "--url", server.base_url, "--token", token,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["results"]) == 2
    assert pending(server, token, "osprey") == []
    assert len(pending(server, token, "plover")) == 2


def test_lines_it_cannot_take_are_skipped_reported_and_passed_for_good(
    server: MemoryServer, tmp_path: Path
) -> None:
    """A line nested ~5,000 deep, a prompt holding half an emoji (a lone surrogate, 422) and a
    3.6 MB pasted prompt (413): each skipped and named, the turns after them and the next
    transcript imported, and a second run passes them without stopping or sending again."""
    token = server.make_token(f"di-{uuid.uuid4().hex[:6]}")
    project = tmp_path / "grebe"
    (project / ".git").mkdir(parents=True)
    root, state = tmp_path / "projects", tmp_path / "state"
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    folder = root / "-grebe"
    folder.mkdir(parents=True)
    lines = [
        _line("user", "Which queue does grebe use?", first, project),
        _line("assistant", "grebe uses the sandpiper queue.", first, project, "m1"),
        "[" * 5000 + "]" * 5000,  # line 3
        _line("user", "Half an emoji: \ud83d and the rest", first, project),  # JSON holds the escape
        _line("assistant", "Noted.", first, project, "m2"),
        _line("user", "Pasted: " + "lorem ipsum " * 300_000, first, project),  # line 6, 3.6 MB
        _line("assistant", "That is a long paste.", first, project, "m3"),
        _line("user", "Which port does grebe listen on?", first, project),
        _line("assistant", "grebe listens on port 7311.", first, project, "m4"),
    ]
    (folder / f"{first}.jsonl").write_text("\n".join(lines) + "\n")
    later = [
        _line("user", "Who owns grebe?", second, project),
        _line("assistant", "The platform team owns grebe.", second, project, "m5"),
    ]
    (folder / f"{second}.jsonl").write_text("\n".join(later) + "\n")
    os.utime(folder / f"{second}.jsonl", (2_000_000_000, 2_000_000_000))  # read after the first

    report = run(server, token, root, state)
    skipped = {(item["line"], item["reason"]) for item in report["skipped_lines"]}
    assert skipped == {
        (3, "nested too deep"),
        (4, "a lone surrogate (half a character)"),
        (6, "too large for the server (413)"),
    }, report
    assert report["imported"] == 3, report  # the first turn, the one after the bad ones, the next file
    texts = " ".join(str(item.get("text") or item.get("content")) for item in pending(server, token, "grebe"))
    assert "sandpiper" in texts and "7311" in texts and "platform team" in texts

    again = run(server, token, root, state)
    assert (again["read"], again["imported"], again["skipped"]) == (0, 0, 0), again
