"""Tests that work on the metadata database directly: the database (SQLite, then PostgreSQL),
and a user with an app of theirs.

``database_url`` is imported by the test modules that use it (a module-level fixture, so that a
module collected on its own, as tests/test_tiers.py does, is parametrized too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from claude_code_memory.db.models import App, User


def user_with_app(session: Session, name: str, app: str = "t") -> tuple[User, App]:
    """A new user ``name`` and an app of theirs, flushed (their ids are set)."""
    user = User(user_id=name)
    session.add(user)
    session.flush()
    owned = App(owner_id=user.id, name=app)
    session.add(owned)
    session.flush()
    return user, owned


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The test once on a new SQLite file and once on a fresh PostgreSQL database (for code that
    runs its own statement on SQLite's driver and the ORM's elsewhere)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memory.db'}"
    return str(request.getfixturevalue("postgres_url"))
