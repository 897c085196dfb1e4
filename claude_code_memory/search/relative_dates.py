"""Relative and vague times in a search query, resolved against a reference time (pure).

    spans(query, reference)  ->  [Span(start, end, text)]      "last week", "two months ago", ...
    anchors(query)           ->  [Anchor(relation, phrase)]    "before the move", "around my birthday"
    order(query)             ->  "first" | "last" | None       "what did she do first"
    asks_present(query)      ->  bool                          "what is my current…"

A question's relative words ("yesterday", "last summer") are relative to when it is asked. The
search resolves them against a *reference time*: the newest ``captured_at`` (else the time it
was stored) among the memories the search may return, never later than now
(:mod:`.temporal` reads it). For a live capture that is the turn just said, within seconds of
now; for an imported history it is where the history ends, where "now" would put every window
after the data. A user who returns after a long silence and asks about "last week" is read as
asking about the week before their last memory: the one case this choice gets wrong.

Understood, case-insensitive (``N`` is a number in digits or words up to twelve, or "a",
"a couple of", "a few"):

* ``today``, ``tonight``, ``this morning`` → the reference's day; ``yesterday`` and
  ``the day before yesterday`` → that day;
* ``N days|weeks|months|years ago`` → that far back, give or take a share of the unit
  (a day for days, half a week, a fortnight for months, a quarter for years);
* ``last|past|previous week|weekend|month|year``, ``this week|month|year`` → that calendar span
  (weeks from Monday), ``earlier this week|month|year`` → its start to the reference;
* ``last Friday`` / ``on Friday`` → the latest such day before the reference's day;
* ``in the past|last N days|weeks|months`` → from then to the reference;
  ``recently``, ``lately``, ``these days`` → the 30 days before it;
* ``(in|during) (the) summer|spring|autumn|fall|winter``, ``this|last summer``,
  ``summer (of) 2023`` → that season (meteorological, northern hemisphere: summer is June to
  August, winter December to February): the latest one that began before the reference, the
  one before that with ``last`` when the reference is inside one, or that year's.

Phrases around an event (``before|after|since|until|around|during|at the time of`` + ``the``,
``my``, ``our``, ``his``, ``her``, ``their`` + up to three words) are :class:`Anchor` values:
the search finds the event's own memories and ranks those near its time higher (before: the
90 days up to it, after: the 90 days from it, around: a fortnight either side).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from .keyword import STOPWORDS

_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "three": 3,
    "a few": 3,
    "few": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_N = r"(?P<n>\d{1,3}|" + "|".join(sorted((re.escape(k) for k in _NUMBERS), key=len, reverse=True)) + ")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_SEASON = r"(?P<season>spring|summer|autumn|fall|winter)"
_DAY = timedelta(days=1)
#: How far either side of "N units ago" still counts.
_SLACK = {
    "day": timedelta(days=1),
    "week": timedelta(days=4),
    "month": timedelta(days=15),
    "year": timedelta(days=91),
}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30.44, "year": 365.25}
#: Days an anchored relation reaches: (before the event, after it).
ANCHOR_REACH: dict[str, tuple[int, int]] = {"before": (90, 0), "after": (0, 90), "around": (14, 14)}
_RELATIONS = {
    "before": "before",
    "until": "before",
    "prior to": "before",
    "after": "after",
    "since": "after",
    "following": "after",
    "around": "around",
    "during": "around",
    "at the time of": "around",
}
_DETERMINERS = r"(?:the|my|our|his|her|their)"

_P = re.IGNORECASE
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("day_before_yesterday", re.compile(r"\bthe\s+day\s+before\s+yesterday\b", _P)),
    ("ago", re.compile(rf"\b{_N}\s+{_UNIT}\s+ago\b", _P)),
    ("past_n", re.compile(rf"\b(?:in\s+|over\s+|during\s+)?(?:the\s+)?(?:past|last)\s+{_N}\s+{_UNIT}\b", _P)),
    ("earlier_this", re.compile(r"\bearlier\s+this\s+(?P<unit>week|month|year)\b", _P)),
    ("last_unit", re.compile(r"\b(?:last|past|previous)\s+(?P<unit>week|weekend|month|year)\b", _P)),
    ("this_unit", re.compile(r"\bthis\s+(?P<unit>week|weekend|month|year)\b", _P)),
    ("season", re.compile(rf"\b{_SEASON}\s+(?:of\s+)?(?P<year>(?:19|20|21)\d\d)\b", _P)),
    ("season", re.compile(rf"\b(?P<which>last|this|past)\s+{_SEASON}\b", _P)),
    ("season", re.compile(rf"\b(?:in|during|over)\s+(?:the\s+)?{_SEASON}\b", _P)),
    ("weekday", re.compile(r"\b(?:last|on|this\s+past)\s+(?P<weekday>" + "|".join(_WEEKDAYS) + r")\b", _P)),
    ("yesterday", re.compile(r"\byesterday\b", _P)),
    ("today", re.compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", _P)),
    ("recently", re.compile(r"\b(?:recently|lately|these\s+days)\b", _P)),
]
_ANCHOR = re.compile(
    r"\b(?P<relation>before|until|prior\s+to|after|since|following|around|during|at\s+the\s+time\s+of)\s+"
    rf"{_DETERMINERS}\s+(?P<phrase>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){{0,2}})",
    _P,
)
_ORDER_FIRST = re.compile(r"\b(?:first|earliest|initially|originally|to\s+begin\s+with)\b", _P)
_ORDER_LAST = re.compile(r"\b(?:most\s+recent(?:ly)?|latest|last\s+time|lately|nowadays)\b", _P)
#: A question about how things stand now ("what is my current…", "how many do I have now"),
#: which the newest of memories that disagree answers. Not "previous" or "used to": those ask
#: for the old state.
_PRESENT = re.compile(r"\b(?:now|currently|current|these\s+days|at\s+the\s+moment|so\s+far|any\s*more)\b", _P)
_PAST = re.compile(r"\b(?:previous(?:ly)?|used\s+to|before|formerly|initially|originally)\b", _P)


@dataclass(frozen=True)
class Span:
    """A time span ``[start, end)`` a query names relative to the reference time."""

    start: datetime
    end: datetime
    text: str

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


@dataclass(frozen=True)
class Anchor:
    """An event a query places its question against: ``relation`` is before, after or around."""

    relation: str
    phrase: str

    def span(self, moment: datetime) -> Span:
        """The span this relation reaches from the event's time (see :data:`ANCHOR_REACH`)."""
        back, forward = ANCHOR_REACH[self.relation]
        # "before" excludes the event itself; "after" starts once it is over; "around" holds it.
        start = moment - timedelta(days=back) if back else moment + timedelta(seconds=1)
        end = moment + timedelta(days=forward) if forward else moment
        if self.relation == "around":
            end += timedelta(seconds=1)
        return Span(start, end, f"{self.relation} {self.phrase}")


