"""A new memory's SQL row, and what the write path asks the database about rows.

The single write (:mod:`.writes`) and the batch (:mod:`.batch`) build their rows here, so both
store the same columns and read the unique index's refusal the same way; neither reaches into
the other.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ...db.models import ConsentDecision, Memory
from ...domain.memory_state import MemoryState
from ...policy.gate import Admitted


def row_values(
    admitted: Admitted,
    memory_id: uuid.UUID,
    user_pk: uuid.UUID,
    app_pk: uuid.UUID,
    state: MemoryState,
    now: datetime,
) -> dict[str, Any]:
    """A new memory row's columns, under the attribute names ``Memory(**values)`` and
    ``insert(Memory)`` take. ``now`` comes from the writer's clock, the one retention
    compares against."""
    write = admitted.write
    return dict(
        id=memory_id,
        created_at=now,
        updated_at=now,
        user_id=user_pk,
        app_id=app_pk,
        content=admitted.text,
        content_hash=admitted.content_hash,
        metadata_={**admitted.metadata, "channel": write.channel},
        state=state,
        channel=write.channel,
        project=write.project,
        task=write.task,
        conversation_id=write.conversation_id,
        model=write.model,
        # A turn of a conversation always has a time: conversations are ordered by it.
        captured_at=write.captured_at or (now if write.conversation_id else None),
        consent=admitted.consent,
        redactions=admitted.redactions,
        expires_at=admitted.expires_at,
        path=write.path,
    )


def consent_decision(
    admitted: Admitted, memory_id: uuid.UUID, user_pk: uuid.UUID, decided_by: str
) -> ConsentDecision | None:
    """The record of the consent a stored write had (a rule or an approval), if any."""
    if admitted.consent not in ("rule", "approved", "approved_edited"):
        return None
    return ConsentDecision(
        memory_id=memory_id,
        user_id=user_pk,
        decision="allowed" if admitted.consent == "rule" else "approved",
        decided_by=decided_by or f"rule:{admitted.rule_id}",
        rule_id=admitted.rule_id,
        edited=admitted.consent == "approved_edited",
    )


def stored(session: Session, user_pk: uuid.UUID, digest: str | None) -> Memory | None:
    """The user's memory with this text, in any state but deleted (which keeps no hash)."""
    if digest is None:
        return None
    return session.scalar(select(Memory).where(Memory.user_id == user_pk, Memory.content_hash == digest))


def stored_twins(session: Session, user_pk: uuid.UUID, digests: list[str]) -> dict[str, Memory]:
    """The user's stored memories (any state but deleted) whose text one of several writes
    would store, by its hash."""
    found: dict[str, Memory] = {}
    listed = sorted(set(digests))
    for start in range(0, len(listed), 500):  # SQLite's bound-parameter limit, with room
        chunk = listed[start : start + 500]
        for memory in session.scalars(
            select(Memory).where(Memory.user_id == user_pk, Memory.content_hash.in_(chunk))
        ):
            found[str(memory.content_hash)] = memory
    return found


def same_text(exc: IntegrityError) -> bool:
    """Whether the database refused a row because the user has this text already (the unique
    index on the user and the text's hash), not for another constraint."""
    message = str(exc.orig)
    return "idx_memory_user_hash" in message or "memories.user_id, memories.content_hash" in message
