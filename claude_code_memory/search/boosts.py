"""Optional boosts in search: recent memories and often-recalled ones rank higher.

    boost(scored, moments, recalls, now, weights)   re-ranked candidates (pure)
    newer_first(scored, moments, margin)            for questions about the present (pure)

Each candidate's fused score is multiplied by ``1 + recency + recall``:

* ``recency = recency_weight × 0.5 ** (age_days / recency_half_life_days)``, the age taken from
  when the memory happened (``captured_at``, else ``created_at``);
* ``recall = recall_weight × min(1, ln(1 + n) / ln(1 + RECALL_SATURATION))`` for ``n`` earlier
  searches that returned it.

Both weights are 0 by default (``search.*`` in config.yaml): on the LoCoMo development split
neither helped (docs/search.md), and a boost that rewards what was recalled before also keeps
surfacing it. They are for stores where the newest fact should win over an older one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

#: Searches after which a memory's recall boost is full.
RECALL_SATURATION = 20


@dataclass(frozen=True)
class Weights:
    recency_weight: float = 0.0
    recency_half_life_days: float = 30.0
    recall_weight: float = 0.0

    @property
    def enabled(self) -> bool:
        return self.recency_weight > 0 or self.recall_weight > 0


def boost(
    scored: Sequence[tuple[str, float]],
    moments: Mapping[str, datetime],
    recalls: Mapping[str, int],
    now: datetime,
    weights: Weights,
) -> list[tuple[str, float]]:
    """``scored`` (id, score) with each score boosted, best first; an id without a moment gets
    no recency boost, one without recalls no recall boost."""
    boosted = []
    for memory_id, score in scored:
        factor = 1.0
        moment = moments.get(memory_id)
        if weights.recency_weight and moment is not None:
            age_days = max(0.0, (now - moment).total_seconds() / 86400)
            factor += weights.recency_weight * 0.5 ** (age_days / weights.recency_half_life_days)
        count = recalls.get(memory_id, 0)
        if weights.recall_weight and count > 0:
            factor += weights.recall_weight * min(1.0, math.log1p(count) / math.log1p(RECALL_SATURATION))
        boosted.append((memory_id, score * factor))
    return sorted(boosted, key=lambda pair: pair[1], reverse=True)


#: How many of the best candidates :func:`newer_first` reorders.
PRESENT_DEPTH = 10


def newer_first(
    scored: Sequence[tuple[str, float]], moments: Mapping[str, datetime], margin: float
) -> list[tuple[str, float]]:
    """The best :data:`PRESENT_DEPTH` candidates with each one that is newer than one ranked
    above it, and scores within ``margin`` (a share) of it, moved just above it; best first.

    Two memories that answer a question about the present about equally well are most often
    two states of one thing ("my best is 27 minutes", later "a new best: 25"): the newer holds
    what stands now. A candidate without a moment stays where it is."""
    ids = [memory_id for memory_id, _ in scored[:PRESENT_DEPTH]]
    scores = {memory_id: score for memory_id, score in scored[:PRESENT_DEPTH]}
    for moved in list(ids):
        when = moments.get(moved)
        if when is None:
            continue
        for above in ids[: ids.index(moved)]:
            other = moments.get(above)
            if other is not None and other < when and scores[moved] >= scores[above] * (1 - margin):
                scores[moved] = scores[above] * (1 + 1e-9)
                ids.remove(moved)
                ids.insert(ids.index(above), moved)
                break
    return [(memory_id, scores[memory_id]) for memory_id in ids] + list(scored[PRESENT_DEPTH:])
