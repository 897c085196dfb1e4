"""OAuth's HTTP routes (docs/oauth.md): Protected Resource Metadata always; with the built-in
authorization server also its metadata, JWKS, the SDK's /authorize, /token, /register and
/revoke handlers over our provider, and the sign-in and consent page.

The consent page is server-rendered here, in the API process, because the authorization
request must come back to the server that signed it; it names the client, where it will send
the browser and what it asks for, and the person signs in with their own token (the admin
token may also grant ``admin``).
"""

from __future__ import annotations

import html
import logging
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.provider import construct_redirect_uri
from mcp.server.auth.routes import build_metadata, cors_middleware, create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ...auth.identity import Identity
from ...auth.oauth import OAuth, redirect_uris, registration, scopes
from ...auth.oauth.provider import CONSENT_PATH, BuiltInProvider
from ...auth.oauth.resource import WELL_KNOWN
from ...auth.oauth.store import RegistrationFull
from ...errors import Unauthorised
from ...rate_limits.limiter import LoginThrottle, seconds
from ..middleware import replay

log = logging.getLogger(__name__)

JWKS_PATH = "/oauth/jwks.json"
_PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}


def routes(oauth: OAuth, identity: Identity) -> list[BaseRoute]:
    async def protected_resource(_: Request) -> Response:
        return JSONResponse(oauth.resource.metadata(), headers={"Cache-Control": "public, max-age=3600"})

    handler = cors_middleware(protected_resource, ["GET", "OPTIONS"])
    found: list[BaseRoute] = [
        Route(WELL_KNOWN, handler, methods=["GET", "OPTIONS"]),
        # RFC 9728 §3.1's path-suffixed form, where a client looks for an endpoint's own
        # metadata (every path of this server is the one resource).
        Route(WELL_KNOWN + "/{path:path}", handler, methods=["GET", "OPTIONS"]),
    ]
    if oauth.provider is not None:
        found.extend(_authorization_server(oauth.provider, identity))
    return found


def _authorization_server(provider: BuiltInProvider, identity: Identity) -> list[BaseRoute]:
    # Issuers are compared as strings (RFC 8414 §3.3): keep a root issuer without its '/'.
    issuer = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True)).validate_python(
        provider.issuer
    )
    registration_options = ClientRegistrationOptions(
        enabled=True, valid_scopes=list(scopes.ALL), default_scopes=list(scopes.ALL)
    )
    revocation = RevocationOptions(enabled=True)
    sdk_routes = create_auth_routes(provider, issuer, None, registration_options, revocation)
    metadata = build_metadata(issuer, None, registration_options, revocation)
    # What the SDK's builder does not know we do: public clients only, metadata documents.
    metadata.token_endpoint_auth_methods_supported = ["none"]
    metadata.revocation_endpoint_auth_methods_supported = ["none"]
    metadata.client_id_metadata_document_supported = True
    metadata_route = Route(
        "/.well-known/oauth-authorization-server",
        cors_middleware(MetadataHandler(metadata).handle, ["GET", "OPTIONS"]),
        methods=["GET", "OPTIONS"],
    )
    jwks = {"keys": [provider.key.jwk()]}

    async def jwks_document(_: Request) -> Response:
        return JSONResponse(jwks, headers={"Cache-Control": "public, max-age=3600"})

    consent = _Consent(provider, identity)
    replaced = ("/.well-known/oauth-authorization-server", "/revoke", "/register")
    kept = [route for route in sdk_routes if getattr(route, "path", "") not in replaced]
    return [
        metadata_route,
        *kept,
        Route(
            "/register",
            cors_middleware(_registration(provider, registration_options), ["POST", "OPTIONS"]),
            methods=["POST", "OPTIONS"],
        ),
        Route(
            "/revoke",
            cors_middleware(_revocation(provider), ["POST", "OPTIONS"]),
            methods=["POST", "OPTIONS"],
        ),
        Route(JWKS_PATH, jwks_document, methods=["GET"]),
        Route(CONSENT_PATH, consent.page, methods=["GET"]),
        Route(CONSENT_PATH, consent.decide, methods=["POST"]),
    ]


