"""oauth client origin: the address a dynamically registered client came from

``POST /register`` takes no credentials: the registrations one address holds that nobody has
authorized yet are capped (``auth.oauth.registration``, auth/oauth/store.py), which needs the
address beside each client. Clients registered before this have none and count for no address.

Revision ID: 0020
Revises: 0019
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    columns = {c["name"] for c in inspector.get_columns("oauth_clients")}
    if "registered_from" not in columns:
        with op.batch_alter_table("oauth_clients") as batch:
            batch.add_column(sa.Column("registered_from", sa.String(64)))
    indexes = {index["name"] for index in inspector.get_indexes("oauth_clients")}
    if "ix_oauth_clients_registered_from" not in indexes:
        op.create_index("ix_oauth_clients_registered_from", "oauth_clients", ["registered_from"])


def downgrade() -> None:
    op.drop_index("ix_oauth_clients_registered_from", "oauth_clients")
    with op.batch_alter_table("oauth_clients") as batch:
        batch.drop_column("registered_from")
