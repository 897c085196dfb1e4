"""shared state: what API replicas must see alike (hook sessions, MCP current projects,
counters) and the leases under which one replica runs each background job

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    tables = set(sa.inspect(op.get_bind()).get_table_names())
    if "shared_state" not in tables:
        op.create_table(
            "shared_state",
            sa.Column("scope", sa.String(255), primary_key=True),
            sa.Column("key", sa.String(255), primary_key=True),
            sa.Column("value", sa.JSON(), nullable=True),
            sa.Column("count", sa.BigInteger(), nullable=False, server_default="0"),
            sa.Column("expires_at", sa.DateTime()),
            sa.Column("updated_at", sa.DateTime(), nullable=False),
        )
        op.create_index("ix_shared_state_expires_at", "shared_state", ["expires_at"])
    if "job_leases" not in tables:
        op.create_table(
            "job_leases",
            sa.Column("name", sa.String(64), primary_key=True),
            sa.Column("holder", sa.String(255), nullable=False),
            sa.Column("expires_at", sa.DateTime(), nullable=False),
            sa.Column("last_run_at", sa.DateTime()),
            sa.Column("runs", sa.BigInteger(), nullable=False, server_default="0"),
        )


def downgrade() -> None:
    op.drop_table("job_leases")
    op.drop_index("ix_shared_state_expires_at", table_name="shared_state")
    op.drop_table("shared_state")
