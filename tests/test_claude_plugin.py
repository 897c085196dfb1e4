"""The plugin's pieces without Claude Code: its manifests agree with each other and with ``ccmem
hooks install``, its hook script stands aside for settings hooks, and a settings snapshot puts a
file back byte for byte after the changes the pinned Claude Code makes (docs/plugin.md).

The end-to-end test with the real CLI is tests/test_e2e_plugin.py.
"""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from claude_code_memory.client import claude_plugin as cp
from claude_code_memory.client import claude_settings as cs

REPO_ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIR = REPO_ROOT / "plugin"


def load_hook_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_hook", PLUGIN_DIR / "scripts" / "memory_hook.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


memory_hook = load_hook_script()


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# -- the manifests -----------------------------------------------------------------------------
def test_the_marketplace_lists_the_plugin_folder_under_the_plugin_s_own_name() -> None:
    marketplace = read_json(REPO_ROOT / ".claude-plugin" / "marketplace.json")
    manifest = read_json(PLUGIN_DIR / ".claude-plugin" / "plugin.json")
    assert marketplace["name"] == cp.MARKETPLACE and manifest["name"] == cp.PLUGIN
    [entry] = marketplace["plugins"]
    assert entry["name"] == cp.PLUGIN and (REPO_ROOT / entry["source"]).resolve() == PLUGIN_DIR


def test_the_plugin_s_version_is_the_package_s() -> None:
    # Claude Code caches an installed plugin by version: a release bumps both together.
    import tomllib

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert read_json(PLUGIN_DIR / ".claude-plugin" / "plugin.json")["version"] == project["version"]


def test_the_token_is_a_sensitive_option_and_every_option_the_mcp_server_names_exists() -> None:
    options = read_json(PLUGIN_DIR / ".claude-plugin" / "plugin.json")["userConfig"]
    assert options["token"]["sensitive"] is True and options["token"]["required"] is True
    assert not any(option.get("sensitive") for key, option in options.items() if key != "token")
    server = read_json(PLUGIN_DIR / ".mcp.json")["mcpServers"]["memory"]
    assert server["type"] == "http"
    named = {part.split("}", 1)[0] for part in json.dumps(server).split("${user_config.")[1:]}
    assert named == {"server_url", "user_id", "token"} <= set(options)


def test_the_hooks_are_exec_form_command_hooks_for_the_events_ccmem_hooks_install_uses() -> None:
    hooks = read_json(PLUGIN_DIR / "hooks" / "hooks.json")["hooks"]
    assert tuple(hooks) == cs.DEFAULT_EVENTS
    for event, groups in hooks.items():
        [group] = groups
        [hook] = group["hooks"]
        # Exec form, and no option on the command line: the script reads them from its environment.
        assert hook["type"] == "command" and hook["command"] == "sh" and "user_config" not in json.dumps(hook)
        # SessionStart also starts the auto-memory sync (docs/import.md).
        extra = ["session-start"] if event == "SessionStart" else []
        assert hook["args"] == ["${CLAUDE_PLUGIN_ROOT}/scripts/memory_hook.sh", *extra]
        assert hook["timeout"] > memory_hook.TIMEOUT
    script = (PLUGIN_DIR / "scripts" / "memory_hook.sh").read_text(encoding="utf-8")
    assert f"hook_path={cs.HOOK_PATH}\n" in script and f"-m {int(memory_hook.TIMEOUT)} " in script
    assert memory_hook.HOOK_PATH == cs.HOOK_PATH


# -- the hook script ---------------------------------------------------------------------------
def other_tools_hooks() -> list[dict[str, Any]]:
    return [
        {"type": "command", "command": "echo hi"},
        {"type": "http", "url": "http://127.0.0.1:9000/other/hook"},
        {"type": "command", "command": "python3 /x/hook_command.py http://elsewhere/api/v2/other"},
        "not a hook",
    ]


def test_the_script_knows_a_settings_hook_exactly_as_ccmem_hooks_install_does() -> None:
    ours = [cs.hook_entry(event, "http://127.0.0.1:8765") for event in cs.ALL_EVENTS]
    for hook in ours + other_tools_hooks():
        assert memory_hook.is_settings_hook(hook) == cs.is_ours(hook), hook


def write_settings(path: Path, events: tuple[str, ...]) -> None:
    entries = {event: cs.hook_entry(event, "http://127.0.0.1:8765") for event in events}
    document = {"hooks": {"Stop": [{"hooks": other_tools_hooks()[:2]}]}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cs.with_hooks(document, entries)), encoding="utf-8")


@pytest.mark.parametrize(
    "where", [".claude/settings.json", "project/.claude/settings.json", "project/.claude/settings.local.json"]
)
def test_the_script_finds_settings_hooks_in_user_project_and_local_settings(
    tmp_path: Path, where: str
) -> None:
    environ = {"HOME": str(tmp_path), "CLAUDE_PROJECT_DIR": str(tmp_path / "project")}
    assert memory_hook.settings_hooks(environ, str(tmp_path)) == {}
    write_settings(tmp_path / where, ("UserPromptSubmit", "Stop"))
    assert memory_hook.settings_hooks(environ, str(tmp_path)) == {
        str(tmp_path / where): ["Stop", "UserPromptSubmit"]
    }


