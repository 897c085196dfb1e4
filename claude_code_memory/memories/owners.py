"""Who a memory belongs to: users and their apps, found or created, and the paused-app check.

A memory is owned by a user and written through one of that user's apps (an MCP client, the
REST API, the capture proxy). Apps can be paused: a paused app neither reads nor writes.
"""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session, joinedload

from ..auth.identity import get_or_create, get_or_create_user, validate_user_id
from ..db.database import Database
from ..db.models import App, Memory, User
from ..errors import Forbidden, NotFound
from .values import require_active, validate_app_name

#: A user's app by the user's id and the app's name: (user key, app key, is_active).
_USER_APP = (
    select(User.id, App.id, App.is_active)
    .join(App, App.owner_id == User.id)
    .where(User.user_id == bindparam("user_id"), App.name == bindparam("app_name"))
)


class Owners:
    def __init__(self, database: Database) -> None:
        self.database = database

    def user(self, session: Session, user_id: str) -> User:
        return get_or_create_user(session, user_id)

    def find_user(self, session: Session, user_id: str) -> User:
        validate_user_id(user_id)
        user = session.scalar(select(User).where(User.user_id == user_id))
        if user is None:
            raise NotFound(f"user {user_id!r} not found")
        return user

    def user_app(self, session: Session, user_id: str, app_name: str) -> tuple[User, App]:
        """The user and their app, in one query when both exist (the common case)."""
        validate_user_id(user_id)
        row = session.execute(
            select(User, App)
            .join(App, App.owner_id == User.id)
            .where(User.user_id == user_id, App.name == app_name)
        ).first()
        if row is not None:
            return row[0], row[1]
        user = self.user(session, user_id)
        return user, self.app(session, user, app_name)

    def active_app(self, user_id: str, app_name: str, action: str) -> tuple[uuid.UUID, uuid.UUID]:
        """The keys of the user and their app, which must not be paused; both are created
        when missing. One indexed read of three columns in the common case (a search's first
        step, beside the query's embedding), where loading ORM objects cost more."""
        validate_user_id(user_id)
        with self.database.engine.connect() as connection:
            row = connection.execute(_USER_APP, {"user_id": user_id, "app_name": app_name}).first()
        if row is None:
            with self.database.session() as session:
                user, app = self.user_app(session, user_id, app_name)
                user_pk, app_pk, is_active = user.id, app.id, app.is_active
        else:
            user_pk, app_pk, is_active = row
        require_active(app_name, is_active, action)
        return user_pk, app_pk

    def app(self, session: Session, user: User, app_name: str) -> App:
        app_name = validate_app_name(app_name)
        return get_or_create(
            session, App, {"owner_id": user.id, "name": app_name}, {"is_active": True, "metadata_": {}}
        )

    @staticmethod
    def require_active(app: App, action: str) -> None:
        require_active(app.name, app.is_active, action)


def owned(session: Session, memory_id: uuid.UUID, principal_user: str | None) -> Memory:
    """The memory, which ``principal_user`` must own (None: the admin, who may see any)."""
    # Owner and app come in the same query: every caller reads them.
    memory = session.get(Memory, memory_id, options=[joinedload(Memory.user), joinedload(Memory.app)])
    if memory is None:
        raise NotFound(f"memory {memory_id} not found")
    if principal_user is not None and memory.user.user_id != principal_user:
        raise Forbidden("this token cannot access that memory")
    return memory
