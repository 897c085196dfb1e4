"""memory-tool paths: a memory may be a file of Anthropic's memory tool, named by its path

``memories.path`` holds the file's canonical path (``/memories/notes.md``) and is NULL for
every other memory. The unique index on ``(user_id, path)`` makes a path name one memory of
its user; deleted memories keep no path (it may say something about their text), so they
never block a new file.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain column and index operations: a batch (table copy) on SQLite would drop the keyword
    # index's triggers.
    op.add_column("memories", sa.Column("path", sa.String(length=512), nullable=True))
    op.create_index("idx_memory_user_path", "memories", ["user_id", "path"], unique=True)


def downgrade() -> None:
    op.drop_index("idx_memory_user_path", table_name="memories")
    op.drop_column("memories", "path")
