"""``ccmem purge`` and ``ccmem forget``: hard deletes, through the running server.

The embedded vector store belongs to the server process, so these commands ask the server.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from . import common
from .common import ConfigOpt, TokenOpt, UrlOpt, out

JsonOpt = Annotated[bool, typer.Option("--json", help="print the receipt as JSON, for scripts")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="show what would go; change nothing")]
#: A dry run lists at most this many memory ids in the table view (--json lists all).
RECEIPT_IDS_SHOWN = 50


def _print_receipt(receipt: dict[str, Any], as_json: bool, action: str) -> None:
    if as_json:
        common.print_json(receipt)
        return
    dry_run = bool(receipt.get("dry_run"))
    verb = "would delete" if dry_run else "deleted"
    table = Table("store", verb, title=f"{action}: {verb} {receipt.get('memories', 0)} memories")
    for store, count in receipt.get("counts", {}).items():
        table.add_row(store, str(count))
    out.print(table)
    ids = receipt.get("memory_ids") or []
    if dry_run and ids:
        for memory_id in ids[:RECEIPT_IDS_SHOWN]:
            out.print(f"  {memory_id}", highlight=False)
        if len(ids) > RECEIPT_IDS_SHOWN:
            out.print(f"  … and {len(ids) - RECEIPT_IDS_SHOWN} more (--json lists all)")


def purge(
    dry_run: DryRunOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Sweep now: hard-delete every user's expired memories and stale pending items (admin token)."""
    receipt = common.call(
        config,
        url,
        token,
        "POST",
        "/api/v1/retention/purge",
        params={"dry_run": "true" if dry_run else "false"},
    )
    _print_receipt(receipt, as_json, "purge")


def forget(
    user: Annotated[str, typer.Option("--user", help="whose memories to forget")],
    app_name: Annotated[
        str | None, typer.Option("--app", help="only memories written through this app")
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="only this project (exact, or a glob with * ? [ ])")
    ] = None,
    conversation: Annotated[
        str | None, typer.Option("--conversation", help="only this conversation id")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="only memories created at or after: ISO date/time (UTC) or epoch seconds"
        ),
    ] = None,
    everything: Annotated[
        bool, typer.Option("--everything", help="every memory of the user (required without other filters)")
    ] = False,
    dry_run: DryRunOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Hard-delete USER's memories matching all the given filters; print a receipt per store."""
    body: dict[str, Any] = {"user_id": user, "everything": everything, "dry_run": dry_run}
    for key, value in (
        ("app", app_name),
        ("project", project),
        ("conversation_id", conversation),
        ("since", since),
    ):
        if value is not None:
            body[key] = value
    receipt = common.call(config, url, token, "POST", "/api/v1/forget", json=body)
    _print_receipt(receipt, as_json, "forget")
