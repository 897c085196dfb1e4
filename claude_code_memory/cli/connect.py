"""``ccmem mcp-config``: how to connect Claude Code (or any MCP client) to this server.

It prints the ``claude mcp add`` command and the ``.mcp.json`` entry for one user, with the
user's own token: a client config never gets the admin token. The ``.mcp.json`` entry names the
token as ``${CCMEM_TOKEN}``, which Claude Code expands from its environment, so a project file
never holds the secret (``--inline-token`` writes it in, for a private file).
"""

from __future__ import annotations

import getpass
import os
import re
import shlex
from enum import StrEnum
from typing import Annotated, Any

import typer

from ..errors import BadInput
from . import common
from .common import ConfigOpt, DataDirOpt, out

#: The name the server is registered under in the client (tools appear as mcp__memory__*).
SERVER_NAME = "memory"
#: What the server accepts as the app name in an MCP URL (as mem0.mcp.client_name).
CLIENT_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
#: Characters that need no escaping inside a double-quoted shell word.
_PLAIN = re.compile(r"[^\"$`\\!]*")


class McpTransport(StrEnum):
    sse = "sse"
    http = "http"


def mcp_url(base_url: str, client: str, transport: str, user: str) -> str:
    return f"{base_url.rstrip('/')}/mcp/{client}/{transport}/{user}"


def claude_command(url: str, token: str, transport: str) -> str:
    """The ``claude mcp add`` line, ready to paste into a POSIX shell: user scope, so the tools
    are there in every project (Claude Code's default scope is the current directory only)."""
    header = f"Authorization: Bearer {token}"
    quoted = f'"{header}"' if _PLAIN.fullmatch(header) else shlex.quote(header)
    add = f"claude mcp add --scope user --transport {transport} {SERVER_NAME}"
    return f"{add} {shlex.quote(url)} --header {quoted}"


def mcp_json(url: str, token: str, transport: str) -> dict[str, Any]:
    """The ``.mcp.json`` entry; ``token`` may be ``${VARIABLE}``, which Claude Code expands."""
    server = {"type": transport, "url": url, "headers": {"Authorization": f"Bearer {token}"}}
    return {"mcpServers": {SERVER_NAME: server}}


def expansion(variable: str) -> str:
    """How ``.mcp.json`` names an environment variable (Claude Code expands ``${VAR}``)."""
    return "${" + variable + "}"


def mcp_config(
    user: Annotated[
        str | None, typer.Option("--user", help="whose memory the client uses (default: $USER)")
    ] = None,
    client: Annotated[
        str | None,
        typer.Option("--client", help="the app name in the URL (default: mem0.mcp.client_name, claude-code)"),
    ] = None,
    transport: Annotated[
        McpTransport, typer.Option(help="sse, or http (Streamable HTTP)")
    ] = McpTransport.sse,
    token: Annotated[
        str | None, typer.Option("--token", help="the user's token (default: $CCMEM_TOKEN)")
    ] = None,
    create_token: Annotated[
        bool, typer.Option("--create-token", help="create a new token for the user and use it")
    ] = False,
    url: Annotated[
        str | None,
        typer.Option("--url", help="the server's URL as clients reach it (default: mem0.mcp.base_url)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print only the .mcp.json snippet")] = False,
    inline_token: Annotated[
        bool,
        typer.Option(
            "--inline-token",
            help="write the token itself into the .mcp.json snippet (default: ${CCMEM_TOKEN}, "
            "expanded by Claude Code, so a committed file holds no secret)",
        ),
    ] = False,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Print the `claude mcp add` command and the .mcp.json snippet that connect a client to USER's memory."""
    settings = common.settings(config, common.data_dir_override(data_dir))
    from ..auth.identity import validate_user_id
    from ..client.remote import TOKEN_ENV, choose_token  # where used: it imports httpx

    user = validate_user_id(user or os.environ.get("USER") or getpass.getuser())
    client = client or settings.mem0.mcp.client_name
    if not CLIENT_NAME.fullmatch(client):
        raise BadInput(f"invalid --client {client!r}: use 1-64 letters, digits, '.', '_' or '-'")
    if token and create_token:
        raise BadInput("give --token or --create-token, not both")
    if create_token:
        token = common.identity(settings).create_token(user, f"mcp-config {client}")
    # A client config never gets the admin token: no fallback to it, and a refusal if given.
    chosen = choose_token(token, settings.server.admin_token, admin_fallback=False)
    if chosen is None:
        raise BadInput(f"no token for {user!r}: pass --token, set {TOKEN_ENV}, or use --create-token")
    if chosen.is_admin:
        raise BadInput(
            f"that is the admin token ({chosen.source}); give the client a user token "
            "(--create-token makes one)"
        )
    token = chosen.value
    address = mcp_url(url or settings.mem0.mcp.base_url, client, transport.value, user)
    snippet = mcp_json(address, token if inline_token else expansion(TOKEN_ENV), transport.value)
    if as_json:
        common.print_json(snippet)
        return
    # Plain print: the lines are copied into a shell and a file, so nothing may wrap or be styled.
    out.print(f"# Register the server with Claude Code (as {user}):", style="dim", highlight=False)
    print(claude_command(address, token, transport.value))
    if inline_token:
        out.print("\n# Or in a private .mcp.json (it holds the token):", style="dim", highlight=False)
    else:
        out.print(
            f"\n# Or share it with a project: .mcp.json (no secret in it: Claude Code reads the token "
            f"from ${TOKEN_ENV} in the environment it runs in):",
            style="dim",
            highlight=False,
        )
        print(f"export {TOKEN_ENV}={shlex.quote(token)}")
    common.print_json(snippet)
