"""OAuth 2.1 as MCP's authorization spec asks (docs/oauth.md).

    scopes.py           what memory:read, memory:write and admin allow
    route_scopes.py     which scope each route (by method and path template) and MCP tool needs
    resource.py         the resource server: metadata, challenges, bearer → principal
    provider.py         the built-in authorization server (the MCP SDK's provider protocol)
    store.py            its clients, grants, codes and refresh tokens (digests only)
    access_tokens.py    its access tokens: short JWTs signed with keys.py's key
    client_metadata.py  Client ID Metadata Documents
    registration.py     what a client may say about itself: every field's size, its redirect URIs
    redirect_uris.py    which redirect URIs a client may name
    external.py         an external OpenID Connect issuer's tokens, checked against its JWKS

:func:`build` is the one place that reads ``auth.oauth``; it runs at start-up, so a bad
setting stops the server with a message naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from ...config import Settings
from ...db.database import Database
from ...errors import BadInput, ConfigError
from ..identity import Principal
from ..local_mode import is_loopback
from . import keys
from .access_tokens import TokenRefused
from .external import ExternalIssuer, IssuerError
from .provider import BuiltInProvider
from .resource import ResourceServer, TokenRefusal, principal_for
from .store import OAuthStore, RegistrationLimits


@dataclass(frozen=True)
class OAuth:
    resource: ResourceServer
    #: The built-in authorization server; None with an external issuer.
    provider: BuiltInProvider | None


def build(settings: Settings, database: Database) -> OAuth | None:
    """OAuth for this server, or None while ``auth.oauth.enabled`` is false."""
    config = settings.auth.oauth
    if not config.enabled:
        return None
    resource_url = (config.resource_url or _loopback_url(settings)).rstrip("/")
    _check_public_url("auth.oauth.resource_url", resource_url)
    resource: ResourceServer
    if config.issuer:
        _check_public_url("auth.oauth.issuer", config.issuer)
        issuer = ExternalIssuer(config.issuer, config.audience or resource_url, config.user_claim)

        def verify_external(token: str) -> Principal:
            try:
                user, granted, client_id = issuer.verify(token)
                return principal_for(user, is_admin=False, granted=granted, client_id=client_id)
            except IssuerError as error:
                raise resource.refuse(str(error)) from None
            except BadInput:
                raise resource.refuse(f"the token's {config.user_claim} is not a valid user id") from None

        resource = ResourceServer(
            resource=resource_url, authorization_servers=[issuer.issuer], verifier=verify_external
        )
        return OAuth(resource, None)

    provider = BuiltInProvider(
        store=OAuthStore(database.engine),
        key=keys.load_or_create(settings.data_path),
        issuer=resource_url,
        resource=resource_url,
        access_minutes=config.access_token_minutes,
        refresh_days=config.refresh_token_days,
        allow_loopback_client_ids=config.allow_loopback_client_ids,
        registration_limits=RegistrationLimits(
            max_unused=config.registration.max_unused_clients,
            max_unused_per_address=config.registration.max_unused_clients_per_address,
            unused_hours=config.registration.unused_client_hours,
        ),
    )

    def verify_builtin(token: str) -> Principal:
        from . import access_tokens

        try:
            claims = access_tokens.verify(
                provider.key, token, issuer=provider.issuer, audience=provider.resource
            )
        except TokenRefused as error:
            raise resource.refuse(str(error)) from None
        if not provider.store.grant_live(claims.grant_id):
            raise resource.refuse("the access token was revoked")
        try:
            return principal_for(
                claims.subject, is_admin=claims.is_admin, granted=claims.scopes, client_id=claims.client_id
            )
        except BadInput:
            raise resource.refuse("the access token names no valid user") from None

    resource = ResourceServer(
        resource=resource_url, authorization_servers=[resource_url], verifier=verify_builtin
    )
    return OAuth(resource, provider)


def _loopback_url(settings: Settings) -> str:
    """The resource URL a server on loopback has when none is configured."""
    host = settings.server.host
    if not is_loopback(host):
        raise ConfigError(
            f"auth.oauth.resource_url must be set (the URL clients reach this server at) when "
            f"server.host = {host!r} is not a loopback address"
        )
    name = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{name}:{settings.server.port}"


def _check_public_url(key: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme != "https" and not is_loopback(parts.hostname or ""):
        raise ConfigError(f"{key} = {url!r}: must be an https URL (http only on a loopback address)")


__all__ = ["OAuth", "TokenRefusal", "build"]
