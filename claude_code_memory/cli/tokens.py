"""``ccmem token create|list|revoke``: per-user bearer tokens, straight in the metadata database of
this installation (never a database where the command runs); ``create`` asks the running server
first, so the token is one it takes."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ..config import Settings
from ..errors import NotFound, Unauthorised, Unavailable
from . import common
from .common import ConfigOpt, DataDirOpt, JsonOpt, err, out

app = typer.Typer(help="Create, list and revoke per-user bearer tokens.")


@app.command("create")
def token_create(
    user: Annotated[str, typer.Option("--user", help="the user the token acts for")],
    name: Annotated[str | None, typer.Option(help="a label, e.g. the machine or client")] = None,
    as_json: JsonOpt = False,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Create a token for USER and print it (shown once; only its hash is stored).

    The running server makes it (with the admin token) when one answers; else this
    installation's database (--data-dir: that one, always)."""
    settings = common.settings(config, common.data_dir_override(data_dir))
    token = _from_server(settings, user, name) if data_dir is None else None
    if token is None:
        token = common.identity(settings).create_token(user, name)
    if as_json:
        common.print_json({"user_id": user, "name": name, "token": token})
        return
    print(token)


def _from_server(settings: Settings, user: str, name: str | None) -> str | None:
    """A token made by the server at the configured address; None when nothing answers there,
    no admin token is set, or what answers does not take this installation's admin token or
    has no such route (then it serves another database, not this one)."""
    from ..client.remote import Remote

    admin = settings.server.admin_token
    if not admin:
        return None
    client = Remote(common.server_url(settings), admin, timeout=30)
    try:
        made = client.post("/api/v1/tokens", json=common.without_none({"user_id": user, "name": name}))
    except (Unauthorised, NotFound):
        return None
    except Unavailable as exc:
        if common.unreachable(exc):
            return None
        raise
    finally:
        client.close()
    return str(made["token"])


@app.command("list")
def token_list(
    user: Annotated[str | None, typer.Option("--user", help="only this user's tokens")] = None,
    as_json: JsonOpt = False,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """List tokens (prefixes only; tokens themselves are never stored)."""
    settings = common.settings(config, common.data_dir_override(data_dir))
    tokens = common.identity(settings).list_tokens(user)
    if as_json:
        print(json.dumps([t.__dict__ for t in tokens], indent=2))
        return
    # The prefix is what `token revoke` takes; the full ids are in --json.
    table = common.table(
        "prefix", "user", "name", "created", "last used", "revoked", title=f"{len(tokens)} tokens"
    )
    table.columns[0].min_width = 12
    for t in tokens:
        table.add_row(
            t.prefix,
            common.text(t.user_id),
            common.text(t.name or ""),
            t.created_at[:16].replace("T", " "),
            (t.last_used_at or "")[:16].replace("T", " "),
            "yes" if t.revoked else "",
        )
    out.print(table)


@app.command("revoke")
def token_revoke(
    token: Annotated[str, typer.Argument(help="token id or prefix from `ccmem token list`")],
    as_json: JsonOpt = False,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Revoke a token: requests with it get 401 from then on."""
    settings = common.settings(config, common.data_dir_override(data_dir))
    info = common.identity(settings).revoke_token(token)
    if as_json:
        common.print_json(info.__dict__ | {"revoked": True})
        return
    err.print(f"revoked token {info.prefix}… of user {info.user_id}")
