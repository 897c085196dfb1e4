"""JSON shapes of the OpenMemory contract, built from ORM rows (the edges serialise with these)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from ...db.models import App, Memory, MemoryFields

# One ISO format for every JSON shape: UTC with one "Z" (the routes that import it from here
# get the same function as the stored values' shapes in store/values.py).
from ...store.values import iso


def epoch(value: datetime | None) -> int | None:
    """Naive-UTC datetime → epoch seconds, as OpenMemory's MemoryResponse has it."""
    if value is None:
        return None
    from datetime import UTC

    return int(value.replace(tzinfo=UTC).timestamp())


def naive_iso(value: datetime | None) -> str | None:
    """UTC without the "Z", for the routes whose OpenMemory UI code appends one itself (the
    access log, an app's memories): a second "Z" makes its dates "Invalid Date"."""
    return value.isoformat() if value else None


def naive_utc(value: datetime | None) -> datetime | None:
    """A datetime from a request as the naive UTC the database stores (naive input is UTC)."""
    if value is not None and value.tzinfo is not None:
        from datetime import UTC

        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def neighbour(memory: MemoryFields) -> dict[str, Any]:
    """A neighbouring turn shown as a search hit's context."""
    return {
        "id": str(memory.id),
        "content": memory.content,
        "created_at": epoch(memory.created_at),
        "captured_at": iso(memory.captured_at),
    }


def category_names(memory: Memory) -> list[str]:
    """Sorted, as search returns them."""
    return sorted(c.name for c in memory.categories)


def memory_response(memory: Memory, app_name: str | None = None) -> dict[str, Any]:
    """OpenMemory's MemoryResponse: list and filter items."""
    body = {
        "id": str(memory.id),
        "content": memory.content,
        "created_at": epoch(memory.created_at),
        "state": memory.state.value,
        "app_id": str(memory.app_id),
        "app_name": app_name if app_name is not None else memory.app.name,
        "categories": category_names(memory),
        "metadata_": memory.metadata_ or {},
    }
    if memory.path:  # a memory-tool file: its path (other memories keep OpenMemory's exact shape)
        body["path"] = memory.path
    return body


def provenance(memory: MemoryFields, app_name: str) -> dict[str, Any]:
    """Where a memory came from (``app_name``: its app's) and under what consent and retention."""
    return {
        "channel": memory.channel,
        "app": app_name,
        "project": memory.project,
        "task": memory.task,
        "conversation_id": memory.conversation_id,
        "model": memory.model,
        "captured_at": iso(memory.captured_at),
        "consent": memory.consent,
        "redactions": memory.redactions or 0,
        "expires_at": iso(memory.expires_at),
    }


def memory_detail(memory: Memory) -> dict[str, Any]:
    """GET /memories/{id}: the same as MemoryResponse but the text is under ``text``."""
    body = memory_response(memory)
    body["text"] = body.pop("content")
    body["user_id"] = memory.user.user_id
    body["updated_at"] = epoch(memory.updated_at)
    body["provenance"] = provenance(memory, memory.app.name)
    return body


def memory_row(
    memory: Memory, app_name: str | None = None, categories: list[str] | None = None
) -> dict[str, Any]:
    """The raw row OpenMemory's create and update routes return. ``app_name`` and
    ``categories``: the row's, when the caller knows them (a row just written), else they are
    read through its relationships."""
    return {
        "id": str(memory.id),
        "user_id": str(memory.user_id),
        "app_id": str(memory.app_id),
        "content": memory.content,
        "vector": None,
        "metadata_": memory.metadata_ or {},
        "state": memory.state.value,
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
        "archived_at": iso(memory.archived_at),
        "deleted_at": iso(memory.deleted_at),
        "categories": sorted(categories) if categories is not None else category_names(memory),
        "provenance": provenance(memory, app_name if app_name is not None else memory.app.name),
    }


def app_row(app: App) -> dict[str, Any]:
    return {
        "id": str(app.id),
        "owner_id": str(app.owner_id),
        "name": app.name,
        "description": app.description,
        "metadata_": app.metadata_ or {},
        "is_active": app.is_active,
        "created_at": iso(app.created_at),
        "updated_at": iso(app.updated_at),
    }


def page(items: list[Any], total: int, page_number: int, size: int) -> dict[str, Any]:
    """fastapi-pagination's Page shape, which OpenMemory's list routes return."""
    return {
        "items": items,
        "total": total,
        "page": page_number,
        "size": size,
        "pages": max(1, math.ceil(total / size)) if size else 1,
    }
