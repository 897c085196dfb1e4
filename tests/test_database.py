"""The metadata database's schema: migrations to the head, and the fast path at the head."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from claude_code_memory.db.database import MIGRATIONS, Database, current_revision, head_revision


def test_head_revision_is_alembics_head() -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert head_revision() == ScriptDirectory.from_config(config).get_current_head()


def test_a_new_database_is_migrated_and_an_older_one_upgraded(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'memory.db'}")
    assert current_revision(database.engine) is None
    database.migrate()
    assert current_revision(database.engine) == head_revision()
    # An older schema (as after 0003) is brought up: the conversation index comes back.
    with database.engine.begin() as connection:
        connection.execute(text("DROP INDEX ix_memories_conversation_order"))
        connection.execute(text("UPDATE alembic_version SET version_num = '0003'"))
    database.migrate()
    indexes = {i["name"]: i["column_names"] for i in inspect(database.engine).get_indexes("memories")}
    # 0004 makes it; 0014 adds created_at, so a neighbour is one seek (tests/test_conversation.py).
    order = ["user_id", "conversation_id", "captured_at", "created_at"]
    assert indexes["ix_memories_conversation_order"] == order
    assert current_revision(database.engine) == head_revision()
    database.close()


@pytest.mark.integration
def test_a_database_at_the_head_does_not_load_alembic(tmp_path: Path) -> None:
    import subprocess

    url = f"sqlite:///{tmp_path / 'memory.db'}"
    Database(url).migrate()
    probe = (
        "import sys; from claude_code_memory.db.database import Database; "
        f"Database({url!r}).migrate(); print('alembic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _upgrade_to(database: Database, revision: str) -> None:
    from alembic import command

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def _duplicates_collapse_to_the_oldest(database: Database) -> None:
    """A database from before 0005 with three copies of one text (what concurrent writers left)
    keeps the oldest, makes the others tombstones, and then refuses a fourth copy."""
    import uuid
    from datetime import datetime

    from sqlalchemy.exc import IntegrityError

    sqlite = database.engine.dialect.name == "sqlite"

    def key(value: uuid.UUID) -> object:  # Uuid columns: 32 hex characters on SQLite
        return value.hex if sqlite else value

    def add_memory(connection: Any, minute: int) -> None:
        connection.execute(
            text(
                "INSERT INTO memories (id, user_id, app_id, content, content_hash, metadata, state, "
                "created_at, updated_at) VALUES (:id, :user, :app, 'same text', 'h1', '{}', 'active', :t, :t)"
            ),
            {
                "id": key(uuid.uuid4()),
                "user": key(user),
                "app": key(app),
                "t": datetime(2026, 1, 1, 0, minute),
            },
        )

    _upgrade_to(database, "0004")
    user, app = uuid.uuid4(), uuid.uuid4()
    with database.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO users (id, user_id, name, metadata, created_at, updated_at) "
                "VALUES (:id, 'u', 'u', '{}', :t, :t)"
            ),
            {"id": key(user), "t": datetime(2026, 1, 1)},
        )
        connection.execute(
            text(
                "INSERT INTO apps (id, owner_id, name, metadata, is_active, created_at, updated_at) "
                "VALUES (:id, :owner, 'a', '{}', true, :t, :t)"
            ),
            {"id": key(app), "owner": key(user), "t": datetime(2026, 1, 1)},
        )
        for minute in range(3):
            add_memory(connection, minute)
    database.migrate()
    assert current_revision(database.engine) == head_revision()
    with database.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT state, content, content_hash FROM memories ORDER BY created_at")
        ).all()
    assert [tuple(row) for row in rows] == [
        ("active", "same text", "h1"),
        ("deleted", "", None),
        ("deleted", "", None),
    ]
    with database.engine.begin() as connection, pytest.raises(IntegrityError):
        add_memory(connection, 30)


def test_migration_0005_collapses_duplicates_and_enforces_one_row_per_text_on_sqlite(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'memory.db'}")
    _duplicates_collapse_to_the_oldest(database)
    database.close()


@pytest.mark.postgres
def test_migration_0005_collapses_duplicates_and_enforces_one_row_per_text_on_postgresql(
    postgres_url: str,
) -> None:
    database = Database(postgres_url)
    _duplicates_collapse_to_the_oldest(database)
    database.close()
