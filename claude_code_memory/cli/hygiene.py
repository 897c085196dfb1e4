"""``ccmem hygiene ...``: review hygiene proposals, undo them, run the job, through the REST API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer

from ..errors import BadInput
from . import common
from .common import ConfigOpt, JsonOpt, TokenOpt, UrlOpt, err, out

app = typer.Typer(
    help="Hygiene proposals: merge near-duplicates, archive superseded, junk and stale memories "
    "(nothing changes until you approve; every change can be undone for hygiene.undo_days)."
)

UserOpt = Annotated[
    str | None, typer.Option("--user", help="the user to act for (the admin token must name one)")
]
KINDS = ("junk", "duplicate", "superseded", "stale")


def _call(
    config: Path | None, url: str | None, token: str | None, method: str, path: str, **kwargs: Any
) -> Any:
    return common.call(config, url, token, method, f"/api/v1/hygiene{path}", **kwargs)


def _one(proposal_id: str, action: str) -> str:
    return f"/proposals/{quote(proposal_id, safe='')}/{action}"


def _bulk(body: dict[str, Any], verb: str, as_json: bool) -> None:
    if as_json:
        common.print_json(body)
    else:
        for result in body["results"]:
            if result["ok"]:
                out.print(common.text(f"{verb} {result['id']}"))
            else:
                err.print(common.text(f"failed {result['id']}: {result['error']}"))
    if body["failed"]:
        raise BadInput(f"{body['failed']} of {len(body['results'])} proposals could not be {verb}")


@app.command("list")
def hygiene_list(
    status: Annotated[
        str, typer.Option("--status", help="open, applied, rejected, undone, void or all")
    ] = "open",
    kind: Annotated[str | None, typer.Option("--kind", help=f"only this kind: {', '.join(KINDS)}")] = None,
    user: UserOpt = None,
    page: Annotated[int, typer.Option(min=1, help="page number")] = 1,
    size: Annotated[int, typer.Option(min=1, max=100, help="proposals per page")] = 50,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """List your hygiene proposals (newest first) with their reason and a preview."""
    params = {"status": status, "kind": kind, "user_id": user, "page": page, "size": size}
    body = _call(
        config, url, token, "GET", "/proposals", params={k: v for k, v in params.items() if v is not None}
    )
    if as_json:
        common.print_json(body)
        return
    table = common.table("id", "kind", "reason", "archives", "keeps", title=f"{body['total']} {status}")
    for item in body["items"]:
        preview = item["preview"] or {}
        archived = common.text("\n".join(entry["text"][:80] for entry in preview.get("archive", [])))
        kept = common.preview(preview["result"]) if preview.get("result") else ""
        table.add_row(item["id"], item["kind"], common.text(item["reason"]), archived, kept)
    out.print(table)
    if body["pages"] > body["page"]:
        err.print(f"page {body['page']} of {body['pages']}; next: --page {body['page'] + 1}")


@app.command("approve")
def hygiene_approve(
    ids: Annotated[list[str], typer.Argument(help="proposal id(s) from `ccmem hygiene list`")],
    text: Annotated[
        str | None, typer.Option("--text", help="the kept memory's text, edited (one merge or supersession)")
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Apply proposals: merged and superseded memories are archived (undo brings them back)."""
    if len(ids) > 1:
        if text is not None:
            raise BadInput("--text edits one proposal; give a single id")
        _bulk(_call(config, url, token, "POST", "/approve", json={"ids": ids}), "applied", as_json)
        return
    body = _call(
        config, url, token, "POST", _one(ids[0], "approve"), json={"text": text} if text is not None else None
    )
    if as_json:
        common.print_json(body)
        return
    out.print(common.text(f"applied {body['id']} ({body['kind']}); undo until {body['undo_until']}"))


@app.command("reject")
def hygiene_reject(
    ids: Annotated[list[str], typer.Argument(help="proposal id(s) from `ccmem hygiene list`")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Reject proposals: nothing changes, and they are not proposed again."""
    if len(ids) > 1:
        _bulk(_call(config, url, token, "POST", "/reject", json={"ids": ids}), "rejected", as_json)
        return
    body = _call(config, url, token, "POST", _one(ids[0], "reject"))
    if as_json:
        common.print_json(body)
        return
    out.print(common.text(f"rejected {body['id']} ({body['kind']})"))


@app.command("undo")
def hygiene_undo(
    proposal_id: Annotated[str, typer.Argument(help="an applied proposal's id")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Undo an applied proposal: its memories are back as they were, with their ids."""
    body = _call(config, url, token, "POST", _one(proposal_id, "undo"))
    if as_json:
        common.print_json(body)
        return
    out.print(common.text(f"undone {body['id']} ({body['kind']}): {', '.join(body['memory_ids'])}"))


@app.command("run")
def hygiene_run(
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Run the hygiene job now (a user token: your memories; the admin token: everyone's)."""
    body = _call(config, url, token, "POST", "/run", json={"user_id": user} if user else {})
    if as_json:
        common.print_json(body)
        return
    found = ", ".join(f"{count} {kind}" for kind, count in body["proposed"].items())
    out.print(f"scanned {body['memories']} memories of {body['users']} users in {body['seconds']} s: {found}")


@app.command("status")
def hygiene_status(
    user: Annotated[str | None, typer.Option("--user", help="only this user's counts")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Open proposals by kind, captures the junk filter kept out, and the schedule."""
    body = _call(config, url, token, "GET", "", params={"user_id": user} if user else {})
    if as_json:
        common.print_json(body)
        return
    kinds = ", ".join(f"{n} {kind}" for kind, n in body["open_by_kind"].items())
    out.print(f"open proposals: {body['open']} ({kinds})")
    reasons = ", ".join(f"{n} {reason}" for reason, n in body["captures_filtered_by_reason"].items())
    out.print(
        f"captures filtered as junk: {body['captures_filtered']}" + (f" ({reasons})" if reasons else "")
    )
    out.print(f"next run: {body['next_run_at'] or 'on demand only'}")
