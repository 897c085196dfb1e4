"""Dates named in queries (claude_code_memory.search.dates): pure parsing into windows."""

from datetime import datetime

import pytest

from claude_code_memory.search.dates import Window, windows


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What painting did Melanie show on October 13, 2023?", (2023, 10, 13)),
        ("What did Gina find on 1 February, 2023?", (2023, 2, 1)),
        ("what happened on 3rd of March 2024", (2024, 3, 3)),
        ("deploys on 2025-11-02 failed", (2025, 11, 2)),
        ("What workout class did Maria start in December 2023?", (2023, 12, None)),
        ("Sept. 2021 budget", (2021, 9, None)),
        ("When did Melanie go camping in June?", (None, 6, None)),
        ("what did we decide during oct", (None, 10, None)),
        ("How many times has Melanie gone to the beach in 2023?", (2023, None, None)),
    ],
)
def test_dates_in_queries_become_windows(query: str, expected: tuple[int | None, ...]) -> None:
    found = windows(query)
    assert [(w.year, w.month, w.day) for w in found] == [expected]


@pytest.mark.parametrize(
    "query",
    [
        "May I ask what the user prefers?",  # a verb, not a month
        "we march on",
        "the 2023 roadmap",  # a year without in/during is a name more often than a time
        "on 31 February 2023 nothing happened",  # not a day
        "pytest fixtures last week",  # relative: not read
        "mar-a-lago trip in marching band",
    ],
)
def test_words_that_are_not_dates_give_no_window(query: str) -> None:
    assert windows(query) == []


def test_one_phrase_is_read_once_and_several_dates_all_count() -> None:
    found = windows("Between 13 October 2023 and in November?")
    assert [(w.year, w.month, w.day) for w in found] == [(2023, 10, 13), (None, 11, None)]
    assert found[0].text == "13 October 2023"


def test_window_contains() -> None:
    day = Window(2023, 10, 13, "")
    month_any_year = Window(None, 6, None, "")
    year = Window(2023, None, None, "")
    assert day.contains(datetime(2023, 10, 13, 23, 59)) and not day.contains(datetime(2023, 10, 14))
    assert month_any_year.contains(datetime(2019, 6, 1)) and not month_any_year.contains(datetime(2019, 7, 1))
    assert year.contains(datetime(2023, 1, 1)) and not year.contains(datetime(2024, 1, 1))
