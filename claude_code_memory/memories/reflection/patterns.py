"""What a conversation's text says, read without a model: pure functions over stored text.

    segments(text)                  a captured turn's ``User: …`` / ``Assistant: …`` parts
    problems(text)                  error signatures and failing commands, normalised
    decisions(text)                 sentences that record a decision ("we decided", "let's use")
    questions(text), todos(text)    what was asked, and what is left to do
    files(text), commands(text)     paths and shell commands a text mentions
    answers(question, later)        whether a later text answers a question (shares its terms)

Everything here is deterministic and English-only: regular expressions and term overlap. The
reflection (:mod:`.analysis`) runs them over a user's stored memories.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A captured turn as stored (memories/recall/hook_events.py turn_text): ``User: …`` and ``Assistant: …``
#: paragraphs. Any other memory is one ``note``.
_ROLE = re.compile(r"(?:^|\n\n)(User|Assistant): ")
ROLES = {"User": "user", "Assistant": "assistant"}

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could did didn't do does doesn't
    doing don't down during each few for from further get got had has hasn't have haven't having
    he her here hers herself him himself his how i i'd i'll i'm i've if in into is isn't it it's
    its itself just let let's like make me more most my myself need no nor not now of off on
    once one only or other our ours ourselves out over own same she should so some still such
    than that that's the their theirs them themselves then there these they this those through
    to too under until up use used using very want was wasn't we we'd we'll we're we've were
    weren't what when where which while who whom why will with won't would yes yet you you'd
    you'll you're you've your yours yourself user assistant please thanks thank okay ok sure
    think know see way thing things really maybe going go well right new file files run running
    work works
    """.split()  # noqa: SIM905 - a word list reads better as words
)
_WORD = re.compile(r"[a-z][a-z0-9_+#.-]*[a-z0-9+#]|[a-z]")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_CODE_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)

# -- problems ------------------------------------------------------------------------------
_EXCEPTION = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception))\b(?::[ \t]*([^\n]{0,140}))?")
_ERROR_LINE = re.compile(
    r"(?:^|(?<=\s))(?:error|fatal|ERROR|FATAL|Error|npm ERR!)(?::|\])[ \t]+([^\n]{3,140})"
)
_SYMPTOM = re.compile(
    r"\b(segmentation fault|command not found|permission denied|no such file or directory|"
    r"connection refused|out of memory|address already in use|database is locked)\b",
    re.IGNORECASE,
)
_FAILURE = re.compile(
    r"\b(fail(?:s|ed|ing)?|error(?:s|ed)?|exit(?:ed)? (?:code|status) [1-9]\d*|non-zero exit|"
    r"crash(?:es|ed)?|broke(?:n)?|hangs?)\b",
    re.IGNORECASE,
)
_RESOLVED = re.compile(
    r"\b(fixed|resolved|solved|works now|working now|passes now|passing now|that did it|"
    r"no longer (?:fails|errors|happens|crashes))\b",
    re.IGNORECASE,
)

