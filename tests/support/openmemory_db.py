"""An OpenMemory database built the way OpenMemory built it, for the import's tests.

The tables and columns are OpenMemory's (mem0 repository, ``openmemory/api/app/models.py`` and
its first alembic migration, at commit 540d23d, the last tree that had OpenMemory), declared
here with SQLAlchemy Core so the file stores values as OpenMemory's SQLAlchemy did on SQLite:
UUIDs as 32 hex digits, the state enum by name, date-times as naive text, JSON as text.
"""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa


class MemoryState(enum.Enum):
    active = "active"
    paused = "paused"
    archived = "archived"
    deleted = "deleted"


metadata = sa.MetaData()

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.UUID, primary_key=True),
    sa.Column("user_id", sa.String, nullable=False, unique=True, index=True),
    sa.Column("name", sa.String, nullable=True, index=True),
    sa.Column("email", sa.String, unique=True, nullable=True, index=True),
    sa.Column("metadata", sa.JSON),
    sa.Column("created_at", sa.DateTime, index=True),
    sa.Column("updated_at", sa.DateTime),
)
apps = sa.Table(
    "apps",
    metadata,
    sa.Column("id", sa.UUID, primary_key=True),
    sa.Column("owner_id", sa.UUID, sa.ForeignKey("users.id"), nullable=False, index=True),
    sa.Column("name", sa.String, nullable=False, index=True),
    sa.Column("description", sa.String),
    sa.Column("metadata", sa.JSON),
    sa.Column("is_active", sa.Boolean, index=True),
    sa.Column("created_at", sa.DateTime, index=True),
    sa.Column("updated_at", sa.DateTime),
    sa.UniqueConstraint("owner_id", "name", name="idx_app_owner_name"),
)
configs = sa.Table(
    "configs",
    metadata,
    sa.Column("id", sa.UUID, primary_key=True),
    sa.Column("key", sa.String, unique=True, nullable=False, index=True),
    sa.Column("value", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime),
    sa.Column("updated_at", sa.DateTime),
)
memories = sa.Table(
    "memories",
    metadata,
    sa.Column("id", sa.UUID, primary_key=True),
    sa.Column("user_id", sa.UUID, sa.ForeignKey("users.id"), nullable=False, index=True),
    sa.Column("app_id", sa.UUID, sa.ForeignKey("apps.id"), nullable=False, index=True),
    sa.Column("content", sa.String, nullable=False),
    sa.Column("vector", sa.String),
    sa.Column("metadata", sa.JSON),
    sa.Column("state", sa.Enum(MemoryState, name="memorystate"), index=True),
    sa.Column("created_at", sa.DateTime, index=True),
    sa.Column("updated_at", sa.DateTime),
    sa.Column("archived_at", sa.DateTime, nullable=True, index=True),
    sa.Column("deleted_at", sa.DateTime, nullable=True, index=True),
    sa.Index("idx_memory_user_state", "user_id", "state"),
    sa.Index("idx_memory_app_state", "app_id", "state"),
    sa.Index("idx_memory_user_app", "user_id", "app_id"),
)
categories = sa.Table(
    "categories",
    metadata,
    sa.Column("id", sa.UUID, primary_key=True),
    sa.Column("name", sa.String, unique=True, nullable=False, index=True),
    sa.Column("description", sa.String),
    sa.Column("created_at", sa.DateTime, index=True),
    sa.Column("updated_at", sa.DateTime),
)
memory_categories = sa.Table(
    "memory_categories",
    metadata,
    sa.Column("memory_id", sa.UUID, sa.ForeignKey("memories.id"), primary_key=True, index=True),
    sa.Column("category_id", sa.UUID, sa.ForeignKey("categories.id"), primary_key=True, index=True),
    sa.Index("idx_memory_category", "memory_id", "category_id"),
)
access_controls = sa.Table(
    "access_controls",
    metadata,
    sa.Column("id", sa.UUID, primary_key=True),
    sa.Column("subject_type", sa.String, nullable=False, index=True),
    sa.Column("subject_id", sa.UUID, nullable=True, index=True),
    sa.Column("object_type", sa.String, nullable=False, index=True),
    sa.Column("object_id", sa.UUID, nullable=True, index=True),
    sa.Column("effect", sa.String, nullable=False, index=True),
    sa.Column("created_at", sa.DateTime, index=True),
)
archive_policies = sa.Table(
    "archive_policies",
    metadata,
    sa.Column("id", sa.UUID, primary_key=True),
    sa.Column("criteria_type", sa.String, nullable=False, index=True),
    sa.Column("criteria_id", sa.UUID, nullable=True, index=True),
    sa.Column("days_to_archive", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime, index=True),
)
memory_status_history = sa.Table(
    "memory_status_history",
    metadata,
    sa.Column("id", sa.UUID, primary_key=True),
    sa.Column("memory_id", sa.UUID, sa.ForeignKey("memories.id"), nullable=False, index=True),
    sa.Column("changed_by", sa.UUID, sa.ForeignKey("users.id"), nullable=False, index=True),
    sa.Column("old_state", sa.Enum(MemoryState, name="memorystate"), nullable=False, index=True),
    sa.Column("new_state", sa.Enum(MemoryState, name="memorystate"), nullable=False, index=True),
    sa.Column("changed_at", sa.DateTime, index=True),
)
memory_access_logs = sa.Table(
    "memory_access_logs",
    metadata,
    sa.Column("id", sa.UUID, primary_key=True),
    sa.Column("memory_id", sa.UUID, sa.ForeignKey("memories.id"), nullable=False, index=True),
    sa.Column("app_id", sa.UUID, sa.ForeignKey("apps.id"), nullable=False, index=True),
    sa.Column("accessed_at", sa.DateTime, index=True),
    sa.Column("access_type", sa.String, nullable=False, index=True),
    sa.Column("metadata", sa.JSON),
    sa.Index("idx_access_memory_time", "memory_id", "accessed_at"),
    sa.Index("idx_access_app_time", "app_id", "accessed_at"),
)