def spans(query: str, reference: datetime) -> list[Span]:
    """The spans the query's relative phrases name, resolved against ``reference``."""
    found: list[Span] = []
    rest = query
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(rest):
            span = _resolve(kind, match, reference)
            if span is not None:
                found.append(span)
        rest = pattern.sub(lambda m: " " * len(m.group(0)), rest)
    return found


def anchors(query: str) -> list[Anchor]:
    """The events the query places its question before, after or around. The phrase stops
    at the first stopword ("before the move to Denver" → "move"), and a phrase that is itself a
    time ("after the summer", "before last week") is not an event."""
    found = []
    for match in _ANCHOR.finditer(query):
        words = []
        for word in match.group("phrase").lower().split():
            if word in STOPWORDS:
                break
            words.append(word)
        if not words or any(_is_time_word(word) for word in words):
            continue
        relation = _RELATIONS[" ".join(match.group("relation").lower().split())]
        found.append(Anchor(relation, " ".join(words)))
    return found


def order(query: str) -> Literal["first", "last"] | None:
    """Whether the query asks for the earliest ("first") or the latest ("most recently") of
    what it describes."""
    if _ORDER_FIRST.search(query):
        return "first"
    if _ORDER_LAST.search(query):
        return "last"
    return None


def asks_present(query: str) -> bool:
    """Whether the query asks how things stand now ("what is my current…", "how many do I have
    now"), not how they were."""
    return _PRESENT.search(query) is not None and _PAST.search(query) is None


