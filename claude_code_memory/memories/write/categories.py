"""Categories without a hosted LLM.

OpenMemory asked gpt-4o-mini to pick from a list of suggested categories. We embed a short
description of each default category once (with the same offline model that embeds memories)
and give a memory the categories whose description it is closest to. The vector of the memory
is the one already computed for storage, so categorising costs a 20×384 dot product.

One cue is read from the text itself: a memory that says "I prefer …", "I like …", "my favourite
…" is a preference whatever it is about. The small embedding model alone filed "I prefer pytest
over unittest" under "technical support" (the description's "failing … test" was nearer than
"I prefer").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cached_property

import numpy as np

# name → what memories in it talk about (the text that gets embedded).
DEFAULT_CATEGORIES: dict[str, str] = {
    "personal": "personal life, family, home, hobbies, birthdays, my name and who I am",
    "relationships": "friends, partner, family members, colleagues and people I know",
    "preferences": "what I like or dislike, favourite tools, preferred style, I prefer, always use",
    "health": "health, medical conditions, doctor, medication, exercise, sleep, diet",
    "travel": "travel, trips, flights, hotels, vacation, visiting cities and countries",
    "work": "job, employer, meetings, team, manager, career, office, deadlines at work",
    "education": "studying, courses, university, school, learning, exams, degrees",
    "projects": "a project, repository, codebase, feature being built, roadmap, milestones",
    "ai, ml & technology": "machine learning, AI models, LLMs, embeddings, neural networks, software",
    "technical support": "bugs, errors, stack traces, crashes, debugging, fixing a failing build or test",
    "finance": "money, budget, salary, bank, taxes, investments, expenses, invoices",
    "shopping": "buying things, orders, products, prices, online stores, deliveries",
    "legal": "law, contracts, licenses, compliance, terms, lawyers, legal obligations",
    "entertainment": "movies, music, games, books, TV series, concerts, sports",
    "messages": "emails, chat messages, notifications, replies, conversations to answer",
    "customer support": "customer tickets, support requests, helping users, complaints",
    "product feedback": "feedback on a product, feature requests, user reviews, usability",
    "news": "news, current events, announcements, articles, headlines",
    "organization": "schedules, calendar, todo lists, planning, reminders, notes",
    "goals": "goals, plans, ambitions, resolutions, what I want to achieve",
}

PREFERENCE = "preferences"
_PREFERENCE_CUE = re.compile(
    r"\b(i|we)('d| would)?\s+(really\s+|much\s+|always\s+|usually\s+)?"
    r"(prefer|like|love|dislike|hate|favou?r|rather)\b|\b(my|our)\s+favou?rite\b|\bi\s+(always|never)\s+use\b",
    re.IGNORECASE,
)
MIN_SIMILARITY = 0.18  # below this nothing fits well enough to say
RELATIVE_MARGIN = 0.04  # also keep runners-up this close to the best
MAX_CATEGORIES = 3


def rank(vector: Sequence[float], centroids: np.ndarray, names: Sequence[str]) -> list[str]:
    """The category names for one L2-normalised vector, best first (pure)."""
    scores = centroids @ np.asarray(vector, dtype=np.float32)
    order = np.argsort(-scores)
    best = float(scores[order[0]])
    if best < MIN_SIMILARITY:
        return []
    return [
        names[i]
        for i in order[:MAX_CATEGORIES]
        if float(scores[i]) >= max(MIN_SIMILARITY, best - RELATIVE_MARGIN)
    ]


def with_cues(text: str, names: list[str]) -> list[str]:
    """``names`` (best first) with "preferences" first when the text states a preference (pure)."""
    if not _PREFERENCE_CUE.search(text):
        return names
    return [PREFERENCE, *(name for name in names if name != PREFERENCE)][:MAX_CATEGORIES]


class Categoriser:
    def __init__(self, embed_batch: Callable[[list[str]], list[list[float]]]) -> None:
        self.names = list(DEFAULT_CATEGORIES)
        self._embed_batch = embed_batch

    @cached_property
    def centroids(self) -> np.ndarray:
        # Embedded on first use rather than at start-up (restart time); computing it twice in a
        # race gives the same array.
        vectors = np.asarray(
            self._embed_batch([f"{n}: {d}" for n, d in DEFAULT_CATEGORIES.items()]), dtype=np.float32
        )
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def categorise(self, vector: Sequence[float], text: str = "") -> list[str]:
        return with_cues(text, rank(vector, self.centroids, self.names))
