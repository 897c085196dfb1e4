"""Memory that comes back by itself, and never stops without a word: the hooks' scripts against a
user's real stack in a throwaway HOME (tests/support/user_stack.py), run as Claude Code runs them.

With the stack killed by SIGKILL and ``connection.json`` saying how it starts, a settings hook
(``client/hook_command.py``) and the plugin's (``plugin/scripts/memory_hook.sh``) start it and
answer with the recalled fact; five hooks at once, and five ``ccmem stack up`` at once, leave
exactly one supervisor and one api. With the start on demand off (``CCMEM_AUTOSTART=0``) or a
connection without a start command (a remote server), nothing is started and the hook answers
with one line for the user, once a session. The end-to-end run through the pinned Claude Code is
tests/test_e2e_autostart.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_code_memory.client import claude_settings as cs
from claude_code_memory.client import hook_command

from .support.processes import wait_until
from .support.server import add_memory
from .support.user_stack import UserStack

# A real stack for every test but the pure ones at the end (cheap beside it).
pytestmark = [pytest.mark.timeout(600), pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[1]
SHELL_SCRIPT = ROOT / "plugin" / "scripts" / "memory_hook.sh"
FACT = "The heron service is deployed with the gannetfold tool."
AUTO_MEMORY = "The heron canary release goes out at noon."


class Stack:
    """The stack, its user's token (in a 0600 file) and the fact stored for that user."""

    def __init__(self, root: Path) -> None:
        self.user = UserStack.make(root / "home")
        (self.user.home / "heron" / ".git").mkdir(parents=True)  # the project the fact is in
        self.user.up()
        self.token = self.user.token()
        self.token_file = root / "claude-code.token"
        self.token_file.write_text(self.token + "\n", encoding="utf-8")
        os.chmod(self.token_file, 0o600)
        add_memory(self.user, self.token, FACT, project="heron")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    made = Stack(tmp_path_factory.mktemp("autostart"))
    try:
        yield made
    finally:
        made.user.stop()


def prompt(stack: Stack, session: str | None = None, event: str = "UserPromptSubmit") -> dict[str, Any]:
    body: dict[str, Any] = {
        "hook_event_name": event,
        "session_id": session or str(uuid.uuid4()),
        "cwd": str(stack.user.home / "heron"),
        "transcript_path": "/dev/null",
    }
    if event == "UserPromptSubmit":
        body["prompt"] = "Which tool deploys the heron service?"
    return body


