"""The keyword arguments of one write, as a type: ``Writes.add_memory(**write)`` names them once
here so that a type checker checks every caller's keywords (``Writes.write_memory`` spells out
the same ones, and mypy checks that the two agree where one passes them to the other)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Required, TypedDict


class WriteArguments(TypedDict, total=False):
    user_id: Required[str]
    app_name: Required[str]
    text: Required[str]
    infer: bool
    metadata: dict[str, Any] | None
    channel: str
    project: str | None
    conversation_id: str | None
    model: str | None
    captured_at: datetime | None
    redacted_upstream: int
    into_paused_app: bool
    task: str | None
