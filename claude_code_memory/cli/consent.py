"""``ccmem consent ...``: the pending queue and standing rules, through the running server's REST API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote

import typer

from ..errors import BadInput
from . import common
from .common import ConfigOpt, JsonOpt, TokenOpt, UrlOpt, err, out

if TYPE_CHECKING:
    from ..client.remote import Remote

app = typer.Typer(help="Review captured items waiting for consent; manage standing consent rules.")
rules_app = typer.Typer(
    help="Standing consent rules: allow or deny future captures by app and project (glob patterns).",
    invoke_without_command=True,
)
app.add_typer(rules_app, name="rules")

UserOpt = Annotated[
    str | None, typer.Option("--user", help="the user to act for (the admin token must name one)")
]


def _call(
    config: Path | None, url: str | None, token: str | None, method: str, path: str, **kwargs: Any
) -> Any:
    return common.call(config, url, token, method, f"/api/v1/consent{path}", **kwargs)


def _bulk(body: dict[str, Any], verb: str, as_json: bool) -> None:
    """Print a bulk decision's per-item results; any failure makes the command fail."""
    if as_json:
        common.print_json(body)
    else:
        for result in body["results"]:
            if result["ok"]:
                extra = f" → {result['new_id']}" if result.get("new_id") else ""
                out.print(common.text(f"{verb} {result['id']}{extra}"))
            else:
                err.print(common.text(f"failed {result['id']}: {result['detail']}"))
    if body["failed"]:
        raise BadInput(f"{body['failed']} of {len(body['results'])} items could not be {verb}")


