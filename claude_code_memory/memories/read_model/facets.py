"""What the web UI's filters offer: a user's apps, projects, tasks and categories.

Each list is read with seeks, never by reading the user's memories: a distinct project is the
first one after the last found (an index seek in ``ix_memories_scope``), a task the first after
the last within its project, and a category is offered when one of its links names a memory of
the user (a seek by category, then by memory id). At 1M memories the reads that grouped every
memory took 4.7 s; these take milliseconds, and as many seeks as there are values to offer.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from ...db.models import App, Category, Memory, MemoryCategory
from ...domain.memory_state import MemoryState


def facets(session: Session, user_pk: uuid.UUID, states: Sequence[MemoryState]) -> dict[str, list[str]]:
    """The user's apps, and the projects, tasks and categories of their memories in ``states``."""
    kept = (Memory.user_id == user_pk, Memory.state.in_(states))
    apps = session.scalars(select(App.name).where(App.owner_id == user_pk).order_by(App.name)).all()
    projects = _distinct(session, Memory.project, kept)
    tasks: set[str] = set()
    for project in [None, *projects]:
        within = Memory.project.is_(None) if project is None else Memory.project == project
        tasks.update(_distinct(session, Memory.task, (*kept, within)))
    return {
        "apps": list(apps),
        "projects": projects,
        "tasks": sorted(tasks),
        "categories": [c.name for c in categories(session, user_pk, states)],
    }


def categories(session: Session, user_pk: uuid.UUID, states: Sequence[MemoryState]) -> list[Category]:
    """The categories that hold one of the user's memories in ``states``, by name. Written as
    two nested EXISTS so that each category is a seek in its links (SQLite's planner otherwise
    walked the user's memories once per category: 2.9 s at 1M)."""
    of_user = exists().where(
        Memory.id == MemoryCategory.memory_id, Memory.user_id == user_pk, Memory.state.in_(states)
    )
    linked = exists().where(MemoryCategory.category_id == Category.id, of_user)
    return list(session.scalars(select(Category).where(linked).order_by(Category.name)))


def _distinct(session: Session, column: Any, where: Sequence[Any]) -> list[str]:
    """The column's distinct non-null values under ``where``, in order: one seek each."""
    found: list[str] = []
    while True:
        query = select(column).where(*where, column.is_not(None))
        if found:
            query = query.where(column > found[-1])
        value = session.scalar(query.order_by(column).limit(1))
        if value is None:
            return found
        found.append(value)
