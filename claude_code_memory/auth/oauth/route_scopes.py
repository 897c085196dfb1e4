"""Which scope each route and method needs, and each MCP tool: one table, read by the checks.

A REST request is looked up by the method and the path *template* of the route that matched it
(``/api/v1/teams/{team}``), never by the path the client sent: a team or a user named ``search``
is a value of ``{team}``, not a read. A route or a method the table does not name needs
``admin`` (a new route is refused to scoped tokens until it is listed; the test that walks every
route of the app fails first). ``tests/test_route_scopes.py`` walks the OpenAPI document, the
routes outside it and every MCP tool of every dialect against these tables, and
``docs/generate_scope_table.py`` writes them into docs/security.md. Pure data and lookups.

Besides the three scopes a route may be:

    public     no token is asked for: health, the API's own docs, OAuth's endpoints (they check
               the credentials they are about: a client's, a code's, a person's sign-in)
    per tool   the MCP endpoint: each JSON-RPC message needs the scope of the tool it calls
               (:data:`TOOLS`); initialize, listings and reads need ``memory:read``
"""

from __future__ import annotations

from .scopes import ADMIN, READ, WRITE

PUBLIC = "public"
PER_TOOL = "per tool"
#: Any method (the MCP routes answer their own 405s).
ANY = "*"

_MCP = "/mcp/{client_name}"

