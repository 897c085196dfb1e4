"""The reference time relative dates resolve against (search/temporal.py), on a real database:
the newest ``captured_at`` (else creation time) among the active memories in scope."""

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from claude_code_memory.db.database import Database
from claude_code_memory.db.models import App, Memory, User
from claude_code_memory.domain.memory_state import MemoryState
from claude_code_memory.search.temporal import Scope, reference_time

NOW = datetime(2026, 11, 26, 12, 0, 0)


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    opened = Database(f"sqlite:///{tmp_path / 'memory.db'}")
    opened.migrate()
    yield opened
    opened.close()


def test_newest_turn_or_untimed_memory_in_scope(database: Database) -> None:
    with database.session() as session:
        ann, ben = User(user_id="ann"), User(user_id="ben")
        session.add_all([ann, ben])
        session.flush()
        chat, cli, bens = (
            App(owner_id=ann.id, name="chat"),
            App(owner_id=ann.id, name="cli"),
            App(owner_id=ben.id, name="c"),
        )
        session.add_all([chat, cli, bens])
        session.flush()

        def memory(
            app: App, text: str, *, captured: datetime | None, created: datetime, **fields: object
        ) -> Memory:
            return Memory(
                user_id=app.owner_id,
                app_id=app.id,
                content=text,
                captured_at=captured,
                created_at=created,
                **fields,
            )

        session.add_all(
            [
                memory(
                    chat,
                    "turn one",
                    captured=datetime(2023, 5, 1),
                    created=datetime(2026, 1, 1),
                    conversation_id="s",
                ),
                memory(
                    chat,
                    "turn two",
                    captured=datetime(2023, 5, 8),
                    created=datetime(2026, 1, 1),
                    conversation_id="s",
                ),
                # newer, but not active: never the reference
                memory(
                    chat,
                    "archived",
                    captured=datetime(2024, 1, 1),
                    created=datetime(2026, 1, 1),
                    state=MemoryState.archived,
                ),
                memory(cli, "untimed", captured=None, created=datetime(2023, 6, 1), project="/web"),
                memory(bens, "another user", captured=datetime(2025, 1, 1), created=datetime(2026, 1, 1)),
            ]
        )
        session.flush()
        ann_pk, ben_pk, chat_pk, cli_pk = ann.id, ben.id, chat.id, cli.id

    with database.engine.connect() as connection:
        # A memory without captured_at counts by when it was stored: June beats May's turns.
        assert reference_time(connection, Scope(ann_pk), NOW) == datetime(2023, 6, 1)
        assert reference_time(connection, Scope(ann_pk, app_id=chat_pk), NOW) == datetime(2023, 5, 8)
        assert reference_time(connection, Scope(ann_pk, app_id=cli_pk), NOW) == datetime(2023, 6, 1)
        assert reference_time(connection, Scope(ann_pk, project="/web"), NOW) == datetime(2023, 6, 1)
        assert reference_time(connection, Scope(ann_pk, project="/api"), NOW) is None
        # Never later than now.
        assert reference_time(connection, Scope(ben_pk), datetime(2024, 2, 2)) == datetime(2024, 2, 2)


def test_the_reference_is_read_from_the_user_and_time_index(database: Database) -> None:
    """Neither read visits every memory of the user: that cost grew with the store."""
    with database.session() as session:
        user = User(user_id="ann")
        session.add(user)
        session.flush()
        user_pk = user.id
    with database.engine.connect() as connection:
        raw = connection.connection.driver_connection
        statements: list[str] = []
        raw.set_trace_callback(statements.append)
        reference_time(connection, Scope(user_pk), NOW)
        raw.set_trace_callback(None)
        reads = [sql for sql in statements if sql.lstrip().upper().startswith("SELECT")]
        assert len(reads) == 2, statements
        for sql in reads:
            plan = " ".join(str(row[-1]) for row in raw.execute("EXPLAIN QUERY PLAN " + sql))
            assert "USING INDEX ix_memories_user_captured (user_id=? AND captured_at" in plan, plan
            assert "TEMP B-TREE" not in plan, plan
