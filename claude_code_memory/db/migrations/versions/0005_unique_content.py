"""unique content: one row per user and text, enforced by the database

De-duplication used to be a look-up before the insert, which two writers sending the same text
at the same moment both passed. A unique index on ``(user_id, content_hash)`` makes the
database refuse the second row; the write path then answers "already existed" for it.
Deleted memories keep no hash (their text is gone), so they never block a new write.

Databases written before this may hold duplicates. The oldest row of each group stays; the
others become tombstones like any deleted memory (text and hash cleared). Their vector points
are removed by the start-up reconciliation, which drops every point whose row is deleted.

Revision ID: 0005
Revises: 0004
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("UPDATE memories SET content_hash = NULL WHERE state = 'deleted'")
    op.execute(
        "UPDATE memories SET state = 'deleted', content = '', content_hash = NULL, "
        "deleted_at = CURRENT_TIMESTAMP "
        "WHERE content_hash IS NOT NULL AND EXISTS ("
        " SELECT 1 FROM memories AS older"
        " WHERE older.user_id = memories.user_id AND older.content_hash = memories.content_hash"
        " AND (older.created_at < memories.created_at"
        "      OR (older.created_at = memories.created_at AND older.id < memories.id)))"
    )
    # Plain index operations: a batch (table copy) on SQLite would drop the keyword index's triggers.
    op.drop_index("idx_memory_user_hash", table_name="memories")
    op.create_index("idx_memory_user_hash", "memories", ["user_id", "content_hash"], unique=True)


def downgrade() -> None:
    op.drop_index("idx_memory_user_hash", table_name="memories")
    op.create_index("idx_memory_user_hash", "memories", ["user_id", "content_hash"], unique=False)
