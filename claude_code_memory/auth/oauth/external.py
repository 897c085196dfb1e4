"""An external OpenID Connect issuer's access tokens, checked by PyJWT against the issuer's
JWKS (found through its discovery document, fetched on first use and cached by PyJWKClient).

The issuer must put this server in ``aud`` (``auth.oauth.audience``, by default the resource
URL) and the user id in ``auth.oauth.user_claim``; scopes come from ``scope`` (space-separated)
or ``scp`` (a list), as issuers differ.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
import jwt

from .scopes import parse

#: Asymmetric algorithms only: an HMAC "key" from a JWKS would be public.
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
DISCOVERY_TIMEOUT_SECONDS = 5.0


class IssuerError(Exception):
    """The issuer or one of its tokens could not be trusted; the message says why."""


class ExternalIssuer:
    def __init__(self, issuer: str, audience: str, user_claim: str) -> None:
        self.issuer = issuer.rstrip("/")
        self.audience = audience
        self.user_claim = user_claim
        self._jwks: jwt.PyJWKClient | None = None
        self._lock = threading.Lock()

    def _discover(self) -> jwt.PyJWKClient:
        with self._lock:
            if self._jwks is None:
                document = self._discovery_document()
                if str(document.get("issuer", "")).rstrip("/") != self.issuer:
                    raise IssuerError(
                        f"{self.issuer}: its discovery document names issuer {document.get('issuer')!r}"
                    )
                jwks_uri = document.get("jwks_uri")
                if not isinstance(jwks_uri, str):
                    raise IssuerError(f"{self.issuer}: its discovery document has no jwks_uri")
                self._jwks = jwt.PyJWKClient(jwks_uri, cache_keys=True, lifespan=300, timeout=5)
            return self._jwks

    def _discovery_document(self) -> dict[str, Any]:
        urls = (
            f"{self.issuer}/.well-known/openid-configuration",
            f"{self.issuer}/.well-known/oauth-authorization-server",
        )
        for url in urls:
            try:
                response = httpx.get(url, timeout=DISCOVERY_TIMEOUT_SECONDS, trust_env=False)
            except httpx.HTTPError as error:
                raise IssuerError(f"{self.issuer}: discovery failed: {error}") from None
            if response.status_code == 200:
                document = response.json()
                if isinstance(document, dict):
                    return document
        raise IssuerError(f"{self.issuer}: no OpenID Connect or OAuth discovery document")

    def verify(self, token: str) -> tuple[str, frozenset[str], str | None]:
        """(user id, scopes, client id) of a valid token; IssuerError otherwise."""
        try:
            key = self._discover().get_signing_key_from_jwt(token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=ALGORITHMS,
                audience=self.audience,
                issuer=self.issuer,
                options={"require": ["exp", "iss", "aud", self.user_claim]},
            )
        except jwt.ExpiredSignatureError:
            raise IssuerError("the access token has expired") from None
        except jwt.InvalidAudienceError:
            raise IssuerError(
                f"the access token was issued for another resource, not {self.audience}"
            ) from None
        except jwt.PyJWKClientError as error:
            raise IssuerError(f"the issuer's keys: {error}") from None
        except jwt.PyJWTError as error:
            raise IssuerError(f"invalid access token: {error}") from None
        granted = parse(claims.get("scope")) | parse(claims.get("scp"))
        client = claims.get("client_id") or claims.get("azp")
        return str(claims[self.user_claim]), granted, str(client) if client else None
