"""What the product's words name, checked against what exists (tests/test_words.py).

Skills, doc pages, UI templates and the commands the product prints name MCP tools, ``ccmem``
commands and ``claude mcp add`` lines. Each finder here reads text and returns
:class:`Finding` values, one per name that does not exist where it is used; the lists of what
does exist come from the code (the tool sets of ``mcp/dialects.py``, the Typer app's tree), so
a renamed tool or command fails the test instead of leaving a page stale.

Only code is read as a name: Markdown code spans and fences, HTML ``<code>``, ``<pre>`` and
``<textarea>``, whole shell scripts. Prose ("ccmem is the CLI") is not a command.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

#: A tool name as the dialects spell them: lower case with at least one underscore.
SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
#: Claude Code's name for an MCP tool: ``mcp__<server>__<tool>`` (a plugin's server is
#: ``plugin_<plugin>_<server>``).
QUALIFIED = re.compile(r"\bmcp__([a-z0-9_-]+?)__([a-z][a-z0-9_]*)")
#: "the `x` tool", "tool `x`", "tools `x`" (never "an `is_error` tool result").
NAMED_TOOL = re.compile(r"`([a-z][a-z0-9_]*)`\s+tools?\b(?!\s+results?)|\btools?\s+`([a-z][a-z0-9_]*)`")
#: A word of a command line that can be a subcommand.
WORD = re.compile(r"[a-z][a-z0-9-]*")
#: Where a shell command ends on a line.
SEPARATOR = re.compile(r"\s*(?:&&|\|\||[;|&()#`]|\$\()")

NOT_THE_PLUGINS = "is not in the plugin's set"

_FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)
_SPAN = re.compile(r"(`+)((?:(?!\1).)+?)\1", re.S)
_HTML_CODE = re.compile(r"<(code|pre|textarea)\b[^>]*>(.*?)</\1>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Finding:
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


# -- where code is --------------------------------------------------------------------------------
def markdown_code(text: str) -> list[str]:
    """The fenced blocks and code spans of a Markdown page (spans outside the fences only)."""
    blocks = [match.group(2) for match in _FENCE.finditer(text)]
    prose = _FENCE.sub("", text)
    # A span ends at a blank line: Markdown does not carry one across paragraphs.
    spans = [m.group(2).replace("\n", " ") for m in _SPAN.finditer(prose) if "\n\n" not in m.group(2)]
    return blocks + spans


def html_code(text: str) -> list[str]:
    """What an HTML template shows as code: ``<code>``, ``<pre>`` and ``<textarea>`` contents."""
    return [_TAG.sub("", match.group(2)) for match in _HTML_CODE.finditer(text)]


def source_code(text: str) -> list[str]:
    """What a program shows as code: its one-line backticked spans (messages, docstrings)."""
    return [m.group(2) for m in _SPAN.finditer(text) if "\n" not in m.group(2)]


def script_code(text: str) -> list[str]:
    """What a script shows as code: its spans, and every line that is a command by itself
    (the instructions it prints)."""
    commands = [line.strip(" \t'\"") for line in text.splitlines()]
    return source_code(text) + [line for line in commands if re.match(r"(ccmem|claude) [a-z-]", line)]


def code_of(name: str, text: str) -> list[str]:
    """The code in a file, by its kind: Markdown, HTML, or a script."""
    if name.endswith(".md"):
        return markdown_code(text)
    if name.endswith(".html"):
        return html_code(text)
    return script_code(text)


def joined_lines(code: str) -> list[str]:
    """Lines with shell continuations (``\\`` at the end) joined into one."""
    return re.sub(r"\\\n\s*", " ", code).splitlines()


# -- ccmem commands --------------------------------------------------------------------------------
@dataclass(frozen=True)
class CommandTree:
    """A CLI's commands: each name, and for a group its children and whether it runs alone
    (a group that runs without a subcommand takes a plain argument where a name would be)."""

    children: Mapping[str, CommandTree]
    runs_alone: bool = False

    @classmethod
    def of_click(cls, command: Any) -> CommandTree:
        commands = getattr(command, "commands", None) or {}
        return cls(
            children={name: cls.of_click(child) for name, child in commands.items()},
            runs_alone=bool(getattr(command, "invoke_without_command", False)) or not commands,
        )

    def unknown(self, words: list[str]) -> str | None:
        """The first word of ``words`` that names no command here; None when every name exists.

        Words after a leaf command, an option, a placeholder (``NAME``, ``<id>``, ``…``) or a
        value are arguments, not names."""
        node = self
        for word in words:
            if not node.children or not WORD.fullmatch(word):
                return None
            if word in node.children:
                node = node.children[word]
                continue
            return None if node.runs_alone and node is not self else word
        return None


_CCMEM = re.compile(r"(?<![\w$-])ccmem(?=[ \t]|$)", re.M)


def ccmem_invocations(code: str) -> Iterator[list[str]]:
    """The words after each ``ccmem`` of a piece of code, up to the end of its shell command."""
    for line in joined_lines(code):
        for match in _CCMEM.finditer(line):
            rest = SEPARATOR.split(line[match.end() :], maxsplit=1)[0]
            yield rest.split()


def unknown_commands(where: str, codes: Iterable[str], tree: CommandTree) -> list[Finding]:
    found = []
    for code in codes:
        for words in ccmem_invocations(code):
            bad = tree.unknown(words)
            if bad is not None:
                found.append(Finding(where, f"`ccmem {' '.join(words)}`: no command {bad!r}"))
    return found


# -- MCP tools -----------------------------------------------------------------------------------
def named_tools(text: str) -> Iterator[tuple[str, str | None]]:
    """(tool, server) for each tool the text names: ``mcp__server__tool``, "the `x` tool"."""
    for match in QUALIFIED.finditer(text):
        yield match.group(2), match.group(1)
    for match in NAMED_TOOL.finditer(text):
        name = match.group(1) or match.group(2)
        if SNAKE.fullmatch(name):
            yield name, None


def unknown_tools(
    where: str, text: str, tools: frozenset[str], plugin_server: str, plugin_tools: frozenset[str]
) -> list[Finding]:
    """Tools a page names that no dialect offers (``tools``: every dialect's); a tool of the
    plugin's server (``mcp__plugin_…``) must be in the plugin's own set."""
    found = []
    for name, server in named_tools(text):
        if server is not None and server.startswith("plugin_"):
            if server != plugin_server:
                found.append(Finding(where, f"MCP server {server!r} is not the plugin's ({plugin_server})"))
            elif name not in plugin_tools:
                found.append(Finding(where, f"tool {name!r} {NOT_THE_PLUGINS} {sorted(plugin_tools)}"))
        elif name not in tools:
            found.append(Finding(where, f"tool {name!r} is in no tool set (mcp/dialects.py)"))
    return found


def skill_tools(where: str, text: str, offered: frozenset[str]) -> list[Finding]:
    """A skill of the plugin names only tools of the plugin's set: any tool-like code span, and
    every tool named in prose."""
    names = {span for span in markdown_code(text) if SNAKE.fullmatch(span.strip())}
    names |= {name for name, _ in named_tools(text)}
    names |= set(re.findall(r"\bthe ([a-z][a-z0-9]*(?:_[a-z0-9]+)+) tool\b", text))
    return [
        Finding(where, f"tool {name!r} {NOT_THE_PLUGINS} {sorted(offered)}")
        for name in sorted(names - offered)
    ]


def dialect_rows(where: str, text: str, sets: Mapping[str, tuple[str, ...]]) -> list[Finding]:
    """A table row ``| `dialect` | tools… |`` lists that dialect's tools and no other."""
    found = []
    for line in text.splitlines():
        row = re.match(r"\|\s*`([a-z-]+)`\s*\|([^|]*)\|", line)
        if not row or row.group(1) not in sets:
            continue
        offered = set(sets[row.group(1)])
        named = {m for m in re.findall(r"`([a-z][a-z0-9_]*)", row.group(2)) if SNAKE.fullmatch(m)}
        for name in sorted(named - offered):
            found.append(Finding(where, f"the {row.group(1)} row names {name!r}, not in that set"))
    return found


# -- claude mcp add -------------------------------------------------------------------------------
_MCP_ADD = re.compile(r"\bclaude mcp add\b([^\n`]*)")


def mcp_add_without_scope(where: str, codes: Iterable[str]) -> list[Finding]:
    """Each ``claude mcp add`` shown as a command (it carries an option or a URL) says its scope:
    ``--scope user`` (``-s user``), or another scope written out on purpose."""
    found = []
    for code in codes:
        for line in joined_lines(code):
            for match in _MCP_ADD.finditer(line):
                args = match.group(1)
                shown = re.search(r"(^|\s)-|://|\$|\{", args)
                if shown and not re.search(r"(--scope|-s)[ =](user|local|project)\b", args):
                    found.append(Finding(where, f"`claude mcp add{args.rstrip()}` has no --scope user"))
    return found
