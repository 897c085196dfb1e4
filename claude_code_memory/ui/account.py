"""Sign-in and out, settings (config, tokens, retention, export and import) and Connect."""

from __future__ import annotations

import json
import secrets
import shlex
import time
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import Response

from ..config import PROXY_TOKEN_NAME, TOKEN_ENV
from .api import IMPORT_TIMEOUT, ApiError
from .session import SESSION_COOKIE, SIGNIN_COOKIE, Session, same_token
from .web import (
    CheckedDep,
    CsrfRejected,
    SessionDep,
    clear_cookie,
    redirect,
    render,
    same_origin,
    set_cookie,
    ui_of,
)

router = APIRouter()

SIGNIN_MAX_AGE = 1800
SERVER_NAME = "memory"
#: Where the hooks (and the commands on the Connect page) read the user's token.
TOKEN_VARIABLE = TOKEN_ENV  # shown in commands to paste; the UI never reads it


def _safe_next(target: str | None) -> str:
    """Only paths on this site: never an open redirect."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


@router.get("/signin")
def signin_form(request: Request, next: str | None = None) -> Response:  # noqa: A002 - the query name
    ui = ui_of(request)
    form_token = secrets.token_urlsafe(32)
    response = render(request, "signin.html", nav="signin", form_token=form_token, next=_safe_next(next))
    set_cookie(response, ui, SIGNIN_COOKIE, form_token, SIGNIN_MAX_AGE)
    return response


@router.post("/signin")
def signin(
    request: Request,
    token: Annotated[str, Form()] = "",
    csrf: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/",  # noqa: A002 - the form field's name
) -> Response:
    ui = ui_of(request)
    if not same_origin(request) or not same_token(request.cookies.get(SIGNIN_COOKIE), csrf):
        raise CsrfRejected()
    token = token.strip()
    if not token:
        return _signin_error(request, "Paste your token to sign in.")
    address = request.client.host if request.client else ""
    wait = ui.throttle.wait(address)
    if wait is not None:
        minutes = max(1, round(wait / 60))
        problem = f"Too many failed sign-ins from your address: try again in about {minutes} min."
        response = _signin_error(request, problem, status=429)
        response.headers["Retry-After"] = str(max(1, int(wait + 0.999)))
        return response
    try:
        me = ui.api.get("/api/v1/me", token)
    except ApiError as exc:
        if exc.status == 401:
            ui.throttle.failed(address)
            return _signin_error(request, "That token was not accepted (unknown or revoked).")
        raise
    if me.get("is_admin") or not me.get("user_id"):
        return _signin_error(
            request,
            "That is the admin token, which acts for every user. Sign in with your own user token "
            "(make one with: ccmem token create --user YOUR_NAME).",
        )
    session = Session.new(me["user_id"], token)
    response = redirect(_safe_next(next), request, f"Signed in as {session.user_id}.")
    set_cookie(response, ui, SESSION_COOKIE, ui.sealer.seal_session(session), ui.max_age)
    clear_cookie(response, ui, SIGNIN_COOKIE)
    return response


def _signin_error(request: Request, message: str, status: int = 400) -> Response:
    ui = ui_of(request)
    form_token = secrets.token_urlsafe(32)
    response = render(
        request, "signin.html", status=status, nav="signin", form_token=form_token, next="/", error=message
    )
    set_cookie(response, ui, SIGNIN_COOKIE, form_token, SIGNIN_MAX_AGE)
    return response


@router.post("/signout")
def signout(request: Request, session: CheckedDep) -> Response:
    """Ends this browser's session only, for good: a copy of its cookie is refused from now on.
    The user's other sessions go on; revoking the token (Settings) ends all of them."""
    ui = ui_of(request)
    ui.signed_out.add(session.id, until=time.time() + ui.max_age)
    response = redirect("/signin", request, "Signed out.")
    clear_cookie(response, ui, SESSION_COOKIE)
    return response


# -- settings ----------------------------------------------------------------------------------
@router.get("/settings")
def settings_page(request: Request, session: SessionDep) -> Response:
    api = ui_of(request).api
    effective = api.get("/api/v1/config/effective", session.token)
    tokens = api.get("/api/v1/tokens", session.token)["tokens"]
    retention = api.get("/api/v1/retention", session.token)
    return render(
        request,
        "settings.html",
        nav="settings",
        config_text=json.dumps(effective, indent=2, sort_keys=True),
        tokens=tokens,
        retention=retention,
        current_prefix=session.token[:12],
    )


@router.post("/settings/tokens")
def create_token(request: Request, session: CheckedDep, name: Annotated[str, Form()] = "") -> Response:
    created = ui_of(request).api.post("/api/v1/tokens", session.token, json={"name": name.strip() or None})
    return render(request, "token_created.html", nav="settings", created=created)


@router.post("/settings/tokens/{token_id}/revoke")
def revoke_token(request: Request, session: CheckedDep, token_id: str) -> Response:
    revoked = ui_of(request).api.delete(f"/api/v1/tokens/{token_id}", session.token)
    if session.token.startswith(revoked["prefix"]) and len(revoked["prefix"]) >= 12:
        response = redirect(
            "/signin", request, "You revoked the token you were signed in with; sign in again."
        )
        clear_cookie(response, ui_of(request), SESSION_COOKIE)
        return response
    return redirect("/settings", request, f"Token {revoked['prefix']}… revoked.")