def settings_hook(
    stack: Stack, body: dict[str, Any], env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``hook_command.py`` as ``ccmem hooks install --token-file`` writes it for the event."""
    budget = cs.command_timeout(body["hook_event_name"]) - 1
    argv = [sys.executable, "-I", "-S", str(cs.script_path()), stack.user.base_url + cs.HOOK_PATH]
    argv += [str(budget), str(stack.token_file)]
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=stack.user.env | (env or {}),
        cwd=stack.user.home,
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(body).encode())
    process.stdin.close()
    process.stdin = None  # written and closed: communicate() must not flush it
    return process


def plugin_hook(
    stack: Stack, body: dict[str, Any], env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """The plugin's ``memory_hook.sh`` with the plugin's options in its environment."""
    options = {
        "CLAUDE_PLUGIN_OPTION_SERVER_URL": stack.user.base_url,
        "CLAUDE_PLUGIN_OPTION_TOKEN": stack.token,
        "CLAUDE_PROJECT_DIR": str(stack.user.home / "heron"),
    }
    process = subprocess.Popen(
        ["/bin/sh", str(SHELL_SCRIPT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=stack.user.env | options | (env or {}),
        cwd=stack.user.home,
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(body).encode())
    process.stdin.close()
    process.stdin = None  # written and closed: communicate() must not flush it
    return process


def answer_of(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0 and stderr == b"", (process.returncode, stderr)
    return json.loads(stdout) if stdout.strip() else {}


def recalled(answer: dict[str, Any]) -> bool:
    return "gannetfold" in answer.get("hookSpecificOutput", {}).get("additionalContext", "")


def test_a_settings_hook_starts_the_killed_stack_and_recalls(stack: Stack) -> None:
    stack.user.connect(stack.token_file)
    stack.user.kill9()
    folder = re.sub(r"[^A-Za-z0-9]", "-", str(stack.user.home / "heron"))
    auto_memory = stack.user.home / ".claude" / "projects" / folder / "memory"
    auto_memory.mkdir(parents=True)
    (auto_memory / "project_canary.md").write_text(f"---\nname: canary\n---\n{AUTO_MEMORY}\n")
    answer = answer_of(settings_hook(stack, prompt(stack, event="SessionStart")))
    assert recalled(answer), answer
    assert "systemMessage" not in answer  # started, so nothing to tell
    assert len(stack.user.supervisors()) == 1 and len(stack.user.apis()) == 1
    log = stack.user.state_dir / "logs" / "autostart.log"
    assert "a hook starts" in log.read_text() and oct(log.stat().st_mode & 0o777) == "0o600"
    # The session that started the server takes Claude Code's auto-memory in, as every other does.
    with stack.user.client(stack.token) as client:
        wait_until(
            lambda: any(
                AUTO_MEMORY in item["content"]
                for item in client.get("/api/v1/consent/pending").json()["items"]
            ),
            timeout=60,
            what="the auto-memory file in the consent queue",
        )


def test_five_hooks_at_once_start_one_stack(stack: Stack) -> None:
    stack.user.connect(stack.token_file)
    stack.user.kill9()
    # Five sessions opened at once after a reboot. SessionStart: the first event of a session, and
    # the one with the most time (cs.COMMAND_TIMEOUTS); the server briefs a session once.
    hooks = [settings_hook(stack, prompt(stack, event="SessionStart")) for _ in range(3)]
    hooks += [plugin_hook(stack, prompt(stack, event="SessionStart")) for _ in range(2)]
    answers = [answer_of(hook) for hook in hooks]
    assert all(recalled(answer) for answer in answers), [answer.get("systemMessage") for answer in answers]
    # The starters are gone by now (`stack up` waits for health, then exits): what stays is one.
    wait_until(lambda: len(stack.user.processes()) == 2, timeout=60, what="the starters gone")
    assert len(stack.user.supervisors()) == 1 and len(stack.user.apis()) == 1, stack.user.processes()


def test_five_stack_ups_at_once_agree_on_one_supervisor(stack: Stack) -> None:
    stack.user.kill9()
    starters = [
        subprocess.Popen(
            stack.user.start_argv(),
            env=stack.user.env,
            cwd=stack.user.home,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(5)
    ]
    said = [starter.communicate(timeout=300)[0] for starter in starters]
    assert [starter.returncode for starter in starters] == [0] * 5, said
    assert sum("supervisor started" in text for text in said) == 1, said
    assert sum("the stack already runs" in text for text in said) == 4, said
    assert len(stack.user.supervisors()) == 1 and len(stack.user.apis()) == 1, stack.user.processes()
    assert stack.user.answers()


def test_the_plugin_script_starts_the_killed_stack_and_recalls(stack: Stack) -> None:
    stack.user.connect(stack.token_file, route="plugin")
    stack.user.kill9()
    answer = answer_of(plugin_hook(stack, prompt(stack, event="SessionStart")))
    assert recalled(answer), answer
    assert len(stack.user.supervisors()) == 1 and len(stack.user.apis()) == 1
    # The server up again, the next prompt is answered on the fast path, as before.
    assert recalled(answer_of(plugin_hook(stack, prompt(stack))))


@pytest.mark.parametrize("runner", [settings_hook, plugin_hook], ids=["settings", "plugin"])
@pytest.mark.parametrize("how", ["variable", "remote"])
def test_with_the_start_off_the_user_is_told_once_a_session(stack: Stack, runner: Any, how: str) -> None:
    """``CCMEM_AUTOSTART=0`` in Claude Code's environment, or a connection with no start command
    (a remote server's): nothing starts, and one line says memory is off and what fixes it."""
    stack.user.connect(stack.token_file, start=how == "variable")
    env = {"CCMEM_AUTOSTART": "0"} if how == "variable" else {}
    stack.user.kill9()
    session = str(uuid.uuid4())
    first = answer_of(runner(stack, prompt(stack, session, "SessionStart"), env))
    line = first["systemMessage"]
    assert "memory is off" in line and "`ccmem up`" in line and stack.user.base_url in line, line
    assert "\n" not in line
    assert first["hookSpecificOutput"]["additionalContext"].startswith(line)  # the model knows too
    assert answer_of(runner(stack, prompt(stack, session), env)) == {}  # not once a prompt
    assert answer_of(runner(stack, prompt(stack, session, "Stop"), env)) == {}
    other = answer_of(runner(stack, prompt(stack, event="Stop"), env))
    assert other == {"systemMessage": line}  # a new session is told again (Stop: no context)
    assert not stack.user.processes() and not stack.user.answers()


def test_print_mode_puts_the_line_on_claude_code_s_own_stderr(stack: Stack, tmp_path: Path) -> None:
    """``claude -p`` prints no hook message: the hook writes the line to the standard error of
    the process CLAUDE_PID names (here a stand-in whose stderr is a file)."""
    stack.user.connect(stack.token_file, start=False)
    stack.user.kill9()
    terminal = tmp_path / "claude-stderr"
    with terminal.open("w") as stream:
        stand_in = subprocess.Popen(["sleep", "60"], stderr=stream)
    try:
        claude = {"CLAUDE_PID": str(stand_in.pid), "CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}
        answer = answer_of(settings_hook(stack, prompt(stack), claude))
        assert terminal.read_text() == answer["systemMessage"] + "\n"
        # The terminal UI shows systemMessage itself: nothing is written beside it.
        answer = answer_of(settings_hook(stack, prompt(stack), claude | {"CLAUDE_CODE_ENTRYPOINT": "cli"}))
        assert "memory is off" in answer["systemMessage"]
        assert terminal.read_text().count("memory is off") == 1
    finally:
        stand_in.kill()
        stand_in.wait()


def test_a_refused_token_is_told_with_the_command_that_fixes_it(stack: Stack, tmp_path: Path) -> None:
    stack.user.connect(stack.token_file)
    if not stack.user.answers():
        stack.user.up()
    wrong = tmp_path / "wrong.token"
    wrong.write_text("not-a-token\n")
    argv = [
        sys.executable,
        "-I",
        "-S",
        str(cs.script_path()),
        stack.user.base_url + cs.HOOK_PATH,
        "4",
        str(wrong),
    ]
    done = subprocess.run(
        argv, input=json.dumps(prompt(stack)).encode(), env=stack.user.env, capture_output=True, timeout=60
    )
    line = json.loads(done.stdout)["systemMessage"]
    assert "refused this session's token" in line and "`ccmem connect claude-code`" in line, line


@pytest.mark.parametrize("start", [[sys.executable, "-c", "raise SystemExit(3)"], ["/nonexistent/ccmem"]])
def test_a_start_that_fails_is_told_at_once(tmp_path: Path, start: list[str]) -> None:
    """A start command that exits with an error (a taken port, a broken config) or is gone (an
    uninstalled virtualenv): the hook stops waiting and says so, naming the log."""
    from claude_code_memory.client import connection

    from .support.processes import free_port

    url = f"http://127.0.0.1:{free_port()}"
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    saved = connection.Connection(url=url, user="ada", token_file="/nonexistent", start=start)
    connection.save(saved, env)
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(cs.script_path()), url + cs.HOOK_PATH, "14"],
        input=json.dumps({"hook_event_name": "SessionStart", "session_id": "s"}).encode(),
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert time.monotonic() - began < 10  # not the whole 14 s budget
    line = json.loads(done.stdout)["systemMessage"]
    assert f"starting the server at {url} failed" in line and "`ccmem up`" in line, line


# -- the pure parts ----------------------------------------------------------------------------
def test_claude_code_waits_longer_than_the_hook_s_budget() -> None:
    hooks = json.loads((ROOT / "plugin" / "hooks" / "hooks.json").read_text())["hooks"]
    script = _plugin_script()
    for event, groups in hooks.items():
        timeout = groups[0]["hooks"][0]["timeout"]
        assert timeout == cs.command_timeout(event)
        assert script.BUDGETS.get(event, script.DEFAULT_BUDGET) == timeout - 1
        entry = cs.hook_entry(event, "http://127.0.0.1:8765", python="python3", token_file=Path("/t"))
        assert entry["timeout"] == timeout and f" {timeout - 1} " in entry["command"]
        # A request alone still gives up as before: a slow server costs a prompt no more.
        assert hook_command.REQUEST_TIMEOUT == script.TIMEOUT < timeout - 1


def _plugin_script() -> Any:
    import importlib.util

    path = ROOT / "plugin" / "scripts" / "memory_hook.py"
    spec = importlib.util.spec_from_file_location("memory_hook_budget", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_package_loads_the_plugin_s_recovery_script() -> None:
    """hook_command.py finds memory_down.py in the package's copy of the plugin (a wheel has it)."""
    path = Path(cs.script_path()).resolve().parents[1].joinpath(*hook_command.RECOVERY_SCRIPT)
    assert path.read_bytes() == (ROOT / "plugin" / "scripts" / "memory_down.py").read_bytes()
