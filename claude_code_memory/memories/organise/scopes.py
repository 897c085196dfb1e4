"""Scopes: every memory is global, of a project, or of a task within a project.

    Scope(project=None)                     global
    Scope(project="shop")                   the project "shop"
    Scope(project="shop", task="checkout")  a task of "shop"

The scope lives in the memory's ``project`` and ``task`` columns (``project`` was already the
memory's provenance: a memory written before scopes keeps the project its provenance named,
and one without a project is global). ``Scopes`` moves memories between scopes, ends a task
(its memories archived, or promoted to the project) and lists the projects and tasks in use.

A capture's project is the name :func:`...capture.projects.session_project` makes of its
working directory (its last part), so the capture proxy, Claude Code's hooks and the import
file one session's turns under one project; :func:`project_name` is that rule for any write.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update

from ...capture.projects import session_project
from ...db.database import Database
from ...db.models import Memory, User, utcnow
from ...domain.memory_state import MemoryState
from ...errors import BadInput
from ...store.owners import Owners
from ...store.values import parse_memory_id
from ...store.vectors import Vectors
from ..lifecycle.states import States

MAX_PROJECT = 512
MAX_TASK = 256
#: The ``scope`` a search or listing may ask for.
SEARCH_SCOPES = ("default", "project", "task", "global", "all", "team")


@dataclass(frozen=True)
class Scope:
    project: str | None = None
    task: str | None = None

    @property
    def name(self) -> str:
        if self.project is None:
            return "global"
        return f"{self.project}/{self.task}" if self.task else self.project

    def to_dict(self) -> dict[str, str | None]:
        return {"scope": "global" if self.project is None else "task" if self.task else "project"} | {
            "project": self.project,
            "task": self.task,
        }


def clean_name(value: object, what: str, limit: int) -> str | None:
    """A project or task name as stored: stripped; None for None; BadInput for anything else."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise BadInput(f"{what} must be a non-empty string")
    value = value.strip()
    if len(value) > limit:
        raise BadInput(f"{what} is {len(value)} characters; the maximum is {limit}")
    return value


def scope_of(project: object, task: object) -> Scope:
    """The scope a caller names; a task needs its project."""
    name = clean_name(project, "project", MAX_PROJECT)
    task_name = clean_name(task, "task", MAX_TASK)
    if task_name is not None and name is None:
        raise BadInput("a task belongs to a project: name the project too (or set_project first)")
    return Scope(name, task_name)


def search_scope(scope: object, project: object, task: object = None) -> dict[str, Any]:
    """The search filters (fields of a ``SearchRequest``, search/request.py) for a scope a
    caller asks for:

    ``default`` (or None)  the project's memories first, with global ones; everything when no
                           project is known
    ``project``            only the project's memories
    ``task``               only the task's memories (of the project)
    ``global``             only memories of no project
    ``all``                every memory, no scope ranking
    ``team``               only the memories of the caller's teams (memories/teams/search.py)
    """
    scope = "default" if scope is None else scope
    if scope not in SEARCH_SCOPES:
        raise BadInput(f"scope must be one of {', '.join(SEARCH_SCOPES)}, got {scope!r}")
    named = scope_of(project, task)
    if scope in ("project", "task") and named.project is None:
        raise BadInput(f"scope {scope!r} needs a project (pass project, or set_project first)")
    if scope == "task" and named.task is None:
        raise BadInput("scope 'task' needs a task")
    if scope == "global":
        return {"global_only": True}
    if scope == "all":
        return {}
    if scope == "team":
        return {"teams_only": True}
    if scope in ("project", "task"):
        return {"project": named.project, "task": named.task}
    return {"current_project": named.project, "task": named.task}


def project_name(project: str | None) -> str | None:
    """A capture's project as a scope: the name of a working directory (an absolute path) by its
    last part, the name the hooks give it; any other name as it is."""
    if project and os.path.isabs(project):
        return session_project(project)
    return project


class Scopes:
    def __init__(self, database: Database, owners: Owners, vectors: Vectors, states: States) -> None:
        self.database = database
        self.owners = owners
        self.vectors = vectors
        self.states = states

    def move(self, memory_ids: Iterable[object], scope: Scope, *, user_id: str) -> int:
        """Move the user's memories (not deleted) into ``scope``; returns how many moved.
        The vector payload's project follows, so the search filter by project stays right."""
        ids = [parse_memory_id(m) for m in memory_ids]
        if not ids:
            raise BadInput("memory_ids must list at least one memory id")
        moved = 0
        embedded: list[str] = []
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            rows = session.scalars(
                select(Memory).where(
                    Memory.id.in_(ids), Memory.user_id == user.id, Memory.state != MemoryState.deleted
                )
            )
            for memory in rows:
                if (memory.project, memory.task) == (scope.project, scope.task):
                    continue
                memory.project, memory.task = scope.project, scope.task
                memory.entities_indexed = False  # its project is one of its entities
                memory.updated_at = utcnow()
                moved += 1
                if memory.state != MemoryState.pending:  # pending items have no vector yet
                    embedded.append(str(memory.id))
        for memory_id in embedded:
            self.vectors.set_payload(memory_id, {"project": scope.project})
        return moved

    def complete_task(
        self, *, user_id: str, project: str, task: str, promote: bool = False
    ) -> dict[str, int]:
        """End a task: its memories are promoted to the project (``promote``) or archived."""
        scope = scope_of(project, task)
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            ids = list(
                session.scalars(
                    select(Memory.id).where(
                        Memory.user_id == user.id,
                        Memory.project == scope.project,
                        Memory.task == scope.task,
                        Memory.state.notin_([MemoryState.deleted, MemoryState.trashed, MemoryState.pending]),
                    )
                )
            )
            if promote:
                session.execute(
                    update(Memory).where(Memory.id.in_(ids)).values(task=None, updated_at=utcnow())
                )
        if promote:
            return {"promoted": len(ids), "archived": 0}
        # Archived memories keep their task: the task's record, out of searches and lists.
        archived = self.states.change_state(ids, MemoryState.archived, user_id=user_id, changed_by=user_id)
        return {"promoted": 0, "archived": archived}

    def scopes_in_use(self, user_id: str) -> list[dict[str, object]]:
        """The user's projects and tasks with how many memories (not deleted or trashed) each has."""
        with self.database.session() as session:
            user = session.scalar(select(User).where(User.user_id == user_id))
            if user is None:
                return []
            rows = session.execute(
                select(Memory.project, Memory.task, func.count())
                .where(
                    Memory.user_id == user.id,
                    Memory.state.notin_([MemoryState.deleted, MemoryState.trashed, MemoryState.pending]),
                )
                .group_by(Memory.project, Memory.task)
                .order_by(Memory.project, Memory.task)
            )
            return [Scope(project, task).to_dict() | {"memories": count} for project, task, count in rows]


def memory_scope(memory_project: str | None, memory_task: str | None) -> dict[str, str | None]:
    return Scope(memory_project, memory_task).to_dict()
