"""OAuth 2.1 as MCP's authorization spec asks (docs/oauth.md), against a real ``ccmem serve``.

* The MCP SDK's own OAuth client (``mcp.client.auth``) runs the whole flow: discovery from the
  401's ``resource_metadata``, registration by a Client ID Metadata Document and by dynamic
  registration, PKCE, the token, a refresh; then it calls tools over Streamable HTTP. The
  browser's part (the consent page) is done over HTTP as a person would.
* Refusals: a token for another audience, an expired one, a revoked one, an under-scoped one,
  each with its status and ``WWW-Authenticate``; PKCE ``plain``; a reused refresh token revokes
  its family; codes and refresh tokens are stored only as digests.
* Today's bearer tokens and the admin token keep every right.
* An external OpenID Connect issuer (a fake on loopback with real discovery and JWKS).
Pure parts (scopes, the challenge, metadata documents, config) are unit tests at the end.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import InvalidRedirectUriError
from pydantic import AnyUrl

from claude_code_memory.auth.identity import Principal
from claude_code_memory.auth.oauth import access_tokens, keys, route_scopes, scopes
from claude_code_memory.auth.oauth.client_metadata import ClientMetadataError, check_url, parse_document
from claude_code_memory.auth.oauth.resource import ResourceServer
from claude_code_memory.config import load_settings
from claude_code_memory.errors import ConfigError
from tests.support.fake_oidc import FakeIssuer, JsonServer
from tests.support.oauth_flow import REDIRECT_URI, SdkClient, consent, raw_flow
from tests.support.server import MemoryServer

pytestmark = pytest.mark.timeout(300)

OAUTH_ENV = {"CCMEM_AUTH__OAUTH__ENABLED": "true", "CCMEM_AUTH__OAUTH__ALLOW_LOOPBACK_CLIENT_IDS": "true"}


@pytest.fixture(scope="module")
def oauth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServer]:
    with MemoryServer(tmp_path_factory.mktemp("oauth-server"), env=OAUTH_ENV) as server:
        yield server


def new_user(server: MemoryServer) -> tuple[str, str]:
    user = f"alice-{uuid.uuid4().hex[:8]}"
    return user, server.make_token(user)


def mcp_url(server: MemoryServer, user: str, tools: str | None = None) -> str:
    return f"{server.base_url}/mcp/claude-code/http/{user}" + (f"?tools={tools}" if tools else "")


def challenge(response: httpx.Response) -> dict[str, str]:
    header = response.headers.get("www-authenticate", "")
    assert header.startswith("Bearer "), header
    fields: dict[str, str] = {}
    for part in header[len("Bearer ") :].split(", "):
        name, _, value = part.partition("=")
        fields[name] = value.strip('"')
    return fields


def call_tool_raw(
    server: MemoryServer,
    user: str,
    token: str,
    tool: str,
    arguments: dict[str, Any],
    tools: str | None = None,
) -> httpx.Response:
    """One Streamable HTTP POST of tools/call (stateless server: no initialize needed first)."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return httpx.post(
        mcp_url(server, user, tools),
        json=message,
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        },
        timeout=60,
    )


# -- discovery ------------------------------------------------------------------------------
def test_metadata_and_the_401_challenge(oauth_server: MemoryServer) -> None:
    base = oauth_server.base_url
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp/x/http/u",
    ):
        resource = httpx.get(base + path, timeout=30)
        assert resource.status_code == 200
        assert resource.json()["resource"] == base
        assert resource.json()["authorization_servers"] == [base]
        assert resource.json()["scopes_supported"] == ["memory:read", "memory:write", "admin"]
    server = httpx.get(f"{base}/.well-known/oauth-authorization-server", timeout=30).json()
    assert server["issuer"] == base
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["client_id_metadata_document_supported"] is True
    assert server["registration_endpoint"] == f"{base}/register"
    assert server["revocation_endpoint"] == f"{base}/revoke"
    assert server["token_endpoint_auth_methods_supported"] == ["none"]

    for response in (
        httpx.post(mcp_url(oauth_server, "someone"), json={}, timeout=30),
        httpx.get(f"{base}/api/v1/memories", timeout=30),
    ):
        assert response.status_code == 401
        assert challenge(response) == {"resource_metadata": f"{base}/.well-known/oauth-protected-resource"}
    unknown = httpx.get(f"{base}/api/v1/memories", headers={"Authorization": "Bearer ccm_nope"}, timeout=30)
    assert unknown.status_code == 401 and challenge(unknown)["error"] == "invalid_token"


