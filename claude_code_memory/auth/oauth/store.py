"""What the built-in authorization server remembers: registered clients, grants, authorization
codes and refresh tokens (tables of migration 0010).

Registration needs no credentials, so what it may store is bounded: a client nobody has
authorized yet (no code was ever issued for it) is *unused*; unused clients are capped in all
and per address they came from, and one older than ``unused_client_hours`` is deleted when the
next registration comes (:meth:`OAuthStore.register_client`).

A grant is one consent: a user (or the admin) let one client have some scopes on one resource.
Its codes and refresh tokens are stored as SHA-256 digests only; a refresh token is used once
(rotation), and presenting a used one again revokes the whole grant, as OAuth 2.1 §4.3.1 asks
of a public client's refresh tokens. Revoking a grant ends its access tokens at once: every
access token names its grant, and the resource server checks the grant per request.
"""

from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    MetaData,
    String,
    Table,
    Text,
    Uuid,
    delete,
    exists,
    func,
    insert,
    select,
    update,
)

from ...db.models import utcnow

metadata = MetaData()

clients = Table(
    "oauth_clients",
    metadata,
    Column("client_id", String(255), primary_key=True),
    Column("metadata", JSON, nullable=False),
    Column("created_at", DateTime, nullable=False),
    #: The address a dynamically registered client came from (migration 0020).
    Column("registered_from", String(64), index=True),
)
grants = Table(
    "oauth_grants",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("client_id", Text, nullable=False),
    Column("user_id", String(64)),
    Column("is_admin", Boolean, nullable=False),
    Column("scopes", Text, nullable=False),
    Column("resource", Text, nullable=False),
    Column("created_at", DateTime, nullable=False),
    Column("revoked_at", DateTime),
    #: When its client last got tokens (migration 0011; the Devices list shows it).
    Column("last_used_at", DateTime),
)
codes = Table(
    "oauth_codes",
    metadata,
    Column("code_hash", String(64), primary_key=True),
    Column("client_id", Text, nullable=False),
    Column("user_id", String(64)),
    Column("is_admin", Boolean, nullable=False),
    Column("scopes", Text, nullable=False),
    Column("resource", Text, nullable=False),
    Column("code_challenge", String(128), nullable=False),
    Column("redirect_uri", Text, nullable=False),
    Column("redirect_uri_explicit", Boolean, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("used_at", DateTime),
    Column("grant_id", Uuid),
)
refresh_tokens = Table(
    "oauth_refresh_tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("grant_id", Uuid, ForeignKey("oauth_grants.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("expires_at", Float, nullable=False),
    Column("used_at", DateTime),
)

CODE_SECONDS = 300


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Grant:
    id: uuid.UUID
    client_id: str
    user_id: str | None
    is_admin: bool
    scopes: list[str]
    resource: str


@dataclass(frozen=True)
class StoredCode:
    client_id: str
    user_id: str | None
    is_admin: bool
    scopes: list[str]
    resource: str
    code_challenge: str
    redirect_uri: str
    redirect_uri_explicit: bool
    expires_at: float
    #: The grant a first exchange made: a second exchange of the code revokes it.
    used_grant: uuid.UUID | None
    used: bool


@dataclass(frozen=True)
class StoredRefresh:
    grant: Grant
    expires_at: float
    used: bool


@dataclass(frozen=True)
class RegistrationLimits:
    """``auth.oauth.registration``: unused clients in all and per address, and their lifetime."""

    max_unused: int
    max_unused_per_address: int
    unused_hours: int


class RegistrationFull(Exception):
    """Too many unused registrations (from one address, or in all): nothing was stored."""

    def __init__(self, description: str, retry_after: float) -> None:
        super().__init__(description)
        self.description = description
        self.retry_after = retry_after


def _grant(row: Any) -> Grant:
    return Grant(row.id, row.client_id, row.user_id, row.is_admin, row.scopes.split(), row.resource)


class OAuthStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- clients ----------------------------------------------------------------------------
    def register_client(
        self, client_id: str, client_metadata: dict[str, Any], *, address: str, limits: RegistrationLimits
    ) -> None:
        """Store a dynamically registered client, after deleting the unused ones past their
        lifetime; :class:`RegistrationFull` (nothing stored) when ``address`` or everyone holds
        as many unused clients as the limits allow."""
        now = utcnow()
        lifetime = timedelta(hours=limits.unused_hours)
        with self.engine.begin() as connection:
            connection.execute(delete(clients).where(_unused(), clients.c.created_at < now - lifetime))
            for where, cap, whose in (
                (clients.c.registered_from == address, limits.max_unused_per_address, "from your address"),
                (None, limits.max_unused, "on this server"),
            ):
                query = (
                    select(func.count(), func.min(clients.c.created_at)).select_from(clients).where(_unused())
                )
                count, oldest = connection.execute(query if where is None else query.where(where)).one()
                if count >= cap:
                    wait = _seconds_until(oldest + lifetime, now) if oldest else 3600.0
                    raise RegistrationFull(
                        f"{count} registered clients {whose} were never authorized (at most {cap}): "
                        f"authorize or wait until one expires (auth.oauth.registration)",
                        wait,
                    )
            connection.execute(
                insert(clients).values(
                    client_id=client_id, metadata=client_metadata, created_at=now, registered_from=address
                )
            )

    def unused_clients(self) -> int:
        """Registered clients never authorized (what the registration limits count)."""
        with self.engine.connect() as connection:
            return int(
                connection.execute(select(func.count()).select_from(clients).where(_unused())).scalar_one()
            )

    def client(self, client_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as connection:
            row = connection.execute(
                select(clients.c.metadata).where(clients.c.client_id == client_id)
            ).first()
        return dict(row.metadata) if row else None

    # -- codes ------------------------------------------------------------------------------
    def create_code(
        self,
        *,
        client_id: str,
        user_id: str | None,
        is_admin: bool,
        scopes: list[str],
        resource: str,
        code_challenge: str,
        redirect_uri: str,
        redirect_uri_explicit: bool,
    ) -> str:
        code = secrets.token_urlsafe(32)
        with self.engine.begin() as connection:
            connection.execute(
                insert(codes).values(
                    code_hash=digest(code),
                    client_id=client_id,
                    user_id=user_id,
                    is_admin=is_admin,
                    scopes=" ".join(scopes),
                    resource=resource,
                    code_challenge=code_challenge,
                    redirect_uri=redirect_uri,
                    redirect_uri_explicit=redirect_uri_explicit,
                    expires_at=time.time() + CODE_SECONDS,
                )
            )
        return code

    def code(self, code: str) -> StoredCode | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(codes).where(codes.c.code_hash == digest(code))).first()
        if row is None:
            return None
        return StoredCode(
            client_id=row.client_id,
            user_id=row.user_id,
            is_admin=row.is_admin,
            scopes=row.scopes.split(),
            resource=row.resource,
            code_challenge=row.code_challenge,
            redirect_uri=row.redirect_uri,
            redirect_uri_explicit=row.redirect_uri_explicit,
            expires_at=row.expires_at,
            used_grant=row.grant_id,
            used=row.used_at is not None,
        )

    def redeem_code(self, code: str, refresh_days: int) -> tuple[Grant, str] | None:
        """Turn an unused code into a grant and its first refresh token; None when the code
        was used already (then the grant it made before is revoked: the code leaked)."""
        code_hash = digest(code)
        with self.engine.begin() as connection:
            row = connection.execute(select(codes).where(codes.c.code_hash == code_hash)).first()
            if row is None:
                return None
            if row.used_at is not None:
                if row.grant_id is not None:
                    self._revoke(connection, row.grant_id)
                return None
            claimed = connection.execute(
                update(codes)
                .where(codes.c.code_hash == code_hash, codes.c.used_at.is_(None))
                .values(used_at=utcnow())
            )
            if claimed.rowcount != 1:  # another request redeemed it meanwhile
                return None
            grant = Grant(
                uuid.uuid4(), row.client_id, row.user_id, row.is_admin, row.scopes.split(), row.resource
            )
            connection.execute(
                insert(grants).values(
                    id=grant.id,
                    client_id=grant.client_id,
                    user_id=grant.user_id,
                    is_admin=grant.is_admin,
                    scopes=" ".join(grant.scopes),
                    resource=grant.resource,
                    created_at=utcnow(),
                    last_used_at=utcnow(),
                )
            )
            connection.execute(update(codes).where(codes.c.code_hash == code_hash).values(grant_id=grant.id))
            refresh = self._new_refresh(connection, grant.id, refresh_days)
        return grant, refresh

    # -- refresh tokens ---------------------------------------------------------------------
    def refresh(self, token: str) -> StoredRefresh | None:
        """A live grant's refresh token; a used one revokes its grant and reads as unknown."""
        with self.engine.begin() as connection:
            row = connection.execute(
                select(refresh_tokens, grants)
                .join(grants, grants.c.id == refresh_tokens.c.grant_id)
                .where(refresh_tokens.c.token_hash == digest(token), grants.c.revoked_at.is_(None))
            ).first()
            if row is None:
                return None
            if row.used_at is not None:
                self._revoke(connection, row.grant_id)
                return None
        return StoredRefresh(grant=_grant(row), expires_at=row.expires_at, used=False)

    def rotate(self, token: str, refresh_days: int) -> str | None:
        """Use ``token`` (once) for a new refresh token of the same grant; None if it was used."""
        with self.engine.begin() as connection:
            row = connection.execute(
                select(refresh_tokens.c.grant_id).where(refresh_tokens.c.token_hash == digest(token))
            ).first()
            if row is None:
                return None
            claimed = connection.execute(
                update(refresh_tokens)
                .where(refresh_tokens.c.token_hash == digest(token), refresh_tokens.c.used_at.is_(None))
                .values(used_at=utcnow())
            )
            if claimed.rowcount != 1:
                self._revoke(connection, row.grant_id)
                return None
            connection.execute(
                update(grants).where(grants.c.id == row.grant_id).values(last_used_at=utcnow())
            )
            return self._new_refresh(connection, row.grant_id, refresh_days)

    def _new_refresh(self, connection: Any, grant_id: uuid.UUID, refresh_days: int) -> str:
        token = secrets.token_urlsafe(32)
        connection.execute(
            insert(refresh_tokens).values(
                token_hash=digest(token), grant_id=grant_id, expires_at=time.time() + refresh_days * 86_400
            )
        )
        return token

    # -- grants -----------------------------------------------------------------------------
    def grant_live(self, grant_id: uuid.UUID) -> bool:
        """Whether the grant exists and is not revoked (checked for every access token)."""
        with self.engine.connect() as connection:
            row = connection.execute(select(grants.c.revoked_at).where(grants.c.id == grant_id)).first()
        return row is not None and row.revoked_at is None

    def revoke(self, grant_id: uuid.UUID) -> None:
        with self.engine.begin() as connection:
            self._revoke(connection, grant_id)

    @staticmethod
    def _revoke(connection: Any, grant_id: uuid.UUID) -> None:
        connection.execute(
            update(grants)
            .where(grants.c.id == grant_id, grants.c.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )


def _unused() -> Any:
    """A client no code was ever issued for: nobody authorized it."""
    return ~exists().where(codes.c.client_id == clients.c.client_id)


def _seconds_until(moment: datetime, now: datetime) -> float:
    return max(1.0, (moment - now).total_seconds())