class _RegisteringFrom:
    """The provider as the SDK's registration handler sees it, for one request: what it stores
    counts for the address the request came from (the handler does not pass it on)."""

    def __init__(self, provider: BuiltInProvider, address: str) -> None:
        self.provider = provider
        self.address = address

    async def register_client(self, client_info: Any) -> None:
        await self.provider.register_client(client_info, address=self.address)


def _registration(provider: BuiltInProvider, options: ClientRegistrationOptions) -> Any:
    """RFC 7591 registration, open to anyone and so bounded: the body's size here, every
    field's and the unused clients per address and in all in the provider (docs/oauth.md)."""

    async def register(request: Request) -> Response:
        limit = registration.MAX_BODY_BYTES
        declared = request.headers.get("content-length", "")
        body = bytearray()
        if not (declared.isdigit() and int(declared) > limit):
            async for chunk in request.stream():
                body.extend(chunk)
                if len(body) > limit:
                    break
        if len(body) > limit or (declared.isdigit() and int(declared) > limit):
            return _registration_error(
                413, "invalid_client_metadata", f"the registration is over {limit} bytes"
            )
        address = request.client.host if request.client else ""
        handler = RegistrationHandler(_RegisteringFrom(provider, address), options)  # type: ignore[arg-type]
        try:
            return await handler.handle(Request(request.scope, replay(bytes(body), None, request.receive)))
        except RegistrationFull as full:
            response = _registration_error(429, "temporarily_unavailable", full.description)
            response.headers["Retry-After"] = str(seconds(full.retry_after))
            return response

    return register


def _registration_error(status: int, error: str, description: str) -> JSONResponse:
    return JSONResponse(
        {"error": error, "error_description": description},
        status_code=status,
        headers={"Cache-Control": "no-store"},
    )


def _revocation(provider: BuiltInProvider) -> Any:
    """RFC 7009 for public clients. The SDK's handler wants a ``client_secret`` field even
    from a client registered without one, so this one takes the form as the RFC writes it."""

    async def revoke(request: Request) -> Response:
        form = await request.form()
        token, client_id = form.get("token"), form.get("client_id")
        if not isinstance(token, str) or not token or not isinstance(client_id, str) or not client_id:
            return JSONResponse(
                {"error": "invalid_request", "error_description": "token and client_id are required"},
                status_code=400,
            )
        client = await provider.get_client(client_id)
        if client is None:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        found = await provider.load_access_token(token) or await provider.load_refresh_token(client, token)
        if found is not None and found.client_id == client_id:
            await provider.revoke_token(found)
        # Unknown, foreign or already revoked: the same answer (RFC 7009 §2.2).
        return Response(status_code=200, headers={"Cache-Control": "no-store"})

    return revoke


