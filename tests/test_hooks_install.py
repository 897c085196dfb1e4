"""``ccmem hooks install|uninstall|status`` on a temporary HOME and project: idempotent, other
tools' hooks and keys kept exactly, the token never written, a backup before each change; and
the SessionStart command script answers nothing, fast, when no server listens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from claude_code_memory.cli import app
from claude_code_memory.client import claude_settings as cs
from claude_code_memory.errors import BadInput
from tests.support.server import MemoryServer

OTHER_TOOLS = {
    "model": "claude-sonnet-4-5",
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PostToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier --write"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 3}]}],
    },
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CCMEM_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def ccmem(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("where", [".claude/settings.json", "project/.claude/settings.local.json"])
def test_install_refuses_while_the_plugin_is_enabled_and_status_names_it(home: Path, where: str) -> None:
    # The plugin carries the same hooks (docs/plugin.md): both would answer every prompt.
    enabling = home / where
    enabling.parent.mkdir(parents=True)
    enabling.write_text(json.dumps({"enabledPlugins": {"ccmem@claude-code-memory": True}}))
    before = enabling.read_bytes()
    result = CliRunner().invoke(app, ["hooks", "install", "--project-dir", str(home / "project")])
    # CliRunner runs the app, not main(): the error is the exception main() prints as one line.
    assert isinstance(result.exception, BadInput) and "ccmem@claude-code-memory" in str(result.exception)
    assert enabling.read_bytes() == before
    assert not (home / ".claude" / "settings.json").exists() or "hooks" not in json.loads(
        (home / ".claude" / "settings.json").read_text()
    )
    status = ccmem(
        "hooks", "status", "--project-dir", str(home / "project"), "--url", "http://127.0.0.1:9", "--json"
    )
    assert json.loads(status)["plugin_enabled_in"] == [str(enabling)]


def test_install_is_idempotent_and_uninstall_restores_the_file_exactly(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    original = json.dumps(OTHER_TOOLS, indent=2)
    path.write_text(original)

    ccmem("hooks", "install", "--url", "http://127.0.0.1:9999")
    first = path.read_text()
    document = json.loads(first)
    assert set(cs.installed(document)) == {"SessionStart", "UserPromptSubmit", "Stop"}
    assert document["model"] == OTHER_TOOLS["model"] and document["permissions"] == OTHER_TOOLS["permissions"]
    assert document["hooks"]["PostToolUse"] == OTHER_TOOLS["hooks"]["PostToolUse"]
    assert document["hooks"]["Stop"][0] == OTHER_TOOLS["hooks"]["Stop"][0]  # theirs first, kept
    prompt = cs.installed(document)["UserPromptSubmit"]
    assert prompt["headers"] == {"Authorization": "Bearer $CCMEM_TOKEN"} and prompt["allowedEnvVars"] == [
        "CCMEM_TOKEN"
    ]
    assert cs.installed(document)["SessionStart"]["type"] == "command"
    backups = list(path.parent.glob("settings.json.ccmem-*.bak"))
    assert [b.read_text() for b in backups] == [original]

    assert "already installed" in ccmem("hooks", "install", "--url", "http://127.0.0.1:9999")
    assert path.read_text() == first and len(list(path.parent.glob("*.bak"))) == 1

    ccmem("hooks", "uninstall")
    assert path.read_text() == original
    assert "no hooks of ours" in ccmem("hooks", "uninstall")


def test_project_and_local_scopes_and_a_new_file(home: Path) -> None:
    project = home / "proj"
    project.mkdir()
    ccmem(
        "hooks", "install", "--scope", "local", "--project-dir", str(project), "--events", "UserPromptSubmit"
    )
    local = project / ".claude" / "settings.local.json"
    assert set(cs.installed(json.loads(local.read_text()))) == {"UserPromptSubmit"}
    assert "CCMEM_TOKEN" in local.read_text() and "Bearer $CCMEM_TOKEN" in local.read_text()
    ccmem(
        "hooks",
        "install",
        "--scope",
        "project",
        "--project-dir",
        str(project),
        "--events",
        "Stop,SubagentStop,SessionEnd",
    )
    shared = json.loads((project / ".claude" / "settings.json").read_text())
    assert set(cs.installed(shared)) == {"Stop", "SubagentStop", "SessionEnd"}
    assert shared["hooks"]["SubagentStop"][0]["hooks"][0]["type"] == "http"
    ccmem("hooks", "uninstall", "--scope", "local", "--project-dir", str(project))
    assert json.loads(local.read_text()) == {}


def test_unknown_events_and_broken_files_are_refused(home: Path) -> None:
    result = CliRunner().invoke(app, ["hooks", "install", "--events", "Nope"])
    assert result.exit_code != 0
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{not json")
    result = CliRunner().invoke(app, ["hooks", "install"])
    assert result.exit_code != 0 and path.read_text() == "{not json"


def test_tab_indented_files_keep_their_indentation() -> None:
    text = '{\n\t"a": 1\n}'
    assert cs.dump(json.loads(text), text) == text


@pytest.mark.integration
def test_the_command_script_tells_and_is_quick_without_a_server(tmp_path: Path) -> None:
    """Nothing listens and nothing says how to start it: one line for the user, at once (the
    start on demand is tests/test_hook_autostart.py)."""
    script = cs.script_path()
    url = "http://127.0.0.1:9" + cs.HOOK_PATH  # the discard port: nothing listens
    completed = subprocess.run(
        [sys.executable, "-I", "-S", str(script), url, "2"],
        input=b'{"hook_event_name": "SessionStart", "session_id": "s1"}',
        env={"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        capture_output=True,
        timeout=10,
        check=False,
    )
    assert completed.returncode == 0 and completed.stderr == b"", completed.stderr
    answer = json.loads(completed.stdout)
    assert "does not answer; start it with `ccmem up`" in answer["systemMessage"], answer


def test_status_names_the_files_and_whether_the_server_takes_the_token(
    server: MemoryServer, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ccmem("hooks", "install", "--url", server.base_url)
    monkeypatch.setenv("CCMEM_TOKEN", server.make_token("dora"))
    report = json.loads(ccmem("hooks", "status", "--url", server.base_url, "--json"))
    assert report["files"]["user"]["events"] == ["SessionStart", "Stop", "UserPromptSubmit"]
    assert report["endpoint"] == "answers" and report["token_set"] is True
    monkeypatch.setenv("CCMEM_TOKEN", "wrong")
    report = json.loads(ccmem("hooks", "status", "--url", server.base_url, "--json"))
    assert report["endpoint"].startswith("refuses")