#: (method, path template) -> what the request needs. ``HEAD`` is looked up as ``GET``.
ROUTES: dict[tuple[str, str], str] = {
    # health and the API's own documentation
    ("GET", "/health"): PUBLIC,
    ("GET", "/openapi.json"): PUBLIC,
    ("GET", "/docs"): PUBLIC,
    ("GET", "/docs/oauth2-redirect"): PUBLIC,
    ("GET", "/redoc"): PUBLIC,
    # memories (OpenMemory's routes and ours)
    ("GET", "/api/v1/memories"): READ,
    ("POST", "/api/v1/memories"): WRITE,
    ("DELETE", "/api/v1/memories"): WRITE,
    ("POST", "/api/v1/memories/browse"): READ,
    ("POST", "/api/v1/memories/search"): READ,
    ("POST", "/api/v1/memories/filter"): READ,
    ("GET", "/api/v1/memories/categories"): READ,
    ("POST", "/api/v1/memories/batch"): WRITE,
    ("POST", "/api/v1/memories/actions/archive"): WRITE,
    ("POST", "/api/v1/memories/actions/pause"): WRITE,
    ("POST", "/api/v1/memories/actions/move"): WRITE,
    ("GET", "/api/v1/memories/{memory_id}"): READ,
    ("PUT", "/api/v1/memories/{memory_id}"): WRITE,
    ("GET", "/api/v1/memories/{memory_id}/access-log"): READ,
    ("GET", "/api/v1/memories/{memory_id}/related"): READ,
    ("GET", "/api/v1/memories/{memory_id}/history"): READ,
    ("GET", "/api/v1/memories/{memory_id}/links"): READ,
    ("POST", "/api/v1/memories/{memory_id}/links"): WRITE,
    ("DELETE", "/api/v1/links/{link_id}"): WRITE,
    # apps, stats, insights, the caller
    ("GET", "/api/v1/apps"): READ,
    ("GET", "/api/v1/apps/{app_id}"): READ,
    ("PUT", "/api/v1/apps/{app_id}"): WRITE,
    ("GET", "/api/v1/apps/{app_id}/memories"): READ,
    ("GET", "/api/v1/apps/{app_id}/accessed"): READ,
    ("GET", "/api/v1/stats"): READ,
    ("GET", "/api/v1/insights"): READ,
    ("GET", "/api/v1/insights/reflection"): READ,
    ("GET", "/api/v1/insights/next-actions"): READ,
    ("GET", "/api/v1/me"): READ,
    # configuration: anyone with read reads it, only the admin changes it
    ("GET", "/api/v1/config"): READ,
    ("PUT", "/api/v1/config"): ADMIN,
    ("PATCH", "/api/v1/config"): ADMIN,
    ("POST", "/api/v1/config/reset"): ADMIN,
    ("GET", "/api/v1/config/providers"): READ,
    ("GET", "/api/v1/config/effective"): READ,
    ("GET", "/api/v1/config/mem0/llm"): READ,
    ("PUT", "/api/v1/config/mem0/llm"): ADMIN,
    ("GET", "/api/v1/config/mem0/embedder"): READ,
    ("PUT", "/api/v1/config/mem0/embedder"): ADMIN,
    ("GET", "/api/v1/config/mem0/vector_store"): READ,
    ("PUT", "/api/v1/config/mem0/vector_store"): ADMIN,
    ("GET", "/api/v1/config/openmemory"): READ,
    ("PUT", "/api/v1/config/openmemory"): ADMIN,
    # whole stores and credentials
    ("POST", "/api/v1/backup/export"): ADMIN,
    ("POST", "/api/v1/backup/import"): ADMIN,
    ("POST", "/api/v1/import/openmemory"): ADMIN,
    ("GET", "/api/v1/tokens"): ADMIN,
    ("POST", "/api/v1/tokens"): ADMIN,
    ("DELETE", "/api/v1/tokens/{token_id}"): ADMIN,
    ("GET", "/api/v1/devices"): ADMIN,
    ("DELETE", "/api/v1/devices/{device_id}"): ADMIN,
    ("POST", "/api/v1/admin/reconcile"): ADMIN,
    # what Claude Code and the proxy send
    ("POST", "/api/v1/capture"): WRITE,
    ("POST", "/api/v1/hooks/claude-code"): WRITE,
    ("POST", "/api/v1/hooks/recall"): WRITE,
    ("POST", "/api/v1/memory-tool"): WRITE,
    # consent
    ("GET", "/api/v1/consent/pending"): READ,
    ("GET", "/api/v1/consent/pending/count"): READ,
    ("POST", "/api/v1/consent/approve"): WRITE,
    ("POST", "/api/v1/consent/reject"): WRITE,
    ("GET", "/api/v1/consent/rules"): READ,
    ("POST", "/api/v1/consent/rules"): WRITE,
    ("DELETE", "/api/v1/consent/rules/{rule_id}"): WRITE,
    ("GET", "/api/v1/consent/decisions"): READ,
    ("POST", "/api/v1/consent/{memory_id}/approve"): WRITE,
    ("POST", "/api/v1/consent/{memory_id}/reject"): WRITE,
    # hygiene
    ("GET", "/api/v1/hygiene"): READ,
    ("POST", "/api/v1/hygiene/run"): WRITE,
    ("GET", "/api/v1/hygiene/proposals"): READ,
    ("GET", "/api/v1/hygiene/proposals/{proposal_id}"): READ,
    ("POST", "/api/v1/hygiene/proposals/{proposal_id}/approve"): WRITE,
    ("POST", "/api/v1/hygiene/proposals/{proposal_id}/reject"): WRITE,
    ("POST", "/api/v1/hygiene/proposals/{proposal_id}/undo"): WRITE,
    ("POST", "/api/v1/hygiene/approve"): WRITE,
    ("POST", "/api/v1/hygiene/reject"): WRITE,
    ("GET", "/api/v1/hygiene/rules"): READ,
    ("POST", "/api/v1/hygiene/rules"): WRITE,
    ("DELETE", "/api/v1/hygiene/rules/{rule_id}"): WRITE,
    # scopes, tasks, entities
    ("GET", "/api/v1/scopes"): READ,
    ("POST", "/api/v1/tasks/complete"): WRITE,
    ("GET", "/api/v1/entities"): READ,
    ("GET", "/api/v1/entities/search"): READ,
    # trash, storage, retention
    ("GET", "/api/v1/trash"): READ,
    ("POST", "/api/v1/trash/restore"): WRITE,
    ("POST", "/api/v1/trash/purge"): WRITE,
    ("GET", "/api/v1/storage"): READ,
    ("POST", "/api/v1/storage/reclaim"): ADMIN,
    ("POST", "/api/v1/forget"): WRITE,
    ("GET", "/api/v1/retention"): READ,
    ("POST", "/api/v1/retention/purge"): ADMIN,
    # profile and tiers
    ("GET", "/api/v1/profile"): READ,
    ("PATCH", "/api/v1/profile/facts/{fact_id}"): WRITE,
    ("DELETE", "/api/v1/profile/facts/{fact_id}"): WRITE,
    ("POST", "/api/v1/profile/refresh"): WRITE,
    ("GET", "/api/v1/tiers/short-term"): READ,
    ("GET", "/api/v1/tiers/segments"): READ,
    # teams
    ("POST", "/api/v1/teams"): WRITE,
    ("GET", "/api/v1/teams"): READ,
    ("POST", "/api/v1/teams/invitations/accept"): WRITE,
    ("DELETE", "/api/v1/teams/{team}"): WRITE,
    ("GET", "/api/v1/teams/{team}/members"): READ,
    ("PUT", "/api/v1/teams/{team}/members/{member}"): WRITE,
    ("DELETE", "/api/v1/teams/{team}/members/{member}"): WRITE,
    ("GET", "/api/v1/teams/{team}/invitations"): READ,
    ("POST", "/api/v1/teams/{team}/invitations"): WRITE,
    ("DELETE", "/api/v1/teams/{team}/invitations/{invitation}"): WRITE,
    ("POST", "/api/v1/teams/{team}/share"): WRITE,
    ("GET", "/api/v1/teams/{team}/memories"): READ,
    ("DELETE", "/api/v1/teams/{team}/memories/{memory_id}"): WRITE,
    ("GET", "/api/v1/teams/{team}/audit"): READ,
    # MCP: each message by the tool it calls
    (ANY, f"{_MCP}/sse/{{user_id}}"): PER_TOOL,
    (ANY, f"{_MCP}/sse/{{user_id}}/messages"): PER_TOOL,
    (ANY, f"{_MCP}/sse/{{user_id}}/messages/"): PER_TOOL,
    (ANY, "/mcp/messages"): PER_TOOL,
    (ANY, "/mcp/messages/"): PER_TOOL,
    (ANY, f"{_MCP}/http/{{user_id}}"): PER_TOOL,
    (ANY, f"{_MCP}/http/{{user_id}}/"): PER_TOOL,
    # OAuth (auth.oauth.enabled): discovery and the authorization server's endpoints
    ("GET", "/.well-known/oauth-protected-resource"): PUBLIC,
    ("OPTIONS", "/.well-known/oauth-protected-resource"): PUBLIC,
    ("GET", "/.well-known/oauth-protected-resource/{path:path}"): PUBLIC,
    ("OPTIONS", "/.well-known/oauth-protected-resource/{path:path}"): PUBLIC,
    ("GET", "/.well-known/oauth-authorization-server"): PUBLIC,
    ("OPTIONS", "/.well-known/oauth-authorization-server"): PUBLIC,
    ("GET", "/authorize"): PUBLIC,
    ("POST", "/authorize"): PUBLIC,
    ("POST", "/token"): PUBLIC,
    ("OPTIONS", "/token"): PUBLIC,
    ("POST", "/register"): PUBLIC,
    ("OPTIONS", "/register"): PUBLIC,
    ("POST", "/revoke"): PUBLIC,
    ("OPTIONS", "/revoke"): PUBLIC,
    ("GET", "/oauth/jwks.json"): PUBLIC,
    ("GET", "/oauth/consent"): PUBLIC,
    ("POST", "/oauth/consent"): PUBLIC,
}

