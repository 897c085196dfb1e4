"""The bytes of text a user stores (memories/write/usage.py), the quota the gate checks: counted
once, then kept as memories are written. Replicas keep the count in the state they share: a
write on one is seen by the other without counting the user's memories again (before, each
write of a replica counted them all)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from claude_code_memory.db.database import Database
from claude_code_memory.db.models import Memory
from claude_code_memory.domain.memory_state import MemoryState
from claude_code_memory.memories.write.usage import SHARED_SCOPE, Usage
from claude_code_memory.store.shared_state import SharedState

from .support.rows import user_with_app


def _counting(database: Database) -> list[str]:
    """The statements that sum a user's texts, as they run."""
    sums: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "sum(length(" in statement.lower():
            sums.append(statement)

    event.listen(database.engine, "before_cursor_execute", seen)
    return sums


@pytest.mark.postgres
def test_replicas_share_one_count_and_add_to_it(postgres_url: str) -> None:
    database = Database(postgres_url)
    database.migrate()
    with database.session() as session:
        user, app = user_with_app(session, "quota-user")
        texts = ["The build runs on the blue runners", "Deploys need two approvals", "gone"]
        session.add_all(
            Memory(user_id=user.id, app_id=app.id, content=text, state=state)
            for text, state in zip(
                texts, [MemoryState.active, MemoryState.paused, MemoryState.deleted], strict=True
            )
        )
        user_pk = user.id
    stored = sum(len(t) for t in texts[:2])  # a deleted memory's text does not count
    sums = _counting(database)
    one, other = Usage(SharedState(database)), Usage(SharedState(database))
    with database.session() as session:
        assert one.used(session, user_pk) == stored and len(sums) == 1
        assert other.used(session, user_pk) == stored and len(sums) == 1  # the first replica's count
        one.add(user_pk, "x" * 20)  # a write of 20 bytes on the first replica
        assert other.used(session, user_pk) == stored + 20 and other.known(user_pk) == stored + 20
        assert len(sums) == 1
        other.forget(user_pk)  # a delete on the second
        assert one.known(user_pk) is None
        assert one.used(session, user_pk) == stored and len(sums) == 2  # counted again, once
    assert SharedState(database).counted(SHARED_SCOPE, str(user_pk)) == stored
    other.forget()
    assert SharedState(database).counted(SHARED_SCOPE, str(user_pk)) is None
    database.close()


def test_one_server_counts_once_and_keeps_the_count(tmp_path: Any) -> None:
    database = Database(f"sqlite:///{tmp_path / 'memory.db'}")
    database.migrate()
    with database.session() as session:
        user, app = user_with_app(session, "quota-user")
        session.add(Memory(user_id=user.id, app_id=app.id, content="twelve bytes", state=MemoryState.active))
        user_pk = user.id
    sums = _counting(database)
    usage = Usage()
    with database.session() as session:
        assert usage.used(session, user_pk) == 12 and len(sums) == 1
        usage.add(user_pk, "héllo")  # 6 bytes in UTF-8
        assert usage.used(session, user_pk) == 18 and len(sums) == 1
        usage.forget(user_pk)
        assert usage.used(session, user_pk) == 12 and len(sums) == 2
    database.close()
