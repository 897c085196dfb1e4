"""insights reads: a user's redacted memories and their memories that expire are seeks

The insights page counts and shows a few of a user's memories that had secrets redacted, and
of those the retention policy deletes soon. Both read every memory of the user (0.8 s and 0.7
s at 1M) to find the few that qualify. Two partial indexes, over those memories only, make
each a seek: ``(user_id, created_at) WHERE redactions > 0`` and
``(user_id, expires_at) WHERE expires_at IS NOT NULL``.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

REDACTED, EXPIRING = sa.text("redactions > 0"), sa.text("expires_at IS NOT NULL")


def upgrade() -> None:
    indexes = {index["name"] for index in sa.inspect(op.get_bind()).get_indexes("memories")}
    if "ix_memories_redacted" not in indexes:
        op.create_index(
            "ix_memories_redacted",
            "memories",
            ["user_id", "created_at"],
            sqlite_where=REDACTED,
            postgresql_where=REDACTED,
        )
    if "ix_memories_user_expiring" not in indexes:
        op.create_index(
            "ix_memories_user_expiring",
            "memories",
            ["user_id", "expires_at"],
            sqlite_where=EXPIRING,
            postgresql_where=EXPIRING,
        )


def downgrade() -> None:
    op.drop_index("ix_memories_user_expiring", table_name="memories")
    op.drop_index("ix_memories_redacted", table_name="memories")