def _is_time_word(word: str) -> bool:
    return (
        word in _SEASONS
        or word in _WEEKDAYS
        or word.rstrip("s") in ("day", "week", "weekend", "month", "year", "night", "morning", "evening")
        or word in ("yesterday", "today", "tonight", "last", "next", "this")
    )


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int) -> datetime:
    while month < 1:
        year, month = year - 1, month + 12
    while month > 12:
        year, month = year + 1, month - 12
    return datetime(year, month, 1)


def _number(raw: str) -> int:
    raw = " ".join(raw.lower().split())
    return int(raw) if raw.isdigit() else _NUMBERS[raw]


def _resolve(kind: str, match: re.Match[str], reference: datetime) -> Span | None:
    text = match.group(0).strip()
    today = _midnight(reference)
    groups = match.groupdict()
    unit = (groups.get("unit") or "").lower()
    if kind == "today":
        return Span(today, today + _DAY, text)
    if kind == "yesterday":
        return Span(today - _DAY, today, text)
    if kind == "day_before_yesterday":
        return Span(today - 2 * _DAY, today - _DAY, text)
    if kind == "recently":
        return Span(reference - timedelta(days=30), reference + timedelta(seconds=1), text)
    if kind == "ago":
        back = timedelta(days=_number(groups["n"]) * _UNIT_DAYS[unit])
        centre = today - back if unit == "day" else reference - back
        if unit == "day":
            return Span(centre - _SLACK[unit], centre + 2 * _DAY, text)
        return Span(centre - _SLACK[unit], centre + _SLACK[unit], text)
    if kind == "past_n":
        back = timedelta(days=_number(groups["n"]) * _UNIT_DAYS[unit])
        return Span(reference - back, reference + timedelta(seconds=1), text)
    if kind in ("last_unit", "this_unit", "earlier_this"):
        start, end = _calendar(unit, today, previous=kind == "last_unit")
        if kind == "earlier_this":
            end = reference + timedelta(seconds=1)
        return Span(start, end, text)
    if kind == "weekday":
        wanted = _WEEKDAYS.index(groups["weekday"].lower())
        days_back = (today.weekday() - wanted) % 7 or 7
        day = today - days_back * _DAY
        return Span(day, day + _DAY, text)
    if kind == "season":
        return _season(groups, reference, text)
    return None


def _calendar(unit: str, today: datetime, *, previous: bool) -> tuple[datetime, datetime]:
    """The calendar week (from Monday), weekend, month or year holding ``today``, or the one
    before it."""
    if unit == "week":
        start = today - today.weekday() * _DAY
        return (start - 7 * _DAY, start) if previous else (start, start + 7 * _DAY)
    if unit == "weekend":
        saturday = today + (5 - today.weekday()) * _DAY  # this week's (Monday to Sunday)
        if previous:
            saturday -= 7 * _DAY
        return saturday, saturday + 2 * _DAY
    if unit == "month":
        start = _month_start(today.year, today.month)
        return (
            (_month_start(today.year, today.month - 1), start)
            if previous
            else (
                start,
                _month_start(today.year, today.month + 1),
            )
        )
    start = datetime(today.year, 1, 1)
    return (datetime(today.year - 1, 1, 1), start) if previous else (start, datetime(today.year + 1, 1, 1))


def _season(groups: dict[str, str | None], reference: datetime, text: str) -> Span:
    first = _SEASONS[(groups["season"] or "").lower()]
    if groups.get("year"):
        # Winter 2023 is the winter that begins in December 2023.
        start = _month_start(int(groups["year"] or 0), first)
        return Span(start, _month_start(start.year, start.month + 3), text)
    # The latest such season that has begun by the reference.
    start = _month_start(reference.year, first)
    if start > reference:
        start = _month_start(reference.year - 1, first)
    end = _month_start(start.year, start.month + 3)
    if (groups.get("which") or "").lower() in ("last", "past") and reference < end:
        start = _month_start(start.year - 1, start.month)  # inside it: "last" is the one before
        end = _month_start(start.year, start.month + 3)
    return Span(start, end, text)
