"""Recurring topics: memories clustered by the words they share, each cluster labelled by its
key terms. Pure and deterministic: the same texts in the same order give the same clusters.

    clusters(documents, threshold=0.3) -> [Cluster(label, terms, members)]

TF-IDF over content words (:func:`.patterns.terms`; words in one document only, or in more than
half of ten or more, say nothing about a topic), then one pass in the documents' order: each joins the
cluster whose centroid is most similar (cosine, at least ``threshold``) or starts a new one.
Documents are sparse, so a pass costs a few multiplications per cluster and shared term.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from .patterns import terms

DEFAULT_THRESHOLD = 0.3
LABEL_TERMS = 3
#: Below this many documents no word is too common to be a topic's.
SMALL = 10


@dataclass
class Cluster:
    weights: dict[str, float] = field(default_factory=dict)  # the sum of its members' vectors
    norm2: float = 0.0
    members: list[int] = field(default_factory=list)

    def add(self, index: int, vector: dict[str, float]) -> None:
        dot = sum(weight * self.weights.get(term, 0.0) for term, weight in vector.items())
        self.norm2 += 2 * dot + sum(w * w for w in vector.values())
        for term, weight in vector.items():
            self.weights[term] = self.weights.get(term, 0.0) + weight
        self.members.append(index)

    def terms(self, count: int = LABEL_TERMS) -> list[str]:
        ranked = sorted(self.weights.items(), key=lambda item: (-item[1], item[0]))
        return [term for term, _ in ranked[:count]]


def vectors(documents: Sequence[str]) -> list[dict[str, float]]:
    """Each document's TF-IDF weights (sub-linear term frequency) over the informative terms."""
    counted = [Counter(terms(text)) for text in documents]
    frequency: Counter[str] = Counter()
    for counts in counted:
        frequency.update(counts.keys())
    total = len(documents)
    most = total if total < SMALL else total // 2  # in a handful, a shared word is the topic
    idf = {term: math.log((1 + total) / (1 + df)) + 1 for term, df in frequency.items() if 2 <= df <= most}
    return [
        {term: (1 + math.log(count)) * idf[term] for term, count in counts.items() if term in idf}
        for counts in counted
    ]


def clusters(documents: Sequence[str], threshold: float = DEFAULT_THRESHOLD) -> list[Cluster]:
    """The documents grouped by shared terms, in the order the clusters were started."""
    found: list[Cluster] = []
    holding: dict[str, list[int]] = {}  # term -> the clusters whose centroid has it
    for index, vector in enumerate(vectors(documents)):
        if not vector:
            continue
        norm = math.sqrt(sum(w * w for w in vector.values()))
        dots: dict[int, float] = {}
        for term, weight in vector.items():
            for number in holding.get(term, ()):
                dots[number] = dots.get(number, 0.0) + weight * found[number].weights[term]
        best, best_score = -1, threshold
        for number in sorted(dots):
            score = dots[number] / (math.sqrt(found[number].norm2) * norm)
            if score > best_score or (score == best_score and best < 0):
                best, best_score = number, score
        if best < 0:
            best = len(found)
            found.append(Cluster())
        cluster = found[best]
        for term in vector:
            if term not in cluster.weights:
                holding.setdefault(term, []).append(best)
        cluster.add(index, vector)
    return found
