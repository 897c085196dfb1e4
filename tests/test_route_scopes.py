"""Scopes by route and method (auth/oauth/route_scopes.py): one table says what each route of the
app (by method and path template) and each MCP tool needs, and the check reads it through the
route that matched, never through the words of the path the client sent.

* Every route of the OpenAPI document, every route the app mounts outside it (MCP, OAuth, the
  API's docs) and every tool of every MCP dialect is in the table, and the table names nothing
  the app lacks; a tool the table calls a read is one the tool itself marks read-only.
* A ``memory:read`` token cannot delete a team named ``search`` (nor ``filter``, ``browse``),
  nor remove or re-role a member of that name, and still reads what it may.
* docs/security.md holds the table as docs/generate_scope_table.py writes it.
"""

from __future__ import annotations

import importlib.util
import secrets
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.routing import APIRoute
from starlette.routing import Route

from claude_code_memory.auth.oauth import access_tokens, route_scopes
from claude_code_memory.auth.oauth.scopes import ADMIN, READ, WRITE
from claude_code_memory.auth.oauth.store import RegistrationLimits
from claude_code_memory.mcp import dialects
from tests.support.in_process import InProcessServer
from tests.support.servers import StartServer
from tests.support.users import unique

OAUTH_ENV = {"CCMEM_AUTH__OAUTH__ENABLED": "true"}
REPO_ROOT = Path(__file__).resolve().parent.parent
#: The verbs a route answers that no one calls for its own sake (CORS preflights answer before
#: any check; HEAD is looked up as GET).
_IMPLIED = {"HEAD"}


@pytest.fixture(scope="module")
def scoped_server(start_module_server: StartServer) -> InProcessServer:
    server = start_module_server(in_process=True, env=OAUTH_ENV)
    assert isinstance(server, InProcessServer)
    return server


def mounted_routes(server: InProcessServer) -> set[tuple[str, str]]:
    """(method, template) of every route: the OpenAPI document's and those outside it."""
    found: set[tuple[str, str]] = set()
    for path, operations in server.app.openapi()["paths"].items():
        found.update((method.upper(), path) for method in operations)
    for route in server.app.router.routes:
        if isinstance(route, APIRoute) or not isinstance(route, Route):
            continue  # the OpenAPI document has these; included routers hold APIRoutes only
        methods = route.methods or {route_scopes.ANY}
        found.update((method, route.path) for method in methods - _IMPLIED)
    return found


def test_every_route_and_every_tool_is_in_the_table(scoped_server: InProcessServer) -> None:
    routes = mounted_routes(scoped_server)
    assert ("DELETE", "/api/v1/teams/{team}") in routes and (route_scopes.ANY, "/mcp/messages") in routes
    missing = sorted(routes - route_scopes.ROUTES.keys())
    assert not missing, f"routes with no scope in auth/oauth/route_scopes.py ROUTES: {missing}"
    stale = sorted(route_scopes.ROUTES.keys() - routes)
    assert not stale, f"ROUTES names routes the app does not have: {stale}"
    assert set(route_scopes.ROUTES.values()) <= {
        READ,
        WRITE,
        ADMIN,
        route_scopes.PUBLIC,
        route_scopes.PER_TOOL,
    }

    tools = {tool for names in dialects.TOOLS.values() for tool in names}
    assert not sorted(tools - route_scopes.TOOLS.keys()), "MCP tools with no scope in TOOLS"
    assert not sorted(route_scopes.TOOLS.keys() - tools), "TOOLS names tools no dialect has"


def test_a_tool_the_table_calls_a_read_marks_itself_read_only(scoped_server: InProcessServer) -> None:
    """The table and the tools' own annotations (what a client shows) agree, in every dialect."""
    from claude_code_memory.mcp.server import build_server

    service = scoped_server.app.state.parts.service
    for dialect in dialects.TOOLS:
        server = build_server(lambda: service, dialect)
        listed = anyio.run(server.list_tools)
        for tool in listed:
            read_only = bool(tool.annotations and tool.annotations.read_only_hint)
            assert read_only == (route_scopes.TOOLS[tool.name] == READ), (dialect, tool.name)


@pytest.mark.unit
def test_lookups_go_by_template_and_method_and_refuse_what_is_unknown() -> None:
    assert route_scopes.for_route("POST", "/api/v1/memories/search") == READ
    assert route_scopes.for_route("DELETE", "/api/v1/teams/{team}") == WRITE
    assert route_scopes.for_route("HEAD", "/api/v1/memories") == READ
    assert route_scopes.for_route("GET", "/api/v1/config") == READ
    assert route_scopes.for_route("PUT", "/api/v1/config") == ADMIN
    assert route_scopes.for_route("GET", "/api/v1/tokens") == ADMIN
    # Not in the table, a method a route lacks, or no route at all: admin.
    assert route_scopes.for_route("DELETE", "/api/v1/memories/search") == ADMIN
    assert route_scopes.for_route("POST", "/api/v1/new-thing") == ADMIN
    assert route_scopes.for_route("GET", None) == ADMIN
    assert route_scopes.for_route("POST", "/mcp/{client_name}/http/{user_id}") == route_scopes.PER_TOOL
    call = {"method": "tools/call", "params": {"name": "search_memory"}}
    assert route_scopes.for_messages([call, {"method": "initialize"}]) == READ
    assert route_scopes.for_messages([]) == READ
    add = {"method": "tools/call", "params": {"name": "add_memories"}}
    assert route_scopes.for_messages([call, add]) == WRITE
    assert route_scopes.for_messages([{"method": "tools/call", "params": {"name": "unknown"}}]) == WRITE


