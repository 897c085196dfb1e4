"""The built-in authorization server: the MCP SDK's ``OAuthAuthorizationServerProvider``
protocol over :mod:`.store`, :mod:`.access_tokens` and :mod:`.client_metadata`.

The SDK's handlers (``mcp.server.auth.handlers``) speak the protocol: they parse and check
requests (PKCE S256 only, redirect URIs, scopes, code expiry and the verifier) and call this
provider for what is ours to decide. Every client is public (``token_endpoint_auth_method:
none``): a dynamically registered client's request for a secret is answered without one, as
RFC 7591 §3.2.1 lets a server do, so no client secret is ever stored.

``authorize`` sends the browser to the consent page (:mod:`.consent`) with the request signed
into the URL: nothing is stored until the person decides.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any
from urllib.parse import urlencode, urlsplit

import anyio.to_thread
import jwt
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from . import access_tokens, registration, scopes
from .client_metadata import Client, ClientMetadataError, ClientMetadataFetcher, is_metadata_url
from .keys import ALGORITHM, SigningKey
from .store import OAuthStore, RegistrationLimits

log = logging.getLogger(__name__)

CONSENT_PATH = "/oauth/consent"
#: The signed authorization request the consent page carries (not an access token).
PENDING_TYPE = "ccmem-consent+jwt"
PENDING_SECONDS = 600


class GrantAccessToken(AccessToken):
    grant_id: uuid.UUID


class GrantRefreshToken(RefreshToken):
    grant_id: uuid.UUID


class GrantCode(AuthorizationCode):
    is_admin: bool = False


def covers(resource: str, requested: str) -> bool:
    """Whether a requested RFC 8707 resource is this server's or a URL below it (a client may
    name the MCP endpoint's own URL); the token is then bound to ``resource`` itself."""
    ours, theirs = urlsplit(resource), urlsplit(requested)
    if (ours.scheme, ours.netloc.lower()) != (theirs.scheme, theirs.netloc.lower()) or theirs.query:
        return False
    return (theirs.path.rstrip("/") + "/").startswith(ours.path.rstrip("/") + "/")


