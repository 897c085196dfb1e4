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


def main() -> None:
    try:
        result = app(standalone_mode=False)
    except MemoryError_ as exc:
        err.print(f"[red]error:[/] {exc.message}", highlight=False)
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
