"""`ccmem`: run the server and manage tokens.

Exit codes: 0 success, 1 a known error (printed as one line), 2 bad usage.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from .config import Settings, load_settings
from .errors import MemoryError_

app = typer.Typer(help="claude-code-memory: a self-hosted memory server for Claude Code and MCP clients.")
token_app = typer.Typer(help="Create, list and revoke per-user bearer tokens.")
app.add_typer(token_app, name="token")

err = Console(stderr=True)
out = Console()

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="config.yaml to read (default ./config.yaml)")
]
DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="data directory (default from config: data/)")
]


def _settings(config: Path | None, overrides: dict[str, Any]) -> Settings:
    return load_settings(config_path=config, overrides=overrides)


def _identity(settings: Settings):  # type: ignore[no-untyped-def]
    from .db.database import Database
    from .identity import Identity

    settings.data_path.mkdir(parents=True, exist_ok=True)
    database = Database(settings.database_url)
    database.migrate()
    return Identity(database, settings.server.admin_token)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="bind address (default 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="port (default 8765)")] = None,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Run the memory server (REST API, MCP endpoint, OpenAPI docs at /docs)."""
    import uvicorn

    from .api.app import create_app

    settings = _settings(
        config,
        {"server.host": host, "server.port": port, "server.data_dir": str(data_dir) if data_dir else None},
    )
    logging.basicConfig(
        level=settings.server.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if not settings.server.admin_token:
        err.print("[yellow]warning:[/] no admin token (CCMEM_ADMIN_TOKEN); only user tokens will work")
    application = create_app(settings)
    err.print(
        f"claude-code-memory listening on http://{settings.server.host}:{settings.server.port} "
        f"(data: {settings.data_path})"
    )
    uvicorn.run(
        application,
        host=settings.server.host,
        port=settings.server.port,
        log_level=settings.server.log_level,
        access_log=False,
    )


@token_app.command("create")
def token_create(
    user: Annotated[str, typer.Option("--user", help="the user the token acts for")],
    name: Annotated[str | None, typer.Option(help="a label, e.g. the machine or client")] = None,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Create a token for USER and print it (shown once; only its hash is stored)."""
    settings = _settings(config, {"server.data_dir": str(data_dir) if data_dir else None})
    token = _identity(settings).create_token(user, name)
    print(token)


@token_app.command("list")
def token_list(
    user: Annotated[str | None, typer.Option("--user", help="only this user's tokens")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output for scripts")] = False,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """List tokens (prefixes only; tokens themselves are never stored)."""
    settings = _settings(config, {"server.data_dir": str(data_dir) if data_dir else None})
    tokens = _identity(settings).list_tokens(user)
    if as_json:
        print(json.dumps([t.__dict__ for t in tokens], indent=2))
        return
    table = Table("id", "user", "name", "prefix", "created", "last used", "revoked")
    for t in tokens:
        table.add_row(
            t.id,
            t.user_id,
            t.name or "",
            t.prefix,
            t.created_at,
            t.last_used_at or "",
            "yes" if t.revoked else "",
        )
    out.print(table)


@token_app.command("revoke")
def token_revoke(
    token: Annotated[str, typer.Argument(help="token id or prefix from `ccmem token list`")],
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Revoke a token: requests with it get 401 from then on."""
    settings = _settings(config, {"server.data_dir": str(data_dir) if data_dir else None})
    info = _identity(settings).revoke_token(token)
    err.print(f"revoked token {info.prefix}… of user {info.user_id}")


# -- retention: purge and forget, through the running server --------------------------------------
# The embedded vector store belongs to the server process, so these commands ask the server.
_RetentionUrl = Annotated[
    str | None, typer.Option("--url", help="server URL (default: the configured host and port)")
]
_RetentionToken = Annotated[
    str | None, typer.Option("--token", help="bearer token (default: $CCMEM_TOKEN, then the admin token)")
]
_RetentionJson = Annotated[bool, typer.Option("--json", help="print the receipt as JSON, for scripts")]
_RetentionDryRun = Annotated[bool, typer.Option("--dry-run", help="show what would go; change nothing")]
#: A dry run lists at most this many memory ids in the table view (--json lists all).
_RECEIPT_IDS_SHOWN = 50


def _retention_post(
    config: Path | None, url: str | None, token: str | None, path: str, **kwargs: Any
) -> dict[str, Any]:
    from .remote import Remote

    remote = Remote.from_settings(_settings(config, {}), url, token)
    try:
        return remote.post(path, **kwargs)
    finally:
        remote.close()


def _print_receipt(receipt: dict[str, Any], as_json: bool, action: str) -> None:
    if as_json:
        print(json.dumps(receipt, indent=2))
        return
    dry_run = bool(receipt.get("dry_run"))
    verb = "would delete" if dry_run else "deleted"
    table = Table("store", verb, title=f"{action}: {verb} {receipt.get('memories', 0)} memories")
    for store, count in receipt.get("counts", {}).items():
        table.add_row(store, str(count))
    out.print(table)
    ids = receipt.get("memory_ids") or []
    if dry_run and ids:
        for memory_id in ids[:_RECEIPT_IDS_SHOWN]:
            out.print(f"  {memory_id}", highlight=False)
        if len(ids) > _RECEIPT_IDS_SHOWN:
            out.print(f"  … and {len(ids) - _RECEIPT_IDS_SHOWN} more (--json lists all)")


@app.command()
def purge(
    dry_run: _RetentionDryRun = False,
    url: _RetentionUrl = None,
    token: _RetentionToken = None,
    as_json: _RetentionJson = False,
    config: ConfigOpt = None,
) -> None:
    """Sweep now: hard-delete every user's expired memories and stale pending items (admin token)."""
    receipt = _retention_post(
        config, url, token, "/api/v1/retention/purge", params={"dry_run": "true" if dry_run else "false"}
    )
    _print_receipt(receipt, as_json, "purge")


@app.command()
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
    dry_run: _RetentionDryRun = False,
    url: _RetentionUrl = None,
    token: _RetentionToken = None,
    as_json: _RetentionJson = False,
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
    receipt = _retention_post(config, url, token, "/api/v1/forget", json=body)
    _print_receipt(receipt, as_json, "forget")


# -- consent: the pending queue and standing rules, through the running server's REST API ---
consent_app = typer.Typer(help="Review captured items waiting for consent; manage standing consent rules.")
consent_rules_app = typer.Typer(
    help="Standing consent rules: allow or deny future captures by app and project (glob patterns).",
    invoke_without_command=True,
)
app.add_typer(consent_app, name="consent")
consent_app.add_typer(consent_rules_app, name="rules")

_ConsentUrlOpt = Annotated[
    str | None, typer.Option("--url", help="server URL (default: server.host and server.port from config)")
]
_ConsentTokenOpt = Annotated[
    str | None, typer.Option("--token", help="bearer token (default: $CCMEM_TOKEN, then the admin token)")
]
_ConsentJsonOpt = Annotated[bool, typer.Option("--json", help="JSON output for scripts")]
_ConsentUserOpt = Annotated[
    str | None, typer.Option("--user", help="the user to act for (the admin token must name one)")
]


def _consent_call(
    config: Path | None, url: str | None, token: str | None, method: str, path: str, **kwargs: Any
) -> Any:
    from .remote import Remote

    remote = Remote.from_settings(_settings(config, {}), url, token)
    try:
        return remote.request(method, f"/api/v1/consent{path}", **kwargs)
    finally:
        remote.close()


def _consent_text(value: str) -> Any:
    """A table cell or line printed as is: stored text must not be read as Rich markup."""
    from rich.text import Text

    return Text(value)


def _consent_table(*headers: str, title: str, id_column: int | None = 0) -> Table:
    """A table whose id column never wraps (ids are copied into the next command) and whose
    other cells fold rather than being cut off."""
    table = Table(*headers, title=title)
    for column in table.columns:
        column.overflow = "fold"
    if id_column is not None:
        table.columns[id_column].no_wrap = True
        table.columns[id_column].min_width = 36
    return table


def _consent_json(body: Any) -> None:
    print(json.dumps(body, indent=2, ensure_ascii=False))


def _consent_preview(text: str, limit: int = 160) -> Any:
    flat = " ".join(text.split())
    return _consent_text(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def _consent_bulk(body: dict[str, Any], verb: str, as_json: bool) -> None:
    """Print a bulk decision's per-item results; any failure makes the command fail."""
    if as_json:
        _consent_json(body)
    else:
        for result in body["results"]:
            if result["ok"]:
                extra = f" → {result['new_id']}" if result.get("new_id") else ""
                out.print(_consent_text(f"{verb} {result['id']}{extra}"))
            else:
                err.print(_consent_text(f"failed {result['id']}: {result['detail']}"))
    if body["failed"]:
        from .errors import BadInput

        raise BadInput(f"{body['failed']} of {len(body['results'])} items could not be {verb}")


@consent_app.command("list")
def consent_list(
    user: _ConsentUserOpt = None,
    app_name: Annotated[str | None, typer.Option("--app", help="only items from this app")] = None,
    project: Annotated[str | None, typer.Option("--project", help="only items from this project")] = None,
    page: Annotated[int, typer.Option(min=1, help="page number")] = 1,
    size: Annotated[int, typer.Option(min=1, max=100, help="items per page")] = 50,
    url: _ConsentUrlOpt = None,
    token: _ConsentTokenOpt = None,
    as_json: _ConsentJsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """List your pending items (newest first). Needs a user token: pending text is owner-only."""
    params = {"user_id": user, "app": app_name, "project": project, "page": page, "size": size}
    body = _consent_call(
        config, url, token, "GET", "/pending", params={k: v for k, v in params.items() if v is not None}
    )
    if as_json:
        _consent_json(body)
        return
    table = _consent_table("id", "from", "content", title=f"{body['total']} pending")
    for item in body["items"]:
        when = (item["captured_at"] or item["created_at"] or "")[:16].replace("T", " ")
        origin = "\n".join(part for part in (item["app"], item["project"], when) if part)
        table.add_row(item["id"], _consent_text(origin), _consent_preview(item["content"]))
    out.print(table)
    if body["pages"] > body["page"]:
        err.print(f"page {body['page']} of {body['pages']}; next: --page {body['page'] + 1}")


@consent_app.command("count")
def consent_count(
    user: Annotated[str | None, typer.Option("--user", help="only this user's items")] = None,
    url: _ConsentUrlOpt = None,
    token: _ConsentTokenOpt = None,
    as_json: _ConsentJsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """How many items wait, by app (works with the admin token; shows no text)."""
    body = _consent_call(
        config, url, token, "GET", "/pending/count", params={"user_id": user} if user else {}
    )
    if as_json:
        _consent_json(body)
        return
    table = _consent_table("app", "pending", title=f"{body['total']} pending", id_column=None)
    for name, count in sorted(body["by_app"].items()):
        table.add_row(_consent_text(name), str(count))
    out.print(table)


@consent_app.command("approve")
def consent_approve(
    ids: Annotated[list[str], typer.Argument(help="pending item id(s) from `ccmem consent list`")],
    text: Annotated[
        str | None, typer.Option("--text", help="store this edited text instead (one id only)")
    ] = None,
    url: _ConsentUrlOpt = None,
    token: _ConsentTokenOpt = None,
    as_json: _ConsentJsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Approve pending items: they are embedded and become searchable memories (with new ids)."""
    if len(ids) > 1:
        if text is not None:
            from .errors import BadInput

            raise BadInput("--text edits one item; give a single id")
        _consent_bulk(
            _consent_call(config, url, token, "POST", "/approve", json={"ids": ids}), "approved", as_json
        )
        return
    body = _consent_call(
        config, url, token, "POST", f"/{ids[0]}/approve", json={"text": text} if text is not None else None
    )
    if as_json:
        _consent_json(body)
        return
    out.print(
        _consent_text(f"approved {body['previous_id']} → memory {body['id']} (consent: {body['consent']})")
    )


@consent_app.command("reject")
def consent_reject(
    ids: Annotated[list[str], typer.Argument(help="pending item id(s) from `ccmem consent list`")],
    url: _ConsentUrlOpt = None,
    token: _ConsentTokenOpt = None,
    as_json: _ConsentJsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Reject pending items: their text is deleted for good; the decision is recorded."""
    if len(ids) > 1:
        _consent_bulk(
            _consent_call(config, url, token, "POST", "/reject", json={"ids": ids}), "rejected", as_json
        )
        return
    body = _consent_call(config, url, token, "POST", f"/{ids[0]}/reject")
    if as_json:
        _consent_json(body)
        return
    out.print(_consent_text(f"rejected {body['id']}"))


@consent_app.command("decisions")
def consent_decisions(
    user: Annotated[str | None, typer.Option("--user", help="only this user's decisions")] = None,
    page: Annotated[int, typer.Option(min=1, help="page number")] = 1,
    url: _ConsentUrlOpt = None,
    token: _ConsentTokenOpt = None,
    as_json: _ConsentJsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Who decided what and when, newest first (rule decisions name the rule)."""
    params: dict[str, Any] = {"page": page, **({"user_id": user} if user else {})}
    body = _consent_call(config, url, token, "GET", "/decisions", params=params)
    if as_json:
        _consent_json(body)
        return
    table = _consent_table("memory", "when", "user", "decision", "by", title=f"{body['total']} decisions")
    for d in body["items"]:
        table.add_row(
            d["memory_id"],
            d["decided_at"][:16].replace("T", " "),
            _consent_text(d["user_id"]),
            d["decision"] + (" (edited)" if d["edited"] else ""),
            _consent_text(d["decided_by"]),  # rule decisions read rule:<rule id>
        )
    out.print(table)


def _consent_rules_table(rules: list[dict[str, Any]]) -> None:
    table = _consent_table("id", "effect", "app", "project", "user", title=f"{len(rules)} rules")
    for rule in rules:
        table.add_row(
            rule["id"],
            rule["effect"],
            _consent_text(rule["app_pattern"]),
            _consent_text(rule["project_pattern"] if rule["project_pattern"] else '"" (no project)'),
            _consent_text(rule["user_id"]),
        )
    out.print(table)


@consent_rules_app.callback()
def consent_rules(
    ctx: typer.Context,
    url: _ConsentUrlOpt = None,
    token: _ConsentTokenOpt = None,
    as_json: _ConsentJsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """With no subcommand: list the rules (as `rules list`)."""
    if ctx.invoked_subcommand is None:
        consent_rules_list(ctx, url=url, token=token, as_json=as_json, config=config)
    else:  # `rules --token T add ...` means the same as `rules add --token T ...`
        ctx.obj = {"url": url, "token": token, "as_json": as_json, "config": config}


def _consent_group_options(ctx: typer.Context, **given: Any) -> dict[str, Any]:
    """A rules subcommand's connection options, falling back to those given to `rules`."""
    group = ctx.obj if isinstance(ctx.obj, dict) else {}
    return {key: value or group.get(key) for key, value in given.items()}


@consent_rules_app.command("list")
def consent_rules_list(
    ctx: typer.Context,
    user: Annotated[str | None, typer.Option("--user", help="only this user's rules")] = None,
    url: _ConsentUrlOpt = None,
    token: _ConsentTokenOpt = None,
    as_json: _ConsentJsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """List rules in the order they are checked: deny rules first."""
    chosen = _consent_group_options(ctx, url=url, token=token, as_json=as_json, config=config)
    url, token, as_json, config = chosen["url"], chosen["token"], chosen["as_json"], chosen["config"]
    body = _consent_call(config, url, token, "GET", "/rules", params={"user_id": user} if user else {})
    if as_json:
        _consent_json(body)
        return
    _consent_rules_table(body["rules"])


@consent_rules_app.command("add")
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
    user: _ConsentUserOpt = None,
    url: _ConsentUrlOpt = None,
    token: _ConsentTokenOpt = None,
    as_json: _ConsentJsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Add a standing rule; it decides future captures (items already pending stay pending)."""
    chosen = _consent_group_options(ctx, url=url, token=token, as_json=as_json, config=config)
    url, token, as_json, config = chosen["url"], chosen["token"], chosen["as_json"], chosen["config"]
    if effect not in ("allow", "deny"):
        from .errors import BadInput

        raise BadInput(f"invalid --effect {effect!r}: use allow or deny")
    payload = {
        "effect": effect,
        "app_pattern": app_pattern,
        "project_pattern": project_pattern,
        "from_item": from_item,
        "user_id": user,
    }
    body = _consent_call(
        config, url, token, "POST", "/rules", json={k: v for k, v in payload.items() if v is not None}
    )
    if as_json:
        _consent_json(body)
        return
    verb = "added" if body["created"] else "already had"
    patterns = f"app {body['app_pattern']!r} project {body['project_pattern']!r}"
    out.print(_consent_text(f"{verb} rule {body['id']}: {body['effect']} {patterns}"))


@consent_rules_app.command("remove")
def consent_rules_remove(
    ctx: typer.Context,
    rule_id: Annotated[str, typer.Argument(help="rule id from `ccmem consent rules list`")],
    url: _ConsentUrlOpt = None,
    token: _ConsentTokenOpt = None,
    as_json: _ConsentJsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Remove a standing rule."""
    chosen = _consent_group_options(ctx, url=url, token=token, as_json=as_json, config=config)
    url, token, as_json, config = chosen["url"], chosen["token"], chosen["as_json"], chosen["config"]
    body = _consent_call(config, url, token, "DELETE", f"/rules/{rule_id}")
    if as_json:
        _consent_json(body)
        return
    out.print(_consent_text(f"removed rule {body['id']}"))


def main() -> None:
    try:
        result = app(standalone_mode=False)
    except MemoryError_ as exc:
        err.print(f"[red]error:[/] {exc.message}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except Exception as exc:
        # Usage errors (typer's vendored click): print the usage line, exit 2.
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            sys.exit(exc.exit_code)
        raise
    if isinstance(result, int) and result:
        sys.exit(result)


if __name__ == "__main__":
    main()
