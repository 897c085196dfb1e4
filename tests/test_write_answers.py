"""What a single write does beside storing (memories/write/writes.py), with real stores (SQLite,
Qdrant Edge, the ONNX model): it starts embedding the gate's text on another thread while it
reads the database (and never embeds a capture that waits for consent), and its answer is the
row it wrote, exactly as a read of that row gives it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's telemetry switches before mem0 loads
from claude_code_memory.engine.embedder import OnnxMiniLmEmbedder
from claude_code_memory.memories.read_model.shapes import memory_row
from claude_code_memory.memories.service import MemoryService

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def embedder(service: MemoryService) -> OnnxMiniLmEmbedder:
    model = service.vectors.engine.embedder
    assert isinstance(model, OnnxMiniLmEmbedder)
    return model


def test_a_write_embeds_its_redacted_text_once_started_before_the_database_reads(
    service: MemoryService,
) -> None:
    model = embedder(service)
    # The first write embeds the categories' descriptions too: not counted.
    service.writes.add_memory(
        user_id="ann", app_name="claude-code", text="Warming up the categories", channel="rest"
    )
    prefetches, misses = model.prefetches, model.cache_misses
    written = service.writes.write_memory(
        user_id="ann", app_name="claude-code", text=f"The wombat deploy token is {SECRET}", channel="rest"
    )
    [result] = written.results
    assert result["event"] == "ADD" and SECRET not in result["memory"]
    assert model.prefetches == prefetches + 1, "the write started its embedding before the gate's reads"
    assert model.cache_misses == misses + 1, "and the model ran once for it, on the redacted text"
    vector = service.vectors.engine.stored_vectors([result["id"]])[result["id"]]
    fresh = OnnxMiniLmEmbedder(cache_size=0).embed(result["memory"])
    assert max(abs(a - b) for a, b in zip(vector, fresh, strict=True)) < 1e-5


def test_a_capture_waiting_for_consent_is_not_embedded(service: MemoryService) -> None:
    model = embedder(service)
    prefetches, misses = model.prefetches, model.cache_misses
    [result] = service.writes.add_memory(
        user_id="ann",
        app_name="claude-code",
        text="A captured turn about the numbat release",
        channel="capture",
    )
    assert result["event"] == "PENDING"
    assert (model.prefetches, model.cache_misses) == (prefetches, misses)


def test_the_answer_is_the_row_as_a_read_gives_it(service: MemoryService) -> None:
    written = service.writes.write_memory(
        user_id="bob",
        app_name="cursor",
        text="We agreed to ship the importer on Friday, after the review",
        channel="rest",
        metadata={"source": "test", "n": 3},
        project="/work/importer",
        conversation_id="conv-7",
        captured_at=datetime(2026, 3, 4, 7, 6, 7, 890000, tzinfo=timezone(timedelta(hours=2))),
        model="claude-sonnet-4-5",
    )
    [result] = written.results
    stored = written.rows[result["id"]]
    answer = memory_row(stored.memory, stored.app_name, stored.categories)
    assert answer == memory_row(service.reads.get(result["id"], "bob"))
    assert answer["provenance"]["app"] == "cursor" and answer["provenance"]["captured_at"].startswith(
        "2026-03-04T05:06:07.89"
    )

    again = service.writes.write_memory(
        user_id="bob", app_name="cursor", text="we agreed to ship the importer on friday, after the review"
    )
    assert again.results[0]["already_existed"] and again.rows == {}, "a duplicate stores no row"
