"""The metadata database's schema: migrations to the head, and the fast path at the head."""

from __future__ import annotations

import sys
from pathlib import Path

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
    indexes = {i["name"] for i in inspect(database.engine).get_indexes("memories")}
    assert "ix_memories_conversation_order" in indexes
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