# -- the SDK's client, end to end -----------------------------------------------------------
async def _use_tools(client: SdkClient, text: str) -> list[str]:
    async with (
        httpx2.AsyncClient(auth=client.provider(), timeout=60) as http,
        Client(streamable_http_client(client.mcp_url, http_client=http), mode="legacy") as session,
    ):
        names = [tool.name for tool in (await session.list_tools()).tools]
        added = await session.call_tool("add_memories", {"text": text})
        assert not added.is_error, added
        found = await session.call_tool("search_memory", {"query": text})
        assert text in json.dumps(found.model_dump(mode="json"))
        return names


def test_sdk_client_with_dynamic_registration_then_refresh_and_revoke(oauth_server: MemoryServer) -> None:
    user, user_token = new_user(oauth_server)
    client = SdkClient(mcp_url(oauth_server, user), user_token)
    names = anyio.run(_use_tools, client, "OAuth flows through dynamic registration")
    assert {"add_memories", "search_memory"} <= set(names)
    assert client.consents == 1
    info, tokens = client.storage.client_info, client.storage.tokens
    assert info is not None and tokens is not None and tokens.refresh_token
    assert info.client_secret is None and info.token_endpoint_auth_method == "none"
    assert set(tokens.scope.split()) == {"memory:read", "memory:write"}  # admin is the admin token's
    first_refresh = tokens.refresh_token

    # The access token has run out: the SDK refreshes (a new refresh token) without a consent.
    provider = client.provider()
    provider.context.current_tokens = tokens
    provider.context.client_info = info
    provider.context.token_expiry_time = time.time() - 1
    provider._initialized = True  # noqa: SLF001 - start from the stored, expired tokens

    async def after_expiry() -> None:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=60) as http,
            Client(streamable_http_client(client.mcp_url, http_client=http), mode="legacy") as session,
        ):
            assert not (await session.call_tool("list_memories", {})).is_error

    anyio.run(after_expiry)
    assert client.consents == 1
    rotated = client.storage.tokens
    assert rotated is not None and rotated.refresh_token and rotated.refresh_token != first_refresh
    live = call_tool_raw(oauth_server, user, rotated.access_token, "list_memories", {})
    assert live.status_code == 200

    # Revocation (RFC 7009) ends the grant: its access token is refused at once.
    revoked = httpx.post(
        f"{oauth_server.base_url}/revoke",
        data={
            "token": rotated.refresh_token,
            "token_type_hint": "refresh_token",
            "client_id": info.client_id,
        },
        timeout=30,
    )
    assert revoked.status_code == 200
    refused = call_tool_raw(oauth_server, user, rotated.access_token, "list_memories", {})
    assert refused.status_code == 401
    assert challenge(refused)["error"] == "invalid_token"
    assert "revoked" in challenge(refused)["error_description"]


