"""initial schema

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "categories",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("categories", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_categories_name"), ["name"], unique=True)

    op.create_table(
        "configs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("configs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_configs_key"), ["key"], unique=True)

    op.create_table(
        "users",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("email", sa.String(length=320), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("email"),
    )
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_users_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_users_user_id"), ["user_id"], unique=True)

    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=True),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_used_at", sa.DateTime(), nullable=True),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_tokens_token_hash"), ["token_hash"], unique=True)
        batch_op.create_index(batch_op.f("ix_api_tokens_user_id"), ["user_id"], unique=False)

    op.create_table(
        "apps",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("owner_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("owner_id", "name", name="idx_app_owner_name"),
    )
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_apps_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_apps_is_active"), ["is_active"], unique=False)
        batch_op.create_index(batch_op.f("ix_apps_name"), ["name"], unique=False)
        batch_op.create_index(batch_op.f("ix_apps_owner_id"), ["owner_id"], unique=False)

    op.create_table(
        "memories",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("app_id", sa.Uuid(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column(
            "state",
            sa.Enum(
                "active", "paused", "archived", "deleted", name="memorystate", native_enum=False, length=16
            ),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("archived_at", sa.DateTime(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("memories", schema=None) as batch_op:
        batch_op.create_index("idx_memory_app_state", ["app_id", "state"], unique=False)
        batch_op.create_index("idx_memory_user_hash", ["user_id", "content_hash"], unique=False)
        batch_op.create_index("idx_memory_user_state", ["user_id", "state"], unique=False)
        batch_op.create_index(batch_op.f("ix_memories_created_at"), ["created_at"], unique=False)

    op.create_table(
        "memory_access_logs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("app_id", sa.Uuid(), nullable=False),
        sa.Column("accessed_at", sa.DateTime(), nullable=False),
        sa.Column("access_type", sa.String(length=32), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["memory_id"], ["memories.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("memory_access_logs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_memory_access_logs_access_type"), ["access_type"], unique=False)
        batch_op.create_index(batch_op.f("ix_memory_access_logs_accessed_at"), ["accessed_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_memory_access_logs_app_id"), ["app_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_memory_access_logs_memory_id"), ["memory_id"], unique=False)

    op.create_table(
        "memory_categories",
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("category_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(["category_id"], ["categories.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["memory_id"], ["memories.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("memory_id", "category_id"),
    )
    with op.batch_alter_table("memory_categories", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_memory_categories_category_id"), ["category_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_memory_categories_memory_id"), ["memory_id"], unique=False)

    op.create_table(
        "memory_status_history",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("changed_by", sa.Uuid(), nullable=True),
        sa.Column("old_state", sa.String(length=16), nullable=False),
        sa.Column("new_state", sa.String(length=16), nullable=False),
        sa.Column("changed_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["changed_by"], ["users.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["memory_id"], ["memories.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("memory_status_history", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_memory_status_history_changed_at"), ["changed_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_memory_status_history_memory_id"), ["memory_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("memory_status_history", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_memory_status_history_memory_id"))
        batch_op.drop_index(batch_op.f("ix_memory_status_history_changed_at"))

    op.drop_table("memory_status_history")
    with op.batch_alter_table("memory_categories", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_memory_categories_memory_id"))
        batch_op.drop_index(batch_op.f("ix_memory_categories_category_id"))

    op.drop_table("memory_categories")
    with op.batch_alter_table("memory_access_logs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_memory_access_logs_memory_id"))
        batch_op.drop_index(batch_op.f("ix_memory_access_logs_app_id"))
        batch_op.drop_index(batch_op.f("ix_memory_access_logs_accessed_at"))
        batch_op.drop_index(batch_op.f("ix_memory_access_logs_access_type"))

    op.drop_table("memory_access_logs")
    with op.batch_alter_table("memories", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_memories_created_at"))
        batch_op.drop_index("idx_memory_user_state")
        batch_op.drop_index("idx_memory_user_hash")
        batch_op.drop_index("idx_memory_app_state")

    op.drop_table("memories")
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_apps_owner_id"))
        batch_op.drop_index(batch_op.f("ix_apps_name"))
        batch_op.drop_index(batch_op.f("ix_apps_is_active"))
        batch_op.drop_index(batch_op.f("ix_apps_created_at"))

    op.drop_table("apps")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_tokens_user_id"))
        batch_op.drop_index(batch_op.f("ix_api_tokens_token_hash"))

    op.drop_table("api_tokens")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_user_id"))
        batch_op.drop_index(batch_op.f("ix_users_created_at"))

    op.drop_table("users")
    with op.batch_alter_table("configs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_configs_key"))

    op.drop_table("configs")
    with op.batch_alter_table("categories", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_categories_name"))

    op.drop_table("categories")
