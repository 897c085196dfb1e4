"""oauth: the built-in authorization server's clients, grants, codes and refresh tokens

Codes and refresh tokens are kept as SHA-256 digests only (auth/oauth/store.py). The tables
exist whether or not OAuth is on; they stay empty while it is off.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    tables = set(sa.inspect(op.get_bind()).get_table_names())
    if "oauth_clients" not in tables:
        op.create_table(
            "oauth_clients",
            sa.Column("client_id", sa.String(255), primary_key=True),
            sa.Column("metadata", sa.JSON(), nullable=False),
            sa.Column("created_at", sa.DateTime(), nullable=False),
        )
    if "oauth_grants" not in tables:
        op.create_table(
            "oauth_grants",
            sa.Column("id", sa.Uuid(), primary_key=True),
            sa.Column("client_id", sa.Text(), nullable=False),
            sa.Column("user_id", sa.String(64)),
            sa.Column("is_admin", sa.Boolean(), nullable=False),
            sa.Column("scopes", sa.Text(), nullable=False),
            sa.Column("resource", sa.Text(), nullable=False),
            sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("revoked_at", sa.DateTime()),
        )
    if "oauth_codes" not in tables:
        op.create_table(
            "oauth_codes",
            sa.Column("code_hash", sa.String(64), primary_key=True),
            sa.Column("client_id", sa.Text(), nullable=False),
            sa.Column("user_id", sa.String(64)),
            sa.Column("is_admin", sa.Boolean(), nullable=False),
            sa.Column("scopes", sa.Text(), nullable=False),
            sa.Column("resource", sa.Text(), nullable=False),
            sa.Column("code_challenge", sa.String(128), nullable=False),
            sa.Column("redirect_uri", sa.Text(), nullable=False),
            sa.Column("redirect_uri_explicit", sa.Boolean(), nullable=False),
            sa.Column("expires_at", sa.Float(), nullable=False),
            sa.Column("used_at", sa.DateTime()),
            sa.Column("grant_id", sa.Uuid()),
        )
    if "oauth_refresh_tokens" not in tables:
        op.create_table(
            "oauth_refresh_tokens",
            sa.Column("token_hash", sa.String(64), primary_key=True),
            sa.Column(
                "grant_id", sa.Uuid(), sa.ForeignKey("oauth_grants.id", ondelete="CASCADE"), nullable=False
            ),
            sa.Column("expires_at", sa.Float(), nullable=False),
            sa.Column("used_at", sa.DateTime()),
        )
        op.create_index("ix_oauth_refresh_tokens_grant_id", "oauth_refresh_tokens", ["grant_id"])


def downgrade() -> None:
    for table in ("oauth_refresh_tokens", "oauth_codes", "oauth_grants", "oauth_clients"):
        op.drop_table(table)
