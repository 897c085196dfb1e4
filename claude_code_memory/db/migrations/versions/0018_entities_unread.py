"""entities: a user's memories the entity rules have not read are a seek

A list or search of entities first reads the user's unread memories (``entities_indexed``
false) with the rules, 500 at a time. Without an index that finds them, each batch walked past
the memories already read: reading a store of 1M memories that predates entities (or a large
import) took over 10 minutes, most of it walking. ``(user_id, state) WHERE entities_indexed =
false`` holds the unread only (with ``state``, SQLite's planner prefers it to the index of every
memory by user and state).

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

NAME = "ix_memories_entities_unread"


def upgrade() -> None:
    if NAME not in {index["name"] for index in sa.inspect(op.get_bind()).get_indexes("memories")}:
        op.create_index(
            NAME,
            "memories",
            ["user_id", "state"],
            sqlite_where=sa.text("entities_indexed = 0"),
            postgresql_where=sa.text("entities_indexed = false"),
        )


def downgrade() -> None:
    op.drop_index(NAME, table_name="memories")
