"""Fault check: a ``memory:read`` OAuth token against every route and MCP tool. Prints JSON.

    .venv/bin/python -m bench.faults.scopes [--words search filter browse]

Starts a server with OAuth on (127.0.0.1, stopped by PID at the end), gets a read-only access
token through the real flow (registration, PKCE, consent, code), and sends every route of the
OpenAPI document with every method it has, its path names filled with each ``--word`` (a team,
a member, an app named ``search``: the audit's ``DELETE /api/v1/teams/search``) and its ids with
a random UUID; then calls every tool of every MCP dialect. Before it, a team of each word is
made with the user's own token.

``writes_let_through`` (a route or tool that needs more than ``memory:read`` answered a
success), ``teams_deleted`` (a team of a word gone after the run) and ``reads_refused`` (a read
refused for its scope) must be 0. Writes a route refused before its check (a body it could not
parse: nothing done) are named in the report.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx

from claude_code_memory.auth.oauth import route_scopes
from claude_code_memory.auth.oauth.scopes import READ
from claude_code_memory.mcp import dialects
from tests.support.oauth_flow import raw_flow
from tests.support.server import MemoryServer

_PARAM = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")
_SKIP = (route_scopes.PUBLIC, route_scopes.PER_TOOL)


def fill(template: str, word: str) -> str:
    """The template with ids as a random UUID and every other name as ``word``."""
    return _PARAM.sub(lambda m: str(uuid.uuid4()) if m.group(1).endswith("_id") else word, template)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", nargs="*", default=["search", "filter", "browse"])
    args = parser.parse_args()
    env = {"CCMEM_AUTH__OAUTH__ENABLED": "true"}
    let_through: list[str] = []
    reads_refused: list[str] = []
    otherwise: list[str] = []
    sent = 0
    with (
        tempfile.TemporaryDirectory(prefix="fault-scopes-") as work,
        MemoryServer(Path(work), env=env) as server,
    ):
        user = "scoped-user"
        own = {"Authorization": f"Bearer {server.make_token(user)}"}
        base = server.base_url
        for word in args.words:
            made = httpx.post(f"{base}/api/v1/teams", json={"name": word}, headers=own, timeout=30)
            assert made.status_code == 201, made.text
        tokens = anyio.run(lambda: raw_flow(base, own["Authorization"][7:], scope="memory:read"))
        bearer = {"Authorization": f"Bearer {tokens.access_token}"}
        document = httpx.get(f"{base}/openapi.json", timeout=30).json()
        with httpx.Client(base_url=base, headers=bearer, timeout=60) as client:
            for template, operations in document["paths"].items():
                for method in operations:
                    needed = route_scopes.for_route(method, template)
                    if needed in _SKIP:
                        continue
                    for word in args.words:
                        body = {} if method in ("post", "put", "patch") else None
                        answer = client.request(method.upper(), fill(template, word), json=body)
                        sent += 1
                        refused = answer.status_code == 403 and "insufficient_scope" in answer.text
                        if needed != READ and answer.status_code < 400:
                            let_through.append(
                                f"{method.upper()} {fill(template, word)} -> {answer.status_code}"
                            )
                        elif needed != READ and answer.status_code != 403:
                            # Refused before the check was reached (a body the route cannot
                            # parse): nothing done, but named.
                            otherwise.append(f"{method.upper()} {template} -> {answer.status_code}")
                        if needed == READ and refused:
                            reads_refused.append(f"{method.upper()} {template}")
            headers = bearer | {"Accept": "application/json, text/event-stream"}
            for dialect, tools in dialects.TOOLS.items():
                query = "" if dialect == dialects.DEFAULT else f"?tools={dialect}"
                for tool in tools:
                    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
                    message["params"] = {"name": tool, "arguments": {}}
                    answer = client.post(f"/mcp/fault/http/{user}{query}", json=message, headers=headers)
                    sent += 1
                    refused = answer.status_code == 403
                    if route_scopes.for_tool(tool) != READ and not refused:
                        let_through.append(f"MCP {dialect} {tool} -> {answer.status_code}")
                    if route_scopes.for_tool(tool) == READ and refused:
                        reads_refused.append(f"MCP {dialect} {tool}")
        teams = httpx.get(f"{base}/api/v1/teams", headers=own, timeout=30).json()["teams"]
        left = {team["name"] for team in teams}
    report: dict[str, Any] = {
        "requests": sent,
        "writes_let_through": len(let_through),
        "teams_deleted": sum(word not in left for word in args.words),
        "reads_refused": len(reads_refused),
        "let_through": let_through[:50],
        "refused_reads": reads_refused[:50],
        "writes_refused_before_the_check": sorted(set(otherwise)),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
