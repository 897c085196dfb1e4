"""The side-by-side bench's grouping of searches by the time their query names (bench/bench_ab.py
``when_of``): every query bench_server.py asks falls in exactly the group of the time it ends with."""

from __future__ import annotations

import itertools
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import bench_ab  # noqa: E402
import bench_server  # noqa: E402


def test_each_query_is_grouped_by_the_time_it_names() -> None:
    assert bench_ab.when_of("Alice deployed PostgreSQL 16 last week") == "last week"
    assert bench_ab.when_of("I prefers pytest fixtures yesterday") == "yesterday"
    assert bench_ab.when_of("Bob recommended vegetarian lasagna") == "none"
    # A time inside the query, not at its end, is not the one it names for the grouping.
    assert bench_ab.when_of("yesterday Bob recommended vegetarian lasagna") == "none"
    queries = list(itertools.islice(bench_server.fresh_queries(), 700))
    groups = Counter(bench_ab.when_of(query) for query in queries)
    assert set(groups) == {when or "none" for when in bench_server.WHEN}
    for query in queries:
        when = bench_ab.when_of(query)
        assert (when == "none") == (not any(query.endswith(" " + w) for w in bench_server.WHEN if w))
