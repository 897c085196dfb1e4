"""Claude Code's auto-memory files and a real server kept in step by ``ccmem sync claude-code``
(and ``ccmem import claude-code``), in a temporary HOME: imported through the gate, once; edits
and deletions on either side followed; Claude Code's own files never written; a bad file
reported and skipped; the conflict rules of docs/import.md."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_code_memory.client.claude_automem import OWN_FILE, BadFile, read_memory_file

from .support.server import MemoryServer

SECRET = "sk-ant-api03-" + "Z" * 90

FEEDBACK = """---
name: tests-need-real-db
description: Integration tests must hit a real database, not mocks
metadata:
  type: feedback
---

Integration tests must hit a real PostgreSQL, never mocks.
**Why:** a mocked migration passed while prod broke.
**How to apply:** start the Debian PostgreSQL in the fixture.
"""

PROJECT = """---
name: release-freeze
description: Merge freeze for the mobile release
metadata:
  type: project
---

Merge freeze begins 2026-03-05 for the mobile release cut.
"""

INDEX = """- [Tests need a real DB](feedback_tests.md) — no mocks in integration tests
- [Release freeze](project_freeze.md) — merge freeze dates
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("claude-automem")) as running:
        yield running


def claude_folder(server: MemoryServer, name: str) -> tuple[Path, str]:
    """A project folder of Claude Code's, as the CLI names it (``-`` for each ``/``), with a
    transcript whose cwd is a git work tree named ``name``, and its memory folder."""
    cwd = Path(server.env["HOME"]) / "code" / name
    (cwd / ".git").mkdir(parents=True)
    folder = Path(server.env["HOME"]) / ".claude" / "projects" / ("-" + str(cwd).strip("/").replace("/", "-"))
    (folder / "memory").mkdir(parents=True)
    line = {"type": "user", "cwd": str(cwd), "sessionId": "s", "message": {"role": "user", "content": "hi"}}
    (folder / f"{uuid.uuid4()}.jsonl").write_text(json.dumps(line) + "\n")
    return folder / "memory", name


def sync(server: MemoryServer, token: str, *extra: str, command: str = "sync") -> dict[str, Any]:
    done = server.ccmem(
        command, "claude-code", "--json", "--url", server.base_url, "--token", token, *extra,
        check=False, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr + server.log()
    return json.loads(done.stdout)


def memories(server: MemoryServer, token: str, project: str) -> dict[str, dict[str, Any]]:
    with server.client(token) as client:
        answer = client.get("/api/v1/memories", params={"project": project, "size": 100})
    assert answer.status_code == 200, answer.text
    return {item["id"]: item for item in answer.json()["items"]}


def approve_all(server: MemoryServer, token: str, project: str) -> int:
    """Approve the project's pending items (the sync's captures wait for consent)."""
    with server.client(token) as client:
        items = client.get("/api/v1/consent/pending", params={"project": project}).json()["items"]
        for item in items:
            assert client.post(f"/api/v1/consent/{item['id']}/approve").status_code == 200
    return len(items)


def digests(folder: Path) -> dict[str, str]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in folder.iterdir()
        if path.name != OWN_FILE
    }