def test_sdk_client_with_a_client_id_metadata_document(oauth_server: MemoryServer) -> None:
    user, user_token = new_user(oauth_server)
    with JsonServer() as documents:
        client_id = f"{documents.base_url}/oauth/client.json"
        documents.documents["/oauth/client.json"] = {
            "client_id": client_id,
            "client_name": "Metadata Document Client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
        client = SdkClient(mcp_url(oauth_server, user), user_token, client_metadata_url=client_id)
        anyio.run(_use_tools, client, "OAuth flows through a client metadata document")
    assert client.storage.client_info is not None and client.storage.client_info.client_id == client_id
    assert client.consents == 1

    # A document that does not name its own URL as client_id names no client.
    with JsonServer() as documents:
        documents.documents["/c.json"] = {
            "client_id": "https://elsewhere.example/c.json",
            "redirect_uris": [REDIRECT_URI],
        }
        authorize = httpx.get(
            f"{oauth_server.base_url}/authorize",
            params={
                "response_type": "code",
                "client_id": f"{documents.base_url}/c.json",
                "redirect_uri": REDIRECT_URI,
                "code_challenge": "x" * 43,
            },
            timeout=30,
        )
    assert authorize.status_code == 400 and "not found" in authorize.text


def test_consent_page_names_the_client_and_a_denial_goes_back(oauth_server: MemoryServer) -> None:
    _, user_token = new_user(oauth_server)
    base = oauth_server.base_url
    registered = httpx.post(
        f"{base}/register", json={"client_name": "Deny <Me>", "redirect_uris": [REDIRECT_URI]}, timeout=30
    ).json()
    assert registered["client_secret"] is None if "client_secret" in registered else True
    params = {
        "response_type": "code",
        "client_id": registered["client_id"],
        "redirect_uri": REDIRECT_URI,
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "state": "s1",
        "scope": "memory:read",
    }
    url = f"{base}/authorize?{httpx.QueryParams(params)}"
    back = anyio.run(lambda: consent(url, user_token, decision="deny", expect_name="Deny &lt;Me&gt;"))
    assert back == {"error": "access_denied", "state": "s1"}

    # A wrong token re-renders the page (401), and nothing goes back.
    page = httpx.get(url, timeout=30, follow_redirects=True)
    assert page.status_code == 200 and "memory:read" in page.text and "127.0.0.1:9" in page.text
    request = page.text.split('name="request" value="')[1].split('"')[0]
    wrong = httpx.post(
        f"{base}/oauth/consent", data={"request": request, "token": "ccm_wrong", "decision": "allow"}
    )
    assert wrong.status_code == 401 and "not valid" in wrong.text
    forged = httpx.post(f"{base}/oauth/consent", data={"request": request[:-4] + "AAAA", "token": user_token})
    assert forged.status_code == 400


def test_pkce_plain_and_a_foreign_resource_are_refused(oauth_server: MemoryServer) -> None:
    base = oauth_server.base_url
    client_id = httpx.post(f"{base}/register", json={"redirect_uris": [REDIRECT_URI]}, timeout=30).json()[
        "client_id"
    ]
    common = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI, "state": "s"}
    plain = httpx.get(
        f"{base}/authorize", params={**common, "code_challenge": "a" * 43, "code_challenge_method": "plain"}
    )
    assert plain.status_code == 302
    assert "error=invalid_request" in plain.headers["location"] and "S256" in plain.headers["location"]
    foreign = httpx.get(
        f"{base}/authorize",
        params={**common, "code_challenge": "a" * 43, "resource": "https://other.example"},
    )
    assert foreign.status_code == 302 and "error=invalid_target" in foreign.headers["location"]


# -- refusals -------------------------------------------------------------------------------
def test_a_read_only_token_reads_but_cannot_write(oauth_server: MemoryServer) -> None:
    user, user_token = new_user(oauth_server)
    base = oauth_server.base_url
    tokens = anyio.run(lambda: raw_flow(base, user_token, scope="memory:read"))
    assert tokens.scope == "memory:read"
    bearer = {"Authorization": f"Bearer {tokens.access_token}"}

    assert httpx.get(f"{base}/api/v1/memories", params={"user_id": user}, headers=bearer).status_code == 200
    searched = httpx.post(
        f"{base}/api/v1/memories/search", json={"user_id": user, "query": "x"}, headers=bearer
    )
    assert searched.status_code == 200
    write = httpx.post(f"{base}/api/v1/memories", json={"user_id": user, "text": "nope"}, headers=bearer)
    assert write.status_code == 403 and write.json()["error"] == "insufficient_scope"
    assert challenge(write)["error"] == "insufficient_scope" and challenge(write)["scope"] == "memory:write"
    tokens_route = httpx.get(f"{base}/api/v1/tokens", headers=bearer)
    assert tokens_route.status_code == 403 and challenge(tokens_route)["scope"] == "admin"

    assert (
        call_tool_raw(oauth_server, user, tokens.access_token, "search_memory", {"query": "x"}).status_code
        == 200
    )
    mcp_write = call_tool_raw(oauth_server, user, tokens.access_token, "add_memories", {"text": "nope"})
    assert mcp_write.status_code == 403
    assert (
        challenge(mcp_write)["error"] == "insufficient_scope"
        and challenge(mcp_write)["scope"] == "memory:write"
    )

    # The token acts for its own user only, as a bearer token does.
    other = call_tool_raw(oauth_server, "someone-else", tokens.access_token, "search_memory", {"query": "x"})
    assert other.status_code == 403

    # Each tool set (docs/mcp.md) is judged by the table of its tools: mcp-mitm-mem0's search reads,
    # its add_memory and delete_memory write.
    mitm = "mitm-mem0"
    searched = call_tool_raw(oauth_server, user, tokens.access_token, "search_memories", {"query": "x"}, mitm)
    assert searched.status_code == 200, searched.text
    for tool, arguments in (
        ("add_memory", {"messages": [{"role": "user", "content": "nope"}]}),
        ("delete_memory", {"memory_id": str(uuid.uuid4())}),
    ):
        refused = call_tool_raw(oauth_server, user, tokens.access_token, tool, arguments, mitm)
        assert refused.status_code == 403 and challenge(refused)["scope"] == "memory:write", tool


