"""Words that are true: every skill, doc page, UI template and printed command that names an MCP
tool, a ``ccmem`` command or a ``claude mcp add`` line names one that exists where it is used.

What exists is read from the code, never copied: the tool sets from ``mcp/dialects.py`` (the
plugin's skills against the set its ``.mcp.json`` asks for with ``?tools=``), the commands from
the Typer app's tree. The checker itself (tests/support/words.py) is tested by planting a bad
name in a copy of a real page and seeing it caught.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from urllib.parse import parse_qs, urlsplit

import pytest
import typer.main
from typer.testing import CliRunner

from claude_code_memory.cli import app as cli_app
from claude_code_memory.client import connection
from claude_code_memory.client.remote import Remote
from claude_code_memory.errors import Unavailable
from claude_code_memory.mcp import dialects
from claude_code_memory.ui.account import connect_snippets
from claude_code_memory.ui.session import Session
from tests.support import words
from tests.support.processes import free_port
from tests.support.words import CommandTree, Finding

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "plugin"
SKILLS = sorted((PLUGIN / "skills").glob("*/SKILL.md"))
PAGES = [ROOT / "README.md", PLUGIN / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TEMPLATES = sorted((ROOT / "claude_code_memory" / "ui" / "templates").glob("*.html"))
SCRIPTS = [
    ROOT / "install.sh",
    ROOT / "deploy-mem0.sh",
    PLUGIN / ".claude-plugin" / "plugin.json",
    *sorted(path for path in (PLUGIN / "scripts").iterdir() if path.is_file()),
]
SOURCES = sorted((ROOT / "claude_code_memory").rglob("*.py"))

TREE = CommandTree.of_click(typer.main.get_command(cli_app))
EVERY_TOOL = frozenset(name for tools in dialects.TOOLS.values() for name in tools)


def plugin_tool_set() -> tuple[str, frozenset[str]]:
    """The plugin's MCP server as Claude Code names it, and the tools its URL's dialect offers."""
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    servers = json.loads((PLUGIN / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    (server, entry), *others = servers.items()
    assert others == [], "one MCP server in the plugin"
    query = parse_qs(urlsplit(entry["url"]).query)
    dialect = dialects.dialect_of(query.get(dialects.QUERY_PARAMETER, [None])[0])
    return f"plugin_{manifest['name']}_{server}", frozenset(dialects.TOOLS[dialect])


PLUGIN_SERVER, PLUGIN_TOOLS = plugin_tool_set()


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def printed_snippets() -> dict[str, str]:
    """What the UI's Connect page puts in its copy boxes, and what `ccmem mcp-config` prints."""
    snippets = connect_snippets("http://127.0.0.1:8765", "claude-code", Session.new("alice", "ccm_x"))
    shown = {f"ui connect_snippets[{key}]": str(value) for key, value in snippets.items()}
    return shown


def mcp_config_output(tmp_path: Path) -> str:
    home = tmp_path / "home"
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "CCMEM_CONFIG": "",
    }
    result = CliRunner().invoke(
        cli_app,
        ["mcp-config", "--user", "alice", "--token", "ccm_example", "--url", "http://127.0.0.1:8765"],
        env=env,
    )
    assert result.exit_code == 0, result.output
    return result.output


# -- the checker, tried on planted names -----------------------------------------------------------
def test_the_checker_catches_a_planted_tool_command_and_unscoped_mcp_add(tmp_path: Path) -> None:
    skill = SKILLS[0]
    planted = tmp_path / "SKILL.md"
    plant = "\nThen call the `get_context_info` tool of the `memory` MCP server.\n"
    planted.write_text(read(skill) + plant, encoding="utf-8")
    caught = words.skill_tools("planted", read(planted), PLUGIN_TOOLS)
    offered = sorted(PLUGIN_TOOLS)
    assert [f.what for f in caught] == [f"tool 'get_context_info' {words.NOT_THE_PLUGINS} {offered}"]
    assert words.skill_tools("real", read(skill), PLUGIN_TOOLS) == []

    page = read(ROOT / "docs" / "cli.md")
    with_bad = page + "\nRun `ccmem frobnicate --now`, then `ccmem stack restart` and `ccmem hooks redo`.\n"
    caught = words.unknown_commands("p", words.markdown_code(with_bad), TREE)
    assert [f.what.split(": ")[1] for f in caught] == [
        "no command 'frobnicate'",
        "no command 'restart'",
        "no command 'redo'",
    ]
    assert words.unknown_commands("p", words.markdown_code(page), TREE) == []
    # A group that runs alone takes an argument where a name would be; a leaf takes anything.
    assert words.unknown_commands("p", ["ccmem import backup.zip; ccmem search the deploy day"], TREE) == []

    qualified = "the model calls mcp__memory__store_memories and mcp__plugin_ccmem_memory__list_memories"
    assert [f.what for f in words.unknown_tools("p", qualified, EVERY_TOOL, PLUGIN_SERVER, PLUGIN_TOOLS)] == [
        "tool 'store_memories' is in no tool set (mcp/dialects.py)",
        f"tool 'list_memories' {words.NOT_THE_PLUGINS} {sorted(PLUGIN_TOOLS)}",
    ]
    row = "| `claude-code` | `search_memory(query)`, `list_memories` | for Claude Code |"
    assert [f.what for f in words.dialect_rows("p", row, dialects.TOOLS)] == [
        "the claude-code row names 'list_memories', not in that set"
    ]

    fenced = "```\nclaude mcp add --transport http memory \\\n  http://x/mcp?tools=claude-code\n```\n"
    assert len(words.mcp_add_without_scope("p", words.markdown_code(fenced))) == 1
    scoped = fenced.replace("add --transport", "add --scope user --transport")
    assert words.mcp_add_without_scope("p", words.markdown_code(scoped)) == []
    # Prose about the command is not a command.
    assert words.mcp_add_without_scope("p", words.markdown_code("`claude mcp add` keeps the header")) == []


