"""hygiene: proposals (merge, archive superseded / junk / stale) with undo data, standing
hygiene rules, and the counts of captures the junk filter kept out

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
    # Idempotent: a database set back to an older revision runs this again over its tables.
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    if "hygiene_proposals" not in existing:
        _proposals()
    if "hygiene_rules" not in existing:
        _rules()
    if "capture_filter_counts" not in existing:
        _filter_counts()


def _proposals() -> None:
    op.create_table(
        "hygiene_proposals",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("user_id", sa.Uuid(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("memory_ids", sa.JSON(), nullable=False),
        sa.Column("keep_id", sa.Uuid(), nullable=True),
        sa.Column("preview", sa.JSON(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("signature", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("decided_at", sa.DateTime(), nullable=True),
        sa.Column("decided_by", sa.String(100), nullable=True),
        sa.Column("undo_until", sa.DateTime(), nullable=True),
        sa.Column("undo", sa.JSON(), nullable=False),
    )
    op.create_index("ix_hygiene_proposals_user_id", "hygiene_proposals", ["user_id"])
    op.create_index("ix_hygiene_proposals_signature", "hygiene_proposals", ["signature"])
    op.create_index("ix_hygiene_proposals_created_at", "hygiene_proposals", ["created_at"])
    op.create_index("idx_hygiene_user_status", "hygiene_proposals", ["user_id", "status"])


def _rules() -> None:
    op.create_table(
        "hygiene_rules",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("user_id", sa.Uuid(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("created_by", sa.String(100), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("user_id", "kind", name="idx_hygiene_rule_user_kind"),
    )
    op.create_index("ix_hygiene_rules_user_id", "hygiene_rules", ["user_id"])


def _filter_counts() -> None:
    op.create_table(
        "capture_filter_counts",
        sa.Column("user_id", sa.Uuid(), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("reason", sa.String(32), primary_key=True),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("last_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("capture_filter_counts")
    op.drop_index("ix_hygiene_rules_user_id", table_name="hygiene_rules")
    op.drop_table("hygiene_rules")
    for name in (
        "idx_hygiene_user_status",
        "ix_hygiene_proposals_created_at",
        "ix_hygiene_proposals_signature",
        "ix_hygiene_proposals_user_id",
    ):
        op.drop_index(name, table_name="hygiene_proposals")
    op.drop_table("hygiene_proposals")