def test_wrong_audience_expired_and_reused_refresh_tokens_are_refused(oauth_server: MemoryServer) -> None:
    user, user_token = new_user(oauth_server)
    base = oauth_server.base_url
    tokens = anyio.run(lambda: raw_flow(base, user_token, scope="memory:read memory:write"))
    claims = access_tokens.verify(
        keys.load_or_create(oauth_server.data_dir), tokens.access_token, issuer=base, audience=base
    )
    key = keys.load_or_create(oauth_server.data_dir)  # the server's own key: only the claims differ

    def mint(audience: str, lifetime: int) -> str:
        token, _ = access_tokens.issue(
            key,
            issuer=base,
            audience=audience,
            subject=user,
            is_admin=False,
            client_id=tokens.client_id,
            scopes=["memory:read"],
            grant_id=claims.grant_id,
            lifetime_seconds=lifetime,
        )
        return token

    for token, reason in (
        (mint("https://other.example", 60), "another resource"),
        (mint(base, -120), "expired"),
    ):
        refused = httpx.get(
            f"{base}/api/v1/memories", params={"user_id": user}, headers={"Authorization": f"Bearer {token}"}
        )
        assert refused.status_code == 401
        assert (
            challenge(refused)["error"] == "invalid_token"
            and reason in challenge(refused)["error_description"]
        )
        mcp = call_tool_raw(oauth_server, user, token, "list_memories", {})
        assert mcp.status_code == 401 and challenge(mcp)["error"] == "invalid_token"

    # Rotation: the refresh token works once; used again, it revokes the whole family.
    refresh = {
        "grant_type": "refresh_token",
        "client_id": tokens.client_id,
        "refresh_token": tokens.refresh_token,
    }
    rotated = httpx.post(f"{base}/token", data=refresh)
    assert rotated.status_code == 200 and rotated.json()["refresh_token"] != tokens.refresh_token
    new_access = rotated.json()["access_token"]
    assert (
        httpx.get(
            f"{base}/api/v1/memories",
            params={"user_id": user},
            headers={"Authorization": f"Bearer {new_access}"},
        ).status_code
        == 200
    )
    reused = httpx.post(f"{base}/token", data=refresh)
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    after = httpx.get(
        f"{base}/api/v1/memories", params={"user_id": user}, headers={"Authorization": f"Bearer {new_access}"}
    )
    assert after.status_code == 401 and "revoked" in challenge(after)["error_description"]
    again = httpx.post(f"{base}/token", data={**refresh, "refresh_token": rotated.json()["refresh_token"]})
    assert again.status_code == 400

    # Codes and refresh tokens are kept as digests only.
    database = sqlite3.connect(oauth_server.data_dir / "memory.db")
    dump = "\n".join(database.iterdump())
    database.close()
    assert tokens.refresh_token not in dump and rotated.json()["refresh_token"] not in dump
    key_file = Path(oauth_server.data_dir) / keys.KEY_FILE
    assert key_file.stat().st_mode & 0o777 == 0o600


def test_todays_tokens_keep_every_right(oauth_server: MemoryServer) -> None:
    user, user_token = new_user(oauth_server)
    base = oauth_server.base_url
    bearer = {"Authorization": f"Bearer {user_token}"}
    created = httpx.post(
        f"{base}/api/v1/memories", json={"user_id": user, "text": "still works"}, headers=bearer
    )
    assert created.status_code in (200, 201), created.text
    assert httpx.get(f"{base}/api/v1/tokens", headers=bearer).status_code == 200
    assert (
        call_tool_raw(oauth_server, user, user_token, "add_memories", {"text": "mcp too"}).status_code == 200
    )
    admin = httpx.get(f"{base}/api/v1/tokens", headers=oauth_server.admin_headers())
    assert admin.status_code == 200


def test_the_admin_token_can_grant_admin(oauth_server: MemoryServer) -> None:
    base = oauth_server.base_url
    tokens = anyio.run(lambda: raw_flow(base, oauth_server.admin_token, scope="memory:read admin"))
    assert tokens.scope == "memory:read admin"
    bearer = {"Authorization": f"Bearer {tokens.access_token}"}
    assert httpx.get(f"{base}/api/v1/tokens", headers=bearer).status_code == 200


