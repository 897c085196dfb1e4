"""``Rule``: a detector that is one regular expression, with the checks around its match that a
pattern cannot make quickly (a token boundary before it, a lead character, the value's shape).

Every pattern starts with a literal or a character class, never with a lookbehind or an inline
flag, so the regex engine can skip ahead in C to where a match may begin; a token boundary
before the match is checked in Python instead (``not_after``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .placeholders import is_placeholder
from .scan import Span


def _not_placeholder(value: str) -> bool:
    return not is_placeholder(value)


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]  # the secret is group "s" if there is one, else the whole match
    accept: Callable[[str], bool] = _not_placeholder
    not_after: frozenset[str] = frozenset()  # a character here before the match: not a token start
    lead: str = ""  # one of these characters must come just before the match, and belongs to it

    def __call__(self, text: str) -> Iterator[Span]:
        has_group = "s" in self.pattern.groupindex
        for match in self.pattern.finditer(text):
            start, end = match.span("s") if has_group else match.span()
            first = match.start()
            if self.lead:
                if not first or text[first - 1] not in self.lead:
                    continue
                first = start = first - 1
            if first and text[first - 1] in self.not_after:
                continue
            if self.accept(text[start:end]):
                yield self.kind, start, end
