"""The recall harness (bench/quality/recall_inject.py) on a tiny haystack whose answer is known,
through the real service in process: the block the UserPromptSubmit recall gives, scored."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.quality import recall_inject as recall_bench
from tests.test_bench_longmemeval import HAYSTACK

pytestmark = pytest.mark.integration


def test_the_block_is_scored_for_evidence_tokens_and_abstentions(tmp_path: Path) -> None:
    store = recall_bench.Store(tmp_path / "data")
    try:
        store.fill(HAYSTACK, None)
        details: list = []
        report = recall_bench.run_longmemeval(store, HAYSTACK, "defaults", details)
    finally:
        store.close()
    assert report["prompts"] == 1 and report["evidence_in"] == 1.0 and report["evidence_whole"] == 1.0
    assert 0 < report["tokens"]["mean"] <= 1200 / recall_bench.CHARS_PER_TOKEN  # within the budget
    assert report["abstention"]["questions"] == 1
    assert [d["split"] for d in details] == ["longmemeval", "longmemeval_abs"]
    assert details[0]["given"][0]["relative"] == 1.0  # the first memory is its own reference
