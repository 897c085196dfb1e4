"""Local categorisation: the pure ranking rule."""

import numpy as np

from claude_code_memory.search.categories import MAX_CATEGORIES, MIN_SIMILARITY, rank


def _unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def test_rank_picks_the_closest_and_close_runners_up() -> None:
    centroids = np.stack([_unit([1, 0, 0]), _unit([0.97, 0.25, 0]), _unit([0, 0, 1])])
    assert rank(_unit([1, 0.05, 0]), centroids, ["a", "b", "c"]) == ["a", "b"]
    assert rank(_unit([0, 0.1, 1]), centroids, ["a", "b", "c"]) == ["c"]


def test_rank_says_nothing_when_nothing_fits() -> None:
    centroids = np.stack([_unit([1, 0, 0]), _unit([0, 1, 0])])
    far = _unit([-1, -1, 0.01])
    assert rank(far, centroids, ["a", "b"]) == []
    assert MIN_SIMILARITY > 0 and MAX_CATEGORIES >= 1
