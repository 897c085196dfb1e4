"""scopes, links, entities and the trash

Every memory has a scope: ``project`` (already there as provenance: existing memories keep the
project their provenance names, and memories without one are global) and the new ``task``
(a task belongs to the memory's project). ``memory_links`` holds typed links between two
memories, ``entities`` and ``memory_entities`` what the entity rules found in them
(``entities_indexed`` false: existing memories are read on first use). The ``trashed`` state
needs no schema change (the state column is a plain string).

Revision ID: 0007
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Re-runnable, as the migrations before it: a database stamped older may hold these already.
    inspector = sa.inspect(op.get_bind())
    columns = {column["name"] for column in inspector.get_columns("memories")}
    tables = set(inspector.get_table_names())
    # Plain column adds (no batch copy): a table copy on SQLite would drop the keyword index's triggers.
    if "task" not in columns:
        op.add_column("memories", sa.Column("task", sa.String(256), nullable=True))
    if "entities_indexed" not in columns:
        op.add_column(
            "memories",
            sa.Column("entities_indexed", sa.Boolean(), nullable=False, server_default=sa.false()),
        )
    if "ix_memories_scope" not in {index["name"] for index in inspector.get_indexes("memories")}:
        op.create_index("ix_memories_scope", "memories", ["user_id", "project", "task"])
    if "memory_links" not in tables:
        _create_tables()


def _create_tables() -> None:
    op.create_table(
        "memory_links",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("user_id", sa.Uuid(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("source_id", sa.Uuid(), sa.ForeignKey("memories.id", ondelete="CASCADE"), nullable=False),
        sa.Column("target_id", sa.Uuid(), sa.ForeignKey("memories.id", ondelete="CASCADE"), nullable=False),
        sa.Column("relation", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("source_id", "target_id", "relation", name="uq_memory_link"),
    )
    op.create_index("ix_memory_links_user_id", "memory_links", ["user_id"])
    op.create_index("ix_memory_links_source_id", "memory_links", ["source_id"])
    op.create_index("ix_memory_links_target_id", "memory_links", ["target_id"])
    op.create_table(
        "entities",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("user_id", sa.Uuid(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("user_id", "kind", "name", name="uq_entity_user_kind_name"),
    )
    op.create_index("ix_entities_user_id", "entities", ["user_id"])
    op.create_index("ix_entities_name", "entities", ["name"])
    op.create_table(
        "memory_entities",
        sa.Column("memory_id", sa.Uuid(), sa.ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("entity_id", sa.Uuid(), sa.ForeignKey("entities.id", ondelete="CASCADE"), primary_key=True),
    )
    op.create_index("ix_memory_entities_memory_id", "memory_entities", ["memory_id"])
    op.create_index("ix_memory_entities_entity_id", "memory_entities", ["entity_id"])


def downgrade() -> None:
    op.drop_table("memory_entities")
    op.drop_table("entities")
    op.drop_table("memory_links")
    op.drop_index("ix_memories_scope", table_name="memories")
    op.drop_column("memories", "entities_indexed")
    op.drop_column("memories", "task")
