"""The small values every memory path shares: ids, names, text, timestamps and mem0's item shape.

Pure functions over plain values; each raises :class:`BadInput` for what a caller sent wrong.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from ..db.models import Memory, MemoryFields
from ..errors import BadInput, Forbidden

APP_NAME_MAX = 64
#: The app REST writes go to when the caller names none (OpenMemory's default).
DEFAULT_APP = "openmemory"


def parse_memory_id(value: object) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        raise BadInput(f"invalid memory id {value!r}: expected a UUID") from None


def hex_id(memory_id: str) -> str:
    """A canonical UUID string in the form SQLite stores it (32 hex digits), by dropping the
    dashes: parsing each id was much of reading ~100 rows by id."""
    return memory_id.replace("-", "").lower()


def dashed_id(hex_id: str) -> str:
    """A UUID's 32 hex characters (the form SQLite stores) in the canonical form, as
    ``str(uuid.UUID(hex_id))`` gives it, by slicing: parsing was the cost of bulk id reads."""
    return f"{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-{hex_id[20:]}"


def iso(value: datetime | None) -> str | None:
    """UTC as ISO 8601 with one "Z"; an aware time (the reconciliation report's) is converted
    first, so it never reads "+00:00Z"."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat() + "Z"


def validate_app_name(app_name: object) -> str:
    if not isinstance(app_name, str) or not app_name.strip() or len(app_name) > APP_NAME_MAX:
        raise BadInput(f"invalid app name {app_name!r}: 1-{APP_NAME_MAX} characters")
    return app_name.strip()


def validate_text(text: object, what: str = "text") -> str:
    """Non-empty text. Length caps are policy (performance.max_memory_chars), applied by the gate."""
    if not isinstance(text, str) or not text.strip():
        raise BadInput(f"{what} must be a non-empty string")
    return text


def require_active(app_name: str, is_active: bool, action: str) -> None:
    if not is_active:
        raise Forbidden(f"App {app_name} is currently paused. Cannot {action}.")


def mem0_item(memory: MemoryFields, app_name: str, score: float | None = None) -> dict[str, Any]:
    """A memory as mem0 returns items: ``{id, memory, hash, created_at, updated_at, [score], metadata}``."""
    item: dict[str, Any] = {
        "id": str(memory.id),
        "memory": memory.content,
        "hash": memory.content_hash,
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
    }
    if memory.captured_at is not None:
        item["captured_at"] = iso(memory.captured_at)  # when it happened, if not when stored
    if score is not None:
        item["score"] = score
    item["metadata"] = {**(memory.metadata_ or {}), "app": app_name}
    return item


def epoch_seconds(moment: datetime) -> float:
    """A naive-UTC datetime (as the database stores them) as epoch seconds."""
    return moment.replace(tzinfo=UTC).timestamp()


def already_existed(memory: Memory) -> dict[str, Any]:
    """The mem0-style result for a write that de-duplication turned away."""
    return {
        "id": str(memory.id),
        "memory": memory.content,
        "event": "NONE",
        "already_existed": True,
        "state": memory.state.value,
    }