# -- the audit's requests ------------------------------------------------------------------------


def oauth_token(server: InProcessServer, user: str, scopes: list[str]) -> str:
    """An access token of the server's own authorization server for ``user``, with a live grant
    (a code made and redeemed through its store, as the consent page and /token do)."""
    provider = server.app.state.oauth.provider
    client_id = f"https://client.example/{secrets.token_hex(4)}"
    provider.store.register_client(
        client_id,
        {"client_id": client_id, "redirect_uris": ["http://127.0.0.1/cb"]},
        address="127.0.0.1",
        limits=RegistrationLimits(max_unused=1000, max_unused_per_address=1000, unused_hours=24),
    )
    code = provider.store.create_code(
        client_id=client_id,
        user_id=user,
        is_admin=False,
        scopes=scopes,
        resource=provider.resource,
        code_challenge="x" * 43,
        redirect_uri="http://127.0.0.1/cb",
        redirect_uri_explicit=True,
    )
    redeemed = provider.store.redeem_code(code, 1)
    assert redeemed is not None
    token, _ = access_tokens.issue(
        provider.key,
        issuer=provider.issuer,
        audience=provider.resource,
        subject=user,
        is_admin=False,
        client_id=client_id,
        scopes=scopes,
        grant_id=redeemed[0].id,
        lifetime_seconds=300,
    )
    return token


def call(server: InProcessServer, token: str, method: str, path: str, **kwargs: Any) -> Any:
    with server.client(token) as client:
        return client.request(method, path, **kwargs)


@pytest.mark.parametrize("name", ["search", "filter", "browse"])
def test_a_read_token_cannot_delete_a_team_or_a_member_named_like_a_read(
    scoped_server: InProcessServer, name: str
) -> None:
    owner = unique("owner")
    owner_token = scoped_server.make_token(owner)
    reader = oauth_token(scoped_server, owner, ["memory:read"])
    team = name  # a team named as the words the path's ending once stood for
    made = call(scoped_server, owner_token, "POST", "/api/v1/teams", json={"name": team})
    assert made.status_code == 201, made.text

    refused = call(scoped_server, reader, "DELETE", f"/api/v1/teams/{team}")
    assert refused.status_code == 403 and refused.json()["error"] == "insufficient_scope", refused.text
    assert 'scope="memory:write"' in refused.headers["www-authenticate"]
    # A member named as the word: neither removed nor re-roled with a read token.
    for method, body in (("DELETE", None), ("PUT", {"role": "owner"})):
        member = call(scoped_server, reader, method, f"/api/v1/teams/{team}/members/{name}", json=body)
        assert member.status_code == 403 and member.json()["error"] == "insufficient_scope", member.text
    # What the token may do, it still does: the team is there, and its members listed.
    listed = call(scoped_server, reader, "GET", f"/api/v1/teams/{team}/members")
    assert listed.status_code == 200 and [m["user_id"] for m in listed.json()["members"]] == [owner]
    assert call(scoped_server, owner_token, "DELETE", f"/api/v1/teams/{team}").status_code == 200


def test_an_app_named_search_is_not_paused_by_a_read_token(scoped_server: InProcessServer) -> None:
    user = unique("apps")
    token = scoped_server.make_token(user)
    reader = oauth_token(scoped_server, user, ["memory:read"])
    refused = call(scoped_server, reader, "PUT", "/api/v1/apps/search", params={"is_active": "false"})
    assert refused.status_code == 403 and refused.json()["error"] == "insufficient_scope", refused.text
    searched = call(scoped_server, reader, "POST", "/api/v1/memories/search", json={"query": "x"})
    assert searched.status_code == 200, searched.text
    assert call(scoped_server, token, "GET", "/api/v1/memories").status_code == 200


# -- the table in docs/security.md ---------------------------------------------------------------


def test_docs_security_md_holds_the_table() -> None:
    spec = importlib.util.spec_from_file_location(
        "generate_scope_table", REPO_ROOT / "docs" / "generate_scope_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    current = (REPO_ROOT / "docs" / "security.md").read_text()
    assert module.rewrite(current) == current, "run .venv/bin/python docs/generate_scope_table.py"