# -- an external OpenID Connect issuer --------------------------------------------------------
@pytest.mark.integration
def test_an_external_issuer(tmp_path: Path) -> None:
    with FakeIssuer() as issuer:
        env = {"CCMEM_AUTH__OAUTH__ENABLED": "true", "CCMEM_AUTH__OAUTH__ISSUER": issuer.base_url}
        with MemoryServer(tmp_path / "external", env=env) as server:
            base = server.base_url
            metadata = httpx.get(f"{base}/.well-known/oauth-protected-resource").json()
            assert metadata["authorization_servers"] == [issuer.base_url]
            assert httpx.get(f"{base}/.well-known/oauth-authorization-server").status_code == 404

            def get(token: str) -> httpx.Response:
                return httpx.get(
                    f"{base}/api/v1/memories",
                    params={"user_id": "carol"},
                    headers={"Authorization": f"Bearer {token}"},
                )

            good = issuer.token(audience=base, subject="carol", scope="memory:read memory:write")
            written = httpx.post(
                f"{base}/api/v1/memories",
                json={"user_id": "carol", "text": "from the external issuer"},
                headers={"Authorization": f"Bearer {good}"},
            )
            assert written.status_code in (200, 201), written.text
            assert get(good).status_code == 200
            read_only = issuer.token(audience=base, subject="carol", scope="memory:read")
            denied = httpx.post(
                f"{base}/api/v1/memories",
                json={"user_id": "carol", "text": "no"},
                headers={"Authorization": f"Bearer {read_only}"},
            )
            assert denied.status_code == 403 and challenge(denied)["scope"] == "memory:write"
            for token, reason in (
                (
                    issuer.token(audience="https://other.example", subject="carol", scope="memory:read"),
                    "another resource",
                ),
                (issuer.token(audience=base, subject="carol", scope="memory:read", lifetime=-120), "expired"),
            ):
                refused = get(token)
                assert refused.status_code == 401 and reason in challenge(refused)["error_description"]
            # Signed by a stranger's key with the issuer's kid: the JWKS does not vouch for it.
            claims = {"iss": issuer.base_url, "aud": base, "sub": "carol", "scope": "memory:read"}
            claims["exp"] = int(time.time()) + 60
            stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            forged = jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": issuer.key_id})
            assert get(forged).status_code == 401


# -- pure parts -----------------------------------------------------------------------------
def test_rest_scopes() -> None:
    for_route = route_scopes.for_route  # by the matched route's template (tests/test_route_scopes.py)
    assert for_route("GET", "/api/v1/memories") == "memory:read"
    assert for_route("POST", "/api/v1/memories/filter") == "memory:read"
    assert for_route("POST", "/api/v1/memories") == "memory:write"
    assert for_route("DELETE", "/api/v1/memories") == "memory:write"
    assert for_route("GET", "/api/v1/tokens") == "admin"
    assert for_route("GET", "/api/v1/config") == "memory:read"
    assert for_route("PUT", "/api/v1/config") == "admin"
    assert for_route("POST", "/api/v1/admin/reconcile") == "admin"


def test_mcp_scopes_and_grants() -> None:
    call = {"method": "tools/call", "params": {"name": "search_memory"}}
    assert route_scopes.for_messages([call]) == "memory:read"
    assert route_scopes.for_messages([{"method": "initialize"}]) == "memory:read"
    assert (
        route_scopes.for_messages([call, {"method": "tools/call", "params": {"name": "add_memories"}}])
        == "memory:write"
    )
    assert (
        route_scopes.for_messages([{"method": "tools/call", "params": {"name": "unknown"}}]) == "memory:write"
    )
    assert scopes.grantable(["memory:read", "admin"], admin=False) == ["memory:read"]
    assert scopes.grantable(["admin", "memory:read", "bogus"], admin=True) == ["memory:read", "admin"]
    assert scopes.allows(Principal(user_id="a"), "admin")  # a bearer token: every right it had
    assert not scopes.allows(Principal(user_id="a", scopes=frozenset({"memory:read"})), "memory:write")
    assert scopes.allows(Principal(user_id=None, is_admin=True, scopes=frozenset({"admin"})), "memory:write")


def test_the_challenge_header() -> None:
    resource = ResourceServer(
        resource="https://m.example/", authorization_servers=["https://m.example"], verifier=None
    )  # type: ignore[arg-type]
    assert resource.metadata_url == "https://m.example/.well-known/oauth-protected-resource"
    assert resource.challenge("insufficient_scope", scope="memory:write") == (
        'Bearer resource_metadata="https://m.example/.well-known/oauth-protected-resource", '
        'error="insufficient_scope", scope="memory:write"'
    )
    nested = ResourceServer(resource="https://m.example/memory", authorization_servers=[], verifier=None)  # type: ignore[arg-type]
    assert nested.metadata_url == "https://m.example/.well-known/oauth-protected-resource/memory"


