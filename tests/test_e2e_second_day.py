"""End to end from the wheel: the day after, as a user lives it, with the pinned Claude Code.

The wheel installed with pip into a fresh virtualenv, a throwaway HOME and a shell with no
``CCMEM_*`` variable: ``ccmem up``, ``ccmem connect claude-code`` (the plugin route: the pinned
CLI has plugins), a fact stored with ``ccmem add``. Then every process of the stack killed with
SIGKILL (the supervisor and its services, by the PIDs in the state directory's run files), as a
reboot leaves it, and a new ``claude -p`` against the fake Anthropic upstream: the plugin's
SessionStart hook starts the stack, the fact reaches the upstream request, no hook error shows,
and Claude Code's auto-memory file of the project written meanwhile reaches the consent queue
(the sync SessionStart starts, in the session that started the server too).

In that HOME, with the stack the hook started: ``ccmem consent list``, ``ccmem import
claude-code`` and ``ccmem search`` act as the connected user with no flag; ``ccmem token create``
in an empty directory leaves it empty and prints a token the server takes; ``ccmem status`` and
``ccmem whoami`` in a directory with a foreign ``config.yaml`` and ``data/`` talk to the user's
server and change nothing there. What connect, the CLI, the hooks and the hook-started stack
wrote is private (nothing under the data and state directories others could read, so the server
never has to narrow and warn).

Last, the start on demand off (``CCMEM_AUTOSTART=0`` in Claude Code's environment) and the stack
killed again: ``claude -p``'s own terminal output says, once, that memory is off and names
``ccmem up``; nothing is started.

It prints how long the first session after the kill took from ``claude`` started to the first
request carrying the recalled fact (a measure, not a timed assert).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_anthropic import FakeAnthropic, Reply
from tests.support.node_clients import NODE_BIN, claude_bin, claude_env
from tests.support.package import Built, Installed, install, new_shell, said, wait_gone
from tests.support.processes import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]

FACT = "The osprey release ships with the tern-lattice packager."
PROMPT = "Which packager does the osprey release ship with?"
REPLY = "Noted."
AUTO_MEMORY = "The kite build runs on the plover runner."


class FirstRecall:
    """The fake upstream's responder: plain text, noting when the fact first came upstream."""

    def __init__(self) -> None:
        self.seen_at: float | None = None
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        if FACT in json.dumps(body):
            with self.lock:
                self.seen_at = self.seen_at or time.monotonic()
        return Reply.text(REPLY)


@pytest.fixture
def user(built: Built, tmp_path: Path) -> Iterator[Installed]:
    where = install(built, tmp_path)
    # The pinned Claude Code on PATH as `claude`, and only ever talking to a dead or fake upstream.
    where.env = new_shell(where.home, where.venv, str(NODE_BIN)) | {
        key: value
        for key, value in claude_env(where.home, "http://127.0.0.1:9").items()
        if key not in ("PATH", "HOME")
    }
    assert not [name for name in where.env if name.startswith("CCMEM_")]
    yield where
    where.stop()