class BuiltInProvider:
    def __init__(
        self,
        *,
        store: OAuthStore,
        key: SigningKey,
        issuer: str,
        resource: str,
        access_minutes: int,
        refresh_days: int,
        allow_loopback_client_ids: bool,
        registration_limits: RegistrationLimits,
    ) -> None:
        self.store = store
        self.registration_limits = registration_limits
        self.key = key
        self.issuer = issuer
        self.resource = resource
        self.access_seconds = access_minutes * 60
        self.refresh_days = refresh_days
        self.fetcher = ClientMetadataFetcher(
            allow_loopback=allow_loopback_client_ids, scopes=list(scopes.ALL)
        )

    # -- clients ----------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if is_metadata_url(client_id):
            try:
                return await self.fetcher.client(client_id)
            except ClientMetadataError as error:
                log.warning("OAuth client refused: %s", error)
                return None
        stored = await anyio.to_thread.run_sync(self.store.client, client_id)
        return Client.model_validate(stored) if stored else None

    async def register_client(self, client_info: OAuthClientInformationFull, address: str = "") -> None:
        """Store a dynamically registered client: RegistrationError when its metadata breaks a
        limit of :mod:`.registration`, store.RegistrationFull when ``address`` (or everyone)
        holds too many unused clients; nothing is stored then."""
        # Public clients only; the SDK's handler answers with this same object.
        client_info.token_endpoint_auth_method = "none"
        client_info.client_secret = None
        client_info.client_secret_expires_at = None
        record = client_info.model_dump(mode="json", exclude_none=True)
        try:
            registration.check(record)
        except registration.MetadataRefused as refused:
            raise RegistrationError(refused.error, refused.description) from None
        await anyio.to_thread.run_sync(
            lambda: self.store.register_client(
                client_info.client_id, record, address=address, limits=self.registration_limits
            )
        )

    # -- authorization ----------------------------------------------------------------------
    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is not None and not covers(self.resource, params.resource):
            raise AuthorizeError("invalid_target", f"this server issues tokens for {self.resource} only")
        pending = {
            "typ": PENDING_TYPE,
            "client_id": client.client_id,
            "redirect_uri": str(params.redirect_uri),
            "redirect_uri_explicit": params.redirect_uri_provided_explicitly,
            "scopes": params.scopes if params.scopes is not None else list(scopes.USER_SCOPES),
            "state": params.state,
            "code_challenge": params.code_challenge,
            "resource": self.resource,
        }
        return f"{self.issuer}{CONSENT_PATH}?{urlencode({'request': self.sign_pending(pending)})}"

    def sign_pending(self, pending: dict[str, Any]) -> str:
        claims = {**pending, "iss": self.issuer, "aud": self.issuer + CONSENT_PATH}
        claims["exp"] = int(time.time()) + PENDING_SECONDS
        return jwt.encode(claims, self.key.private, algorithm=ALGORITHM)

    def read_pending(self, blob: str) -> dict[str, Any]:
        """The authorization request a consent page carries; ValueError when forged or stale."""
        try:
            claims: dict[str, Any] = jwt.decode(
                blob,
                self.key.public,
                algorithms=[ALGORITHM],
                audience=self.issuer + CONSENT_PATH,
                issuer=self.issuer,
            )
        except jwt.ExpiredSignatureError:
            raise ValueError(
                "this authorization request has expired: start again from the application"
            ) from None
        except jwt.PyJWTError:
            raise ValueError(
                "this authorization request is not valid: start again from the application"
            ) from None
        if claims.get("typ") != PENDING_TYPE:
            raise ValueError("this authorization request is not valid: start again from the application")
        return claims

    def create_code(
        self, pending: dict[str, Any], *, user_id: str | None, is_admin: bool, granted: list[str]
    ) -> str:
        return self.store.create_code(
            client_id=pending["client_id"],
            user_id=user_id,
            is_admin=is_admin,
            scopes=granted,
            resource=pending["resource"],
            code_challenge=pending["code_challenge"],
            redirect_uri=pending["redirect_uri"],
            redirect_uri_explicit=bool(pending["redirect_uri_explicit"]),
        )

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> GrantCode | None:
        stored = await anyio.to_thread.run_sync(self.store.code, authorization_code)
        if stored is None:
            return None
        if stored.used:  # a second use: the redemption revokes what the first one made
            await anyio.to_thread.run_sync(self.store.redeem_code, authorization_code, self.refresh_days)
            return None
        return GrantCode(
            code=authorization_code,
            scopes=stored.scopes,
            expires_at=stored.expires_at,
            client_id=stored.client_id,
            code_challenge=stored.code_challenge,
            redirect_uri=stored.redirect_uri,  # type: ignore[arg-type]
            redirect_uri_provided_explicitly=stored.redirect_uri_explicit,
            resource=stored.resource,
            subject=stored.user_id,
            is_admin=stored.is_admin,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: GrantCode
    ) -> OAuthToken:
        redeemed = await anyio.to_thread.run_sync(
            self.store.redeem_code, authorization_code.code, self.refresh_days
        )
        if redeemed is None:
            raise TokenError("invalid_grant", "the authorization code was used already")
        grant, refresh = redeemed
        return self._tokens(grant.client_id, grant.user_id, grant.is_admin, grant.scopes, grant.id, refresh)

    # -- refresh ----------------------------------------------------------------------------
    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> GrantRefreshToken | None:
        stored = await anyio.to_thread.run_sync(self.store.refresh, refresh_token)
        if stored is None:
            return None
        return GrantRefreshToken(
            token=refresh_token,
            client_id=stored.grant.client_id,
            scopes=stored.grant.scopes,
            expires_at=int(stored.expires_at),
            resource=stored.grant.resource,
            subject=stored.grant.user_id,
            grant_id=stored.grant.id,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: GrantRefreshToken, scopes: list[str]
    ) -> OAuthToken:
        rotated = await anyio.to_thread.run_sync(self.store.rotate, refresh_token.token, self.refresh_days)
        if rotated is None:
            raise TokenError("invalid_grant", "the refresh token was used already; its grant is revoked")
        is_admin = refresh_token.subject is None
        return self._tokens(
            refresh_token.client_id, refresh_token.subject, is_admin, scopes, refresh_token.grant_id, rotated
        )

    def _tokens(
        self,
        client_id: str,
        user_id: str | None,
        is_admin: bool,
        granted: list[str],
        grant_id: uuid.UUID,
        refresh: str,
    ) -> OAuthToken:
        access, _ = access_tokens.issue(
            self.key,
            issuer=self.issuer,
            audience=self.resource,
            subject=user_id,
            is_admin=is_admin,
            client_id=client_id,
            scopes=granted,
            grant_id=grant_id,
            lifetime_seconds=self.access_seconds,
        )
        return OAuthToken(
            access_token=access,
            expires_in=self.access_seconds,
            scope=" ".join(granted),
            refresh_token=refresh,
        )

    # -- access tokens and revocation ---------------------------------------------------------
    async def load_access_token(self, token: str) -> GrantAccessToken | None:
        claims = self.verify(token)
        if claims is None or not await anyio.to_thread.run_sync(self.store.grant_live, claims.grant_id):
            return None
        return GrantAccessToken(
            token=token,
            client_id=claims.client_id,
            scopes=claims.scopes,
            expires_at=claims.expires_at,
            resource=claims.audience,
            subject=claims.subject,
            grant_id=claims.grant_id,
        )

    def verify(self, token: str) -> access_tokens.AccessClaims | None:
        try:
            return access_tokens.verify(self.key, token, issuer=self.issuer, audience=self.resource)
        except access_tokens.TokenRefused:
            return None

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: Any
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "the JWT bearer grant is not supported here")

    async def revoke_token(self, token: GrantAccessToken | GrantRefreshToken) -> None:
        await anyio.to_thread.run_sync(self.store.revoke, token.grant_id)