def test_files_come_in_once_and_the_server_goes_out_to_our_file(server: MemoryServer) -> None:
    token = server.make_token(f"ada-{uuid.uuid4().hex[:6]}")
    folder, project = claude_folder(server, f"kestrel{uuid.uuid4().hex[:4]}")
    (folder / "feedback_tests.md").write_text(FEEDBACK)
    (folder / "project_freeze.md").write_text(PROJECT)
    (folder / "MEMORY.md").write_text(INDEX)
    (folder / "broken.md").write_text("---\nname: oops\nno closing line\n")
    (folder / "reference_keys.md").write_text(f"The staging deploy key is {SECRET}\n")
    theirs = digests(folder)

    first = sync(server, token)
    assert (first["imported"], first["memory_files"]) == (3, 4), first
    assert [Path(bad["file"]).name for bad in first["bad_files"]] == ["broken.md"]
    assert "closing ---" in first["bad_files"][0]["reason"]
    assert first["pending"] == 3 and memories(server, token, project) == {}  # consent, as captures
    assert approve_all(server, token, project) == 3
    stored = memories(server, token, project)
    assert len(stored) == 3
    by_file = {Path(item["metadata_"]["file"]).name: item for item in stored.values()}
    assert set(by_file) == {"feedback_tests.md", "project_freeze.md", "reference_keys.md"}
    assert by_file["feedback_tests.md"]["metadata_"]["type"] == "feedback"
    assert "real PostgreSQL, never mocks" in by_file["feedback_tests.md"]["content"]
    assert SECRET not in by_file["reference_keys.md"]["content"]  # the gate redacted it
    assert not (folder / OWN_FILE).exists()  # nothing of ours to say yet
    assert digests(folder) == theirs

    second = sync(server, token)
    assert (second["imported"], second["updated"], second["unchanged"]) == (0, 0, 3), second
    assert len(memories(server, token, project)) == 3

    # A memory the user adds in ccmem goes out to our file; Claude Code's files stay as they were.
    with server.client(token) as client:
        added = client.post(
            "/api/v1/memories", json={"text": "Deploys go out on Tuesdays only.", "project": project}
        ).json()
    # A conversation turn the Stop hook captured is a log, not a fact: it stays out of our file.
    cwd = Path(server.env["HOME"]) / "code" / project
    hook = {"session_id": "s1", "cwd": str(cwd), "transcript_path": "/dev/null"}
    with server.client(token) as client:
        for event in (
            {"hook_event_name": "UserPromptSubmit", "prompt": "Where do the kestrel logs go?"},
            {"hook_event_name": "Stop", "last_assistant_message": "To the loghaven bucket."},
        ):
            assert client.post("/api/v1/hooks/claude-code", json=hook | event).status_code == 200
        for item in client.get("/api/v1/consent/pending", params={"project": project}).json()["items"]:
            client.post(f"/api/v1/consent/{item['id']}/approve")
    assert any("loghaven" in item["content"] for item in memories(server, token, project).values())
    third = sync(server, token)
    assert third["own_written"] == 1
    own = (folder / OWN_FILE).read_text()
    assert "Deploys go out on Tuesdays only." in own and f"ccmem:{added['id']}" in own
    assert own.startswith("---\nname: ccmem-memories\n")
    assert "Merge freeze" not in own  # imported memories are Claude Code's already
    assert "loghaven" not in own
    assert read_memory_file(folder / OWN_FILE).kind == "project"  # Claude Code's file shape
    # Edited in ccmem: the file follows.
    with server.client(token) as client:
        client.put(
            f"/api/v1/memories/{added['id']}", json={"memory_content": "Deploys go out on Wednesdays."}
        )
    sync(server, token)
    own = (folder / OWN_FILE).read_text()
    assert "Wednesdays" in own and "Tuesdays" not in own
    # Deleted in ccmem: gone from the file (and the file with it, being empty).
    with server.client(token) as client:
        client.request("DELETE", "/api/v1/memories", json={"memory_ids": [added["id"]]})
    sync(server, token)
    assert not (folder / OWN_FILE).exists()
    assert digests(folder) == theirs


