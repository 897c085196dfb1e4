"""Driving the OAuth flow against a real server, for tests/test_oauth.py and bench/perf/oauth.py.

The browser's part (the authorization page) is done over HTTP as a person would: follow
/authorize to the consent page, read its form, submit it with the user's token. The rest is
the MCP SDK's own OAuth client (``mcp.client.auth.OAuthClientProvider``).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

#: Where the client says it listens for the redirect; the test reads the Location instead.
REDIRECT_URI = "http://127.0.0.1:9/callback"
_FORM_REQUEST = re.compile(r'name="request" value="([^"]+)"')


async def consent(
    authorize_url: str, user_token: str, *, decision: str = "allow", expect_name: str | None = None
) -> dict[str, str]:
    """Open ``authorize_url`` as a browser would, sign in with ``user_token`` and decide; the
    query of the redirect back to the client (``code`` and ``state``, or ``error``)."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=30, trust_env=False) as browser:
        response = await browser.get(authorize_url)
        assert response.status_code == 302, response.text
        location = response.headers["location"]
        if "/oauth/consent" not in location:  # the server sent the browser straight back (an error)
            return dict(parse_qsl(urlsplit(location).query))
        page = await browser.get(location)
        assert page.status_code == 200, page.text
        if expect_name is not None:
            assert expect_name in page.text
        found = _FORM_REQUEST.search(page.text)
        assert found, page.text
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(location))
        form = {"request": found.group(1), "token": user_token, "decision": decision}
        answer = await browser.post(f"{origin}/oauth/consent", data=form)
        assert answer.status_code == 302, answer.text
        return dict(parse_qsl(urlsplit(answer.headers["location"]).query))


@dataclass
class MemoryStorage:
    """The SDK client's token storage, in memory."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class SdkClient:
    """The SDK's OAuth client for one MCP URL, with a person who approves in the browser."""

    mcp_url: str
    user_token: str
    scope: str | None = None
    client_metadata_url: str | None = None
    storage: MemoryStorage = field(default_factory=MemoryStorage)
    consents: int = 0
    _redirect: dict[str, str] = field(default_factory=dict)

    def provider(self) -> OAuthClientProvider:
        metadata = OAuthClientMetadata(
            client_name="ccmem oauth test client",
            redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope=self.scope,
        )
        provider = OAuthClientProvider(
            server_url=self.mcp_url,
            client_metadata=metadata,
            storage=self.storage,
            redirect_handler=self._approve,
            callback_handler=self._callback,
        )
        if self.client_metadata_url is not None:
            # The SDK accepts only https metadata URLs; the server under test lets a loopback
            # http one in (auth.oauth.allow_loopback_client_ids), so it is set past the check.
            provider.context.client_metadata_url = self.client_metadata_url
        return provider

    async def _approve(self, authorize_url: str) -> None:
        self.consents += 1
        self._redirect = await consent(authorize_url, self.user_token)

    async def _callback(self) -> AuthorizationCodeResult:
        assert "code" in self._redirect, self._redirect
        return AuthorizationCodeResult(code=self._redirect["code"], state=self._redirect.get("state"))


@dataclass(frozen=True)
class Tokens:
    client_id: str
    access_token: str
    refresh_token: str
    scope: str


async def raw_flow(base_url: str, user_token: str, *, scope: str, resource: str | None = None) -> Tokens:
    """Register a client (RFC 7591), authorize with PKCE S256, consent, exchange the code:
    what a client does, spelled out request by request."""
    async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
        registered = await http.post(
            f"{base_url}/register",
            json={
                "client_name": "raw test client",
                "redirect_uris": [REDIRECT_URI],
                "token_endpoint_auth_method": "none",
            },
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        params: dict[str, Any] = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT_URI,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "xyz",
            "scope": scope,
            "resource": resource or base_url,
        }
        back = await consent(f"{base_url}/authorize?{urlencode(params)}", user_token)
        assert back.get("state") == "xyz" and "code" in back, back
        answer = await http.post(
            f"{base_url}/token",
            data={
                "grant_type": "authorization_code",
                "code": back["code"],
                "redirect_uri": REDIRECT_URI,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": resource or base_url,
            },
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        return Tokens(client_id, body["access_token"], body["refresh_token"], body["scope"])
