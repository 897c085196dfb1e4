"""Profile facts by rules: which sentences of a memory say something lasting about the user
(identity, preferences, tools and stack, projects, working style) or are knowledge the
assistant established (decisions, where things are, how things run). Pure: no I/O.

    facts_of(text)                  -> [Fact]   a stored memory (a turn or a plain note)
    extract(sentence, speaker)      -> Fact | None
    normalise(text), fact_hash(text)            the key a fact is remembered (and deleted) by

A turn is stored as ``User: …`` and ``Assistant: …`` paragraphs (memories/recall/hook_events.py
``turn_text``); a memory of no conversation is the user's own note. The user's sentences give
facts about the user; the assistant's give only knowledge: what the assistant says about its
own likes is not the user's profile. Questions are never facts.

The rules were written against ``tests/corpora/profile_statements_dev.jsonl``; the held-out
half was written before them and is measured untouched (bench/quality/profile_rules.py,
docs/profile.md).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

USER = "user"
ASSISTANT = "assistant"
CATEGORIES = ("identity", "preference", "tools", "project", "working_style", "knowledge")
#: Sentences longer than this are prose, not a fact worth a profile line.
MAX_WORDS = 40
MAX_FACT_CHARS = 300

_TURN_PART = re.compile(r"^(User|Assistant): ", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_LEAD_IN = re.compile(r"^(?:please )?(?:remember|note|fyi|for the record)(?: that)?[:,]?\s+", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_PUNCTUATION = re.compile(r"[^\w\s/+#.-]|(?<!\w)[.-]|[.-](?!\w)")

_ROLES = (
    r"engineer|developer|scientist|student|designer|lead|manager|teacher|researcher|architect|"
    r"consultant|analyst|administrator|admin|sre|founder|cto|ceo|programmer|writer|maintainer|"
    r"freelancer|contractor|intern|professor|doctor|nurse|lawyer|accountant"
)


def _rules(*patterns: str, case: bool = False) -> tuple[re.Pattern[str], ...]:
    flags = 0 if case else re.IGNORECASE
    return tuple(re.compile(pattern, flags) for pattern in patterns)


# Each category's patterns, tried in this order (the first category that matches wins).
_USER_RULES: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...] = (
    (
        "identity",
        _rules(
            r"\bmy name(?: is|'s)\b",
            r"\b(?:call me|i'm called|i am called)\b",
            r"\bmy pronouns\b",
            rf"^i(?:'m| am) (?:a|an|the)\b.*\b(?:{_ROLES})s?\b",
            r"^i (?:work|am working|'m working) (?:as|at|for)\b",
            r"^i teach\b",
            r"^i (?:live|am based|'m based)\b.*\bin\b",
            r"^i(?:'m| am) (?:originally )?from\b",
            r"\bmy (?:native|first|second|mother) (?:language|tongue)\b",
        )
        + _rules(r"^I(?:'m| am) [A-Z][a-z]+(?:,|\.| and\b)", case=True),
    ),
    (
        "project",
        _rules(
            r"^i(?:'m| am) (?:currently |now )?(?:working on|building|developing|writing|making|creating)\b",
            r"\bmy (?:side |current |main |pet )?project\b",
            r"\bthe project i (?:maintain|work on|lead|own)\b",
            r"^(?:our|my) (?:product|startup|app|company) (?:is|makes|builds)\b",
            r"^we(?:'re| are) (?:currently )?(?:migrating|building|rewriting|developing|porting)\b",
            r"^(?:our|my) team is (?:currently )?(?:rewriting|building|migrating|developing|porting)\b",
            r"^i (?:maintain|run|develop) (?:a|an|the|my)\b",
        ),
    ),
    (
        "working_style",
        _rules(
            r"^i (?:always|usually|tend to|never|often|normally|typically|generally|mostly) "
            r"(?!use\b|like\b|prefer\b|love\b|hate\b)",
            r"^when i (?:debug|code|review|work|write|start|test|deploy)\b",
            r"^i (?:like|prefer|love) to (?:write|sketch|pair|start|plan|review|test|commit|refactor|"
            r"design|draft|work|read|run|deploy|keep)\b",
        ),
    ),
    (
        "tools",
        _rules(
            r"^(?:i|we) (?:mostly |mainly |also )?use\b",
            r"^(?:the|our|my) team uses\b",
            r"^(?:our|my) (?:stack|tech stack|shell|editor|ide|database|db|os|frontend|backend|"
            r"infrastructure|cloud|ci)\b.* (?:is|are|runs|uses)\b",
            r"^(?:the|our) (?:frontend|backend|api|app|service|server|site)\b.* "
            r"(?:is|are) (?:written|built|made) (?:in|with)\b",
            r"^we (?:deploy|run|host)\b.*\b(?:on|with|to)\b",
            r"^i (?:write|code|program) (?:mostly |mainly |in |with )",
        )
        + _rules(r"^I(?:'m| am) on (?:an? )?[A-Z]", case=True),
    ),
    (
        "preference",
        _rules(
            r"^i (?:really |much |strongly )?"
            r"(?:prefer|like|love|hate|dislike|enjoy|can't stand|cannot stand)\b",
            r"^i (?:don't|do not) (?:like|want|enjoy)\b",
            r"^i'd (?:rather|prefer|like you to)\b",
            r"\bmy favou?rite\b",
            r"^(?:please )?(?:always|never|don't|do not) (?!worry\b|mind\b)\w+",
        ),
    ),
)

_KNOWLEDGE_RULES = _rules(
    r"\bwe (?:decided|agreed|chose|settled on|opted|standardi[sz]ed on)\b",
    r"^the [\w ./-]+? (?:uses|use|runs on|run on|runs with|run with|lives? in|is configured|"
    r"is stored|are stored|is deployed|are deployed|listens on)\b",
    r"^the root cause (?:was|is)\b",
    r"^the convention (?:here )?is\b",
)


@dataclass(frozen=True)
class Fact:
    """One profile fact: about the user or the assistant's knowledge."""

    subject: str
    category: str
    text: str


