"""Who a memory belongs to: users and their apps, found or created, and the paused-app check.

A memory is owned by a user and written through one of that user's apps (an MCP client, the
REST API, the capture proxy). Apps can be paused: a paused app neither reads nor writes.
"""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session, joinedload

from ..auth.identity import validate_user_id
from ..db.database import Database
from ..db.get_or_create import get_or_create_app, get_or_create_user
from ..db.models import App, Memory, User
from ..errors import NotFound
from .values import require_active, validate_app_name

#: A user and their app by the user's id and the app's name: (user key, app key, is_active),
#: the app's columns None when the user has no such app.
_USER_AND_APP = (
    select(User.id, App.id, App.is_active)
    .select_from(User)
    .outerjoin(App, (App.owner_id == User.id) & (App.name == bindparam("app_name")))
    .where(User.user_id == bindparam("user_id"))
)


class Owners:
    def __init__(self, database: Database) -> None:
        self.database = database

    def user(self, session: Session, user_id: str) -> User:
        """The user named ``user_id``, made on first use (writes make users; reads do not)."""
        return get_or_create_user(session, validate_user_id(user_id))

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

    def reader(self, user_id: str, app_name: str, action: str) -> tuple[uuid.UUID | None, uuid.UUID | None]:
        """The keys of the user and the app a read goes through, None for either that does not
        exist: a read creates neither (only writes do). A paused app is refused. One indexed
        read of three columns (a search's first step, beside the query's embedding), where
        loading ORM objects cost more."""
        validate_user_id(user_id)
        app_name = validate_app_name(app_name)
        with self.database.engine.connect() as connection:
            row = connection.execute(_USER_AND_APP, {"user_id": user_id, "app_name": app_name}).first()
        if row is None:
            return None, None
        user_pk, app_pk, is_active = row
        if app_pk is not None:
            require_active(app_name, is_active, action)
        return user_pk, app_pk

    def own_app(self, user_id: str, app_name: str, action: str) -> tuple[uuid.UUID, uuid.UUID]:
        """The keys of the user and an app the server itself names for the caller (the Claude
        Code hooks' app), created on first use like a writer's; a paused app is refused.
        Reads through a name the caller chose go through :meth:`reader`, which creates nothing."""
        user_pk, app_pk = self.reader(user_id, app_name, action)
        if user_pk is None or app_pk is None:
            with self.database.session() as session:
                user, app = self.user_app(session, user_id, app_name)
                require_active(app_name, app.is_active, action)
                return user.id, app.id
        return user_pk, app_pk

    def app(self, session: Session, user: User, app_name: str) -> App:
        return get_or_create_app(session, user, validate_app_name(app_name))

    @staticmethod
    def require_active(app: App, action: str) -> None:
        require_active(app.name, app.is_active, action)


def owned(session: Session, memory_id: uuid.UUID, principal_user: str | None) -> Memory:
    """The memory, which ``principal_user`` must own (None: the admin, who may see any).
    Another user's memory is NotFound, as an unknown one is: one answer, so ids do not leak."""
    # Owner and app come in the same query: every caller reads them.
    memory = session.get(Memory, memory_id, options=[joinedload(Memory.user), joinedload(Memory.app)])
    if memory is None or (principal_user is not None and memory.user.user_id != principal_user):
        raise NotFound(f"memory {memory_id} not found")
    return memory
