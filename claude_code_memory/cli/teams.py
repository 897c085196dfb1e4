"""``ccmem team ...``: teams, their members, shared memories and audit log, through the running
server's REST API (docs/teams.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer
from rich.table import Table

from ..errors import BadInput
from . import common
from .common import ConfigOpt, JsonOpt, TokenOpt, UrlOpt, out

app = typer.Typer(help="Teams: members and roles, invitations, shared memories, the audit log.")

TeamArg = Annotated[str, typer.Argument(help="the team's name")]
UserOpt = Annotated[
    str | None, typer.Option("--user", help="the user to act for (the admin token must name one)")
]


def _call(
    config: Path | None, url: str | None, token: str | None, method: str, path: str, **kwargs: Any
) -> Any:
    return common.call(config, url, token, method, f"/api/v1/teams{path}", **kwargs)


def _user(user: str | None) -> dict[str, str]:
    return {"user_id": user} if user else {}


def _show(body: Any, as_json: bool, columns: tuple[str, ...], rows: list[dict[str, Any]], title: str) -> None:
    if as_json:
        common.print_json(body)
        return
    table = Table(*columns, title=title)
    for row in rows:
        table.add_row(
            *(common.text("" if row.get(column) is None else str(row.get(column))) for column in columns)
        )
    out.print(table)


@app.command("create")
def create(
    name: TeamArg,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Create a team; you are its owner."""
    body = _call(config, url, token, "POST", "", json={"name": name} | _user(user))
    out.print(common.text(f"created team {body['name']} (you are its {body['role']})"))