@app.command("list")
def consent_list(
    user: UserOpt = None,
    app_name: Annotated[str | None, typer.Option("--app", help="only items from this app")] = None,
    project: Annotated[str | None, typer.Option("--project", help="only items from this project")] = None,
    page: Annotated[int, typer.Option(min=1, help="page number")] = 1,
    size: Annotated[int, typer.Option(min=1, max=100, help="items per page")] = 50,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """List your pending items (newest first). Needs a user token: pending text is owner-only."""
    params = {"user_id": user, "app": app_name, "project": project, "page": page, "size": size}
    body = _call(
        config, url, token, "GET", "/pending", params={k: v for k, v in params.items() if v is not None}
    )
    if as_json:
        common.print_json(body)
        return
    table = common.table("id", "from", "content", title=f"{body['total']} pending")
    for item in body["items"]:
        when = (item["captured_at"] or item["created_at"] or "")[:16].replace("T", " ")
        origin = "\n".join(part for part in (item["app"], item["project"], when) if part)
        table.add_row(item["id"], common.text(origin), common.preview(item["content"]))
    out.print(table)
    if body["pages"] > body["page"]:
        err.print(f"page {body['page']} of {body['pages']}; next: --page {body['page'] + 1}")


@app.command("count")
def consent_count(
    user: Annotated[str | None, typer.Option("--user", help="only this user's items")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """How many items wait, by app (works with the admin token; shows no text)."""
    body = _call(config, url, token, "GET", "/pending/count", params={"user_id": user} if user else {})
    if as_json:
        common.print_json(body)
        return
    table = common.table("app", "pending", title=f"{body['total']} pending", id_column=None)
    for name, count in sorted(body["by_app"].items()):
        table.add_row(common.text(name), str(count))
    out.print(table)


def _approve_project(
    config: Path | None, url: str | None, token: str | None, project: str, as_json: bool
) -> None:
    """Approve the project's pending items a page at a time until none is left."""

    def pages(client: Remote) -> Iterator[list[str]]:
        seen: set[str] = set()
        while True:
            params = {"project": project, "size": common.APPROVE_PAGE}
            listing = client.get("/api/v1/consent/pending", params=params)
            ids = [item["id"] for item in listing["items"] if item["id"] not in seen]
            if not ids:
                return
            seen.update(ids)
            yield ids

    with common.remote(config, url, token) as client:
        _bulk(common.approve_pages(client, pages(client)), "approved", as_json)


@app.command("approve")
def consent_approve(
    ids: Annotated[
        list[str] | None, typer.Argument(help="pending item id(s) from `ccmem consent list`")
    ] = None,
    text: Annotated[
        str | None, typer.Option("--text", help="store this edited text instead (one id only)")
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="approve every pending item of this project")
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Approve pending items: they are embedded and become searchable memories (with new ids)."""
    ids = list(ids or [])
    if project is not None:
        if ids or text is not None:
            raise BadInput("--project approves a whole project: give no ids and no --text")
        _approve_project(config, url, token, project, as_json)
        return
    if not ids:
        raise BadInput("give pending item id(s), or --project P")
    if len(ids) > 1:
        if text is not None:
            raise BadInput("--text edits one item; give a single id")
        _bulk(_call(config, url, token, "POST", "/approve", json={"ids": ids}), "approved", as_json)
        return
    body = _call(
        config,
        url,
        token,
        "POST",
        f"/{quote(ids[0], safe='')}/approve",
        json={"text": text} if text is not None else None,
    )
    if as_json:
        common.print_json(body)
        return
    out.print(
        common.text(f"approved {body['previous_id']} → memory {body['id']} (consent: {body['consent']})")
    )


@app.command("reject")
def consent_reject(
    ids: Annotated[list[str], typer.Argument(help="pending item id(s) from `ccmem consent list`")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Reject pending items: their text is deleted for good; the decision is recorded."""
    if len(ids) > 1:
        _bulk(_call(config, url, token, "POST", "/reject", json={"ids": ids}), "rejected", as_json)
        return
    body = _call(config, url, token, "POST", f"/{quote(ids[0], safe='')}/reject")
    if as_json:
        common.print_json(body)
        return
    out.print(common.text(f"rejected {body['id']}"))


@app.command("decisions")
def consent_decisions(
    user: Annotated[str | None, typer.Option("--user", help="only this user's decisions")] = None,
    page: Annotated[int, typer.Option(min=1, help="page number")] = 1,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Who decided what and when, newest first (rule decisions name the rule)."""
    params: dict[str, Any] = {"page": page, **({"user_id": user} if user else {})}
    body = _call(config, url, token, "GET", "/decisions", params=params)
    if as_json:
        common.print_json(body)
        return
    table = common.table("memory", "when", "user", "decision", "by", title=f"{body['total']} decisions")
    for d in body["items"]:
        table.add_row(
            d["memory_id"],
            d["decided_at"][:16].replace("T", " "),
            common.text(d["user_id"]),
            d["decision"] + (" (edited)" if d["edited"] else ""),
            common.text(d["decided_by"]),  # rule decisions read rule:<rule id>
        )
    out.print(table)


def _rules_table(rules: list[dict[str, Any]]) -> None:
    table = common.table("id", "effect", "app", "project", "user", title=f"{len(rules)} rules")
    for rule in rules:
        table.add_row(
            rule["id"],
            rule["effect"],
            common.text(rule["app_pattern"]),
            common.text(rule["project_pattern"] if rule["project_pattern"] else '"" (no project)'),
            common.text(rule["user_id"]),
        )
    out.print(table)


@rules_app.callback()
def consent_rules(
    ctx: typer.Context,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """With no subcommand: list the rules (as `rules list`)."""
    if ctx.invoked_subcommand is None:
        consent_rules_list(ctx, url=url, token=token, as_json=as_json, config=config)
    else:  # `rules --token T add ...` means the same as `rules add --token T ...`
        ctx.obj = {"url": url, "token": token, "as_json": as_json, "config": config}


def _group_options(ctx: typer.Context, **given: Any) -> dict[str, Any]:
    """A rules subcommand's connection options, falling back to those given to `rules`."""
    group = ctx.obj if isinstance(ctx.obj, dict) else {}
    return {key: value or group.get(key) for key, value in given.items()}


@rules_app.command("list")
def consent_rules_list(
    ctx: typer.Context,
    user: Annotated[str | None, typer.Option("--user", help="only this user's rules")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """List rules in the order they are checked: deny rules first."""
    chosen = _group_options(ctx, url=url, token=token, as_json=as_json, config=config)
    url, token, as_json, config = chosen["url"], chosen["token"], chosen["as_json"], chosen["config"]
    body = _call(config, url, token, "GET", "/rules", params={"user_id": user} if user else {})
    if as_json:
        common.print_json(body)
        return
    _rules_table(body["rules"])


@rules_app.command("add")
def consent_rules_add(
    ctx: typer.Context,
    effect: Annotated[str, typer.Option("--effect", help="allow or deny")],
    app_pattern: Annotated[str | None, typer.Option("--app", help="glob over app names (default *)")] = None,
    project_pattern: Annotated[
        str | None, typer.Option("--project", help='glob over projects (default *; "" = no project)')
    ] = None,
    from_item: Annotated[
        str | None, typer.Option("--from-item", help="take app and project from this pending item")
    ] = None,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Add a standing rule; it decides future captures (items already pending stay pending)."""
    chosen = _group_options(ctx, url=url, token=token, as_json=as_json, config=config)
    url, token, as_json, config = chosen["url"], chosen["token"], chosen["as_json"], chosen["config"]
    if effect not in ("allow", "deny"):
        raise BadInput(f"invalid --effect {effect!r}: use allow or deny")
    payload = {
        "effect": effect,
        "app_pattern": app_pattern,
        "project_pattern": project_pattern,
        "from_item": from_item,
        "user_id": user,
    }
    body = _call(
        config, url, token, "POST", "/rules", json={k: v for k, v in payload.items() if v is not None}
    )
    if as_json:
        common.print_json(body)
        return
    verb = "added" if body["created"] else "already had"
    patterns = f"app {body['app_pattern']!r} project {body['project_pattern']!r}"
    out.print(common.text(f"{verb} rule {body['id']}: {body['effect']} {patterns}"))


@rules_app.command("remove")
def consent_rules_remove(
    ctx: typer.Context,
    rule_id: Annotated[str, typer.Argument(help="rule id from `ccmem consent rules list`")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Remove a standing rule."""
    chosen = _group_options(ctx, url=url, token=token, as_json=as_json, config=config)
    url, token, as_json, config = chosen["url"], chosen["token"], chosen["as_json"], chosen["config"]
    body = _call(config, url, token, "DELETE", f"/rules/{quote(rule_id, safe='')}")
    if as_json:
        common.print_json(body)
        return
    out.print(common.text(f"removed rule {body['id']}"))