class _Consent:
    def __init__(self, provider: BuiltInProvider, identity: Identity) -> None:
        self.provider = provider
        self.identity = identity

    async def page(self, request: Request) -> Response:
        blob = request.query_params.get("request", "")
        try:
            pending = self.provider.read_pending(blob)
        except ValueError as error:
            return _message_page(str(error), 400)
        return await self._render(pending, blob)

    async def _render(
        self, pending: dict[str, Any], blob: str, problem: str | None = None, status: int = 200
    ) -> Response:
        client = await self.provider.get_client(pending["client_id"])
        if client is None:
            return _message_page("the application asking for access is no longer known here", 400)
        name = client.client_name or pending["client_id"]
        destination = urlsplit(pending["redirect_uri"])
        requested = [scope for scope in scopes.ALL if scope in pending["scopes"]]
        items = "".join(
            f"<li><code>{html.escape(scope)}</code>: {html.escape(scopes.DESCRIPTIONS[scope])}"
            + (" <em>(only with the admin token)</em>" if scope not in scopes.USER_SCOPES else "")
            + "</li>"
            for scope in requested
        )
        error = f'<p class="error" role="alert">{html.escape(problem)}</p>' if problem else ""
        body = f"""
<h1>Allow {html.escape(name)} to use your memory?</h1>
<p><strong>{html.escape(name)}</strong> (client id <code>{html.escape(pending["client_id"])}</code>)
asks for access to <code>{html.escape(pending["resource"])}</code>. After you decide, your browser
goes back to <code>{html.escape(destination.scheme)}://{html.escape(destination.netloc)}</code>.</p>
<p>It asks to:</p>
<ul>{items}</ul>
{error}
<form method="post" action="{CONSENT_PATH}">
  <input type="hidden" name="request" value="{html.escape(blob)}">
  <label for="token">Sign in with your token (from <code>ccmem token create</code>)</label>
  <input id="token" name="token" type="password" autocomplete="current-password" required>
  <button type="submit" name="decision" value="allow">Allow</button>
  <button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
</form>"""
        return HTMLResponse(_document(f"Allow {name}?", body), status_code=status, headers=_PAGE_HEADERS)

    async def decide(self, request: Request) -> Response:
        form = await request.form()
        blob = str(form.get("request") or "")
        try:
            pending = self.provider.read_pending(blob)
        except ValueError as error:
            return _message_page(str(error), 400)
        state = pending.get("state")
        if form.get("decision") != "allow":
            return _back(pending["redirect_uri"], error="access_denied", state=state)
        token = str(form.get("token") or "").strip()
        throttle: LoginThrottle = request.app.state.login_throttle
        address = request.client.host if request.client else ""
        wait = throttle.wait(address)
        if wait is not None:
            problem = f"Too many failed sign-ins from your address: try again in {seconds(wait)} seconds."
            response = await self._render(pending, blob, problem, 429)
            response.headers["Retry-After"] = str(seconds(wait))
            return response
        try:
            principal = await anyio.to_thread.run_sync(self.identity.authenticate, f"Bearer {token}")
        except Unauthorised:
            throttle.failed(address)
            return await self._render(pending, blob, "That token is not valid. Try again.", 401)
        granted = scopes.grantable(pending["scopes"], admin=principal.is_admin)
        if not granted:
            return _back(
                pending["redirect_uri"],
                error="invalid_scope",
                error_description="nothing asked for can be granted with this sign-in",
                state=state,
            )
        code = await anyio.to_thread.run_sync(
            lambda: self.provider.create_code(
                pending, user_id=principal.user_id, is_admin=principal.is_admin, granted=granted
            )
        )
        log.info(
            "OAuth consent: %s granted %s to client %s",
            principal.user_id or "admin",
            granted,
            pending["client_id"],
        )
        return _back(pending["redirect_uri"], code=code, state=state)


def _back(redirect_uri: str, **params: str | None) -> Response:
    # The request was signed with a redirect URI its client named; one a browser would act
    # on itself (a record stored before redirect_uris.py) is never followed, Deny included.
    if not redirect_uris.allowed(redirect_uri):
        return _message_page("this application's redirect URI is not one this server sends a browser to", 400)
    return RedirectResponse(
        construct_redirect_uri(redirect_uri, **params), status_code=302, headers=_PAGE_HEADERS
    )


def _message_page(message: str, status: int) -> Response:
    return HTMLResponse(
        _document("Authorization", f"<h1>Authorization</h1><p>{html.escape(message)}</p>"),
        status_code=status,
        headers=_PAGE_HEADERS,
    )


def _document(title: str, body: str) -> str:
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{html.escape(title)} · claude-code-memory</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}}
input{{display:block;width:100%;margin:.5rem 0 1rem;padding:.4rem}}
button{{margin-right:.5rem;padding:.4rem 1rem}}
.error{{color:#a00}}code{{word-break:break-all}}</style></head>
<body>{body}</body></html>"""