def test_client_metadata_documents() -> None:
    url = "https://app.example/oauth/client.json"
    client = parse_document(
        url,
        {"client_id": url, "client_name": "App", "redirect_uris": ["http://127.0.0.1:1/cb"]},
        ["memory:read"],
    )
    assert client.client_name == "App" and client.token_endpoint_auth_method == "none"
    for document in (
        {"client_id": "https://evil.example/c.json", "redirect_uris": ["x:/"]},
        {"client_id": url},
        [],
    ):
        with pytest.raises(ClientMetadataError):
            parse_document(url, document, [])
    with pytest.raises(ClientMetadataError, match="token_endpoint_auth_method"):
        parse_document(
            url,
            {
                "client_id": url,
                "redirect_uris": ["https://a/cb"],
                "token_endpoint_auth_method": "private_key_jwt",
            },
            [],
        )
    with pytest.raises(ClientMetadataError, match="https"):
        check_url("http://127.0.0.1:1/c.json", allow_loopback=False)
    with pytest.raises(ClientMetadataError, match="path"):
        check_url("https://app.example/", allow_loopback=False)
    check_url("http://127.0.0.1:1/c.json", allow_loopback=True)


def test_config_is_checked_at_start_up(tmp_path: Path) -> None:
    from claude_code_memory.auth.oauth import _check_public_url, _loopback_url

    with pytest.raises(ConfigError, match="auth.oauth.issuer"):
        load_settings(environ={"CCMEM_AUTH__OAUTH__ISSUER": "ftp://x"}, config_path=_empty(tmp_path))
    settings = load_settings(environ={"CCMEM_SERVER__HOST": "0.0.0.0"}, config_path=_empty(tmp_path))
    with pytest.raises(ConfigError, match="auth.oauth.resource_url must be set"):
        _loopback_url(settings)
    with pytest.raises(ConfigError, match="https"):
        _check_public_url("auth.oauth.issuer", "http://idp.example")
    assert _loopback_url(load_settings(environ={}, config_path=_empty(tmp_path))) == "http://127.0.0.1:8765"


def test_the_signing_key_is_private(tmp_path: Path) -> None:
    key = keys.load_or_create(tmp_path)
    path = tmp_path / keys.KEY_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    assert keys.load_or_create(tmp_path).key_id == key.key_id
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        keys.load_or_create(tmp_path)


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text("{}\n")
    return path


def test_loopback_redirect_uris_match_any_port() -> None:
    url = "https://app.example/c.json"
    client = parse_document(url, {"client_id": url, "redirect_uris": ["http://localhost/callback"]}, [])
    assert (
        str(client.validate_redirect_uri(AnyUrl("http://localhost:55021/callback")))
        == "http://localhost:55021/callback"
    )
    for other in (
        "http://localhost:1/elsewhere",
        "http://127.0.0.1:1/callback",
        "https://localhost:1/callback",
    ):
        with pytest.raises(InvalidRedirectUriError):
            client.validate_redirect_uri(AnyUrl(other))


def test_sse_takes_access_tokens_too(oauth_server: MemoryServer) -> None:
    user, user_token = new_user(oauth_server)
    base = oauth_server.base_url
    tokens = anyio.run(lambda: raw_flow(base, user_token, scope="memory:read"))

    async def search() -> str:
        url = f"{base}/mcp/claude-code/sse/{user}"
        async with Client(
            sse_client(url, headers={"Authorization": f"Bearer {tokens.access_token}"}), mode="legacy"
        ) as session:
            result = await session.call_tool("search_memory", {"query": "anything"})
            assert not result.is_error, result
            return "ok"

    assert anyio.run(search) == "ok"


def test_with_oauth_off_nothing_changes(server: MemoryServer) -> None:
    base = server.base_url
    assert httpx.get(f"{base}/.well-known/oauth-protected-resource").status_code == 404
    assert httpx.get(f"{base}/.well-known/oauth-authorization-server").status_code == 404
    refused = httpx.get(f"{base}/api/v1/memories")
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    mcp = httpx.post(f"{base}/mcp/claude-code/http/alice", json={})
    assert mcp.status_code == 401 and mcp.headers["www-authenticate"] == "Bearer"
