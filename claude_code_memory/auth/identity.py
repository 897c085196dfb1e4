"""Who is asking: users, bearer tokens and the admin token.

Tokens are random, shown once, and stored only as SHA-256 digests. The admin token comes from
the environment (``CCMEM_ADMIN_TOKEN``, written to ``.env`` by install.sh) and is compared in
constant time. A user's token acts for that user only; the admin token acts for anyone.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import bindparam, select, update

from ..db.database import Database
from ..db.get_or_create import get_or_create_user
from ..db.models import ApiToken, User, utcnow
from ..errors import BadInput, Forbidden, NotFound, Unauthorised

USER_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
TOKEN_PREFIX = "ccm_"
#: The user row that owns a team's shared memories (memories/teams/): no token is issued for it
#: and no request acts for it, the admin's included; the team's routes are the only door.
TEAM_OWNER_PATTERN = re.compile(r"^team\.[0-9a-f]{32}$")
# Writing last_used_at on every request would turn each read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)

_TOKEN_LOOKUP = (
    select(ApiToken.id, ApiToken.last_used_at, User.user_id)
    .join(User)
    .where(ApiToken.token_hash == bindparam("token_hash"), ApiToken.revoked_at.is_(None))
)


@dataclass(frozen=True)
class Principal:
    user_id: str | None
    is_admin: bool = False
    #: Other names that mean this principal's user (the local mode's OpenMemory default names).
    aliases: frozenset[str] = frozenset()
    #: A request without a token, let in by ``auth.local_mode`` (auth/local_mode.py).
    local: bool = False
    #: An OAuth access token's scopes (auth/oauth/scopes.py); None: every right (other tokens).
    scopes: frozenset[str] | None = None
    #: The OAuth client the access token was issued to.
    client_id: str | None = None

    def resolve(self, user_id: str) -> str:
        """The user ``user_id`` names for this principal (an alias is its own user); raise
        Forbidden unless this principal may act for it. A team's own user is nobody's to act
        for, the admin's included: the team's routes are its only door."""
        refuse_team_owner(user_id)
        if self.is_admin:
            return user_id
        if self.user_id is not None and (user_id == self.user_id or user_id in self.aliases):
            return self.user_id
        if self.local:
            names = ", ".join(repr(name) for name in sorted({self.user_id or "", *self.aliases}))
            raise Forbidden(
                f"the local mode acts only for user {self.user_id!r} (named {names}), not {user_id!r}: "
                "add the name to auth.local_mode.aliases, or send a token"
            )
        raise Forbidden(f"this token cannot access the memories of user {user_id!r}")

    def require_user(self, user_id: str) -> None:
        """Raise Forbidden unless this principal may act for ``user_id``."""
        self.resolve(user_id)


def acting_user(principal: Principal, user_id: str | None) -> str:
    """The user a request acts for: the given ``user_id`` (checked against the token) or the
    token's own user when it is omitted. The admin token must always name a user."""
    if user_id is None:
        if principal.user_id is None:
            raise BadInput("user_id is required with the admin token")
        return principal.user_id
    validate_user_id(user_id)
    refuse_team_owner(user_id)
    return principal.resolve(user_id)


def refuse_team_owner(user_id: str) -> None:
    """Forbidden for the name of a team's own user (:data:`TEAM_OWNER_PATTERN`)."""
    if TEAM_OWNER_PATTERN.match(user_id):
        raise Forbidden(f"{user_id!r} holds a team's memories: reach them through /api/v1/teams")


def validate_user_id(user_id: object) -> str:
    if not isinstance(user_id, str) or not USER_ID_PATTERN.match(user_id):
        raise BadInput(
            f"invalid user_id {user_id!r}: use 1-64 letters, digits, '.', '_', '@' or '-', "
            "starting with a letter or digit"
        )
    return user_id


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenInfo:
    id: str
    user_id: str
    name: str | None
    prefix: str
    created_at: str
    last_used_at: str | None
    revoked: bool


class Identity:
    def __init__(self, database: Database, admin_token: str | None) -> None:
        self.database = database
        self.admin_token = admin_token

    @classmethod
    def open(cls, database_url: str, admin_token: str | None) -> Identity:
        """Over the metadata database at ``database_url``, migrated first. Any process may
        open it (unlike the vectors), so the CLI manages tokens beside a running server."""
        database = Database(database_url)
        database.migrate()
        return cls(database, admin_token)

    def create_token(self, user_id: str, name: str | None = None) -> str:
        validate_user_id(user_id)
        refuse_team_owner(user_id)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self.database.session() as session:
            user = get_or_create_user(session, user_id)
            session.add(ApiToken(user_id=user.id, name=name, token_hash=hash_token(token), prefix=token[:12]))
        return token

    def list_tokens(self, user_id: str | None = None) -> list[TokenInfo]:
        with self.database.session() as session:
            query = select(ApiToken, User.user_id).join(User).order_by(ApiToken.created_at)
            if user_id is not None:
                query = query.where(User.user_id == user_id)
            return [
                TokenInfo(
                    id=str(token.id),
                    user_id=owner,
                    name=token.name,
                    prefix=token.prefix,
                    created_at=token.created_at.isoformat(),
                    last_used_at=token.last_used_at.isoformat() if token.last_used_at else None,
                    revoked=token.revoked_at is not None,
                )
                for token, owner in session.execute(query)
            ]

    def revoke_token(self, token_id_or_prefix: str, user_id: str | None = None) -> TokenInfo:
        """Revoke by token id or by the prefix shown in listings."""
        matches = [
            t
            for t in self.list_tokens(user_id)
            if t.id == token_id_or_prefix or t.prefix == token_id_or_prefix
        ]
        if not matches:
            raise NotFound(f"no token {token_id_or_prefix!r}")
        if len(matches) > 1:
            raise BadInput(f"{token_id_or_prefix!r} matches several tokens; use the token id")
        with self.database.session() as session:
            token = session.get(ApiToken, _uuid(matches[0].id))
            assert token is not None
            token.revoked_at = token.revoked_at or utcnow()
        return matches[0]

    def authenticate(self, authorization: str | None) -> Principal:
        """Turn an ``Authorization`` header value into a principal, or raise Unauthorised."""
        if not authorization:
            raise Unauthorised("missing Authorization header: send 'Authorization: Bearer <token>'")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorised("the Authorization header must be 'Bearer <token>'")
        if self.admin_token and hmac.compare_digest(token.encode(), self.admin_token.encode()):
            return Principal(user_id=None, is_admin=True)
        # Columns through a connection, not ORM objects through a session: every request
        # starts here, before anything else it does can begin (docs/search.md, "Latency").
        with self.database.engine.connect() as connection:
            row = connection.execute(_TOKEN_LOOKUP, {"token_hash": hash_token(token)}).first()
            if row is None:
                raise Unauthorised("unknown or revoked token")
            token_pk, last_used_at, user_id = row
            now = utcnow()
            if last_used_at is None or now - last_used_at > LAST_USED_RESOLUTION:
                connection.execute(update(ApiToken).where(ApiToken.id == token_pk).values(last_used_at=now))
                connection.commit()
        return Principal(user_id=user_id)


def _uuid(value: str):  # type: ignore[no-untyped-def]
    import uuid

    return uuid.UUID(value)