#: MCP tool -> the scope a call needs. A tool that changes nothing is a read; every other a write.
TOOLS: dict[str, str] = {
    # OpenMemory
    "add_memories": WRITE,
    "search_memory": READ,
    "list_memories": READ,
    "delete_memories": WRITE,
    "delete_all_memories": WRITE,
    # scopes, links, entities, the trash
    "set_project": WRITE,
    "complete_task": WRITE,
    "move_memories": WRITE,
    "link_memories": WRITE,
    "list_entities": READ,
    "search_entities": READ,
    "restore_memories": WRITE,
    # Anthropic's memory tool: view is one of its commands, the others write
    "memory_20250818": WRITE,
    # MemoryOS
    "add_memory": WRITE,
    "retrieve_memory": READ,
    "get_user_profile": READ,
    # min-memory
    "store_memory": WRITE,
    "retrieve_context": READ,
    "fetch": READ,
    "get_context_info": READ,
    # reflection
    "analyze_conversations": READ,
    "suggest_next_actions": READ,
    # mcp-mitm-mem0
    "search_memories": READ,
    "delete_memory": WRITE,
}


def for_route(method: str, template: str | None) -> str:
    """What a request to the route ``template`` with ``method`` needs (:data:`ROUTES`); a route
    or method the table does not name (or no route) needs ``admin``."""
    if template is None:
        return ADMIN
    verb = method.upper()
    if verb == "HEAD":
        verb = "GET"
    return ROUTES.get((verb, template)) or ROUTES.get((ANY, template)) or ADMIN


def for_tool(name: object) -> str:
    """The scope a call of the MCP tool ``name`` needs; a tool the table does not name, write."""
    return TOOLS.get(name, WRITE) if isinstance(name, str) else WRITE


def for_messages(messages: list[dict[str, object]]) -> str:
    """The scope a JSON-RPC message (or batch) to the MCP endpoint needs: the widest its tool
    calls need; ``memory:read`` for the rest (initialize, listings, resources)."""
    needed = [READ]
    for message in messages:
        if message.get("method") == "tools/call":
            params = message.get("params")
            needed.append(for_tool(params.get("name") if isinstance(params, dict) else None))
    return max(needed, key=_WIDTH.index)


_WIDTH = [READ, WRITE, ADMIN]
