"""The API and the MCP endpoint as an OAuth 2.1 resource server (RFC 9728, RFC 6750, RFC 8707).

* Its Protected Resource Metadata names the authorization server (the built-in one or the
  configured OpenID Connect issuer) and the scopes (:meth:`ResourceServer.metadata`).
* A request refused for its credentials gets 401 with ``WWW-Authenticate: Bearer
  resource_metadata="…"`` (and ``error="invalid_token"`` when it sent one), so a client can
  discover where to get a token; one whose token lacks a scope gets 403 ``insufficient_scope``
  naming the scope.
* A JWT-shaped bearer is checked as an access token for this resource (audience, issuer,
  expiry, signature, and for the built-in server its grant not revoked); any other bearer is a
  token from ``ccmem token create`` or the admin token, handled by :class:`~..identity.Identity`
  exactly as before OAuth, with every right it had.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from ...errors import Unauthorised
from ..identity import Identity, Principal, validate_user_id
from . import route_scopes, scopes
from .scopes import InsufficientScope

WELL_KNOWN = "/.well-known/oauth-protected-resource"

#: Turns a JWT into the principal it stands for; raises TokenRefusal.
Verifier = Callable[[str], Principal]


class TokenRefusal(Unauthorised):
    """401 whose challenge says why (RFC 6750 §3)."""

    def __init__(self, message: str, challenge: str) -> None:
        super().__init__(message)
        # An instance's own headers: the challenge names this server's metadata and the error.
        self.headers = {"WWW-Authenticate": challenge}  # type: ignore[misc]


def _jwt_shaped(token: str) -> bool:
    return token.count(".") == 2


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


class ResourceServer:
    def __init__(
        self,
        *,
        resource: str,
        authorization_servers: list[str],
        verifier: Verifier,
        resource_name: str = "claude-code-memory",
    ) -> None:
        self.resource = resource.rstrip("/")
        self.authorization_servers = authorization_servers
        self.verifier = verifier
        self.resource_name = resource_name

    @property
    def metadata_url(self) -> str:
        """Where this resource's metadata is (RFC 9728 §3.1: the well-known path before its own)."""
        parts = urlsplit(self.resource)
        path = parts.path.rstrip("/")
        return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{path}"

    def metadata(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "scopes_supported": list(scopes.ALL),
            "bearer_methods_supported": ["header"],
            "resource_name": self.resource_name,
        }

    def challenge(
        self, error: str | None = None, description: str | None = None, scope: str | None = None
    ) -> str:
        parts = [f'resource_metadata="{self.metadata_url}"']
        if error:
            parts.append(f'error="{error}"')
        if description:
            parts.append(f'error_description="{_quote(description)}"')
        if scope:
            parts.append(f'scope="{scope}"')
        return "Bearer " + ", ".join(parts)

    # -- authentication ---------------------------------------------------------------------
    def authenticate(self, authorization: str | None, identity: Identity) -> Principal:
        """The principal an ``Authorization`` header stands for; TokenRefusal otherwise."""
        token = ""
        if authorization:
            scheme, _, token = authorization.partition(" ")
            token = token.strip() if scheme.lower() == "bearer" else ""
        admin = identity.admin_token
        if (
            token
            and _jwt_shaped(token)
            and not (admin and hmac.compare_digest(token.encode(), admin.encode()))
        ):
            return self.verifier(token)
        try:
            return identity.authenticate(authorization)
        except Unauthorised as error:
            raise TokenRefusal(
                error.message, self.challenge("invalid_token", error.message) if token else self.challenge()
            ) from None

    def refuse(self, description: str) -> TokenRefusal:
        return TokenRefusal(description, self.challenge("invalid_token", description))

    def require(self, principal: Principal, needed: str) -> None:
        """Raise 403 insufficient_scope unless the principal's token carries ``needed``."""
        if not scopes.allows(principal, needed):
            raise InsufficientScope(needed, self.challenge("insufficient_scope", scope=needed))

    def require_route(self, principal: Principal, method: str, template: str | None) -> None:
        """Raise 403 unless the principal may call the route ``template`` with ``method``
        (:data:`.route_scopes.ROUTES`; the MCP endpoint checks each message itself)."""
        if principal.scopes is None:
            return
        needed = route_scopes.for_route(method, template)
        if needed not in (route_scopes.PUBLIC, route_scopes.PER_TOOL):
            self.require(principal, needed)


def principal_for(
    user: str | None, *, is_admin: bool, granted: list[str] | frozenset[str], client_id: str | None
) -> Principal:
    """The principal an access token stands for."""
    if is_admin:
        return Principal(user_id=None, is_admin=True, scopes=frozenset(granted), client_id=client_id)
    return Principal(user_id=validate_user_id(user), scopes=frozenset(granted), client_id=client_id)