class OpenMemoryDb:
    """A fresh OpenMemory database at ``path``; add rows with the methods, ids come back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.engine = sa.create_engine(f"sqlite:///{path}")
        metadata.create_all(self.engine)

    def _insert(self, table: sa.Table, **values: Any) -> uuid.UUID:
        key = values.setdefault("id", uuid.uuid4()) if "id" in table.c else None
        with self.engine.begin() as connection:
            connection.execute(table.insert().values(**values))
        return key  # type: ignore[return-value]

    def user(self, user_id: str) -> uuid.UUID:
        now = datetime(2024, 1, 1)
        return self._insert(users, user_id=user_id, name=user_id, metadata={}, created_at=now, updated_at=now)

    def app(self, owner: uuid.UUID, name: str, *, is_active: bool = True) -> uuid.UUID:
        now = datetime(2024, 1, 2)
        return self._insert(
            apps, owner_id=owner, name=name, metadata={}, is_active=is_active, created_at=now, updated_at=now
        )

    def category(self, name: str) -> uuid.UUID:
        now = datetime(2024, 1, 3)
        return self._insert(
            categories,
            name=name,
            description=f"Automatically created category for {name}",
            created_at=now,
            updated_at=now,
        )

    def memory(
        self,
        user: uuid.UUID,
        app: uuid.UUID,
        content: str,
        *,
        state: MemoryState = MemoryState.active,
        created_at: datetime,
        updated_at: datetime | None = None,
        archived_at: datetime | None = None,
        category_ids: tuple[uuid.UUID, ...] = (),
    ) -> uuid.UUID:
        memory_id = self._insert(
            memories,
            user_id=user,
            app_id=app,
            content=content,
            metadata={"source_app": "openmemory", "mcp_client": "openmemory"},
            state=state,
            created_at=created_at,
            updated_at=updated_at or created_at,
            archived_at=archived_at,
            deleted_at=None,
        )
        for category_id in category_ids:
            with self.engine.begin() as connection:
                connection.execute(
                    memory_categories.insert().values(memory_id=memory_id, category_id=category_id)
                )
        return memory_id

    def access(
        self, memory: uuid.UUID, app: uuid.UUID, at: datetime, kind: str, meta: dict[str, Any]
    ) -> None:
        self._insert(
            memory_access_logs, memory_id=memory, app_id=app, accessed_at=at, access_type=kind, metadata=meta
        )

    def state_change(
        self, memory: uuid.UUID, by: uuid.UUID, old: MemoryState, new: MemoryState, at: datetime
    ) -> None:
        self._insert(
            memory_status_history,
            memory_id=memory,
            changed_by=by,
            old_state=old,
            new_state=new,
            changed_at=at,
        )

    def close(self) -> None:
        self.engine.dispose()