@router.post("/settings/export")
def export(request: Request, session: CheckedDep) -> Response:
    upstream = ui_of(request).api.raw("POST", "/api/v1/backup/export", session.token, json={})
    disposition = upstream.headers.get(
        "content-disposition", f'attachment; filename="memories_export_{session.user_id}.zip"'
    )
    return Response(
        upstream.content,
        media_type="application/zip",
        headers={"Content-Disposition": disposition, "Cache-Control": "no-store"},
    )


@router.post("/settings/import")
async def import_archive(
    request: Request,
    session: CheckedDep,
    archive: Annotated[UploadFile, File()],
    mode: Annotated[str, Form()] = "skip",
) -> Response:
    data = await archive.read()
    if not data:
        return redirect("/settings", request, "Choose an export file (.zip) to import.", "error")
    mode = mode if mode in ("skip", "overwrite") else "skip"
    api = ui_of(request).api
    files = {"file": (archive.filename or "import.zip", data, "application/zip")}
    from starlette.concurrency import run_in_threadpool

    result = await run_in_threadpool(
        api.post,
        "/api/v1/backup/import",
        session.token,
        files=files,
        params={"mode": mode},
        timeout=IMPORT_TIMEOUT,
    )
    return redirect(
        "/settings",
        request,
        f"Imported {result['imported']} memories "
        f"({result['skipped']} skipped, {result['overwritten']} replaced).",
    )


# -- connect -----------------------------------------------------------------------------------
@router.get("/connect")
def connect(request: Request, session: SessionDep) -> Response:
    """The page without the token: the commands that carry it wait until asked (POST)."""
    return _connect_page(request, session, revealed=False)


@router.post("/connect")
def connect_revealed(request: Request, session: CheckedDep) -> Response:
    """The same page with the hand-made setups, which carry the token the user signed in with."""
    return _connect_page(request, session, revealed=True)


def _connect_page(request: Request, session: Session, revealed: bool) -> Response:
    effective = ui_of(request).api.get("/api/v1/config/effective", session.token)
    mcp = (effective.get("mem0") or {}).get("mcp") or {}
    base = str(mcp.get("base_url") or ui_of(request).settings.api_url).rstrip("/")
    client = str(mcp.get("client_name") or "claude-code")
    capture = proxy_capture(ui_of(request).api.get("/api/v1/tokens", session.token).get("tokens", []))
    snippets = connect_snippets(base, client, session) if revealed else {"mcp_base": base}
    return render(
        request,
        "connect.html",
        nav="connect",
        capture=capture,
        revealed=revealed,
        connect_commands=connect_commands(base),
        **snippets,
    )


def connect_commands(base: str) -> dict[str, str]:
    """What connects Claude Code with no token to copy: ``ccmem connect claude-code`` mints one
    on the server's own machine; on another machine it takes a device token (docs/remote.md),
    which only a server reached by another address than loopback can be (no "elsewhere")."""
    commands = {"here": "ccmem connect claude-code", "plugin": "ccmem plugin install"}
    host = (urlsplit(base).hostname or "").lower()
    if host not in ("127.0.0.1", "::1", "localhost"):
        commands["elsewhere"] = f"ccmem connect claude-code --server {shlex.quote(base)} --token TOKEN"
    return commands


def proxy_capture(tokens: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The user's live capture-proxy token (``ccmem stack up`` makes it), or None: without one
    the stack's proxy captures nothing of this user's."""
    live = [t for t in tokens if t.get("name") == PROXY_TOKEN_NAME and not t.get("revoked")]
    return live[-1] if live else None


CLAUDE_CODE_TOOLS = "?tools=claude-code"


def connect_snippets(base: str, client: str, session: Session) -> dict[str, Any]:
    """Copy-paste configuration for Claude Code, Claude Desktop and Cursor.

    Claude Code's commands read the token from ``$CCMEM_TOKEN``: the hooks send it from the
    environment Claude Code runs in, so it is exported once and written into no settings file.
    """
    sse = f"{base}/mcp/{client}/sse/{session.user_id}"
    http = f"{base}/mcp/{client}/http/{session.user_id}"
    desktop_url = f"{base}/mcp/claude-desktop/sse/{session.user_id}"
    cursor_url = f"{base}/mcp/cursor/http/{session.user_id}"
    export = f"export {TOKEN_VARIABLE}={shlex.quote(session.token)}"
    header = f'--header "Authorization: Bearer ${TOKEN_VARIABLE}"'  # the shell fills it in
    # Claude Code gets the small tool set: the hooks do the rest (docs/mcp.md).
    # User scope: the tools are there in every project, not only in the directory it ran in.
    add = "claude mcp add --scope user --transport"
    claude_code = f"{add} sse {SERVER_NAME} {shlex.quote(sse + CLAUDE_CODE_TOOLS)} {header}"
    claude_code_http = f"{add} http {SERVER_NAME} {shlex.quote(http + CLAUDE_CODE_TOOLS)} {header}"
    setup = "\n".join([export, f"ccmem hooks install --url {shlex.quote(base)}", claude_code_http])
    desktop = {
        "mcpServers": {
            SERVER_NAME: {
                "command": "npx",
                "args": [
                    "-y",
                    "mcp-remote",
                    desktop_url,
                    "--header",
                    f"Authorization:Bearer {session.token}",
                ],
            }
        }
    }
    cursor = {
        "mcpServers": {
            SERVER_NAME: {"url": cursor_url, "headers": {"Authorization": f"Bearer {session.token}"}}
        }
    }
    return {
        "claude_code_setup": setup,
        "token_export": export,
        "claude_code": claude_code,
        "claude_code_http": claude_code_http,
        "desktop": json.dumps(desktop, indent=2),
        "cursor": json.dumps(cursor, indent=2),
        "mcp_base": base,
    }
