"""Rows for tests that work on the metadata database directly: a user and an app of theirs."""

from __future__ import annotations

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
