"""What a write asks for, checked and put together for the policy gate: the arguments of
:meth:`.writes.Writes.add_memory`, and a batch item's fields as those arguments."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...errors import BadInput
from ...policy.gate import Write
from ...store.values import validate_app_name, validate_text
from ..organise.scopes import project_name, scope_of
from ..read_model.shapes import naive_utc


def make_write(
    *,
    user_id: str,
    app_name: str,
    text: str,
    metadata: dict[str, Any] | None,
    channel: str,
    project: str | None,
    task: str | None,
    conversation_id: str | None,
    model: str | None = None,
    captured_at: datetime | None = None,
    redacted_upstream: int = 0,
) -> Write:
    """A write's arguments checked (``BadInput``) and put together for the gate."""
    text = validate_text(text)
    if metadata is not None and not isinstance(metadata, dict):
        raise BadInput("metadata must be a JSON object")
    scope = scope_of(project, task)
    # A capture names its working directory; its scope is the name the hooks give it.
    named = project_name(scope.project) if channel == "capture" else scope.project
    return Write(
        user_id=user_id,
        app=validate_app_name(app_name),
        text=text,
        channel=channel,
        metadata=dict(metadata or {}),
        project=named,
        conversation_id=conversation_id,
        model=model,
        captured_at=naive_utc(captured_at),  # as the database keeps it, whoever wrote it
        redacted_upstream=redacted_upstream,
        task=scope.task,
        origin=scope.project if named != scope.project else None,
    )


def item_arguments(item: dict[str, Any]) -> dict[str, Any]:
    """A batch item's fields as :meth:`.writes.Writes.add_memory` takes them."""
    return {
        "text": item.get("text"),
        "metadata": item.get("metadata"),
        "infer": bool(item.get("infer", False)),
        "project": item.get("project"),
        "task": item.get("task"),
        "conversation_id": item.get("conversation_id"),
        "captured_at": item.get("captured_at"),
    }
