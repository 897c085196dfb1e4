"""``ccmem token create|list|revoke``: per-user bearer tokens, straight in the metadata database."""

from __future__ import annotations

import json
from typing import Annotated

import typer

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
    """Create a token for USER and print it (shown once; only its hash is stored)."""
    settings = common.settings(config, common.data_dir_override(data_dir))
    token = common.identity(settings).create_token(user, name)
    if as_json:
        common.print_json({"user_id": user, "name": name, "token": token})
        return
    print(token)


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
