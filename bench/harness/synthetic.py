"""The benches' synthetic memories and queries: sentences from a fixed vocabulary, turned into
conversation turns 30 s apart, and queries that are never asked twice in a run."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

SUBJECTS = [
    "I",
    "My sister",
    "Our team",
    "The backend service",
    "My manager",
    "The CI pipeline",
    "Alice",
    "Bob",
]
VERBS = [
    "prefers",
    "switched to",
    "keeps forgetting",
    "wants to learn",
    "deployed",
    "is debugging",
    "recommended",
]
OBJECTS = [
    "pytest fixtures",
    "PostgreSQL 16",
    "a hiking trip to Norway",
    "vegetarian lasagna",
    "the Rust borrow checker",
    "dark mode in every editor",
    "Kubernetes on bare metal",
    "a piano lesson on Thursdays",
    "TypeScript strict mode",
    "the quarterly budget review",
    "sourdough bread",
    "a flaky integration test",
    "Qdrant payload indexes",
    "the Berlin marathon",
    "Neovim with LSP",
    "an allergy to peanuts",
    "GraphQL subscriptions",
    "jazz records",
]
WHEN = ["yesterday", "last week", "every morning", "since March", "on weekends", "before the release", ""]
#: Where the synthetic conversations start; each turn is 30 s after the one before.
FIRST_TURN = datetime(2024, 1, 1, tzinfo=UTC)


def synthetic(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        words = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(WHEN)]
        words.append(f"(note {i})")
        lines.append(" ".join(w for w in words if w))
    return lines


def provenance(index: int, per_conversation: int) -> dict[str, str]:
    """Where synthetic memory ``index`` was said: its conversation (``per_conversation`` turns
    each) and when (30 s after the turn before); nothing with ``per_conversation`` 0."""
    if not per_conversation:
        return {}
    return {
        "conversation_id": f"bench-{index // per_conversation}",
        "captured_at": (FIRST_TURN + timedelta(seconds=30 * index)).isoformat().replace("+00:00", "Z"),
    }


def fresh_queries(seed: int = 11) -> Iterator[str]:
    """Search queries that are never asked twice in a run (7,056 of them), so the server's
    embedding cache answers none and every search pays for its query's embedding."""
    combos = [
        " ".join(w for w in (s, v, o, when) if w)
        for s in SUBJECTS
        for v in VERBS
        for o in OBJECTS
        for when in WHEN
    ]
    random.Random(seed).shuffle(combos)
    return iter(combos)


def take(queries: Iterator[str], n: int) -> list[str]:
    taken = list(itertools.islice(queries, n))
    if len(taken) < n:
        raise SystemExit("out of distinct queries: use fewer --queries or sizes")
    return taken


Item = str | dict[str, object]


def turns(texts: Sequence[str], first: int, per_conversation: int) -> list[Item]:
    """The texts as conversation turns (``provenance``), the first one being turn ``first``."""
    return [{"text": text, **provenance(first + i, per_conversation)} for i, text in enumerate(texts)]
