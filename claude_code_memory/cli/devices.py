"""``ccmem devices list|revoke``: a user's named tokens and authorised OAuth clients, straight in
the metadata database (as ``ccmem token`` does), with their last use (docs/remote.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import BadInput
from . import common
from .common import ConfigOpt, DataDirOpt, JsonOpt, err, out

app = typer.Typer(help="List and revoke a user's devices: named tokens and OAuth clients.")

UserArg = Annotated[str | None, typer.Option("--user", help="whose devices (default: the connected user)")]


def _whose(user: str | None) -> str:
    from ..client import connection

    saved = connection.load()
    if user or saved is not None:
        return user or saved.user  # type: ignore[union-attr]
    raise BadInput("name the user with --user (or connect first: `ccmem connect claude-code`)")


def _devices(config: ConfigOpt, data_dir: DataDirOpt):  # type: ignore[no-untyped-def]
    from ..auth.devices import Devices

    settings = common.settings(config, common.data_dir_override(data_dir))
    identity = common.identity(settings)
    return Devices(identity.database, identity)


def _when(value: str | None) -> str:
    return (value or "never")[:16].replace("T", " ")


@app.command("list")
def devices_list(
    user: UserArg = None,
    include_revoked: Annotated[bool, typer.Option("--all", help="revoked ones too")] = False,
    as_json: JsonOpt = False,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """List USER's devices with when each was created and last used."""
    found = _devices(config, data_dir).list(_whose(user), include_revoked)
    if as_json:
        common.print_json([device.__dict__ for device in found])
        return
    table = common.table(
        "id", "kind", "name", "created", "last used", "revoked", title=f"{len(found)} devices"
    )
    table.columns[0].min_width = 12
    for device in found:
        table.add_row(
            device.prefix or device.id,
            device.kind,
            common.text(device.name),
            _when(device.created_at),
            _when(device.last_used_at),
            "yes" if device.revoked else "",
        )
    out.print(table)


@app.command("revoke")
def devices_revoke(
    device: Annotated[str, typer.Argument(help="an id (or a token's prefix) from `ccmem devices list`")],
    user: UserArg = None,
    as_json: JsonOpt = False,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Revoke one of USER's devices: its requests get 401 from the next one on."""
    user = _whose(user)
    revoked = _devices(config, data_dir).revoke(user, device)
    if as_json:
        common.print_json(revoked.__dict__)
        return
    err.print(f"revoked {revoked.kind}", common.text(revoked.name), f"of user {user}")
