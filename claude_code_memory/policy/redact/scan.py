"""What every detector is built from: a span, the characters of a token's boundary, word lists,
and ``label_scan`` (one scan for many labels).

A detector is a function of the text that yields ``(kind, start, end)`` spans; ``redaction.py``
runs them all and merges what they find.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterator

Span = tuple[str, int, int]
Detector = Callable[[str], Iterator[Span]]

WORD = frozenset(string.ascii_letters + string.digits + "_")
WORD_DASH = WORD | {"-"}
BASE64_CHARS = frozenset(string.ascii_letters + string.digits + "+/=")


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def label_scan(labels: frozenset[str] | tuple[str, ...], after: str) -> re.Pattern[str]:
    """One scan for many labels: their first letters as one character class, which keeps the
    engine's fast skip, then each rest tied to its letter by a lookbehind."""
    by_letter: dict[str, list[str]] = {}
    for label in sorted(labels, key=len, reverse=True):
        by_letter.setdefault(label[0], []).append(re.escape(label[1:]))
    cases = {letter: "".join(dict.fromkeys(letter + letter.upper())) for letter in by_letter}
    rests = "|".join(
        f"(?<=[{cases[letter]}])(?i:{'|'.join(rest)})" for letter, rest in sorted(by_letter.items())
    )
    return re.compile(f"[{''.join(cases[letter] for letter in sorted(by_letter))}](?:{rests}){after}")