# -- the product's words -----------------------------------------------------------------------------
def test_the_plugins_skills_name_only_tools_the_plugin_connects_to() -> None:
    assert SKILLS, "the plugin has skills"
    assert {"search_memory", "add_memories"} <= PLUGIN_TOOLS
    found = [f for skill in SKILLS for f in words.skill_tools(name(skill), read(skill), PLUGIN_TOOLS)]
    assert found == []


def test_pages_and_templates_name_only_real_tools() -> None:
    found: list[Finding] = []
    for path in [*SKILLS, *PAGES, *TEMPLATES]:
        text = read(path)
        found += words.unknown_tools(name(path), text, EVERY_TOOL, PLUGIN_SERVER, PLUGIN_TOOLS)
        found += words.dialect_rows(name(path), text, dialects.TOOLS)
    assert [str(f) for f in found] == []


def test_every_ccmem_command_named_exists() -> None:
    """Docs, skills, templates, scripts, the UI's snippets and every backticked command in the
    package's own messages and docstrings ("start it with `ccmem up`")."""
    found: list[Finding] = []
    for path in [*SKILLS, *PAGES, *TEMPLATES, *SCRIPTS]:
        found += words.unknown_commands(name(path), words.code_of(path.name, read(path)), TREE)
    for path in SOURCES:
        found += words.unknown_commands(name(path), words.source_code(read(path)), TREE)
    for where, text in printed_snippets().items():
        found += words.unknown_commands(where, [text], TREE)
    assert [str(f) for f in found] == []


def test_every_claude_mcp_add_shown_says_scope_user(tmp_path: Path) -> None:
    found: list[Finding] = []
    for path in [*PAGES, *SKILLS, *TEMPLATES, *SCRIPTS]:
        found += words.mcp_add_without_scope(name(path), words.code_of(path.name, read(path)))
    for path in SOURCES:
        found += words.mcp_add_without_scope(name(path), words.source_code(read(path)))
    for where, text in printed_snippets().items():
        found += words.mcp_add_without_scope(where, [text])
    printed = mcp_config_output(tmp_path)
    assert re.search(r"^claude mcp add ", printed, re.M), printed
    found += words.mcp_add_without_scope("ccmem mcp-config", [printed])
    assert [str(f) for f in found] == []


@pytest.mark.parametrize("path", SKILLS, ids=lambda p: p.parent.name)
def test_a_skill_names_no_server_start_but_ccmem_up(path: Path) -> None:
    """The plugin's users installed the package: `ccmem up` starts what they have."""
    assert "ccmem serve" not in read(path)


# -- "start it with": the command that fits the installation -----------------------------------------
def throwaway_home(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


def load_hook_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_hook", PLUGIN / "scripts" / "memory_hook.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_when_down_names_ccmem_up_the_saved_start_hint_or_that_a_remote_server_is_elsewhere(
    tmp_path: Path,
) -> None:
    environ = throwaway_home(tmp_path)
    hook_script = load_hook_script()
    local = "http://127.0.0.1:8765"

    def both(url: str) -> str:
        """The package's message and the plugin script's (standard library only): one answer."""
        said = connection.when_down(url, environ)
        assert hook_script.when_down(environ, url) == said
        return said

    assert both(local) == "start it with `ccmem up`"  # nothing saved: what every route has
    saved = connection.Connection(
        url=local,
        user="alice",
        token_file=str(tmp_path / "token"),
        config=str(tmp_path / "config.yaml"),
        start=["/opt/ccmem/bin/ccmem", "up"],
        start_hint="systemctl --user start ccmem",
    )
    connection.save(saved, environ)
    assert both(local + "/") == "start it with `systemctl --user start ccmem`"
    assert both("http://127.0.0.1:9999") == "start it with `ccmem up`"  # another server
    # The start on demand turned off: still this machine's server, still its command.
    connection.save(replace(saved, start=[]), environ)
    assert both(local) == "start it with `systemctl --user start ccmem`"
    remote = "https://memory.example.org"
    connection.save(replace(saved, url=remote, start=[], config=None), environ)
    assert both(remote) == f"the server at {remote} runs on another machine: nothing here starts it"


def test_an_unreachable_server_says_start_it_with_ccmem_up(tmp_path: Path) -> None:
    """The CLI's REST client, `ccmem status` and the plugin's memory-status check, each with no
    server on the port: every one names `ccmem up`, none `ccmem serve`."""
    dead = f"http://127.0.0.1:{free_port()}"
    environ = throwaway_home(tmp_path)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in environ.items():
            patch.setenv(key, value)
        with pytest.raises(Unavailable, match=r"start it with `ccmem up`"):
            Remote(dead, "ccm_x").get("/api/v1/stats")
        result = CliRunner().invoke(cli_app, ["status", "--url", dead], env=environ)
    # ccmem's main() prints the typed error as its one line; in process it is the exception.
    assert isinstance(result.exception, Unavailable), result.output
    assert str(result.exception).endswith("start it with `ccmem up`")
    first = load_hook_script().status(environ, dead)[0]
    assert first.startswith(f"server {dead}: not reachable") and first.endswith("start it with `ccmem up`")
