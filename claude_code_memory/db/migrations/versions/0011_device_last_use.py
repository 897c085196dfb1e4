"""device last use: when an OAuth client last got tokens (auth/devices.py lists it)

Bearer tokens already had ``api_tokens.last_used_at``; an OAuth grant now has its own, written
when its code is exchanged and at each refresh (never per request).

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    columns = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("oauth_grants")}
    if "last_used_at" not in columns:
        with op.batch_alter_table("oauth_grants") as batch:
            batch.add_column(sa.Column("last_used_at", sa.DateTime()))


def downgrade() -> None:
    with op.batch_alter_table("oauth_grants") as batch:
        batch.drop_column("last_used_at")