# -- decisions, questions, to-dos ----------------------------------------------------------
_DECISION = re.compile(
    r"\b(?:(?:we|i) (?:have |had )?decided\b|decided to\b|let'?s (?:use|go with|switch|stick with|"
    r"keep|adopt|move to)\b|(?:we|i)(?:'ll| will) (?:use|go with|switch to|stick with)\b|"
    r"switch(?:ed|ing)? (?:over )?(?:from [\w.+#-]+ )?to\b|we(?:'re| are) going with\b|settled on\b|"
    r"opted for\b|we chose\b|agreed (?:to|on)\b|decision:|from now on\b)",
    re.IGNORECASE,
)
_TODO = re.compile(
    r"(?:\b(?:TODO|FIXME)\b[:\s-]+|\btodo:\s*|\b(?:still need to|left to do:?|next steps?:|"
    r"remember to|follow up on)\s+)([^\n]{3,200})",
    re.IGNORECASE,
)
_DEFERRAL = re.compile(
    r"\b(not sure|don't know|do not know|no idea|unclear|revisit|tbd|to be decided|haven't decided|"
    r"can't tell|cannot tell|let me check|i'll check|later)\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(r"(?:can|could|would|will) you\b|please\b", re.IGNORECASE)
_DONE = re.compile(
    r"\b(done|did|finished|completed|implemented|added|fixed|resolved|merged|shipped|removed|updated)\b",
    re.IGNORECASE,
)

# -- files and commands --------------------------------------------------------------------
_EXTENSIONS = (
    "py|pyi|js|jsx|ts|tsx|mjs|cjs|json|yaml|yml|toml|md|rst|txt|sh|bash|go|rs|java|kt|c|h|cc|cpp|"
    "hpp|cs|rb|php|swift|css|scss|html|sql|ini|cfg|conf|lock|proto|tf|vue|svelte|ipynb"
)
_FILE = re.compile(
    rf"(?<![\w/.:@-])((?:\.{{0,2}}/)?(?:[\w@-][\w.@-]*/)*[\w-][\w.-]*\.(?:{_EXTENSIONS}))(?![\w/-])"
)
_BACKTICKED = re.compile(r"`([^`\n]{2,160})`")
_PROMPT_LINE = re.compile(r"^[ \t]*\$[ \t]+([^\n]{2,160})", re.MULTILINE)
TOOLS = frozenset(
    """
    git pytest python python3 pip pip3 uv poetry npm npx yarn pnpm node make cmake docker
    docker-compose kubectl helm cargo go rustc gcc ruff mypy black flake8 alembic ccmem curl
    wget ssh scp rsync ls cd cat grep rg sed awk find bash sh zsh psql sqlite3 redis-cli
    terraform systemctl journalctl brew apt apt-get tox nox jest vitest tsc eslint prettier mvn
    gradle claude gh
    """.split()  # noqa: SIM905 - a word list reads better as words
)
#: Tools whose second word names what they did (``git push``, ``npm install``).
SUBCOMMAND_TOOLS = frozenset(
    """
    git pip pip3 uv poetry npm yarn pnpm docker docker-compose kubectl helm cargo go alembic
    ccmem systemctl brew apt apt-get gh terraform make claude
    """.split()  # noqa: SIM905 - a word list reads better as words
)
_SUBCOMMAND = re.compile(r"^[a-z][\w-]*$")

SNIPPET = 200


@dataclass(frozen=True)
class Segment:
    role: str  # "user", "assistant" or "note"
    text: str


@dataclass(frozen=True)
class Problem:
    key: str  # normalised: the same problem in other words of the same shape has this key
    text: str  # as first written
    end: int  # where in the text the mention ends (a resolution must come after it)


def segments(text: str) -> list[Segment]:
    """A captured turn's parts in order; any other text is one ``note``."""
    marks = list(_ROLE.finditer(text))
    if not marks or marks[0].start() != 0:
        return [Segment("note", text)]
    parts = []
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        parts.append(Segment(ROLES[mark.group(1)], text[mark.end() : end].strip()))
    return parts


def terms(text: str) -> list[str]:
    """Content words, lower-cased, plural ``s`` dropped: what term overlap and topics compare."""
    found = []
    for word in _WORD.findall(text.lower()):
        word = word.strip(".-")
        if len(word) < 3 or word in STOPWORDS or word.isdigit():
            continue
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.append(word)
    return found


def sentences(text: str) -> list[str]:
    """Prose sentences (code fences left out), stripped, empty ones dropped."""
    prose = _CODE_FENCE.sub(" ", text)
    return [s.strip() for s in _SENTENCE_END.split(prose) if s and s.strip()]


def snippet(text: str, limit: int = SNIPPET) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- problems ------------------------------------------------------------------------------
def normalise_problem(text: str) -> str:
    """The key two mentions of one problem share: numbers, hex, temporary paths and line
    positions stripped; case and spacing folded; quoted names (a module, a key) kept."""
    key = text.strip().rstrip(".:;,").lower()
    key = re.sub(r"0x[0-9a-f]+", "0x…", key)
    key = re.sub(r"(?:/[\w.@-]+)+/([\w.@-]+)", r"\1", key)  # a path to its last part
    key = re.sub(r"\b\d+(?:\.\d+)*\b", "N", key)
    key = re.sub(r"\s+", " ", key)
    return key[:120]


def problems(text: str) -> list[Problem]:
    """Error signatures (``KeyError: 'user_id'``, ``error: …``, ``permission denied``) and
    failing commands (a command beside "fails", "error", "exit code 1") in ``text``."""
    found: dict[str, Problem] = {}

    def note(key_text: str, shown: str, end: int) -> None:
        key = normalise_problem(key_text)
        if key and key not in found:
            found[key] = Problem(key, snippet(shown, 160), end)

    for match in _EXCEPTION.finditer(text):
        detail = (match.group(2) or "").strip()
        note(f"{match.group(1)}: {detail}" if detail else match.group(1), match.group(0), match.end())
    for match in _ERROR_LINE.finditer(text):
        if not _EXCEPTION.search(match.group(1)):
            note(f"error: {match.group(1)}", match.group(0), match.end())
    for match in _SYMPTOM.finditer(text):
        note(match.group(1), match.group(1), match.end())
    offset = 0
    for sentence in _SENTENCE_END.split(text):
        start = text.find(sentence, offset)
        offset = max(offset, start)
        # A sentence that names its error is that error's mention; its command adds nothing.
        if sentence and _FAILURE.search(sentence) and not _names_error(sentence):
            for command in commands(sentence):
                note(f"`{command}` fails", f"`{command}` fails: {sentence.strip()}", start + len(sentence))
    return list(found.values())


def _names_error(sentence: str) -> bool:
    return bool(_EXCEPTION.search(sentence) or _ERROR_LINE.search(sentence) or _SYMPTOM.search(sentence))


def resolved_after(text: str, position: int = 0) -> bool:
    """Whether ``text`` (from ``position``) says a problem went away."""
    return bool(_RESOLVED.search(text, position))


# -- decisions, questions, to-dos ----------------------------------------------------------
def decisions(text: str) -> list[str]:
    return [snippet(s) for s in sentences(text) if _DECISION.search(s)]


def questions(text: str) -> list[str]:
    """Sentences that ask something (end in ``?``, at least four words); requests put as
    questions ("can you …?") are not questions left open."""
    return [
        snippet(s)
        for s in sentences(text)
        if s.endswith("?") and len(s.split()) >= 4 and not _REQUEST.match(s)
    ]


def todos(text: str) -> list[str]:
    prose = _CODE_FENCE.sub(" ", text)
    return [snippet(match.group(1)) for match in _TODO.finditer(prose)]


def answers(asked: str, later: str, *, done: bool = False) -> bool:
    """Whether ``later`` answers ``asked``: it shares at least half of the question's content
    words (at least two when it has two) in sentences that are not questions, and does not put
    the answer off ("not sure", "later"). With ``done``, it must also say the thing was done."""
    wanted = set(terms(asked))
    statements = " ".join(s for s in sentences(later) if not s.endswith("?"))
    if not wanted or not statements or _DEFERRAL.search(statements):
        return False
    if done and not _DONE.search(statements):
        return False
    shared = wanted & set(terms(statements))
    return len(shared) >= max(min(2, len(wanted)), (len(wanted) + 1) // 2)


# -- files and commands --------------------------------------------------------------------
def files(text: str) -> list[str]:
    """File paths with a known extension, in order of first mention, without repeats."""
    seen: dict[str, None] = {}
    for match in _FILE.finditer(text):
        path = match.group(1).lstrip("./") or match.group(1)
        if "://" not in text[max(0, match.start() - 8) : match.start()]:
            seen.setdefault(path, None)
    return list(seen)


def commands(text: str) -> list[str]:
    """Shell commands (in backticks or after a ``$`` prompt) as their tool and, for tools with
    subcommands, the subcommand: ``git push``, ``pytest``, ``npm install``."""
    seen: dict[str, None] = {}
    for raw in [*_BACKTICKED.findall(text), *_PROMPT_LINE.findall(text)]:
        words = raw.strip().split()
        if not words:
            continue
        if words[0] == "sudo" and len(words) > 1:
            words = words[1:]
        tool = words[0].rsplit("/", 1)[-1]
        if tool not in TOOLS:
            continue
        if tool in SUBCOMMAND_TOOLS and len(words) > 1 and _SUBCOMMAND.match(words[1]):
            seen.setdefault(f"{tool} {words[1]}", None)
        else:
            seen.setdefault(tool, None)
    return list(seen)
