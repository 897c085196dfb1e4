"""conversation order: every memory of a conversation has a time, and an index to walk it

A memory that belongs to a conversation gets ``captured_at`` (when it was said; the write's
own time when the writer gave none), so the turns of a conversation are ordered by
``(captured_at, created_at)``; the index on ``(user_id, conversation_id, captured_at)`` finds a
turn's neighbours without reading the whole conversation.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "UPDATE memories SET captured_at = created_at "
        "WHERE conversation_id IS NOT NULL AND captured_at IS NULL"
    )
    op.create_index(
        "ix_memories_conversation_order", "memories", ["user_id", "conversation_id", "captured_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_memories_conversation_order", table_name="memories")
