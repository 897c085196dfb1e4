"""Reading a large backlog of memories for entities (memories/organise/entities.py, migration
0018): a call reads at most ``INDEX_PER_CALL`` memories itself and the background reads the
rest; the unread memories are a seek, whatever has been read already."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import false, func, select

from claude_code_memory.db.database import Database
from claude_code_memory.db.models import Memory
from claude_code_memory.domain.memory_state import MemoryState
from claude_code_memory.memories.organise import entities
from claude_code_memory.memories.organise.entities import Entities
from claude_code_memory.store.owners import Owners

from .support import rows
from .support.rows import user_with_app
from .support.steps import sqlite_steps

#: SQLite, then PostgreSQL (tests/support/rows.py).
database_url = rows.database_url


def _backlog(database: Database, size: int, read: int = 0) -> None:
    """A user with ``size`` memories that name a tool each; the first ``read`` already read."""
    with database.session() as session:
        user, app = user_with_app(session, "reader")
        session.add_all(
            Memory(
                user_id=user.id,
                app_id=app.id,
                content=f"Memory {n} says the deploy uses tool{n % 40}.py every night",
                state=MemoryState.active,
                entities_indexed=n < read,
            )
            for n in range(size)
        )


def _unread(database: Database) -> int:
    with database.session() as session:
        return int(
            session.scalar(select(func.count()).select_from(Memory).where(Memory.entities_indexed.is_(False)))
            or 0
        )


def test_a_call_reads_its_share_and_the_background_the_rest(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entities, "INDEX_PER_CALL", 300)
    database = Database(database_url)
    database.migrate()
    _backlog(database, 1200)
    reader = Entities(database, Owners(database))
    gate = threading.Event()
    try:
        reader.background.submit(gate.wait)  # the background starts when the test says so
        first = reader.listing("reader", limit=100)
        assert _unread(database) == 900  # this call's share, no more
        assert sum(item["memories"] for item in first) == 300
        gate.set()
        reader.settle()
        assert _unread(database) == 0
        every = reader.listing("reader", limit=100)
        assert len(every) == 40 and sum(item["memories"] for item in every) == 1200
    finally:
        gate.set()
        reader.close()
        database.close()


def test_closing_does_not_wait_for_the_backlog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entities, "INDEX_PER_CALL", 100)
    database = Database(f"sqlite:///{tmp_path / 'memory.db'}")
    database.migrate()
    _backlog(database, 2000)
    reader = Entities(database, Owners(database))
    gate = threading.Event()
    reader.background.submit(gate.wait)
    reader.listing("reader")  # reads 100, leaves 1,900 to the background (queued)
    closing = threading.Thread(target=reader.close)
    closing.start()
    _until(reader._closing.is_set)
    gate.set()
    closing.join(timeout=30)
    assert not closing.is_alive()
    assert _unread(database) == 1900  # left for the next start's first call
    # And a pass under way stops at its next batch once the server is closing.
    assert reader._read(_key(database), None) is False and _unread(database) == 1900
    database.close()


def _until(condition: Any) -> None:
    for _ in range(600):
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def _key(database: Database) -> Any:
    with database.session() as session:
        return session.scalar(select(Memory.user_id).limit(1))


def test_the_unread_are_a_seek_whatever_is_read_already_on_sqlite(tmp_path: Path) -> None:
    """SQLite's virtual-machine steps to find a batch of unread memories, with 200 memories read
    and with 8,000: the same. Without migration 0018's index the batch walked past every memory
    read, so reading a backlog took time quadratic in its size."""
    steps = {}
    for read in (200, 8000):
        database = Database(f"sqlite:///{tmp_path / f'memory-{read}.db'}")
        database.migrate()
        _backlog(database, read + 50, read=read)
        reader = Entities(database, Owners(database))
        unread = (
            select(Memory.id)
            .where(
                Memory.user_id == _key(database),
                Memory.entities_indexed == false(),
                Memory.state.in_(entities.SHOWN),
            )
            .limit(entities.INDEX_BATCH)
        )
        with database.session() as session:
            found, steps[read] = sqlite_steps(session, lambda query=unread: session.execute(query).all())
        assert len(found) == 50
        reader.close()
        database.close()
    assert steps[8000] < 2 * steps[200] + 20, steps
