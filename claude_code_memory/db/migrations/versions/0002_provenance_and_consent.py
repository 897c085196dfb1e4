"""provenance and consent

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "consent_decisions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=False),
        sa.Column("decided_by", sa.String(length=100), nullable=False),
        sa.Column("rule_id", sa.Uuid(), nullable=True),
        sa.Column("edited", sa.Boolean(), nullable=False),
        sa.Column("decided_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("consent_decisions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_consent_decisions_decided_at"), ["decided_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_consent_decisions_memory_id"), ["memory_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_consent_decisions_user_id"), ["user_id"], unique=False)

    op.create_table(
        "consent_rules",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("app_pattern", sa.String(length=128), nullable=False),
        sa.Column("project_pattern", sa.String(length=512), nullable=False),
        sa.Column("effect", sa.String(length=8), nullable=False),
        sa.Column("created_by", sa.String(length=100), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("consent_rules", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_consent_rules_user_id"), ["user_id"], unique=False)

    with op.batch_alter_table("memories", schema=None) as batch_op:
        batch_op.add_column(sa.Column("channel", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("project", sa.String(length=512), nullable=True))
        batch_op.add_column(sa.Column("conversation_id", sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column("model", sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column("captured_at", sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column("consent", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("redactions", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("expires_at", sa.DateTime(), nullable=True))
        batch_op.create_index(batch_op.f("ix_memories_channel"), ["channel"], unique=False)
        batch_op.create_index(batch_op.f("ix_memories_conversation_id"), ["conversation_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_memories_expires_at"), ["expires_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_memories_project"), ["project"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("memories", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_memories_project"))
        batch_op.drop_index(batch_op.f("ix_memories_expires_at"))
        batch_op.drop_index(batch_op.f("ix_memories_conversation_id"))
        batch_op.drop_index(batch_op.f("ix_memories_channel"))
        batch_op.drop_column("expires_at")
        batch_op.drop_column("redactions")
        batch_op.drop_column("consent")
        batch_op.drop_column("captured_at")
        batch_op.drop_column("model")
        batch_op.drop_column("conversation_id")
        batch_op.drop_column("project")
        batch_op.drop_column("channel")

    with op.batch_alter_table("consent_rules", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_consent_rules_user_id"))

    op.drop_table("consent_rules")
    with op.batch_alter_table("consent_decisions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_consent_decisions_user_id"))
        batch_op.drop_index(batch_op.f("ix_consent_decisions_memory_id"))
        batch_op.drop_index(batch_op.f("ix_consent_decisions_decided_at"))

    op.drop_table("consent_decisions")
