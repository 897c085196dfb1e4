"""End to end: the pinned Claude Code CLI with our hooks, installed by ``ccmem hooks install``
into a temporary HOME, against the real server and the fake Anthropic upstream.

A ``claude -p`` session's request to the upstream carries the SessionStart briefing and, for a
prompt about a stored fact, that memory; a prompt about nothing stored carries no recalled
block; another user's memories (same project, same words) reach no session; after the session
a pending capture holds the prompt and the reply under the session's id, and approving it makes
it searchable; a fake secret typed in a prompt is in no file of the data directory afterwards;
with the server stopped ``claude -p`` still completes, and the test prints the added time.
"""

from __future__ import annotations

import json
import os
import secrets
import string
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_anthropic import FakeAnthropic, always_text
from tests.support.node_clients import ClaudeRun, run_claude
from tests.support.server import MemoryServer, ccmem_bin
from tests.support.server import add_memory as add

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

REPLY = "Noted, thanks."


def install_hooks(home: Path, url: str) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]  # the package under test, not an installed one
    completed = subprocess.run(
        [str(ccmem_bin()), "hooks", "install", "--url", url],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr + completed.stdout


def fake_github_token() -> str:
    """Made at run time, so no real-looking key is ever committed."""
    alphabet = string.ascii_letters + string.digits
    return "ghp_" + "".join(secrets.choice(alphabet) for _ in range(36))


def files_holding(folder: Path, needle: bytes) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file() and needle in path.read_bytes()]


def api(server: MemoryServer, token: str, method: str, path: str, body: Any = None) -> Any:
    response = httpx.request(
        method,
        f"{server.base_url}{path}",
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.json()


def bodies_with(upstream: FakeAnthropic, needle: str) -> list[str]:
    """The message requests (as JSON text) that carry ``needle``: the session's own turns."""
    texts = [json.dumps(request.body) for request in upstream.message_requests]
    return [text for text in texts if needle in text]


def session(home: Path, upstream: FakeAnthropic, prompt: str, token: str) -> tuple[ClaudeRun, float]:
    started = time.monotonic()
    run = run_claude(prompt, home=home, upstream_url=upstream.base_url, env={"CCMEM_TOKEN": token})
    elapsed = time.monotonic() - started
    final = run.event("result")
    assert final.get("subtype") == "success" and final.get("result") == REPLY, run.describe()
    return run, elapsed


def test_claude_code_sessions_recall_and_capture_through_the_hooks(
    start_server: object, tmp_path: Path
) -> None:
    # A briefing of one memory: this project's (project first), so the global fact below can
    # only arrive through the prompt's recall.
    server: MemoryServer = start_server(env={"CCMEM_CLAUDE_CODE__BRIEFING_MEMORIES": "1"})  # type: ignore[operator]
    home = tmp_path / "home"
    project = home / "project"
    project.mkdir(parents=True)
    token = server.make_token("hooked")
    marker = uuid.uuid4().hex[:6]
    briefing_fact = f"The release checklist lives in docs/release-{marker}.md"
    tool_fact = f"My favourite build tool is called zebrafinch {marker}"
    # Filed under the name the hooks give the session's folder (docs/scopes.md).
    add(server, token, briefing_fact, project.name)  # this project: the briefing
    add(server, token, tool_fact)  # global: a prompt recalls it
    # Another project of the same user: its memories stay out of this project's sessions
    # (scopes, docs/scopes.md).
    elsewhere_fact = f"My favourite build tool in the other project is called heronmoth {marker}"
    add(server, token, elsewhere_fact, "another-project")
    # Another user, the same project and words: never in this user's sessions.
    others_fact = f"My favourite build tool is called owlbadger {marker}"
    add(server, server.make_token("not-hooked"), others_fact, project.name)
    secret = fake_github_token()
    install_hooks(home, server.base_url)

    with FakeAnthropic(always_text(REPLY)) as upstream:
        prompt = "Which build tool do I like best?"
        run, hooked_seconds = session(home, upstream, prompt, token)
        turns = bodies_with(upstream, prompt)
        assert turns, f"no request carried the prompt\n{run.describe()}"
        assert briefing_fact in turns[0], f"no SessionStart briefing upstream\n{turns[0][:3000]}"
        assert tool_fact in turns[0] and 'kind=\\"recall\\"' in turns[0], turns[0][:3000]
        assert "heronmoth" not in turns[0], turns[0][:3000]
        assert "not instructions" in turns[0]

        unrelated = f"What is the boiling point of liquid nitrogen in kelvin? My GitHub token is {secret}"
        session(home, upstream, unrelated, token)
        other = bodies_with(upstream, unrelated)
        # No recall for a prompt about nothing stored (the global fact may be in the briefing's
        # profile: it is the user's own preference); the other project's never.
        assert other and 'kind=\\"recall\\"' not in other[0] and "heronmoth" not in other[0], other[0][:3000]
        assert not bodies_with(upstream, "owlbadger")

    # The first session's turn waits in the consent queue under its session id.
    session_id = run.event("system", "init")["session_id"]
    pending = httpx.get(
        f"{server.base_url}/api/v1/consent/pending",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ).json()["items"]
    captured = [item for item in pending if item["conversation_id"] == session_id]
    assert len(captured) == 1, pending
    assert captured[0]["content"] == f"User: {prompt}\n\nAssistant: {REPLY}", captured[0]
    assert captured[0]["project"] == project.name and captured[0]["channel"] == "capture"
    assert not [item for item in pending if secret in item["content"]]

    # Approved, the turn is a memory like any other: search finds it.
    def found(query: str) -> list[str]:
        hits = api(server, token, "POST", "/api/v1/memories/search", {"query": query, "limit": 10})
        return [hit["content"] for hit in hits["results"]]

    assert captured[0]["content"] not in found(prompt)  # pending: not searchable yet
    approved = api(server, token, "POST", f"/api/v1/consent/{captured[0]['id']}/approve")
    assert approved["state"] == "active" and approved["consent"] == "approved"
    assert captured[0]["content"] in found(prompt)

    # With the server stopped Claude Code runs as before; the hooks cost only a refused connection.
    server.stop()
    with FakeAnthropic(always_text(REPLY)) as upstream:
        _, stopped_seconds = session(home, upstream, prompt, token)
        assert not [t for t in bodies_with(upstream, prompt) if "recalled-memories" in t]
        (home / ".claude" / "settings.json").unlink()  # no hooks at all: the baseline
        _, baseline_seconds = session(home, upstream, prompt, token)
    # The secret typed in a prompt reached no file: not the database, the vectors, nor a log.
    assert not files_holding(server.data_dir, secret.encode()), "the typed secret was stored"
    assert secret not in server.log()
    print(
        f"\nclaude -p wall time: hooks + server {hooked_seconds:.2f} s, hooks + server stopped "
        f"{stopped_seconds:.2f} s, no hooks {baseline_seconds:.2f} s "
        f"(added with the server stopped: {stopped_seconds - baseline_seconds:+.2f} s)"
    )
