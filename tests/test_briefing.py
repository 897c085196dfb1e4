"""A SessionStart briefing's reads (memories/recall/context.py): the project's most recalled
memories first, then its newest; each memory's recall count kept by the access log's writer
(store/access_log.py) and brought up to date by migration 0015; both reads a seek whatever the
store's size."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select, text

from claude_code_memory.db.database import Database
from claude_code_memory.db.models import App, Memory, MemoryAccessLog, User
from claude_code_memory.domain.memory_state import MemoryState
from claude_code_memory.memories.recall.context import most_recalled, newest

from .support import rows
from .support.rows import user_with_app

#: SQLite, then PostgreSQL (tests/support/rows.py).
database_url = rows.database_url

_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def test_a_briefing_gives_the_projects_most_recalled_first_then_its_newest(service: Any) -> None:
    user = f"b{uuid.uuid4().hex[:8]}"

    def add(text_: str, project: str | None = "atlas") -> str:
        return str(
            service.writes.add_memory(user_id=user, app_name="notes", text=text_, project=project)[0]["id"]
        )

    often = add("Atlas deploys go through the blue pipeline")
    once = add("Atlas keeps its secrets in the vault service")
    plain = add("Atlas uses the heron linter for its Go code")
    elsewhere = add("Borealis releases ship on Fridays", project="borealis")
    newest_global = add("The user prefers short commit messages", project=None)
    _, app_pk = service.owners.own_app(user, "notes", "read memories")
    service.access_log.record(app_pk, [(uuid.UUID(often), {})] * 3 + [(uuid.UUID(once), {})], "search")
    service.access_log.record(app_pk, [(uuid.UUID(plain), {})] * 5, "hook_search")  # not a recall
    service.access_log.record(app_pk, [(uuid.UUID(elsewhere), {})] * 9, "injected")  # another project
    service.access_log.flush()

    with service.database.session() as session:
        owner = session.scalar(select(User.id).where(User.user_id == user))
        found = list(
            session.execute(
                select(Memory.id, Memory.recalls, Memory.recalled_at).where(Memory.user_id == owner)
            )
        )
        counts = {row[0]: row[1] for row in found}
        last = {str(row[0]): row[2] for row in found}
    assert {str(k): v for k, v in counts.items()} == {
        often: 3,
        once: 1,
        plain: 0,
        elsewhere: 9,
        newest_global: 0,
    }
    # The last recall's time: set by a recall, not by a hook's search.
    assert last[often] is not None and last[elsewhere] is not None
    assert last[plain] is None and last[newest_global] is None

    block = service.recall.briefing(user, session_id=uuid.uuid4().hex, project="atlas")
    shown = _ID.findall(block)
    assert shown[:2] == [often, once], block  # the most recalled, most first
    assert plain in shown and newest_global in shown and elsewhere not in shown, block
    assert shown.index(plain) < shown.index(newest_global), block  # the project's before no project's
    # The briefing's injections are recalls too: counted as the log writes them.
    service.access_log.flush()
    with service.database.session() as session:
        assert session.scalar(select(Memory.recalls).where(Memory.id == uuid.UUID(plain))) == 1


def _user_with(session: Any, name: str, memories: int, start: datetime) -> tuple[User, list[Memory]]:
    user, app = user_with_app(session, name)
    rows = [
        Memory(
            user_id=user.id,
            app_id=app.id,
            content=f"memory {n}",
            project="atlas" if n % 2 else None,
            created_at=start + timedelta(seconds=n),
            recalls=n % 7 if n % 3 == 0 else 0,
            state=MemoryState.deleted if n % 11 == 0 else MemoryState.active,
        )
        for n in range(memories)
    ]
    session.add_all(rows)
    session.flush()
    return user, rows


def test_the_briefings_reads_do_not_grow_with_the_store_on_sqlite(tmp_path: Path) -> None:
    """SQLite's virtual-machine steps for both reads, for a user of 60 memories and one of
    6,000: each is a seek and a short walk. (Before migration 0015 the newest sorted every
    memory of the scope, and the most recalled counted the whole access log.)"""
    database = Database(f"sqlite:///{tmp_path / 'memory.db'}")
    database.migrate()
    steps: dict[tuple[str, int], int] = {}
    counted = [0]

    def step() -> int:
        counted[0] += 1
        return 0  # go on

    with database.session() as session:
        for size in (60, 6000):
            user, rows = _user_with(session, f"u{size}", size, datetime(2025, 1, 1))
            raw = session.connection().connection.driver_connection
            for name, read in (("recalled", most_recalled), ("newest", newest)):
                counted[0] = 0
                raw.set_progress_handler(step, 10)
                try:
                    found = read(session, user.id, "atlas", 5)
                finally:
                    raw.set_progress_handler(None, 10)
                steps[(name, size)] = counted[0]
                assert len(found) == 5
            # The answers are the ones a full sort gives.
            active = [m for m in rows if m.state == MemoryState.active]
            recalled = sorted(
                (m for m in active if m.project == "atlas" and m.recalls > 0),
                key=lambda m: (m.recalls, m.created_at),
                reverse=True,
            )
            assert [r.id for r in most_recalled(session, user.id, "atlas", 5)] == [m.id for m in recalled[:5]]
            mine = sorted(
                (m for m in active if m.project == "atlas"), key=lambda m: m.created_at, reverse=True
            )
            assert [r.id for r in newest(session, user.id, "atlas", 5)] == [m.id for m in mine[:5]]
    database.close()
    for name in ("recalled", "newest"):
        assert 0 < steps[(name, 6000)] < 2 * steps[(name, 60)] + 20, steps


def test_newest_fills_with_memories_of_no_project_and_skips_the_inactive(database_url: str) -> None:
    database = Database(database_url)
    database.migrate()
    with database.session() as session:
        user, rows = _user_with(session, "fill", 12, datetime(2025, 3, 1))
        by_content = {m.id: m.content for m in rows}
        found = [by_content[r.id] for r in newest(session, user.id, "atlas", 8)]
        # atlas: the odd ones, memory 11 deleted; then no project: the even ones, memory 0 deleted.
        assert found == [
            "memory 9",
            "memory 7",
            "memory 5",
            "memory 3",
            "memory 1",
            "memory 10",
            "memory 8",
            "memory 6",
        ]
        assert [by_content[r.id] for r in newest(session, user.id, None, 3)] == [
            "memory 10",
            "memory 8",
            "memory 6",
        ]
        recalled = [by_content[r.id] for r in most_recalled(session, user.id, "atlas", 5)]
        assert recalled == ["memory 3", "memory 9"]  # 3 recalls, then 2; the others none
    database.close()


def test_migration_0015_counts_the_recalls_already_in_the_access_log(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'memory.db'}")
    database.migrate()
    with database.session() as session:
        user, rows = _user_with(session, "old", 3, datetime(2025, 5, 1))
        app = session.scalar(select(App).where(App.owner_id == user.id))
        assert app is not None
        day = datetime(2025, 6, 1)
        for memory, kinds in zip(
            rows, (["search", "search", "injected"], ["hook_search", "list"], []), strict=True
        ):
            memory.recalls, memory.recalled_at = 0, None  # as before the columns: the log alone says
            session.add_all(
                MemoryAccessLog(
                    memory_id=memory.id, app_id=app.id, access_type=kind, accessed_at=day + timedelta(hours=n)
                )
                for n, kind in enumerate(kinds)
            )
        ids = [m.id for m in rows]
    with database.engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0014'"))
    database.migrate()
    with database.session() as session:
        counts = {
            row[0]: (row[1], row[2])
            for row in session.execute(
                select(Memory.id, Memory.recalls, Memory.recalled_at).where(Memory.id.in_(ids))
            )
        }
    database.close()
    # Only searches and injections count; the last one's time is kept.
    assert [counts[i] for i in ids] == [(3, day + timedelta(hours=2)), (0, None), (0, None)]
