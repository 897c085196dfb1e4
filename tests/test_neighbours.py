"""Nearest neighbours for the hygiene scan: the exact search against a plain reference, the
clustered search (large stores) against the exact one, and the scan's proposals the same
whichever of the two found the neighbours."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest

from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder
from claude_code_memory.memories.hygiene import neighbours as nb
from claude_code_memory.memories.hygiene.scan import Item, Thresholds, scan
from tests.corpora import hygiene_corpus


def planted(count: int, seed: int = 5) -> np.ndarray:
    """Random unit vectors, a third of them in tight groups of 2 to 20 near-copies (more than
    ``K`` in some, so which neighbours are kept matters), with similarities spread around 0.7."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(0, 1, (count, 64)).astype(np.float32)
    row = 0
    while row < count // 3:
        size = int(rng.integers(2, 21))
        centre = rng.normal(0, 1, 64)
        spread = float(rng.uniform(0.2, 0.9))
        for offset in range(min(size, count // 3 - row)):
            vectors[row + offset] = centre + rng.normal(0, spread, 64)
        row += size
    return nb.unit_rows(vectors)


def reference(unit: np.ndarray, floor: float, k: int) -> nb.Neighbours:
    """The contract spelled out on the full matrix: similarities to DECIMALS places, at least
    the floor, nearest first, ties to the lower row, at most k, never the row itself."""
    rounded = np.rint(unit.astype(np.float64) @ unit.T.astype(np.float64) * 10**nb.DECIMALS)
    out = []
    for row in range(len(unit)):
        hits = [
            (col, rounded[row, col])
            for col in range(len(unit))
            if col != row and rounded[row, col] >= round(floor * 10**nb.DECIMALS)
        ]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        out.append([(col, value / 10**nb.DECIMALS) for col, value in hits[:k]])
    return out


def test_the_exact_search_keeps_its_contract() -> None:
    unit = planted(300)
    found = nb.exact(unit, 0.7, k=8)
    expected = reference(unit, 0.7, 8)
    assert [[col for col, _ in row] for row in found] == [[col for col, _ in row] for row in expected]
    pairs = zip(found, expected, strict=True)
    assert max(abs(a - b) for f, e in pairs for (_, a), (_, b) in zip(f, e, strict=True)) < 2e-4
    assert sum(map(len, found)) > 300  # the groups are there: the test sees truncation at k


def test_ties_go_to_the_lower_row_whatever_the_order_of_work() -> None:
    unit = nb.unit_rows(np.vstack([np.ones((12, 8)), np.eye(8)]).astype(np.float32))
    assert [col for col, _ in nb.exact(unit, 0.9, k=3)[5]] == [0, 1, 2]
    assert nb.clustered(unit, 0.9, k=3) == nb.exact(unit, 0.9, k=3)


def test_some_rows_only() -> None:
    unit = planted(500)
    rows = np.array([3, 499, 0, 250])
    everything = nb.exact(unit, 0.6)
    assert nb.exact(unit, 0.6, rows=rows) == [everything[row] for row in rows]


@pytest.mark.parametrize(("floor", "probes"), [(0.7, nb.PROBES), (0.85, nb.PROBES), (0.7, nb.PROBES // 2)])
def test_the_clustered_search_finds_what_the_exact_one_finds(floor: float, probes: int) -> None:
    """With half the probes too (a margin): there, a pair found only from one of its rows'
    side must still count for the other row."""
    unit = planted(4000)
    assert nb.clustered(unit, floor, probes=probes) == nb.exact(unit, floor)


def test_the_clustered_search_is_approximate_far_below_the_floors_the_job_uses() -> None:
    """Pairs this loose (0.4, 0.5 on vectors spread this wide) lie in lists their rows do not
    probe more often, and some are missed. The job's floor is 0.7 (the lower of its thresholds)."""
    unit = planted(4000)
    for floor, at_least in ((0.5, 0.999), (0.4, 0.95)):
        exact, clustered = nb.exact(unit, floor), nb.clustered(unit, floor)
        found = sum(len({c for c, _ in e} & {c for c, _ in f}) for e, f in zip(exact, clustered, strict=True))
        assert found / sum(map(len, exact)) >= at_least


def test_the_scan_proposes_the_same_from_either_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The labelled corpus (real embeddings) scanned twice: every pair compared, then the
    clustered search forced; the proposals are the same, to their kept memory and score."""
    now = datetime(2025, 6, 1)
    rows = hygiene_corpus.load()
    items = [
        Item(
            id=row["key"],
            text=row["text"],
            created_at=now - timedelta(days=row["age_days"], minutes=index),
            last_recalled=None
            if row["recalled_days_ago"] is None
            else now - timedelta(days=row["recalled_days_ago"]),
        )
        for index, row in enumerate(rows)
    ]
    vectors = OnnxMiniLmEmbedder(cache_size=0).embed_batch([item.text for item in items])
    exact = scan(items, vectors, Thresholds(), now)
    monkeypatch.setattr(nb, "EXACT_UP_TO", 0)
    clustered = scan(items, vectors, Thresholds(), now)
    assert len(exact) > 200
    assert [(f.kind, f.ids, f.keep, f.score) for f in clustered] == [
        (f.kind, f.ids, f.keep, f.score) for f in exact
    ]
