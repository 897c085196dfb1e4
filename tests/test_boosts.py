"""Optional search boosts: the pure re-ranking (claude_code_memory.search.boosts) and the service
applying it with real stores (SQLite, Qdrant Edge, the ONNX model)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's telemetry switches before mem0 loads
from claude_code_memory.memories.service import MemoryService
from claude_code_memory.search.boosts import RECALL_SATURATION, Weights, boost, newer_first
from tests.support.parts import open_service

NOW = datetime(2026, 11, 1, 12, 0)


def test_no_weights_leave_the_ranking_alone() -> None:
    scored = [("a", 0.3), ("b", 0.2)]
    assert not Weights().enabled
    assert boost(scored, {"b": NOW}, {"b": 50}, NOW, Weights()) == scored


def test_recency_halves_with_each_half_life() -> None:
    weights = Weights(recency_weight=0.5, recency_half_life_days=30)
    moments = {"old": NOW - timedelta(days=60), "new": NOW, "future": NOW + timedelta(days=3)}
    ranked = dict(
        boost([("old", 1.0), ("new", 1.0), ("future", 1.0), ("unknown", 1.0)], moments, {}, NOW, weights)
    )
    assert ranked == {"new": 1.5, "future": 1.5, "old": 1.0 + 0.5 * 0.25, "unknown": 1.0}


def test_recall_grows_with_the_log_of_past_searches_and_saturates() -> None:
    weights = Weights(recall_weight=0.4)
    ranked = dict(
        boost([("x", 1.0), ("once", 1.0), ("often", 1.0)], {}, {"once": 1, "often": 500}, NOW, weights)
    )
    assert ranked["x"] == 1.0 and ranked["often"] == pytest.approx(1.4)
    assert ranked["once"] == pytest.approx(1 + 0.4 * math.log(2) / math.log(1 + RECALL_SATURATION))


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    with open_service(tmp_path / "data") as opened:
        opened.clock = lambda: NOW
        yield opened


def scores(service: MemoryService, query: str) -> dict[str, float]:
    hits = service.pipeline.search_hits(user_id="alice", app_name="t", query=query, limit=10)
    return {str(hit.memory.id): hit.score for hit in hits}


def test_the_service_boosts_recent_and_recalled_memories_only_when_asked(service: MemoryService) -> None:
    def add(text: str, days_ago: int) -> str:
        when = NOW - timedelta(days=days_ago)
        return service.writes.add_memory(user_id="alice", app_name="t", text=text, captured_at=when)[0]["id"]

    old = add("The team standup is at 9:30 every morning", 60)
    new = add("The team standup moved to 10:00 every morning", 0)
    plain = scores(service, "when is the team standup")
    search = service.settings.search

    search.recency_weight, search.recency_half_life_days = 1.0, 30
    recent = scores(service, "when is the team standup")
    # The same fused scores, each times 1 + 0.5 ** (age / half-life).
    assert recent[new] == pytest.approx(plain[new] * 2.0)
    assert recent[old] == pytest.approx(plain[old] * 1.25)

    search.recency_weight, search.recall_weight = 0.0, 0.5
    service.access_log.flush()  # both searches so far returned both memories
    recalled = scores(service, "when is the team standup")
    factor = 1 + 0.5 * math.log(1 + 2) / math.log(1 + RECALL_SATURATION)
    assert recalled == pytest.approx({memory_id: score * factor for memory_id, score in plain.items()})


def test_newer_first_moves_a_close_newer_candidate_above_an_older_one() -> None:
    march, may, june = datetime(2023, 3, 1), datetime(2023, 5, 1), datetime(2023, 6, 1)
    scored = [("old", 1.0), ("other", 0.9), ("new", 0.8), ("far", 0.2)]
    moments = {"old": march, "other": march, "new": may, "far": june}
    ranked = newer_first(scored, moments, margin=0.25)
    # "new" is within a quarter of "old" and newer: it moves just above it; "far" is not close.
    assert [memory_id for memory_id, _ in ranked] == ["new", "old", "other", "far"]
    assert ranked[0][1] > 1.0 and dict(ranked)["far"] == 0.2
    # Too far apart for a margin of 0.1: nothing moves.
    assert newer_first(scored, moments, margin=0.1) == scored
    assert newer_first(scored, {}, margin=0.25) == scored  # no moments: as it was
