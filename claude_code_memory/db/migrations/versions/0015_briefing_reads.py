"""briefing reads: a memory counts its recalls, and a scope's newest and most recalled are seeks

A SessionStart briefing shows a project's most recalled memories, then its newest. Both read
more than they show: the most recalled counted every recall in the access log on each session
start (~130 ms at 25k log rows), and the newest sorted all of the user's memories of the scope
(~400 ms at 1M memories); the tiers' refresh after each session start counted the log again for
each segment's visits. ``memories.recalls`` now counts a memory's recalls (the access log's
``search`` and ``injected`` rows) and ``memories.recalled_at`` holds the last one's time
(counted here once for the log as it is, then kept by the log's writer), and two indexes make
the briefing's reads a seek: ``(user_id, project, created_at)``, and
``(user_id, project, recalls, created_at)`` over recalled memories only.

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

RECALLED = sa.text("recalls > 0")


def upgrade() -> None:
    # Re-runnable, as the migrations before it: a database stamped older may hold these already.
    inspector = sa.inspect(op.get_bind())
    columns = {column["name"] for column in inspector.get_columns("memories")}
    indexes = {index["name"] for index in inspector.get_indexes("memories")}
    # A plain column add (no batch copy): a table copy on SQLite would drop the keyword index's triggers.
    if "recalls" not in columns:
        op.add_column("memories", sa.Column("recalls", sa.Integer(), nullable=False, server_default="0"))
    if "recalled_at" not in columns:
        op.add_column("memories", sa.Column("recalled_at", sa.DateTime(), nullable=True))
    recalled = (
        "SELECT {} FROM memory_access_logs l"
        " WHERE l.memory_id = memories.id AND l.access_type IN ('search', 'injected')"
    )
    op.execute(
        f"UPDATE memories SET recalls = ({recalled.format('count(*)')}),"
        f" recalled_at = ({recalled.format('max(l.accessed_at)')})"
        " WHERE id IN (SELECT memory_id FROM memory_access_logs WHERE access_type IN ('search', 'injected'))"
    )
    if "ix_memories_recent" not in indexes:
        op.create_index("ix_memories_recent", "memories", ["user_id", "project", "created_at"])
    if "ix_memories_recalled" not in indexes:
        op.create_index(
            "ix_memories_recalled",
            "memories",
            ["user_id", "project", "recalls", "created_at"],
            sqlite_where=RECALLED,
            postgresql_where=RECALLED,
        )


def downgrade() -> None:
    op.drop_index("ix_memories_recalled", table_name="memories")
    op.drop_index("ix_memories_recent", table_name="memories")
    op.drop_column("memories", "recalled_at")
    op.drop_column("memories", "recalls")