def sentences(text: str) -> Iterator[str]:
    for part in _SENTENCE_END.split(text):
        sentence = part.strip()
        if sentence:
            yield sentence


def extract(sentence: str, speaker: str = USER) -> Fact | None:
    """The fact one sentence states, or None (questions, small talk, requests of the moment)."""
    sentence = _LEAD_IN.sub("", sentence.strip())
    if not sentence or sentence.endswith("?") or len(sentence.split()) > MAX_WORDS:
        return None
    if len(sentence.split()) < 3:
        return None
    # Curly apostrophes read as straight ones.
    plain = sentence.replace("\u2019", "'")
    if speaker == USER:
        for category, patterns in _USER_RULES:
            if any(pattern.search(plain) for pattern in patterns):
                return Fact(USER, category, _fact_text(sentence))
    if any(pattern.search(plain) for pattern in _KNOWLEDGE_RULES):
        return Fact(ASSISTANT, "knowledge", _fact_text(sentence))
    return None


def facts_of(text: str) -> list[Fact]:
    """Every fact in a stored memory, in order, each once."""
    found: dict[tuple[str, str], Fact] = {}
    for speaker, part in spoken_parts(text):
        for sentence in sentences(part):
            fact = extract(sentence, speaker)
            if fact is not None:
                found.setdefault((fact.subject, normalise(fact.text)), fact)
    return list(found.values())


def spoken_parts(text: str) -> list[tuple[str, str]]:
    """A memory as (speaker, text) parts: a turn's ``User:``/``Assistant:`` paragraphs, or the
    whole text as the user's when it is not a turn."""
    marks = list(_TURN_PART.finditer(text))
    if not marks:
        return [(USER, text)]
    parts = []
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        parts.append((mark.group(1).lower(), text[mark.end() : end].strip()))
    return parts


def normalise(text: str) -> str:
    """The form two wordings of one fact share: lower case, no punctuation, single spaces."""
    lowered = text.replace("\u2019", "'").lower()
    return _SPACES.sub(" ", _PUNCTUATION.sub(" ", lowered)).strip()


def fact_hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def _fact_text(sentence: str) -> str:
    text = _SPACES.sub(" ", sentence).strip()
    return text if len(text) <= MAX_FACT_CHARS else text[: MAX_FACT_CHARS - 1].rstrip() + "…"
