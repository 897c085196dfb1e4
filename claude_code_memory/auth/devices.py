"""A user's devices: what may act for them from somewhere else (docs/remote.md).

Two kinds, listed together and revoked the same way:

* ``token``: a named bearer token (``ccmem token create --name laptop``, ``ccmem connect
  claude-code --server ...`` makes one per machine); its last use is written at most once a
  minute (auth/identity.py), so a read never turns into a write;
* ``oauth``: an OAuth client the user let in on the consent page (a grant, auth/oauth/store.py);
  its last use is when it last got tokens (code exchange or refresh).

Revoking either ends it at once: a token is looked up on every request, and every OAuth access
token names its grant, which the resource server checks on every request.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, String, Text, Uuid, column, select, table, update

from ..db.database import Database
from ..db.models import utcnow
from ..errors import NotFound
from .identity import Identity

# The OAuth tables as columns only: auth/oauth/store.py owns them, and importing it would load
# the MCP SDK's OAuth pieces into every server, OAuth on or off.
_grants = table(
    "oauth_grants",
    column("id", Uuid),
    column("client_id", Text),
    column("user_id", String),
    column("scopes", Text),
    column("created_at", DateTime),
    column("last_used_at", DateTime),
    column("revoked_at", DateTime),
)
_clients = table("oauth_clients", column("client_id", String), column("metadata", JSON))


@dataclass(frozen=True)
class Device:
    id: str
    kind: str  # "token" or "oauth"
    name: str
    created_at: str
    last_used_at: str | None
    revoked: bool
    #: A token's first characters (what `ccmem token revoke` also takes); None for OAuth.
    prefix: str | None = None
    #: An OAuth client's id and the scopes it was granted.
    client_id: str | None = None
    scopes: list[str] | None = None


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _client_name(client_id: str, metadata: Any) -> str:
    if isinstance(metadata, dict) and isinstance(metadata.get("client_name"), str):
        return str(metadata["client_name"])
    return client_id


class Devices:
    def __init__(self, database: Database, identity: Identity) -> None:
        self.database = database
        self.identity = identity

    def list(self, user_id: str, include_revoked: bool = False) -> list[Device]:
        """The user's tokens and OAuth clients, oldest first."""
        found = [
            Device(
                id=token.id,
                kind="token",
                name=token.name or "(unnamed token)",
                created_at=token.created_at,
                last_used_at=token.last_used_at,
                revoked=token.revoked,
                prefix=token.prefix,
            )
            for token in self.identity.list_tokens(user_id)
            if include_revoked or not token.revoked
        ]
        query = (
            select(_grants, _clients.c.metadata)
            .select_from(_grants.outerjoin(_clients, _clients.c.client_id == _grants.c.client_id))
            .where(_grants.c.user_id == user_id)
            .order_by(_grants.c.created_at)
        )
        if not include_revoked:
            query = query.where(_grants.c.revoked_at.is_(None))
        with self.database.engine.connect() as connection:
            for row in connection.execute(query):
                found.append(
                    Device(
                        id=str(row.id),
                        kind="oauth",
                        name=_client_name(row.client_id, row.metadata),
                        created_at=row.created_at.isoformat(),
                        last_used_at=_iso(row.last_used_at),
                        revoked=row.revoked_at is not None,
                        client_id=row.client_id,
                        scopes=str(row.scopes).split(),
                    )
                )
        return sorted(found, key=lambda device: device.created_at)

    def revoke(self, user_id: str, device: str) -> Device:
        """Revoke the user's device by id (a token's listed prefix also does); NotFound for
        anything else, another user's device included."""
        matches = [d for d in self.list(user_id, include_revoked=True) if device in (d.id, d.prefix)]
        if len(matches) != 1:
            raise NotFound(f"no device {device!r}" + (" (several match: use the id)" if matches else ""))
        match = matches[0]
        if match.kind == "token":
            self.identity.revoke_token(match.id, user_id)
        else:
            with self.database.engine.begin() as connection:
                connection.execute(
                    update(_grants)
                    .where(_grants.c.id == uuid.UUID(match.id), _grants.c.revoked_at.is_(None))
                    .values(revoked_at=utcnow())
                )
        return Device(**{**match.__dict__, "revoked": True})
