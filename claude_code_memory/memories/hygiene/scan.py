"""One user's memories to hygiene findings: junk, near-duplicate clusters, superseded facts, stale.

    scan(items, vectors, thresholds, now) -> list[Finding]

The text rules are ``policy/hygiene_rules.py``; this adds the vector side: every memory's nearest
neighbours by cosine similarity (``neighbours.py``: every pair up to 20k memories, a clustered
search above), the pairs the rules then confirm, and clusters of them. No I/O: the job in
``hygiene.py`` loads the memories and stores the proposals.

A memory is in at most one finding, taken in the order junk, duplicate, superseded, stale.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from ...policy import hygiene_rules as rules
from .neighbours import neighbours

KINDS = ("junk", "duplicate", "superseded", "stale")


@dataclass(frozen=True)
class Item:
    id: str
    text: str
    created_at: datetime
    #: When a search or recall last returned it; None: never.
    last_recalled: datetime | None = None


@dataclass(frozen=True)
class Thresholds:
    duplicate_similarity: float = 0.85
    supersede_similarity: float = 0.7
    #: Older than this and not recalled within it: stale. 0 turns the rule off.
    stale_days: int = 90


@dataclass
class Finding:
    kind: str
    #: The memories concerned; for "duplicate" and "superseded" the kept one is ``keep``.
    ids: list[str]
    reason: str
    keep: str | None = None
    score: float = 1.0
    texts: dict[str, str] = field(default_factory=dict)


def scan(
    items: Sequence[Item],
    vectors: Sequence[Sequence[float]] | np.ndarray,
    thresholds: Thresholds,
    now: datetime,
    seconds: dict[str, float] | None = None,
) -> list[Finding]:
    """Findings over one user's active memories; ``vectors[i]`` is ``items[i]``'s embedding.
    ``seconds``, if given, gets the time spent on nearest neighbours (``neighbours``) and on
    the rest, the text rules and clustering (``rules``), added to what it holds."""
    started = time.perf_counter()
    findings: list[Finding] = []
    claimed: set[int] = set()

    for index, item in enumerate(items):
        why = rules.junk(item.text)
        if why is not None:
            claimed.add(index)
            findings.append(
                Finding("junk", [item.id], f"junk ({why.replace('_', ' ')})", texts={item.id: item.text})
            )

    live = [i for i in range(len(items)) if i not in claimed]
    matrix = np.asarray(vectors, dtype=np.float32)
    before_neighbours = time.perf_counter()
    near = neighbours(matrix[live], min(thresholds.duplicate_similarity, thresholds.supersede_similarity))
    neighbours_seconds = time.perf_counter() - before_neighbours
    facts = {i: rules.Facts.of(items[i].text) for i in live}

    # Near-duplicates: pairs the vectors and the text rule both call the same fact, clustered.
    parent = {i: i for i in live}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    best: dict[int, float] = {}
    for position, hits in enumerate(near):
        a = live[position]
        for other, score in hits:
            b = live[other]
            if score >= thresholds.duplicate_similarity and rules.same_fact(facts[a], facts[b]):
                parent[root(a)] = root(b)
                best[a] = max(best.get(a, 0.0), score)
                best[b] = max(best.get(b, 0.0), score)
    clusters: dict[int, list[int]] = {}
    for i in live:
        if i in best:
            clusters.setdefault(root(i), []).append(i)
    for members in clusters.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda i: items[i].created_at)
        kept = members[rules.keeper([items[i].text for i in members])]
        claimed.update(members)
        ids = [items[i].id for i in members]
        findings.append(
            Finding(
                "duplicate",
                ids,
                f"{len(members)} memories say the same thing (similarity "
                f"{min(best[i] for i in members):.2f}+); keep the most specific",
                keep=items[kept].id,
                score=min(best[i] for i in members),
                texts={items[i].id: items[i].text for i in members},
            )
        )

    # Superseded: a newer statement about the same subject with another value.
    newest_over: dict[int, tuple[int, float]] = {}
    for position, hits in enumerate(near):
        a = live[position]
        for other, score in hits:
            b = live[other]
            if score < thresholds.supersede_similarity or a in claimed and b in claimed:
                continue
            newer, older = (a, b) if items[a].created_at > items[b].created_at else (b, a)
            if items[newer].created_at == items[older].created_at or older in claimed:
                continue
            if rules.supersedes(facts[newer], facts[older]):
                current = newest_over.get(older)
                if current is None or items[newer].created_at > items[current[0]].created_at:
                    newest_over[older] = (newer, score)
    for older, (newer, score) in sorted(newest_over.items(), key=lambda pair: items[pair[0]].created_at):
        if older in claimed:
            continue
        claimed.add(older)
        findings.append(
            Finding(
                "superseded",
                [items[older].id, items[newer].id],
                f"a newer memory ({items[newer].created_at:%Y-%m-%d}) changes what this one says",
                keep=items[newer].id,
                score=score,
                texts={items[older].id: items[older].text, items[newer].id: items[newer].text},
            )
        )

    if thresholds.stale_days > 0:
        cutoff = now - timedelta(days=thresholds.stale_days)
        for index, item in enumerate(items):
            if index in claimed or item.created_at >= cutoff:
                continue
            if item.last_recalled is not None and item.last_recalled >= cutoff:
                continue
            findings.append(
                Finding(
                    "stale",
                    [item.id],
                    f"not recalled in {thresholds.stale_days} days"
                    + ("" if item.last_recalled else " (never recalled)"),
                    texts={item.id: item.text},
                )
            )
    if seconds is not None:
        seconds["neighbours"] = seconds.get("neighbours", 0.0) + neighbours_seconds
        seconds["rules"] = seconds.get("rules", 0.0) + time.perf_counter() - started - neighbours_seconds
    return findings
