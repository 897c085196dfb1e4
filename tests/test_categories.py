"""Local categorisation: the pure ranking rule."""

import numpy as np

from claude_code_memory.memories.write.categories import MAX_CATEGORIES, MIN_SIMILARITY, rank, with_cues


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


def test_a_stated_preference_is_a_preference_whatever_it_is_about() -> None:
    ranked = ["technical support", "projects", "preferences"]
    assert with_cues("I prefer pytest over unittest", ranked) == [
        "preferences",
        "technical support",
        "projects",
    ]
    assert with_cues("I'd rather use tabs", ["work"]) == ["preferences", "work"]
    assert with_cues("My favourite editor is Helix", []) == ["preferences"]
    assert with_cues("I always use uv for virtualenvs", ranked)[0] == "preferences"
    # No cue: the embedding's ranking stands ("likely" and "unlikely" are not "like").
    assert with_cues("The linker fails; a fix is likely in 2.1", ranked) == ranked
    assert with_cues("Tests fail on CI", ranked) == ranked
