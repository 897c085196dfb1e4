"""Transcripts written by the real Claude Code CLI (against the fake upstream) imported:
a secret redacted, tool output left out, the session and project kept, a second run empty."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest

from .support.fake_anthropic import FakeAnthropic, ToolThenAnswer
from .support.node_clients import run_claude
from .support.server import MemoryServer

SECRET = "ghp_" + "Z7" * 18
FILE_TEXT = "ospreyfeather-contents-of-the-file"

pytestmark = pytest.mark.e2e


def test_real_transcript_imported(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    project = home / "project"
    project.mkdir()
    (project / "notes.txt").write_text(FILE_TEXT + "\n")
    responder = ToolThenAnswer(
        "Read", {"file_path": str(project / "notes.txt")}, "The notes name the heron release."
    )
    with FakeAnthropic(responder) as upstream:
        run = run_claude(
            f"Read notes.txt; my token is {SECRET}",
            home=home,
            upstream_url=upstream.base_url,
            allowed_tools=["Read"],
        )
    assert run.returncode == 0, run.describe()
    written = list((home / ".claude" / "projects").glob("*/*.jsonl"))
    assert written, "Claude Code wrote no transcript"
    assert FILE_TEXT in "".join(path.read_text() for path in written)  # the tool result is there

    with MemoryServer(tmp_path / "server") as server:
        token = server.make_token(f"eve-{uuid.uuid4().hex[:6]}")
        command = [
            *("import", "claude-code", "--root", str(home / ".claude" / "projects")),
            *("--state-dir", str(tmp_path / "state"), "--json"),
            *("--url", server.base_url, "--token", token),
        ]
        first = json.loads(server.ccmem(*command, timeout=180).stdout)
        assert (first["imported"], first["pending"]) == (1, 1), first
        answer = httpx.get(
            f"{server.base_url}/api/v1/consent/pending",
            params={"project": project.name},  # a capture is filed under its folder's name
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        ).json()
        assert answer["total"] == 1, answer
        item = answer["items"][0]
        text = json.dumps(item)
        assert "Read notes.txt" in text and "heron release" in text
        assert SECRET not in text and FILE_TEXT not in text and "system-reminder" not in text
        second = json.loads(server.ccmem(*command, timeout=180).stdout)
        assert second["imported"] == 0