@app.command("list")
def list_teams(
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Your teams and your role in each."""
    body = _call(config, url, token, "GET", "", params=_user(user))
    _show(body, as_json, ("name", "role"), body["teams"], "teams")


@app.command("invite")
def invite(
    team: TeamArg,
    invitee: Annotated[str, typer.Argument(help="the user to invite")],
    role: Annotated[str, typer.Option("--role", help="owner, member or reader")] = "member",
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Invite a user (owners): prints the code, shown once; they run `ccmem team accept CODE`.
    A user holds one open invitation to a team: a new one replaces it."""
    body = _call(
        config,
        url,
        token,
        "POST",
        f"/{quote(team, safe='')}/invitations",
        json={"user_id": invitee, "role": role} | ({"as_user": user} if user else {}),
    )
    if as_json:
        common.print_json(body)
        return
    out.print(common.text(f"invited {body['invitee']} to {body['team']} as {body['role']}"))
    out.print(common.text(f"code (shown once, valid until {body['expires_at']}): {body['code']}"))


@app.command("accept")
def accept(
    code: Annotated[str, typer.Argument(help="the invitation code (cct_...)")],
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Join a team with the invitation code you were given."""
    body = _call(config, url, token, "POST", "/invitations/accept", json={"code": code} | _user(user))
    out.print(common.text(f"joined team {body['team']} as {body['role']}"))


@app.command("invitations")
def invitations(
    team: TeamArg,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """A team's open invitations (owners): who, as what, issued by whom, until when."""
    body = _call(config, url, token, "GET", f"/{quote(team, safe='')}/invitations", params=_user(user))
    columns = ("id", "invitee", "role", "invited_by", "expires_at")
    _show(body, as_json, columns, body["invitations"], f"open invitations of {team}")


@app.command("uninvite")
def uninvite(
    team: TeamArg,
    invitation: Annotated[str, typer.Argument(help="the invitation's id, or the invited user's id")],
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Revoke an open invitation (owners): its code stops working at once."""
    path = f"/{quote(team, safe='')}/invitations/{quote(invitation, safe='')}"
    body = _call(config, url, token, "DELETE", path, params=_user(user))
    out.print(common.text(f"revoked the invitation of {body['invitee']} to {body['team']} as {body['role']}"))


@app.command("members")
def members(
    team: TeamArg,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """A team's members and their roles."""
    body = _call(config, url, token, "GET", f"/{quote(team, safe='')}/members", params=_user(user))
    _show(body, as_json, ("user_id", "role", "added_at"), body["members"], f"members of {team}")


@app.command("role")
def role(
    team: TeamArg,
    member: Annotated[str, typer.Argument(help="the member")],
    new_role: Annotated[str, typer.Argument(help="owner, member or reader")],
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Change a member's role (owners)."""
    path = f"/{quote(team, safe='')}/members/{quote(member, safe='')}"
    body = _call(
        config, url, token, "PUT", path, json={"role": new_role} | ({"as_user": user} if user else {})
    )
    out.print(common.text(f"{body['user_id']} is now {body['role']} of {team}"))


@app.command("remove")
def remove(
    team: TeamArg,
    member: Annotated[str, typer.Argument(help="the member to remove")],
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Remove a member (owners): they lose access to the team's memories at once."""
    path = f"/{quote(team, safe='')}/members/{quote(member, safe='')}"
    _call(config, url, token, "DELETE", path, params=_user(user))
    out.print(common.text(f"removed {member} from {team}"))


@app.command("leave")
def leave(
    team: TeamArg,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Leave a team (its last owner cannot)."""
    me = user or common.call(config, url, token, "GET", "/api/v1/me")["user_id"]
    _call(
        config,
        url,
        token,
        "DELETE",
        f"/{quote(team, safe='')}/members/{quote(me, safe='')}",
        params=_user(user),
    )
    out.print(common.text(f"left {team}"))


@app.command("delete")
def delete_team(
    team: TeamArg,
    yes: Annotated[bool, typer.Option("--yes", help="delete without asking")] = False,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Delete a team (owners): its memories for good, its members, invitations and audit log."""
    if not yes:
        if not sys.stdin.isatty():
            raise BadInput(f"deleting team {team} needs --yes (there is no terminal to ask at)")
        if not typer.confirm(f"Delete team {team} and every memory shared into it, for good?"):
            out.print("nothing deleted")
            raise typer.Exit(common.EXIT_ERROR)
    body = _call(config, url, token, "DELETE", f"/{quote(team, safe='')}", params=_user(user))
    if as_json:
        common.print_json(body)
        return
    count = body["memories_deleted"]
    out.print(common.text(f"deleted team {team} and its {count} {'memory' if count == 1 else 'memories'}"))


@app.command("share")
def share(
    team: TeamArg,
    memory_ids: Annotated[list[str], typer.Argument(help="ids of your memories to share")],
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Share your memories into a team (owners, members): each copy is redacted again."""
    body = _call(
        config,
        url,
        token,
        "POST",
        f"/{quote(team, safe='')}/share",
        json={"memory_ids": memory_ids} | _user(user),
    )
    _show(body, as_json, ("source_id", "id", "event", "memory"), body["results"], f"shared into {team}")


@app.command("memories")
def team_memories(
    team: TeamArg,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 100,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """A team's memories, newest first."""
    params = {"limit": limit} | _user(user)
    body = _call(config, url, token, "GET", f"/{quote(team, safe='')}/memories", params=params)
    title = f"{team}: {body['total']} of {body['quota']} memories"
    _show(body, as_json, ("id", "content", "shared_by", "created_at"), body["items"], title)


@app.command("unshare")
def unshare(
    team: TeamArg,
    memory_id: Annotated[str, typer.Argument(help="the team memory's id")],
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Remove a memory from a team (owners any; members what they shared)."""
    path = f"/{quote(team, safe='')}/memories/{quote(memory_id, safe='')}"
    _call(config, url, token, "DELETE", path, params=_user(user))
    out.print(common.text(f"removed {memory_id} from {team}"))


@app.command("audit")
def audit(
    team: TeamArg,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10000)] = 200,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Who read and wrote which team memory, newest first (owners)."""
    params = {"limit": limit} | _user(user)
    body = _call(config, url, token, "GET", f"/{quote(team, safe='')}/audit", params=params)
    columns = ("at", "actor", "action", "memory_id", "detail")
    _show(body, as_json, columns, body["entries"], f"audit log of {team}")
