"""What a write asks for, checked and put together for the policy gate: the arguments of
:meth:`.writes.Writes.add_memory`, and a batch item's fields as those arguments."""

from __future__ import annotations

from typing import Any, Unpack

from ...errors import BadInput
from ...policy.gate import Write
from ...store.values import validate_app_name, validate_text
from ..organise.scopes import project_name, scope_of
from ..read_model.shapes import naive_utc
from .arguments import DEFAULT_CHANNEL, WriteArguments


def make_write(**write: Unpack[WriteArguments]) -> Write:
    """A write's arguments checked (``BadInput``) and put together for the gate (the options
    of how it is stored, ``infer``, ``into_paused_app`` and ``mask_pii``, are not the gate's)."""
    text = validate_text(write["text"])
    metadata = write.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise BadInput("metadata must be a JSON object")
    scope = scope_of(write.get("project"), write.get("task"))
    channel = write.get("channel", DEFAULT_CHANNEL)
    # A capture names its working directory; its scope is the name the hooks give it.
    named = project_name(scope.project) if channel == "capture" else scope.project
    return Write(
        user_id=write["user_id"],
        app=validate_app_name(write["app_name"]),
        text=text,
        channel=channel,
        metadata=dict(metadata or {}),
        project=named,
        conversation_id=write.get("conversation_id"),
        model=write.get("model"),
        captured_at=naive_utc(write.get("captured_at")),  # as the database keeps it, whoever wrote it
        redacted_upstream=write.get("redacted_upstream", 0),
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
