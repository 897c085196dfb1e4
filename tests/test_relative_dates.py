"""Relative and vague times in queries (claude_code_memory.search.relative_dates): pure resolution
against a reference time, events and order words."""

from datetime import datetime

import pytest

from claude_code_memory.search.relative_dates import Anchor, anchors, asks_present, order, spans

#: A Wednesday afternoon.
REF = datetime(2024, 3, 20, 15, 30)


def day(text: str) -> datetime:
    return datetime.fromisoformat(text)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did I paint yesterday?", "2024-03-19", "2024-03-20"),
        ("what happened today", "2024-03-20", "2024-03-21"),
        ("what did Tom fix the day before yesterday", "2024-03-18", "2024-03-19"),
        ("3 days ago", "2024-03-16", "2024-03-19"),
        ("what did we bake last week", "2024-03-11", "2024-03-18"),
        ("this week", "2024-03-18", "2024-03-25"),
        ("what did she buy last weekend", "2024-03-16", "2024-03-18"),
        ("last month's trip", "2024-02-01", "2024-03-01"),
        ("this month", "2024-03-01", "2024-04-01"),
        ("last year", "2023-01-01", "2024-01-01"),
        ("what did I do last Friday", "2024-03-15", "2024-03-16"),
        ("on Wednesday", "2024-03-13", "2024-03-14"),  # the reference's own weekday: a week back
        ("in the summer", "2023-06-01", "2023-09-01"),
        ("during the winter", "2023-12-01", "2024-03-01"),
        ("in the spring", "2024-03-01", "2024-06-01"),  # it has begun: this spring
        ("last spring", "2023-03-01", "2023-06-01"),  # inside it: the one before
        ("summer of 2021", "2021-06-01", "2021-09-01"),
        ("fall 2022", "2022-09-01", "2022-12-01"),
    ],
)
def test_calendar_phrases_resolve_against_the_reference(query: str, start: str, end: str) -> None:
    found = spans(query, REF)
    assert [(s.start, s.end) for s in found] == [(day(start), day(end))]


def test_ago_is_a_window_around_that_far_back() -> None:
    (months,) = spans("two months ago", REF)
    # 2 x 30.44 days back is 19 January; a fortnight either side.
    assert months.contains(datetime(2024, 1, 20)) and months.contains(datetime(2024, 1, 5, 16))
    assert not months.contains(datetime(2024, 2, 10)) and not months.contains(datetime(2023, 12, 31))
    (weeks,) = spans("a couple of weeks ago", REF)
    assert weeks.contains(datetime(2024, 3, 6)) and not weeks.contains(datetime(2024, 3, 14))
    (year,) = spans("a year ago", REF)
    assert year.contains(datetime(2023, 2, 1)) and not year.contains(datetime(2023, 8, 1))


def test_open_spans_reach_the_reference() -> None:
    (recent,) = spans("what did she read recently", REF)
    assert recent.contains(datetime(2024, 2, 25)) and recent.contains(REF)
    assert not recent.contains(datetime(2024, 2, 1))
    (past,) = spans("in the past 3 days", REF)
    assert past.contains(datetime(2024, 3, 18)) and not past.contains(datetime(2024, 3, 17))
    (earlier,) = spans("earlier this year", REF)
    assert earlier.start == day("2024-01-01") and earlier.contains(REF)


def test_reference_at_month_and_year_edges() -> None:
    new_year = datetime(2024, 1, 3, 9)  # a Wednesday
    assert [(s.start, s.end) for s in spans("last month", new_year)] == [
        (day("2023-12-01"), day("2024-01-01"))
    ]
    assert [(s.start, s.end) for s in spans("last week", new_year)] == [
        (day("2023-12-25"), day("2024-01-01"))
    ]
    assert [(s.start, s.end) for s in spans("in the winter", new_year)] == [
        (day("2023-12-01"), day("2024-03-01"))
    ]
    assert [(s.start, s.end) for s in spans("in the summer", new_year)] == [
        (day("2023-06-01"), day("2023-09-01"))
    ]


@pytest.mark.parametrize(
    "query",
    [
        "When did Melanie go camping in June?",  # explicit: dates.py reads it
        "what is my favourite week day",
        "the last word",
        "Which summer camp did she like",  # a season as a name, without in/during/last/this
        "the agreement that lasts five years",
    ],
)
def test_no_relative_time(query: str) -> None:
    assert spans(query, REF) == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Nadia sign before the move?", [Anchor("before", "move")]),
        ("what concert did she go to around her birthday", [Anchor("around", "birthday")]),
        ("What did Omar start after his surgery?", [Anchor("after", "surgery")]),
        ("since the wedding", [Anchor("after", "wedding")]),
        ("what did X do after the adoption meeting", [Anchor("after", "adoption meeting")]),
        ("before the move to Denver", [Anchor("before", "move")]),  # stops at a stopword
        ("during the summer", []),  # a time, not an event
        ("before last week", []),
        ("after lunch", []),  # no determiner: too vague to look up
    ],
)
def test_events_a_question_is_placed_against(query: str, expected: list[Anchor]) -> None:
    assert anchors(query) == expected


def test_an_anchor_reaches_before_after_or_around_the_event() -> None:
    moment = datetime(2023, 10, 1, 12)
    before = Anchor("before", "move").span(moment)
    after = Anchor("after", "move").span(moment)
    around = Anchor("around", "birthday").span(moment)
    assert before.contains(datetime(2023, 9, 5)) and not before.contains(moment)
    assert not before.contains(datetime(2023, 6, 1))
    assert after.contains(datetime(2023, 11, 14)) and not after.contains(moment)
    assert not after.contains(datetime(2023, 9, 30))
    assert around.contains(moment) and around.contains(datetime(2023, 9, 20))
    assert not around.contains(datetime(2023, 10, 20))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Omar first say about his new job?", "first"),
        ("what was the earliest trip", "first"),
        ("What did Nadia bake most recently?", "last"),
        ("what is the latest on the billing service", "last"),
        ("When did Melanie go camping?", None),
    ],
)
def test_order_words(query: str, expected: str | None) -> None:
    assert order(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What is my current personal best for the 5K?", True),
        ("How many tops have I bought from H&M so far?", True),
        ("Where do I keep my bike now?", True),
        ("What was my previous personal best time?", False),
        ("Where did I initially keep my old sneakers?", False),
        ("How often do I attend yoga classes?", False),
        ("I know that nowhere is safe", False),
    ],
)
def test_questions_about_how_things_stand_now(query: str, expected: bool) -> None:
    assert asks_present(query) is expected