def test_only_other_tools_hooks_or_a_broken_file_do_not_make_it_stand_aside(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path)}
    write_settings(tmp_path / ".claude" / "settings.json", ())
    (tmp_path / "project" / ".claude").mkdir(parents=True)
    (tmp_path / "project" / ".claude" / "settings.json").write_text("{not json", encoding="utf-8")
    assert memory_hook.settings_hooks(environ, str(tmp_path / "project")) == {}


def test_the_hook_stands_aside_for_settings_hooks_and_calls_the_server_otherwise(tmp_path: Path) -> None:
    # Port 9 on loopback: nothing listens, so a call fails at once and shows it was made.
    environ = {
        "HOME": str(tmp_path),
        "CLAUDE_PLUGIN_OPTION_SERVER_URL": "http://127.0.0.1:9",
        "CLAUDE_PLUGIN_OPTION_TOKEN": "t",
    }
    body = json.dumps({"hook_event_name": "UserPromptSubmit", "cwd": str(tmp_path), "prompt": "hi"}).encode()
    assert "does not answer" in memory_hook.hook(environ, body)["systemMessage"]
    write_settings(tmp_path / ".claude" / "settings.json", cs.DEFAULT_EVENTS)
    assert memory_hook.hook(environ, body) is None

    class Stdin:
        buffer = io.BytesIO(body)

    # As Claude Code runs it: whatever happens, exit 0; nothing printed when standing aside.
    stdout = io.StringIO()
    assert memory_hook.main(["memory_hook.py", "hook"], environ, Stdin, stdout) == 0
    assert stdout.getvalue() == ""


def test_without_a_server_url_option_the_script_uses_the_manifest_s_default() -> None:
    default = read_json(PLUGIN_DIR / ".claude-plugin" / "plugin.json")["userConfig"]["server_url"]["default"]
    assert memory_hook.server_url({}) == default
    assert memory_hook.server_url({"CLAUDE_PLUGIN_OPTION_SERVER_URL": "http://h:1/"}) == "http://h:1"


# -- Claude Code's state -----------------------------------------------------------------------
def test_enabled_in_names_the_plugin_from_any_marketplace_when_it_is_on() -> None:
    assert cp.enabled_in({"enabledPlugins": {"ccmem@claude-code-memory": True}})
    assert cp.enabled_in({"enabledPlugins": {"ccmem@a-fork": True}})
    assert not cp.enabled_in({"enabledPlugins": {"ccmem@claude-code-memory": False}})
    assert not cp.enabled_in({"enabledPlugins": {"ccmem-other@x": True}})
    assert not cp.enabled_in({"enabledPlugins": []}) and not cp.enabled_in({})


USER_TEXT = '{\n    "model": "opus",\n    "env": {"EDITOR": "vi"}\n}\n'


def claude_code_installs_and_uninstalls(settings: Path, credentials: Path) -> None:
    """What the pinned CLI did to these files (docs/plugin.md): re-indented, keys reordered,
    the plugin keys left as empty objects, an empty credentials file left behind."""
    document = json.loads(settings.read_text(encoding="utf-8")) if settings.exists() else {}
    document = dict(sorted(document.items())) | {"enabledPlugins": {}, "extraKnownMarketplaces": {}}
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(document, indent=2), encoding="utf-8")
    credentials.write_text("{}", encoding="utf-8")


def test_a_snapshot_puts_the_settings_back_byte_for_byte(tmp_path: Path) -> None:
    settings, credentials = tmp_path / "settings.json", tmp_path / ".credentials.json"
    settings.write_text(USER_TEXT, encoding="utf-8")
    cp.Snapshot.take(settings, credentials).save()
    claude_code_installs_and_uninstalls(settings, credentials)
    snapshot = cp.Snapshot.load(settings)
    assert snapshot is not None and snapshot.restore() is True
    assert settings.read_text(encoding="utf-8") == USER_TEXT
    assert not credentials.exists() and cp.Snapshot.load(settings) is None


def test_a_settings_file_that_did_not_exist_goes_again(tmp_path: Path) -> None:
    settings, credentials = tmp_path / "settings.json", tmp_path / ".credentials.json"
    credentials.write_text('{"claudeAiOauth": {}}', encoding="utf-8")
    cp.Snapshot.take(settings, credentials).save()
    claude_code_installs_and_uninstalls(settings, credentials)
    credentials.write_text('{"claudeAiOauth": {}, "pluginSecrets": {}}', encoding="utf-8")
    assert cp.Snapshot(**json.loads(cp.Snapshot.file_for(settings).read_text())).restore() is True
    assert not settings.exists()
    assert credentials.exists()  # it was there before: the user's, left alone


def test_the_user_s_own_changes_since_the_install_are_kept(tmp_path: Path) -> None:
    settings, credentials = tmp_path / "settings.json", tmp_path / ".credentials.json"
    settings.write_text(USER_TEXT, encoding="utf-8")
    cp.Snapshot.take(settings, credentials).save()
    claude_code_installs_and_uninstalls(settings, credentials)
    changed = json.loads(settings.read_text(encoding="utf-8")) | {"theme": "dark"}
    settings.write_text(json.dumps(changed), encoding="utf-8")
    snapshot = cp.Snapshot.load(settings)
    assert snapshot is not None and snapshot.restore() is False
    text = settings.read_text(encoding="utf-8")
    assert json.loads(text) == {"env": {"EDITOR": "vi"}, "model": "opus", "theme": "dark"}
    assert '\n    "model"' in text  # the file's own indentation
