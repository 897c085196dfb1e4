"""The keyword arguments of one write, as a type: ``Writes.add_memory(**write)``,
``Writes.write_memory(**write)`` and ``items.make_write(**write)`` take them, named once here,
so that a type checker checks every caller's keywords.

What they mean: ``infer`` asks a configured LLM to extract facts (mem0's ``infer``);
``channel`` is how the write came (``rest``, ``mcp``, ``capture``, ``import``, ``team``...);
``project``, ``task``, ``conversation_id``, ``model`` and ``captured_at`` are its provenance;
``redacted_upstream`` counts secrets the capture proxy masked before sending it;
``into_paused_app``: an import restores memories into an app as it was, paused or not (the app
is not the one writing); ``mask_pii``: mask personal data whatever ``privacy.mask_pii`` says (a
team share, memories/teams/sharing.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Required, TypedDict

#: How a write came when its caller does not say.
DEFAULT_CHANNEL = "rest"


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
    mask_pii: bool
