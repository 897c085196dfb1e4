"""The small shared values: one ISO format for every JSON shape, and one memory-state enum."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from claude_code_memory.memories.read_model import shapes
from claude_code_memory.store import values


def test_iso_gives_utc_with_one_z_for_naive_and_aware_times() -> None:
    naive = datetime(2026, 3, 1, 12, 30, 5)
    assert values.iso(naive) == "2026-03-01T12:30:05Z"
    assert values.iso(naive.replace(tzinfo=UTC)) == "2026-03-01T12:30:05Z"  # never "+00:00Z"
    assert values.iso(datetime(2026, 3, 1, 14, 30, 5, tzinfo=timezone(timedelta(hours=2)))) == (
        "2026-03-01T12:30:05Z"
    )
    assert values.iso(None) is None


def test_the_read_model_shapes_use_the_same_iso() -> None:
    assert shapes.iso is values.iso


def test_the_database_stores_the_one_enum_every_layer_names() -> None:
    # That every module imports it from domain/memory_state.py, and that the module imports
    # nothing of the package, is test_architecture.py's to check.
    from claude_code_memory.db.models import Memory
    from claude_code_memory.domain.memory_state import MemoryState

    assert Memory.__table__.c.state.type.enum_class is MemoryState
    assert MemoryState("pending") is MemoryState.pending
