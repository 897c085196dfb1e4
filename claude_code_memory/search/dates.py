"""Dates named in a search query, as time windows (pure).

    windows(query)  ->  [Window(start, end, text)]

A memory keeps the time it happened (``captured_at``: when a turn was said, or the session date
an import gives). A question that names a date ("on 13 October 2023", "in July 2023", "in
June", "in 2022") is about what happened then, so search ranks memories from inside that window
higher (see :mod:`.ranking`). Understood forms, case-insensitive, month names full or
abbreviated:

* ``13 October 2023``, ``13 Oct, 2023``, ``October 13, 2023``, ``2023-10-13`` → that day;
* ``October 2023``, ``Oct. 2023`` → that month;
* ``in October`` / ``in Oct`` / ``during October`` (no year) → that month in any year;
* ``in 2023`` / ``during 2023`` (a year from 1900 to 2199) → that year.

Relative phrases ("last week") are read by :mod:`.relative_dates` against a reference time
(:mod:`.temporal`). A month name without "in"/"during" and without a day or year
("May I ask…", "march on") is not read either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20|21)\d\d)"

# Most specific first; each match blanks its text so a later pattern does not read it again.
_PATTERNS = [
    re.compile(r"\b(?P<year>(?:19|20|21)\d\d)-(?P<monthnum>[01]\d)-(?P<day>[0-3]\d)\b"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b(?:in|during)\s+(?:early\s+|late\s+|mid-?\s*)?{_MONTH}(?![\w-])", re.IGNORECASE),
    re.compile(rf"\b(?:in|during)\s+{_YEAR}\b", re.IGNORECASE),
]


@dataclass(frozen=True)
class Window:
    """A span of time named in a query. ``year`` None means "this month of any year"."""

    year: int | None
    month: int | None
    day: int | None
    text: str

    def contains(self, moment: datetime) -> bool:
        if self.year is not None and moment.year != self.year:
            return False
        if self.month is not None and moment.month != self.month:
            return False
        return self.day is None or moment.day == self.day


def windows(query: str) -> list[Window]:
    """The date windows a query names, in the order the patterns find them."""
    found: list[Window] = []
    rest = query
    for pattern in _PATTERNS:
        for match in pattern.finditer(rest):
            window = _window(match)
            if window is not None:
                found.append(window)
        rest = pattern.sub(lambda m: " " * len(m.group(0)), rest)
    return found


def _window(match: re.Match[str]) -> Window | None:
    groups = match.groupdict()
    year = int(groups["year"]) if groups.get("year") else None
    if groups.get("monthnum"):
        month: int | None = int(groups["monthnum"])
    elif groups.get("month"):
        month = MONTHS[groups["month"].lower().rstrip(".")]
    else:
        month = None
    day = int(groups["day"]) if groups.get("day") else None
    if month is not None and not 1 <= month <= 12:
        return None
    if day is not None and month is not None:
        try:
            datetime(year or 2000, month, day)  # 2000 is a leap year: 29 February passes
        except ValueError:
            return None
    return Window(year=year, month=month, day=day, text=match.group(0).strip())
