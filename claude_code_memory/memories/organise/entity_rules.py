"""Entities a memory mentions, found by rules (no LLM): files, identifiers, tools, projects, people.

    extract(text, project=None) -> [Found(kind, name)], in order of first mention, no repeats

The rules, in the order they claim a span of text (a span claimed once is not read again):

- ``file``: a path (``src/app.py``, ``/etc/hosts``, ``~/.claude/settings.json``) or a file
  name with a known extension (``README.md``, ``config.yaml``).
- ``tool``: a word of :data:`TOOLS` (case-insensitive; named as the list spells it).
- ``identifier``: CamelCase (``MemoryService``, ``useEffect``) or snake_case (``trash_days``).
- ``project``: the memory's own project, and a name after "project", "repo", "repository".
- ``person``: two capitalised words in a row (``Alice Martin``), or one after a word that
  introduces a person ("with Bob", "asked Carol") or before a verb people do ("Dana said").

Precision measured on a labelled set in ``bench/data/entities_labelled.json``
(``bench/quality/entities.py``; the numbers are in docs/scopes.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("person", "project", "tool", "file", "identifier")
MAX_NAME = 256

#: Tools, languages and services people name in a developer's memories.
TOOLS = (
    "Alembic", "Ansible", "AWS", "Azure", "Bash", "Bazel", "Black", "Celery", "Chromium", "Claude Code",
    "CMake", "Cursor", "Datadog", "Django", "Docker", "Docker Compose", "Elasticsearch", "Emacs",
    "ESLint", "FastAPI", "Figma", "Flask", "GCP", "Git", "GitHub", "GitHub Actions", "GitLab", "Grafana",
    "GraphQL", "Helm", "Heroku", "Homebrew", "httpx", "Jenkins", "Jest", "Jira", "JavaScript", "Kafka",
    "Kotlin", "Kubernetes", "Linear", "Make", "mem0", "mitmproxy", "MongoDB", "mypy", "MySQL", "Neovim",
    "Netlify", "Next.js", "Nginx", "Node.js", "Notion", "npm", "NumPy", "Ollama", "ONNX", "OpenAI",
    "pandas", "pip", "Playwright", "pnpm", "Poetry", "PostgreSQL", "Postgres", "Prettier", "Prometheus",
    "Pydantic", "pytest", "Python", "PyTorch", "Qdrant", "RabbitMQ", "React", "Redis", "ruff", "Rust",
    "Sentry", "Slack", "SQLAlchemy", "SQLite", "Svelte", "Swift", "Tailwind", "TensorFlow", "Terraform",
    "tmux", "TypeScript", "uv", "Vercel", "Vim", "Vite", "VS Code", "Vue", "Webpack", "Yarn", "zsh",
)  # fmt: skip
_TOOL_NAMES = {tool.casefold(): tool for tool in TOOLS}
#: Longest names first, so "Docker Compose" wins over "Docker".
_TOOL_PATTERN = re.compile(
    r"(?<![\w./-])("
    + "|".join(re.escape(tool) for tool in sorted(TOOLS, key=len, reverse=True))
    + r")(?![\w/-]|\.\w)",
    re.IGNORECASE,
)
_EXTENSIONS = [
    "c",
    "cfg",
    "conf",
    "cpp",
    "css",
    "csv",
    "go",
    "h",
    "html",
    "ini",
    "java",
    "js",
    "json",
    "jsx",
    "kt",
    "lock",
    "log",
    "md",
    "mjs",
    "php",
    "py",
    "rb",
    "rs",
    "sh",
    "sql",
    "swift",
    "toml",
    "ts",
    "tsx",
    "txt",
    "xml",
    "yaml",
    "yml",
]
_FILE = re.compile(
    r"(?<![\w@:/.-])("
    r"(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*[\w]"  # a path with at least one slash
    r"|[\w-][\w.-]*\.(?:" + "|".join(_EXTENSIONS) + r")"  # a file name with a known extension
    r")(?![\w/])"
)
_URL = re.compile(r"\b\w+://\S+")
_CAMEL = re.compile(
    r"(?<![\w.])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+)(?![\w])"
)
_SNAKE = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w])")
_PROJECT = re.compile(r"\b(?:project|repo|repository)\s+[\"'`]?([A-Za-z][\w.-]*[\w])", re.IGNORECASE)
_NAME = r"[A-Z][a-z]+(?:-[A-Z][a-z]+)?"
_FULL_NAME = re.compile(rf"(?<![\w.])({_NAME}\s+{_NAME})(?![\w])")
_INTRODUCED = re.compile(
    r"\b(?:with|asked|ask|told|tell|thanks|thank|cc|by|from|colleague|manager|teammate|lead|friend|wife|"
    r"husband|partner|boss|reviewer|@)\s+(" + _NAME + r")(?![\w])"
)
_ACTING = re.compile(
    r"(?<![\w.])("
    + _NAME
    + r")\s+(?:said|says|asked|asks|wants|prefers|likes|thinks|mentioned|suggested|reviewed|owns|approved|"
    r"wrote|told|joined|leads|is on|will)\b"
)
#: Capitalised words that are not names: sentence openers, days, months, common nouns.
_NOT_NAMES = frozenset(
    [
        "A",
        "An",
        "The",
        "This",
        "That",
        "These",
        "Those",
        "It",
        "Its",
        "I",
        "We",
        "You",
        "He",
        "She",
        "They",
        "My",
        "Our",
        "Your",
        "Their",
        "His",
        "Her",
        "Me",
        "Us",
        "Use",
        "Used",
        "Using",
        "Always",
        "Never",
        "Please",
        "Remember",
        "Note",
        "Also",
        "And",
        "But",
        "Or",
        "If",
        "When",
        "While",
        "After",
        "Before",
        "Then",
        "So",
        "Yes",
        "No",
        "Not",
        "All",
        "Any",
        "Each",
        "Every",
        "Some",
        "Most",
        "Many",
        "More",
        "Less",
        "New",
        "Old",
        "First",
        "Last",
        "Next",
        "Today",
        "Tomorrow",
        "Yesterday",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
        "User",
        "Assistant",
        "Team",
        "Project",
        "Repo",
        "API",
        "CLI",
        "UI",
        "Server",
        "Client",
        "Memory",
        "Memories",
        "Error",
        "Errors",
        "Bug",
        "Fix",
        "Test",
        "Tests",
        "Build",
        "Deploy",
        "Release",
        "Docs",
        "Readme",
        "Config",
        "Setup",
        "Prefer",
        "Prefers",
        "Keep",
        "Run",
        "Runs",
        "Add",
        "Move",
        "Check",
        "Don",
        "Do",
        "Does",
        "Did",
        "Is",
        "Are",
        "Was",
        "Were",
        "Be",
        "Here",
        "There",
        "What",
        "Why",
        "How",
        "Who",
        "Where",
        "Which",
        "Mr",
        "Mrs",
        "Ms",
        "Dr",
        "Hi",
        "Hello",
        "Dear",
        "Thanks",
        "Thank",
        "Ok",
        "Okay",
        "Good",
        "Great",
        "Sure",
        "Main",
        "Dev",
        "Prod",
        "Staging",
        "Production",
        "Development",
        "Local",
        "Remote",
        "Home",
        "Work",
        "Office",
        "Meeting",
        "Standup",
        "Sprint",
        "Week",
        "Month",
        "Year",
        "Morning",
        "Evening",
        "Friday",
    ]
)


@dataclass(frozen=True)
class Found:
    kind: str
    name: str


def extract(text: str, project: str | None = None) -> list[Found]:
    """The entities ``text`` mentions (``project``: the memory's own, always an entity)."""
    found: dict[tuple[str, str], Found] = {}
    claimed: list[tuple[int, int]] = []

    def add(kind: str, name: str, span: tuple[int, int] | None = None) -> None:
        if span is not None:
            if any(start < span[1] and span[0] < end for start, end in claimed):
                return
            claimed.append(span)
        name = name.strip()[:MAX_NAME]
        key = (kind, name.casefold())
        if name and key not in found:
            found[key] = Found(kind, name)

    for match in _URL.finditer(text):
        claimed.append(match.span())
    if project:
        add("project", project)
    for match in _PROJECT.finditer(text):
        add("project", match.group(1), match.span(1))
    for match in _FILE.finditer(text):
        name = match.group(1)
        if "/" in name and not re.search(r"[a-z]", name):  # "I/O", "A/B": not paths
            continue
        add("file", name.rstrip("."), match.span(1))
    for match in _TOOL_PATTERN.finditer(text):
        add("tool", _TOOL_NAMES[match.group(1).casefold()], match.span(1))
    for pattern in (_CAMEL, _SNAKE):
        for match in pattern.finditer(text):
            add("identifier", match.group(1), match.span(1))
    for match in _FULL_NAME.finditer(text):
        first, last = match.group(1).split()
        if first not in _NOT_NAMES and last not in _NOT_NAMES:
            add("person", match.group(1), match.span(1))
    for pattern in (_INTRODUCED, _ACTING):
        for match in pattern.finditer(text):
            if match.group(1) not in _NOT_NAMES:
                add("person", match.group(1), match.span(1))
    return list(found.values())