def test_edits_and_deletions_of_claude_codes_files_and_the_conflict_rules(server: MemoryServer) -> None:
    token = server.make_token(f"bo-{uuid.uuid4().hex[:6]}")
    folder, project = claude_folder(server, f"heron{uuid.uuid4().hex[:4]}")
    (folder / "feedback_tests.md").write_text(FEEDBACK)
    (folder / "project_freeze.md").write_text(PROJECT)
    (folder / "user_role.md").write_text(
        "---\nname: role\nmetadata:\n  type: user\n---\nThe user is an SRE.\n"
    )
    assert sync(server, token, "--project", project, command="import")["auto_memory"]["imported"] == 3
    assert approve_all(server, token, project) == 3
    ids = {
        Path(item["metadata_"]["file"]).name: item["id"] for item in memories(server, token, project).values()
    }

    # Claude Code edits a file: its new text comes in through consent and replaces the memory.
    (folder / "project_freeze.md").write_text(PROJECT.replace("2026-03-05", "2026-03-12"))
    # Both sides changed: the file wins.
    with server.client(token) as client:
        client.put(f"/api/v1/memories/{ids['feedback_tests.md']}", json={"memory_content": "Mocks are fine."})
    (folder / "feedback_tests.md").write_text(FEEDBACK.replace("PostgreSQL", "PostgreSQL 15"))
    # Deleted in ccmem while its file is unchanged: stays deleted.
    with server.client(token) as client:
        client.request("DELETE", "/api/v1/memories", json={"memory_ids": [ids["user_role.md"]]})
    report = sync(server, token, "--project", project)
    assert (report["updated"], report["kept_deleted"], report["imported"]) == (2, 1, 0), report
    assert memories(server, token, project) == {}  # the old texts are gone, the new ones wait
    assert approve_all(server, token, project) == 2
    now = {Path(item["metadata_"]["file"]).name: item for item in memories(server, token, project).values()}
    assert set(now) == {"feedback_tests.md", "project_freeze.md"}
    ids["project_freeze.md"] = now["project_freeze.md"]["id"]
    assert "2026-03-12" in now["project_freeze.md"]["content"]
    assert "PostgreSQL 15" in now["feedback_tests.md"]["content"]
    assert not (folder / OWN_FILE).exists()  # nothing but Claude Code's own memories

    # An imported memory edited in ccmem (its file unchanged) stays edited and goes out to our file.
    with server.client(token) as client:
        client.put(
            f"/api/v1/memories/{ids['project_freeze.md']}", json={"memory_content": "No freeze in 2026."}
        )
    assert sync(server, token, "--project", project)["unchanged"] == 2
    assert "No freeze in 2026." in (folder / OWN_FILE).read_text()

    # Claude Code deletes a file: its memory goes too.
    (folder / "project_freeze.md").unlink()
    report = sync(server, token, "--project", project)
    assert report["deleted"] == 1, report
    assert [Path(item["metadata_"]["file"]).name for item in memories(server, token, project).values()] == [
        "feedback_tests.md"
    ]
    assert not (folder / OWN_FILE).exists()

    # A file of the user's kind that changes after its memory was deleted comes in again.
    (folder / "user_role.md").write_text("---\nname: role\n---\nThe user is a staff SRE.\n")
    assert sync(server, token, "--project", project)["imported"] == 1


def test_a_session_s_sync_takes_its_folder_in_and_makes_folders_only_to_write(server: MemoryServer) -> None:
    """`--cwd`: the one folder of a session in that directory (Claude Code names it after the git
    work tree), files through consent, only what changed; a folder is made only to write our file
    into it and removed with it; a second sync while one runs does nothing."""
    from claude_code_memory.client.claude_automem import session_folder, sync_lock

    token = server.make_token(f"fay-{uuid.uuid4().hex[:6]}")
    name = f"egret.{uuid.uuid4().hex[:4]}"
    home = Path(server.env["HOME"])
    repo = home / "code" / name
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    root = home / ".claude" / "projects"
    folder = session_folder(root, str(repo / "src"))
    assert folder == root / ("-" + str(repo).strip("/").replace("/", "-").replace(".", "-")) / "memory"

    def session_sync(*extra: str) -> dict[str, Any]:
        return sync(server, token, "--cwd", str(repo / "src"), *extra)

    assert session_sync()["memory_files"] == 0
    with server.client(token) as client:  # a capture is a turn or a note, never both or neither
        for body in ({}, {"text": "x", "messages": [{"role": "user", "content": "x"}]}):
            assert client.post("/api/v1/capture", json=body).status_code == 422
    assert not folder.parent.exists()  # nothing to write: no folder made
    with server.client(token) as client:
        added = client.post("/api/v1/memories", json={"text": "Egret builds with meson.", "project": name})
    assert added.status_code == 200, added.text
    assert session_sync()["own_written"] == 1
    assert "Egret builds with meson." in (folder / OWN_FILE).read_text()
    (folder / "project_freeze.md").write_text(PROJECT)
    first = session_sync()
    assert (first["imported"], first["pending"]) == (1, 1), first
    assert approve_all(server, token, name) == 1
    assert session_sync()["unchanged"] == 1  # nothing sent for a file that did not change
    state_dir = Path(server.env.get("XDG_STATE_HOME") or home / ".local" / "state") / "ccmem"
    (folder / "user_role.md").write_text("---\nname: role\n---\nThe user is an SRE.\n")
    with sync_lock(state_dir / "claude-code-import") as mine:
        assert mine
        quiet = server.ccmem(
            "sync", "claude-code", "--cwd", str(repo), "--quiet", "--url", server.base_url, "--token", token
        )
        assert quiet.stdout == ""  # another sync holds the lock: nothing done, nothing said
    assert session_sync()["imported"] == 1
    # Nothing left to write: our file goes, and the folder the sync made with it.
    (folder / "project_freeze.md").unlink()
    (folder / "user_role.md").unlink()
    with server.client(token) as client:
        client.request("DELETE", "/api/v1/memories", json={"memory_ids": [added.json()["id"]]})
    session_sync()
    assert not folder.exists()


