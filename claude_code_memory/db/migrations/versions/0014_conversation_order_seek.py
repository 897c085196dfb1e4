"""conversation order: the index also holds ``created_at``, so a turn's neighbour is one seek

A turn's neighbours are the turns right before and after it in ``(captured_at, created_at)``
order. With ``created_at`` out of the index, and the order written as an OR of two
comparisons, finding one neighbour read every turn of the conversation: a search's neighbour
step cost ~0.8 ms at 20 turns a conversation and ~30 ms at 2,000 (docs/performance.md). With
both columns in the index and the order written as a row-value comparison, each neighbour is an
index seek, whatever the conversation's length.

Revision ID: 0014
Revises: 0013
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

NAME = "ix_memories_conversation_order"


def upgrade() -> None:
    op.drop_index(NAME, table_name="memories")
    op.create_index(NAME, "memories", ["user_id", "conversation_id", "captured_at", "created_at"])


def downgrade() -> None:
    op.drop_index(NAME, table_name="memories")
    op.create_index(NAME, "memories", ["user_id", "conversation_id", "captured_at"])
