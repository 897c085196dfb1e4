"""A row found or made, safely when two requests race to make it: users and their apps.

    get_or_create_user(session, "alice")             -> User
    get_or_create_app(session, user, "claude-code")  -> App

The one place the write path and the tokens (auth/identity.py) make the user and app rows a
write or a token needs. Names are checked by the callers (``auth.identity.validate_user_id``,
``store.values.validate_app_name``), which own their rules.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from .models import App, User

T = TypeVar("T")


def get_or_create(session: Session, model: type[T], criteria: dict[str, Any], defaults: dict[str, Any]) -> T:
    """Select the row matching ``criteria`` or insert it; safe when two requests race to insert
    (the loser's insert hits the unique constraint, rolls back its savepoint and re-selects)."""
    query = select(model).filter_by(**criteria)
    row = session.scalar(query)
    if row is not None:
        return row
    try:
        with session.begin_nested():
            row = model(**criteria, **defaults)
            session.add(row)
    except IntegrityError:
        row = session.scalar(query)
        if row is None:
            raise
    return row


def get_or_create_user(session: Session, user_id: str) -> User:
    """The user named ``user_id`` (already checked), made on first use."""
    return get_or_create(session, User, {"user_id": user_id}, {"name": user_id, "metadata_": {}})


def get_or_create_app(session: Session, owner: User, app_name: str) -> App:
    """``owner``'s app named ``app_name`` (already checked), made active on first use."""
    return get_or_create(
        session, App, {"owner_id": owner.id, "name": app_name}, {"is_active": True, "metadata_": {}}
    )
