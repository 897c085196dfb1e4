"""tiers and profile: mid-term segments with heat, profile facts and their tombstones

``memories.segment_id`` names the mid-term segment a conversation turn belongs to (null until
the tiers are refreshed: existing turns are grouped then, not here). ``segments`` hold each
run of a conversation's turns with its heat; ``profile_facts`` the user's profile and the
assistant's knowledge (a deleted fact keeps only its hash, so it is never extracted again);
``profile_marks`` how far the profile has read the memories of no conversation.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Each step only when its object is missing: a schema already past this revision (one
    # whose version was set back) is upgraded again without failing.
    schema = sa.inspect(op.get_bind())
    tables = set(schema.get_table_names())
    if "segment_id" not in {c["name"] for c in schema.get_columns("memories")}:
        # A plain ADD COLUMN: a batch (table copy) on SQLite would drop the keyword index's triggers.
        op.add_column("memories", sa.Column("segment_id", sa.Uuid(), nullable=True))
    indexes = {i["name"] for i in schema.get_indexes("memories")}
    if "ix_memories_segment_id" not in indexes:
        op.create_index("ix_memories_segment_id", "memories", ["segment_id"])
    if "ix_memories_user_captured" not in indexes:
        op.create_index("ix_memories_user_captured", "memories", ["user_id", "captured_at"])
    if "segments" not in tables:
        _create_segments()
    if "profile_facts" not in tables:
        _create_profile_facts()
    if "profile_marks" not in tables:
        op.create_table(
            "profile_marks",
            sa.Column("user_id", sa.Uuid(), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
            sa.Column("extracted_until", sa.DateTime(), nullable=False),
            sa.Column("extracted_ids", sa.JSON(), nullable=False),
        )


def _create_segments() -> None:
    op.create_table(
        "segments",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("user_id", sa.Uuid(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("conversation_id", sa.String(128), nullable=False),
        sa.Column("project", sa.String(512)),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("ended_at", sa.DateTime(), nullable=False),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.Column("visits", sa.Integer(), nullable=False),
        sa.Column("last_visit_at", sa.DateTime()),
        sa.Column("heat", sa.Float(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("promoted_turns", sa.Integer(), nullable=False),
        sa.Column("promoted_at", sa.DateTime()),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_segments_conversation_id", "segments", ["conversation_id"])
    op.create_index("ix_segments_user_state_heat", "segments", ["user_id", "state", "heat"])


def _create_profile_facts() -> None:
    op.create_table(
        "profile_facts",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("user_id", sa.Uuid(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("subject", sa.String(16), nullable=False),
        sa.Column("category", sa.String(32), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("fact_hash", sa.String(64), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("memory_ids", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("user_id", "subject", "fact_hash", name="uq_profile_fact"),
    )
    op.create_index("ix_profile_facts_user_id", "profile_facts", ["user_id"])


def downgrade() -> None:
    op.drop_table("profile_marks")
    op.drop_index("ix_profile_facts_user_id", table_name="profile_facts")
    op.drop_table("profile_facts")
    op.drop_index("ix_segments_user_state_heat", table_name="segments")
    op.drop_index("ix_segments_conversation_id", table_name="segments")
    op.drop_table("segments")
    op.drop_index("ix_memories_user_captured", table_name="memories")
    op.drop_index("ix_memories_segment_id", table_name="memories")
    op.drop_column("memories", "segment_id")
