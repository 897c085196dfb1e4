"""End to end: the day after, with the pinned Claude Code in a throwaway HOME.

The user's stack (``ccmem stack up`` with the per-user config, data and state directories:
tests/support/user_stack.py), Claude Code connected by the hooks route (``ccmem hooks install
--token-file``, ``connection.json`` saying how the stack starts), a fact stored; then every
process of the stack killed with SIGKILL, as a reboot leaves it. A new ``claude -p`` recalls the
fact anyway: its SessionStart hook starts the stack and the fact reaches the upstream request,
with no hook error in the run and one supervisor and one api left. With the start on demand
turned off (``CCMEM_AUTOSTART=0`` in Claude Code's environment) and the stack killed again, the
run's own terminal output (``claude -p`` in text mode) says memory is off and names the command
that turns it on, and nothing is started.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_anthropic import FakeAnthropic, always_text
from tests.support.node_clients import claude_bin, claude_env, run_claude
from tests.support.server import add_memory, ccmem_bin
from tests.support.user_stack import UserStack

REPLY = "Noted."
FACT = "The osprey release ships with the tern-lattice packager."


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_after_a_kill_the_next_session_recalls_and_with_the_start_off_it_says_so(tmp_path: Path) -> None:
    user = UserStack.make(tmp_path / "home")
    project = user.home / "project"
    (project / ".git").mkdir(parents=True)
    try:
        user.up()
        token = user.token("ada")
        token_file = user.state_dir.parent / "claude-code.token"
        token_file.write_text(token + "\n", encoding="utf-8")
        os.chmod(token_file, 0o600)
        installed = subprocess.run(
            [str(ccmem_bin()), "hooks", "install", "--token-file", str(token_file), "--url", user.base_url],
            env=user.env,
            cwd=user.home,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert installed.returncode == 0, installed.stdout + installed.stderr
        user.connect(token_file)
        add_memory(user, token, FACT, project="project")  # type: ignore[arg-type]

        killed = user.kill9()
        assert killed and not user.answers()
        with FakeAnthropic(always_text(REPLY)) as upstream:
            prompt = "Which packager does the osprey release ship with?"
            run = run_claude(
                prompt, home=user.home, upstream_url=upstream.base_url, env=user.env, timeout=180
            )
            assert run.event("result").get("result") == REPLY, run.describe()
            bodies = [json.dumps(request.body) for request in upstream.message_requests]
            assert any(FACT in body for body in bodies), run.describe()
        errors = [
            event
            for event in run.events
            if event.get("subtype") == "hook_response" and event.get("outcome") != "success"
        ]
        assert not errors, errors
        assert "memory is off" not in run.stdout + run.stderr
        assert len(user.supervisors()) == 1 and len(user.apis()) == 1, user.processes()

        # The start on demand off: nothing starts, and the terminal output says so and how.
        user.kill9()
        with FakeAnthropic(always_text(REPLY)) as upstream:
            done = subprocess.run(
                [str(claude_bin()), "-p", "What do I ship the osprey release with?"],
                env=claude_env(user.home, upstream.base_url) | user.env | {"CCMEM_AUTOSTART": "0"},
                cwd=project,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
        terminal = done.stdout + done.stderr
        assert done.returncode == 0 and REPLY in done.stdout, terminal
        told = [line for line in terminal.splitlines() if "memory is off" in line]
        assert len(told) == 1, terminal  # once a session, though three hooks failed
        assert "`ccmem up`" in told[0] and user.base_url in told[0], told
        assert not user.processes() and not user.answers()
    finally:
        user.stop()
