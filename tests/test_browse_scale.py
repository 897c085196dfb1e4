"""The web UI's list, its filter options and OpenMemory's categories at scale
(memories/read_model/facets.py, queries.py, migration 0016): the same answers as reading every
memory, from reads that do not grow with the user's memories."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event, select

from claude_code_memory.db.database import Database
from claude_code_memory.db.models import App, Category, Memory, MemoryAccessLog, MemoryCategory, User
from claude_code_memory.domain.memory_state import MemoryState
from claude_code_memory.memories.read_model import facets, insights, queries
from claude_code_memory.memories.read_model.apps import LISTED_STATES, Apps
from claude_code_memory.store.access_log import AccessLog

from .support import rows
from .support.rows import user_with_app
from .support.steps import sqlite_steps

#: SQLite, then PostgreSQL (tests/support/rows.py).
database_url = rows.database_url

STATES = [MemoryState.active, MemoryState.paused, MemoryState.archived, MemoryState.deleted]


def _store(
    session: Any, name: str, size: int, names: dict[str, Category], seed: int
) -> tuple[User, list[Memory]]:
    """A user of ``size`` memories over a few projects and tasks, in every state, each in up to
    two of the categories."""
    chance = random.Random(seed)
    user, app = user_with_app(session, name)
    memories = []
    for n in range(size):
        project = chance.choice([None, None, "atlas", "borealis", f"{name[0]}-p{n % 5}"])
        memories.append(
            Memory(
                user_id=user.id,
                app_id=app.id,
                content=f"{name} memory {n}",
                project=project,
                task=chance.choice([None, None, f"t{n % 3}"]) if project else None,
                state=chance.choice(STATES),
                created_at=datetime(2025, 1, 1) + timedelta(seconds=chance.randrange(10**7), microseconds=n),
                # A few, whatever the size: what the insights page lists.
                redactions=1 if n < 4 else 0,
                expires_at=datetime(2025, 6, 1) + timedelta(days=n) if 4 <= n < 8 else None,
            )
        )
    session.add_all(memories)
    session.flush()
    for memory in memories:
        for category in chance.sample(sorted(names), chance.choice([0, 1, 2])):
            session.add(MemoryCategory(memory_id=memory.id, category_id=names[category].id))
    session.flush()
    return user, memories


def _categories(session: Any) -> dict[str, Category]:
    made = {name: Category(name=name, description="") for name in ("finance", "travel", "work", "unused")}
    session.add_all(made.values())
    session.flush()
    return made


def test_the_filter_options_and_pages_are_those_of_reading_every_memory(database_url: str) -> None:
    database = Database(database_url)
    database.migrate()
    with database.session() as session:
        names = _categories(session)
        user, memories = _store(session, "reader", 600, {k: v for k, v in names.items() if k != "unused"}, 1)
        _store(session, "other", 300, names, 2)  # another user's projects and categories are not offered
        links: dict[Any, set[str]] = {}
        for memory_id, category in session.execute(
            select(MemoryCategory.memory_id, Category.name).join(Category)
        ):
            links.setdefault(memory_id, set()).add(category)
        kept = [m for m in memories if m.state in queries.BROWSABLE]
        offered = facets.facets(session, user.id, queries.BROWSABLE)
        assert offered == {
            "apps": ["t"],
            "projects": sorted({m.project for m in kept if m.project}),
            "tasks": sorted({m.task for m in kept if m.task}),
            "categories": sorted({c for m in kept for c in links.get(m.id, ())}),
        }
        listed = [m for m in memories if m.state in queries.LISTED]
        assert [c.name for c in facets.categories(session, user.id, queries.LISTED)] == sorted(
            {c for m in listed for c in links.get(m.id, ())}
        )
        conditions = queries._browsed(user.id, queries.Browse())
        assert queries._count(session, conditions) == len(listed)
        newest = sorted(listed, key=lambda m: m.created_at, reverse=True)  # no two at one time
        page = session.execute(
            queries._rows(conditions).order_by(Memory.created_at.desc(), Memory.id).offset(40).limit(20)
        ).all()
        assert [m.id for m, _ in page] == [m.id for m in newest[40:60]]
        in_app = queries._browsed(user.id, queries.Browse(apps=["t"], projects=["atlas"]))
        assert queries._count(session, in_app) == sum(1 for m in listed if m.project == "atlas")
        assert queries._count(session, queries._browsed(user.id, queries.Browse(apps=["nope"]))) == 0
    database.close()


def test_the_lists_reads_do_not_grow_with_the_users_memories_on_sqlite(tmp_path: Path) -> None:
    """SQLite's virtual-machine steps for the filter options, the categories and a page of the
    list (its 3rd, newest first), and the insights page's redacted and expiring memories, for a
    store of 200 memories and one of 8,000 with the same
    projects, tasks and categories. Before (one grouping or sort of every memory of the user):
    573 -> 23,703, 160 -> 6,918 and 452 -> 6,103 steps; now 126 -> 172, 16 -> 15, 442 -> 443."""
    steps: dict[tuple[str, int], int] = {}
    for size in (200, 8000):
        database = Database(f"sqlite:///{tmp_path / f'memory-{size}.db'}")
        database.migrate()
        with database.session() as session:
            names = _categories(session)
            user, _ = _store(session, "reader", size, {k: v for k, v in names.items() if k != "unused"}, 7)
            for name, count in _steps(session, user).items():
                steps[(name, size)] = count
        database.close()
    for name in ("facets", "categories", "page", "redacted", "expiring"):
        assert 0 < steps[(name, 8000)] < 2 * steps[(name, 200)] + 50, steps


def _steps(session: Any, user: User) -> dict[str, int]:
    """SQLite's virtual-machine steps (in tens) of each of the list's reads for ``user``."""
    conditions = queries._browsed(user.id, queries.Browse())
    reads: dict[str, Callable[[], object]] = {
        "facets": lambda: facets.facets(session, user.id, queries.BROWSABLE),
        "categories": lambda: facets.categories(session, user.id, queries.LISTED),
        "page": lambda: session.execute(
            queries._rows(conditions).order_by(Memory.created_at.desc(), Memory.id).offset(40).limit(20)
        ).all(),
        # The insights page's redacted memories and those that expire (migration 0017).
        "redacted": lambda: insights._redacted(session, user.id)["memories"],
        "expiring": lambda: insights._expiring(session, user.id, datetime(2025, 6, 1), 30)["memories"],
    }
    steps = {}
    for name, read in reads.items():
        answer, steps[name] = sqlite_steps(session, read)
        assert answer
    return steps


def _accesses(session: Any, app: App, memories: list[Memory], every: int) -> None:
    """The app read every ``every``-th memory twice (the count is of distinct memories)."""
    for memory in memories[::every]:
        for _ in range(2):
            session.add(MemoryAccessLog(memory_id=memory.id, app_id=app.id, access_type="search"))
    session.flush()


def _apps(database: Database, owner: str | None, **kwargs: Any) -> dict[str, Any]:
    return Apps(database, AccessLog(database)).app_page(owner=owner, **kwargs)


def test_the_apps_list_counts_each_app_s_memories_and_reads(database_url: str) -> None:
    database = Database(database_url)
    database.migrate()
    with database.session() as session:
        names = _categories(session)
        user, memories = _store(session, "reader", 300, names, 3)
        first = session.scalar(select(App).where(App.owner_id == user.id))
        second = App(owner_id=user.id, name="second")
        session.add(second)
        session.flush()
        for memory in memories[::3]:  # a third of them written through the second app
            memory.app_id = second.id
        session.flush()
        _accesses(session, first, memories, 5)
        _accesses(session, second, memories, 7)  # an app may read another app's memories
        other, others = _store(session, "other", 120, names, 4)
        _accesses(session, session.scalar(select(App).where(App.owner_id == other.id)), others, 2)
        created = {
            app.id: sum(1 for m in memories if m.app_id == app.id and m.state in LISTED_STATES)
            for app in (first, second)
        }
        accessed = {first.id: len(memories[::5]), second.id: len(memories[::7])}
    listed = _apps(database, "reader")
    assert listed["total"] == 2 and [a["name"] for a in listed["apps"]] == ["second", "t"]
    for app in listed["apps"]:
        key = uuid.UUID(app["id"])
        assert (app["total_memories_created"], app["total_memories_accessed"]) == (
            created[key],
            accessed[key],
        )
        assert app["user_id"] == "reader"
    by_count = _apps(database, "reader", sort_by="memories", sort_direction="desc")["apps"]
    assert [a["total_memories_created"] for a in by_count] == sorted(created.values(), reverse=True)
    # The admin's list holds every user's apps; a page of one still counts every app.
    everyone = _apps(database, None, page_size=1, sort_by="memories_accessed", sort_direction="desc")
    assert everyone["total"] == 3 and everyone["apps"][0]["total_memories_accessed"] == len(others[::2])
    assert _apps(database, "reader", name="SEC")["total"] == 1
    database.close()


def _apps_steps(database: Database, owner: str) -> tuple[dict[str, Any], int]:
    """The apps list of ``owner``, and SQLite's virtual-machine steps (in tens) for it, on
    whichever pooled connections it used."""
    counted = [0]

    def step() -> int:
        counted[0] += 1
        return 0

    def watch(connection: Any, *_: Any) -> None:
        connection.set_progress_handler(step, 10)

    event.listen(database.engine, "checkout", watch)
    try:
        listed = _apps(database, owner)
    finally:
        event.remove(database.engine, "checkout", watch)
    return listed, counted[0]


def test_a_user_s_apps_list_does_not_read_other_users_memories_on_sqlite(tmp_path: Path) -> None:
    """SQLite's virtual-machine steps of one user's apps list, beside another user of 200 and of
    8,000 memories (each read once): the same. Before, the counts joined a grouping of every
    app's memories and reads, twice a call (the total too)."""
    steps = {}
    for size in (200, 8000):
        database = Database(f"sqlite:///{tmp_path / f'apps-{size}.db'}")
        database.migrate()
        with database.session() as session:
            names = _categories(session)
            user, memories = _store(session, "reader", 50, names, 5)
            _accesses(session, session.scalar(select(App).where(App.owner_id == user.id)), memories, 1)
            other, others = _store(session, "other", size, names, 6)
            _accesses(session, session.scalar(select(App).where(App.owner_id == other.id)), others, 1)
        listed, steps[size] = _apps_steps(database, "reader")
        assert listed["apps"][0]["total_memories_accessed"] == 50
        database.close()
    assert 0 < steps[8000] < 2 * steps[200] + 50, steps
