"""The side-by-side bench's grouping of searches by the time their query names (bench/perf/ab.py
``when_of``): every query the benches ask (bench/harness/synthetic.py) falls in exactly the group
of the time it ends with."""

from __future__ import annotations

import itertools
from collections import Counter

from bench.harness import synthetic
from bench.perf import ab as bench_ab


def test_each_query_is_grouped_by_the_time_it_names() -> None:
    assert bench_ab.when_of("Alice deployed PostgreSQL 16 last week") == "last week"
    assert bench_ab.when_of("I prefers pytest fixtures yesterday") == "yesterday"
    assert bench_ab.when_of("Bob recommended vegetarian lasagna") == "none"
    # A time inside the query, not at its end, is not the one it names for the grouping.
    assert bench_ab.when_of("yesterday Bob recommended vegetarian lasagna") == "none"
    queries = list(itertools.islice(synthetic.fresh_queries(), 700))
    groups = Counter(bench_ab.when_of(query) for query in queries)
    assert set(groups) == {when or "none" for when in synthetic.WHEN}
    for query in queries:
        when = bench_ab.when_of(query)
        assert (when == "none") == (not any(query.endswith(" " + w) for w in synthetic.WHEN if w))
