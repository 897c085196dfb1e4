"""Access tokens of the built-in authorization server: short-lived JWTs (RFC 9068 shape) signed
with the server's key by PyJWT, bound to one resource by their ``aud``."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt

from .keys import ALGORITHM, SigningKey

#: RFC 9068's media type for a JWT access token.
TOKEN_TYPE = "at+jwt"
#: The claim naming the grant the token belongs to: revoking the grant ends the token.
GRANT_CLAIM = "grant_id"
ADMIN_CLAIM = "ccmem_admin"


@dataclass(frozen=True)
class AccessClaims:
    subject: str | None
    is_admin: bool
    client_id: str
    scopes: list[str]
    audience: str
    grant_id: uuid.UUID
    expires_at: int


class TokenRefused(Exception):
    """A JWT that is not a valid access token for this resource; the message says why."""


def issue(
    key: SigningKey,
    *,
    issuer: str,
    audience: str,
    subject: str | None,
    is_admin: bool,
    client_id: str,
    scopes: list[str],
    grant_id: uuid.UUID,
    lifetime_seconds: int,
) -> tuple[str, int]:
    """A signed access token and its expiry (epoch seconds)."""
    now = int(time.time())
    expires = now + lifetime_seconds
    claims: dict[str, Any] = {
        "iss": issuer,
        "sub": "admin" if is_admin else subject,
        "aud": audience,
        "client_id": client_id,
        "scope": " ".join(scopes),
        "iat": now,
        "exp": expires,
        "jti": uuid.uuid4().hex,
        GRANT_CLAIM: str(grant_id),
    }
    if is_admin:
        claims[ADMIN_CLAIM] = True
    token = jwt.encode(
        claims, key.private, algorithm=ALGORITHM, headers={"typ": TOKEN_TYPE, "kid": key.key_id}
    )
    return token, expires


def verify(key: SigningKey, token: str, *, issuer: str, audience: str) -> AccessClaims:
    """The claims of a token this server signed for ``audience``; TokenRefused otherwise."""
    try:
        header = jwt.get_unverified_header(token)
        if header.get("typ") != TOKEN_TYPE:
            raise TokenRefused("not an access token (typ is not at+jwt)")
        claims = jwt.decode(
            token,
            key.public,
            algorithms=[ALGORITHM],
            audience=audience,
            issuer=issuer,
            options={"require": ["exp", "iat", "iss", "aud", "sub", GRANT_CLAIM]},
        )
    except jwt.ExpiredSignatureError:
        raise TokenRefused("the access token has expired") from None
    except jwt.InvalidAudienceError:
        raise TokenRefused(f"the access token was issued for another resource, not {audience}") from None
    except jwt.PyJWTError as error:
        raise TokenRefused(f"invalid access token: {error}") from None
    try:
        grant_id = uuid.UUID(str(claims[GRANT_CLAIM]))
    except ValueError:
        raise TokenRefused("invalid access token: malformed grant") from None
    return AccessClaims(
        subject=str(claims["sub"]),
        is_admin=claims.get(ADMIN_CLAIM) is True,
        client_id=str(claims.get("client_id", "")),
        scopes=str(claims.get("scope", "")).split(),
        audience=audience,
        grant_id=grant_id,
        expires_at=int(claims["exp"]),
    )