def test_a_file_saying_what_the_user_stored_already_never_costs_that_memory(server: MemoryServer) -> None:
    token = server.make_token(f"eve-{uuid.uuid4().hex[:6]}")
    folder, project = claude_folder(server, f"ibis{uuid.uuid4().hex[:4]}")
    text = "Merge freeze for the mobile release\n\nMerge freeze begins 2026-03-05 for the mobile release cut."
    with server.client(token) as client:
        mine = client.post("/api/v1/memories", json={"text": text, "project": project}).json()
    (folder / "project_freeze.md").write_text(PROJECT)
    report = sync(server, token, "--project", project)
    assert (report["imported"], report["already_stored"]) == (0, 1), report
    (folder / "project_freeze.md").unlink()
    assert sync(server, token, "--project", project)["deleted"] == 0
    assert list(memories(server, token, project)) == [mine["id"]]


def test_dry_run_changes_nothing_and_bad_files_are_named(server: MemoryServer, tmp_path: Path) -> None:
    token = server.make_token(f"cy-{uuid.uuid4().hex[:6]}")
    folder, project = claude_folder(server, f"wren{uuid.uuid4().hex[:4]}")
    (folder / "a.md").write_text(PROJECT)
    (folder / "empty.md").write_text("---\nname: x\n---\n\n")
    (folder / "list.md").write_text("---\n- a\n- b\n---\nbody\n")
    (folder / "binary.md").write_bytes(b"\xff\xfe\x00bad")
    report = sync(server, token, "--project", project, "--dry-run")
    assert (report["would_import"], report["dry_run"]) == (1, True)
    assert memories(server, token, project) == {}
    reasons = {Path(bad["file"]).name: bad["reason"] for bad in report["bad_files"]}
    assert reasons == {
        "empty.md": "no memory text",
        "list.md": "frontmatter is not a mapping",
        "binary.md": "not UTF-8 text",
    }


def test_reader_takes_claude_codes_shape(tmp_path: Path) -> None:
    path = tmp_path / "feedback_tests.md"
    path.write_text(FEEDBACK)
    memory = read_memory_file(path)
    assert (memory.name, memory.kind) == ("tests-need-real-db", "feedback")
    assert memory.text().startswith("Integration tests must hit a real database, not mocks\n\n")
    with pytest.raises(BadFile, match="cannot read"):
        read_memory_file(tmp_path / "missing.md")


