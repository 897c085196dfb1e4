"""What every command shares: options, settings, the way to a server, output helpers.

Commands that touch memories go through the running server's REST API (:class:`Remote`)
because the embedded vector store belongs to the server process; commands that manage tokens
open the metadata database directly, as the server does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..config import Settings, load_settings
from ..config.locations import choose_config
from ..errors import Unavailable

if TYPE_CHECKING:
    from ..auth.identity import Identity
    from ..client.remote import Credentials, Remote

#: Exit codes, documented in the package docstring and docs/cli.md.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_INTERRUPTED = 130

#: No emoji codes: a fingerprint's ``:CD:`` or a memory's ``:fire:`` is printed as written.
err = Console(stderr=True, emoji=False)
out = Console(emoji=False)

# -- options shared by many commands -----------------------------------------------------------
ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="config.yaml to read (default: $CCMEM_CONFIG, else this installation's; docs/configuration.md)",
    ),
]
DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="data directory (default from config: data/)")
]
UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="server URL (default: the connected server, else server.host and server.port from config)",
    ),
]
TokenOpt = Annotated[
    str | None,
    typer.Option(
        "--token",
        help="bearer token (default: $CCMEM_TOKEN, then the connected user's, then the admin token)",
    ),
]
UserOpt = Annotated[
    str | None,
    typer.Option(
        "--user", help="the user to act for (default: the token's user; the admin token must name one)"
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON output for scripts")]


# -- settings, the database, the server ------------------------------------------------------
def settings(config: Path | None, overrides: dict[str, Any] | None = None) -> Settings:
    return load_settings(config_path=config, overrides=overrides or {})


def data_dir_override(data_dir: Path | None) -> dict[str, Any]:
    return {"server.data_dir": str(data_dir) if data_dir else None}


def config_file(config: Path | None) -> Path:
    """The config file :func:`load_settings` reads (it may not exist: defaults apply)."""
    return choose_config(config).path


def identity(chosen: Settings) -> Identity:
    """Tokens live in the metadata database, which any process may open (unlike the vectors)."""
    from ..auth.identity import Identity

    chosen.data_path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return Identity.open(chosen.database_url, chosen.server.admin_token)


def private_files() -> None:
    """What this process and its children create is their owner's only: the servers' entry
    points call it first (databases, their -wal and -shm, logs, pid files; engine/file_modes.py)."""
    os.umask(0o077)


def server_url(chosen: Settings, url: str | None = None) -> str:
    """``url``, else the configured address (a wildcard bind address is reached on loopback)."""
    if url:
        return url.rstrip("/")
    host = chosen.server.host if chosen.server.host not in ("0.0.0.0", "::") else "127.0.0.1"
    return f"http://{host}:{chosen.server.port}"


def credentials(config: Path | None, url: str | None, token: str | None) -> Credentials:
    """Where a command goes and as whom (:func:`claude_code_memory.client.remote.credentials`)."""
    from ..client.remote import credentials as chosen

    return chosen(settings(config), url, token, explicit_config=choose_config(config).explicit)


@contextmanager
def remote(config: Path | None, url: str | None, token: str | None) -> Iterator[Remote]:
    """An authenticated client for the running server, closed afterwards."""
    from ..client.remote import Remote

    client = Remote.from_settings(
        settings(config), url, token, explicit_config=choose_config(config).explicit
    )
    try:
        yield client
    finally:
        client.close()


def call(
    config: Path | None, url: str | None, token: str | None, method: str, path: str, **kwargs: Any
) -> Any:
    """One REST call to the running server; its JSON body."""
    with remote(config, url, token) as client:
        return client.request(method, path, **kwargs)


def unreachable(exc: BaseException) -> bool:
    """True when ``exc`` means nothing accepted the connection (exit 3), as opposed to a server
    that answered with an error or stopped answering mid-request (exit 1)."""
    import httpx  # where used: `ccmem serve` never needs it (restart time)

    return isinstance(exc, Unavailable) and isinstance(
        exc.__cause__, httpx.ConnectError | httpx.ConnectTimeout
    )


#: Ids a bulk consent decision takes in one request: the size of a page of the pending list.
APPROVE_PAGE = 100


def approve_pages(client: Remote, pages: Iterable[list[str]]) -> dict[str, Any]:
    """Approve pending items a page of ids at a time (``pages`` may list each page only once
    the one before is approved); every item's result and how many failed."""
    results: list[dict[str, Any]] = []
    failed = 0
    for ids in pages:
        body = client.post("/api/v1/consent/approve", json={"ids": ids})
        results += body["results"]
        failed += body["failed"]
    return {"results": results, "failed": failed}


def without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


# -- output -----------------------------------------------------------------------------------
def print_json(body: Any) -> None:
    print(json.dumps(body, indent=2, ensure_ascii=False))


def text(value: str) -> Text:
    """A table cell or line printed as is: stored text must not be read as Rich markup."""
    return Text(value)


def preview(value: str, limit: int = 160) -> Text:
    flat = " ".join(value.split())
    return text(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def table(*headers: str, title: str, id_column: int | None = 0) -> Table:
    """A table whose id column never wraps (ids are copied into the next command) and whose
    other cells fold rather than being cut off."""
    result = Table(*headers, title=title)
    for column in result.columns:
        column.overflow = "fold"
    if id_column is not None:
        result.columns[id_column].no_wrap = True
        result.columns[id_column].min_width = 36
    return result