def private(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def kill9(user: Installed) -> list[int]:
    """SIGKILL the supervisor and its services by their run files' PIDs; then wait until nothing
    of the installation runs (a starter or a sync the hooks left ends by itself)."""
    pids = user.stack_pids()
    assert pids, "no PID in the stack's run files"
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    left = wait_gone(user)
    assert not left, left
    return pids


def answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def claude(
    user: Installed, upstream: FakeAnthropic, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """``claude -p PROMPT`` from a project folder, in the user's shell against the fake upstream."""
    project = user.home / "project"
    project.mkdir(exist_ok=True)
    return subprocess.run(
        [str(claude_bin()), "-p", PROMPT, *args],
        env=user.env | {"ANTHROPIC_BASE_URL": upstream.base_url} | env,
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def tree(directory: Path) -> dict[str, bytes | None]:
    return {
        str(path.relative_to(directory)): path.read_bytes() if path.is_file() else None
        for path in sorted(directory.rglob("*"))
    }


def test_the_second_day_from_the_wheel(user: Installed, tmp_path: Path) -> None:
    # `ccmem setup` is the first step of `ccmem up`; run alone first so that the stack's ports
    # are chosen in the user's config.yaml (the machine is shared), not by a variable.
    setup = user.ccmem("setup")
    assert setup.returncode == 0, said(setup)
    api, ui, proxy = free_port(), free_port(), free_port()
    config = user.config.read_text(encoding="utf-8")
    for old, new in (("8765", str(api)), ("port: 8080", f"port: {proxy}"), ("port: 3000", f"port: {ui}")):
        assert old in config
        config = config.replace(old, new)
    user.config.write_text(config, encoding="utf-8")
    url = f"http://127.0.0.1:{api}"

    upped = user.ccmem("up", "--timeout", "240")
    assert upped.returncode == 0, said(upped)
    connected = user.ccmem("connect", "claude-code", timeout=300)
    assert connected.returncode == 0, said(connected)
    assert "by the plugin route" in connected.stdout and "round trip ok" in connected.stdout, said(connected)
    added = user.ccmem("add", FACT)
    assert added.returncode == 0, said(added)
    [fact_id] = re.findall(r"added (\S+)", added.stdout)

    # The reboot: every process of the stack killed; the next session starts it and recalls.
    kill9(user)
    assert not answers(url)
    # Claude Code's auto-memory of that project, written the day before: the session that
    # starts the server takes it in too (SessionStart's sync, through consent).
    project_folder = re.sub(r"[^A-Za-z0-9]", "-", str(user.home / "project"))
    auto_memory = user.home / ".claude" / "projects" / project_folder / "memory"
    auto_memory.mkdir(parents=True)
    (auto_memory / "project_kite.md").write_text(
        f"---\nname: kite\nmetadata:\n  type: project\n---\n{AUTO_MEMORY}\n", encoding="utf-8"
    )
    recall = FirstRecall()
    with FakeAnthropic(recall) as upstream:
        started = time.monotonic()
        first = claude(user, upstream, "--output-format", "stream-json", "--verbose")
        finished = time.monotonic()
        bodies = [json.dumps(request.body) for request in upstream.message_requests]
    events = [json.loads(line) for line in first.stdout.splitlines() if line.startswith("{")]
    described = f"{said(first)}\nautostart.log:\n{_log(user, 'autostart.log')}"
    assert first.returncode == 0, described
    assert [event.get("result") for event in events if event.get("type") == "result"] == [REPLY], described
    assert any(FACT in body for body in bodies), described
    hook_errors = [
        event
        for event in events
        if event.get("subtype") == "hook_response" and event.get("outcome") != "success"
    ]
    assert not hook_errors, hook_errors
    terminal = first.stdout + first.stderr
    assert "memory is off" not in terminal and "hook error" not in terminal.lower(), described
    assert answers(url) and user.stack_pids(), described
    # The hook's `ccmem up` waits for the whole stack (the UI too) and then ends by itself.
    deadline = time.monotonic() + 120
    while _starters(user) and time.monotonic() < deadline:
        time.sleep(0.2)
    up_done = time.monotonic()
    assert not _starters(user), user.processes()
    assert recall.seen_at is not None
    print(
        f"\nsecond day, from the wheel: claude -p started with the server down -> first request "
        f"carrying the recalled fact {recall.seen_at - started:.2f} s; claude -p done in "
        f"{finished - started:.2f} s; the hook's `ccmem up` done (ui too) {up_done - started:.2f} s"
    )

    token_file = user.data / "connect" / "claude-code.token"
    assert _pending_with(url, token_file.read_text().strip(), AUTO_MEMORY), "the auto-memory sync did not run"

    # One identity: the connected user, with no flag and no variable, from any directory.
    listed = user.ccmem("consent", "list", "--json")
    assert listed.returncode == 0, said(listed)
    assert any(PROMPT in item["content"] for item in json.loads(listed.stdout)["items"]), listed.stdout
    imported = user.ccmem("import", "claude-code")
    assert imported.returncode == 0, said(imported)
    read = re.search(r"read (\d+) turns", imported.stdout)
    assert read and int(read[1]) >= 1, said(imported)
    found = user.ccmem("search", "osprey packager", "--json")
    assert found.returncode == 0, said(found)
    assert json.loads(found.stdout)[0]["id"] == fact_id, found.stdout

    empty = tmp_path / "empty"
    empty.mkdir()
    made = user.ccmem("token", "create", "--user", "someone", cwd=empty)
    assert made.returncode == 0, said(made)
    assert list(empty.iterdir()) == []
    token = made.stdout.strip().splitlines()[-1]
    me = httpx.get(f"{url}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert me.status_code == 200 and me.json()["user_id"] == "someone", me.text

    project = tmp_path / "their-project"
    (project / "data").mkdir(parents=True)
    (project / "config.yaml").write_text("database: {unknown: 1}\n", encoding="utf-8")
    (project / "data" / "notes.txt").write_text("theirs\n", encoding="utf-8")
    before = tree(project)
    status = user.ccmem("status", cwd=project)
    assert status.returncode == 0, said(status)
    assert url in status.stdout and "newcomer" in status.stdout and "plugin" in status.stdout, said(status)
    whoami = user.ccmem("whoami", "--json", cwd=project)
    assert whoami.returncode == 0, said(whoami)
    me_said = json.loads(whoami.stdout)
    assert (me_said["user"], me_said["url"], me_said["accepted"]) == ("newcomer", url, True), me_said
    assert tree(project) == before

    # Private, on the package route, after a start by the hook (Claude Code's umask, not a shell's).
    for directory in (user.data, user.data / "connect", user.state, user.state / "logs", user.state / "run"):
        assert private(directory) == 0o700, directory
    for file in (
        user.data / "memory.db",
        user.data / "connect" / "claude-code.token",
        user.home / ".config" / "ccmem" / "connection.json",
        user.home / ".config" / "ccmem" / ".env",
        user.state / "logs" / "api.log",
        user.state / "logs" / "autostart.log",
    ):
        assert private(file) == 0o600, file

    # The start on demand off, the stack killed again: the terminal says so, once, and how.
    kill9(user)
    with FakeAnthropic(FirstRecall()) as upstream:
        off = claude(user, upstream, CCMEM_AUTOSTART="0")
        carried = any(FACT in json.dumps(request.body) for request in upstream.message_requests)
    terminal = off.stdout + off.stderr
    assert off.returncode == 0 and REPLY in off.stdout, said(off)
    told = [line for line in terminal.splitlines() if "memory is off" in line]
    assert len(told) == 1, terminal
    assert "`ccmem up`" in told[0] and url in told[0], told
    assert not carried and not user.processes() and not answers(url)
    markers = user.state / "hooks"
    assert private(markers) == 0o700 and all(private(marker) == 0o600 for marker in markers.iterdir())

    # Whatever the CLI, the hooks and the servers wrote there, from a shell's umask or Claude
    # Code's: nothing another account could read, so the server never had to narrow anything.
    readable = [
        f"{private(path):o} {path}"
        for root in (user.data, user.state)
        for path in [root, *root.rglob("*")]
        if not path.is_symlink() and private(path) & 0o077
    ]
    assert readable == []
    narrowed = [line for line in _log(user, "api.log", 0).splitlines() if "other accounts" in line]
    assert narrowed == []


def _starters(user: Installed) -> list[str]:
    return [line for line in user.processes().values() if " up --config " in line]


def _pending_with(url: str, token: str, needle: str, timeout: float = 60) -> bool:
    """Whether a pending item of the token's user holds ``needle`` (waited for: it comes from
    a sync running in the background)."""
    deadline = time.monotonic() + timeout
    while True:
        pending = httpx.get(
            f"{url}/api/v1/consent/pending", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        assert pending.status_code == 200, pending.text
        if any(needle in item["content"] for item in pending.json()["items"]):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def _log(user: Installed, name: str, tail: int = 3000) -> str:
    try:
        return (user.state / "logs" / name).read_text(encoding="utf-8")[-tail:]
    except OSError as exc:
        return f"({exc})"