def test_the_pinned_cli_s_memory_folder_is_the_one_synced(server: MemoryServer, tmp_path: Path) -> None:
    """Where the pinned Claude Code keeps this project's auto-memory (its ``init`` event says),
    what it sends of it (the ``MEMORY.md`` index, not the files), and that a sync finds it there."""
    from .support.fake_anthropic import FakeAnthropic, always_text
    from .support.node_clients import run_claude

    home = tmp_path / "home"
    (home / "project" / ".git").mkdir(parents=True)  # run_claude's working directory
    with FakeAnthropic(always_text("OK.")) as upstream:
        first = run_claude("hello", home=home, upstream_url=upstream.base_url)
        folder = Path(first.event("system", "init")["memory_paths"]["auto"])
        assert folder.parent.parent == home / ".claude" / "projects"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "MEMORY.md").write_text("- [Release freeze](project_freeze.md) — merge freeze dates\n")
        (folder / "project_freeze.md").write_text(PROJECT)
        (folder / OWN_FILE).write_text("---\nname: ccmem-memories\n---\n\n- Deploys go out on Wednesdays.\n")
        run_claude("hello again", home=home, upstream_url=upstream.base_url)
        sent = json.dumps(upstream.message_requests[-1].body)
    # Claude Code puts its index into every request; the memory files are read when needed.
    assert "merge freeze dates" in sent and "Merge freeze begins" not in sent and "Wednesdays" not in sent
    (folder / OWN_FILE).unlink()
    token = server.make_token(f"di-{uuid.uuid4().hex[:6]}")
    report = sync(server, token, "--root", str(home / ".claude" / "projects"))
    assert (report["imported"], report["pending"]) == (1, 1), report
    assert approve_all(server, token, "project") == 1  # through consent, as captures
    [item] = memories(server, token, "project").values()
    assert Path(item["metadata_"]["file"]) == folder / "project_freeze.md"


@pytest.mark.parametrize("route", ["hooks", "plugin"])
def test_session_start_takes_new_auto_memory_in_by_itself(server: MemoryServer, route: str) -> None:
    """Claude Code's SessionStart hook, as `ccmem hooks install` writes it (hook_command.py) and
    as the plugin runs it (memory_hook.sh session-start, with the connected ccmem from
    connection.json): the session's auto-memory file reaches the consent queue with no command
    run by hand, and the hook returns before the sync is done."""
    import os
    import subprocess
    import sys
    import time

    from claude_code_memory.client import claude_settings, connection
    from claude_code_memory.client.claude_automem import session_folder

    from .support.server import ccmem_bin

    token = server.make_token(f"gil-{route}-{uuid.uuid4().hex[:6]}")
    home = Path(server.env["HOME"])
    name = f"plover{uuid.uuid4().hex[:4]}"
    repo = home / "code" / name
    (repo / ".git").mkdir(parents=True)
    folder = session_folder(home / ".claude" / "projects", str(repo))
    folder.mkdir(parents=True)
    (folder / "project_freeze.md").write_text(PROJECT)
    body = json.dumps(
        {"hook_event_name": "SessionStart", "session_id": "s", "cwd": str(repo), "source": "startup"}
    )
    env = {key: value for key, value in server.env.items() if key != "CCMEM_TOKEN"}
    if route == "hooks":
        command = [sys.executable, "-I", "-S", str(claude_settings.script_path())]
        command += [server.base_url + claude_settings.HOOK_PATH, "4"]
        env["CCMEM_TOKEN"] = token
    else:
        connection.save(
            connection.Connection(
                url=server.base_url, user="gil", token_file="", sync=[str(ccmem_bin()), "sync", "claude-code"]
            ),
            env,
        )
        script = Path(__file__).resolve().parents[1] / "plugin" / "scripts" / "memory_hook.sh"
        command = ["/bin/sh", str(script), "session-start"]
        env |= {"CLAUDE_PLUGIN_OPTION_SERVER_URL": server.base_url, "CLAUDE_PLUGIN_OPTION_TOKEN": token}
        env["CLAUDE_PROJECT_DIR"] = str(repo)
        env["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
    done = subprocess.run(command, input=body.encode(), env=env, cwd=repo, capture_output=True, timeout=30)
    assert done.returncode == 0 and done.stderr == b"", done
    deadline = time.monotonic() + 90
    with server.client(token) as client:
        while time.monotonic() < deadline:
            items = client.get("/api/v1/consent/pending", params={"project": name}).json()["items"]
            if items:
                break
            time.sleep(0.5)
    assert [item["content"] for item in items] == [
        "Merge freeze for the mobile release\n\nMerge freeze begins 2026-03-05 for the mobile release cut."
    ], server.log()
