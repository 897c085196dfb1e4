"""``ccmem add|search|list|get|export|import``: one user's memories, through the server's REST API.

A user token acts for its own user; the admin token (the default, from ``.env``) acts for
anyone but must be told whom with ``--user``.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote

import typer
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from ..errors import (
    BadInput,
    Conflict,
    Forbidden,
    MemoryStackError,
    NotFound,
    TooLarge,
    Unauthorised,
    Unavailable,
)
from . import common
from .common import ConfigOpt, JsonOpt, TokenOpt, UrlOpt, UserOpt, err, out

if TYPE_CHECKING:
    import httpx

#: The app the CLI writes and reads as (memories remember which client wrote them).
CLI_APP = "ccmem"
#: An import embeds every memory on the server before it answers: allow it an hour.
#: httpx's (connect, read, write, pool) seconds; httpx is imported where used, since
#: `ccmem serve` never needs it (restart time).
IMPORT_TIMEOUT = (30.0, 3600.0, 30.0, 30.0)
#: Status codes of our error bodies → the library's typed errors (400 is a malformed request).
_ERRORS: dict[int, type[MemoryStackError]] = {400: BadInput} | {
    cls.status: cls for cls in (BadInput, NotFound, Unauthorised, Forbidden, Conflict, TooLarge)
}


def _when(epoch_seconds: Any) -> str:
    if not isinstance(epoch_seconds, int | float):
        return ""
    return datetime.fromtimestamp(epoch_seconds, UTC).strftime("%Y-%m-%d %H:%M")


def add(
    text: Annotated[str, typer.Argument(help="the memory, stored verbatim (secrets are redacted)")],
    app_name: Annotated[str, typer.Option("--app", help="the app to file it under")] = CLI_APP,
    metadata: Annotated[
        str | None, typer.Option("--metadata", help='a JSON object stored with it, e.g. \'{"topic": "ci"}\'')
    ] = None,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Store a memory; the same text is stored once per user."""
    extra: dict[str, Any] = {}
    if metadata is not None:
        try:
            extra = json.loads(metadata)
        except json.JSONDecodeError as exc:
            raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--metadata") from None
        if not isinstance(extra, dict):
            raise typer.BadParameter("must be a JSON object ({...})", param_hint="--metadata")
    body = common.without_none(
        {"text": text, "app": app_name, "metadata": extra, "user_id": user, "infer": False}
    )
    row = common.call(config, url, token, "POST", "/api/v1/memories", json=body)
    if as_json:
        common.print_json(row)
        return
    if row is None:
        out.print("nothing stored (the policy gate kept it back)")
    elif row.get("state") == "pending":
        out.print(common.text(f"{row['id']} is waiting for consent (ccmem consent list)"))
    elif row.get("already_existed"):
        out.print(common.text(f"already stored as {row['id']}"))
    else:
        out.print(common.text(f"added {row['id']}"))


def search(
    query: Annotated[str, typer.Argument(help="what to look for, in your own words")],
    limit: Annotated[int, typer.Option(min=1, max=100, help="how many results at most")] = 10,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Semantic search over the user's active memories, best match first."""
    body = common.without_none({"query": query, "limit": limit, "user_id": user, "app": CLI_APP})
    results = common.call(config, url, token, "POST", "/api/v1/memories/search", json=body)["results"]
    if as_json:
        common.print_json(results)
        return
    table = common.table("id", "score", "app", "memory", title=f"{len(results)} results for {query!r}")
    for hit in results:
        table.add_row(
            hit["id"], f"{hit['score']:.3f}", common.text(hit["app"]), common.preview(hit["content"])
        )
    out.print(table)


def _app_id(client: Any, name: str, user: str | None) -> str:
    """The id of the user's app called ``name`` (the list route filters by id)."""
    params = common.without_none({"name": name, "user_id": user, "page_size": 100})
    apps = [a for a in client.get("/api/v1/apps", params=params)["apps"] if a["name"] == name]
    if not apps:
        raise NotFound(f"no app named {name!r}" + (f" for user {user!r}" if user else ""))
    if len(apps) > 1:
        raise BadInput(f"several users have an app named {name!r}; name the user with --user")
    return str(apps[0]["id"])


def list_memories(
    app_name: Annotated[
        str | None, typer.Option("--app", help="only memories written through this app")
    ] = None,
    page: Annotated[int, typer.Option(min=1, help="page number")] = 1,
    size: Annotated[int, typer.Option(min=1, max=100, help="memories per page")] = 50,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """List the user's memories, newest first, a page at a time."""
    with common.remote(config, url, token) as client:
        app_id = _app_id(client, app_name, user) if app_name else None
        params = common.without_none({"user_id": user, "app_id": app_id, "page": page, "size": size})
        body = client.get("/api/v1/memories", params=params)
    if as_json:
        common.print_json(body)
        return
    table = common.table("id", "created", "app", "memory", title=f"{body['total']} memories")
    for item in body["items"]:
        table.add_row(
            item["id"],
            _when(item["created_at"]),
            common.text(item["app_name"]),
            common.preview(item["content"]),
        )
    out.print(table)
    if body["pages"] > body["page"]:
        err.print(f"page {body['page']} of {body['pages']}; next: --page {body['page'] + 1}")


def get(
    memory_id: Annotated[str, typer.Argument(help="a memory id from `ccmem list` or `ccmem search`")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Show one memory: its text, state, categories and provenance."""
    body = common.call(config, url, token, "GET", f"/api/v1/memories/{quote(memory_id, safe='')}")
    if as_json:
        common.print_json(body)
        return
    grid = Table.grid(padding=(0, 2))
    provenance = body.get("provenance") or {}
    for label, value in (
        ("id", body["id"]),
        ("user", body.get("user_id")),
        ("app", body.get("app_name")),
        ("state", body.get("state")),
        ("created", _when(body.get("created_at"))),
        ("updated", _when(body.get("updated_at"))),
        ("categories", ", ".join(body.get("categories") or [])),
        *(
            (key.replace("_", " "), provenance[key])
            for key in provenance
            if key != "app" and provenance[key] not in (None, "")
        ),
    ):
        grid.add_row(label, common.text(str(value if value is not None else "")))
    out.print(grid)
    out.print(common.text(body["text"]))


# -- export and import -------------------------------------------------------------------------
def _http_errors() -> type[Exception]:
    import httpx

    return httpx.HTTPError


def _refusal(response: httpx.Response) -> MemoryStackError:
    """The typed error for one of our JSON error bodies (as :class:`Remote` raises them)."""
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text
    return _ERRORS.get(response.status_code, Unavailable)(f"{detail} (HTTP {response.status_code})")


def _transfer() -> Progress:
    """A progress bar on stderr (stdout stays clean for --json); silent when not a terminal."""
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )


def _count_memories(data: bytes) -> int | None:
    """How many memories an export zip holds (None when it cannot tell; the server decides)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            member = next((n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "memories.json"), None)
            if member is None:
                return None
            memories = json.loads(archive.read(member)).get("memories")
    except (zipfile.BadZipFile, ValueError, AttributeError, OSError):
        return None
    if not isinstance(memories, list):
        return None
    return sum(1 for m in memories if not isinstance(m, dict) or m.get("state") != "deleted")


def _default_export_path(response: httpx.Response) -> Path:
    named = re.search(r'filename="([^"/\\]+)"', response.headers.get("content-disposition", ""))
    return Path(named.group(1) if named else "memories_export.zip")


def export(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="where to write the zip (default: memories_export_<user>.zip here)"
        ),
    ] = None,
    app_name: Annotated[str | None, typer.Option("--app", help="only this app's memories")] = None,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Download the user's memories as an OpenMemory-compatible zip (memories.json + memories.jsonl.gz)."""
    with common.remote(config, url, token) as client:
        app_id = _app_id(client, app_name, user) if app_name else None
        request = common.without_none({"user_id": user, "app_id": app_id})
        chunks: list[bytes] = []
        try:
            with client.client.stream("POST", "/api/v1/backup/export", json=request) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _refusal(response)
                total = int(response.headers.get("content-length") or 0) or None
                with _transfer() as progress:
                    task = progress.add_task("exporting", total=total)
                    for chunk in response.iter_bytes():
                        chunks.append(chunk)
                        progress.advance(task, len(chunk))
                target = output or _default_export_path(response)
        except _http_errors() as exc:
            reason = f"cannot reach the server at {client.base_url} ({exc.__class__.__name__})"
            raise Unavailable(f"{reason}; {client.unreachable_hint}") from exc
    if output is None and target.exists():
        raise Conflict(f"{target} already exists; choose another file with --output")
    data = b"".join(chunks)
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(data)
    partial.replace(target)
    summary = {"path": str(target.resolve()), "bytes": len(data), "memories": _count_memories(data)}
    if as_json:
        common.print_json(summary)
        return
    out.print(common.text(f"exported {summary['memories']} memories to {target} ({len(data):,} bytes)"))


class ImportMode(StrEnum):
    skip = "skip"
    overwrite = "overwrite"


class _ReadProgress(io.BufferedReader):
    """The archive, reporting how far the upload has read it; once it is all sent the server
    embeds every memory, and the description says so while the spinner and clock run on."""

    def __init__(self, path: Path, progress: Progress, task: TaskID, after_upload: str) -> None:
        super().__init__(io.FileIO(path, "rb"))
        self._progress, self._task, self._after_upload = progress, task, after_upload

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        if chunk:
            self._progress.update(self._task, completed=self.tell())
        else:
            self._progress.update(self._task, description=self._after_upload)
        return chunk


def import_(
    file: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, readable=True, help="a zip from `ccmem export` or OpenMemory"
        ),
    ],
    mode: Annotated[
        ImportMode,
        typer.Option(help="memories the user already has (same id or text): skip them, or overwrite them"),
    ] = ImportMode.overwrite,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Restore an export into the user: every memory passes the policy gate and is embedded again."""
    size = file.stat().st_size
    count = _count_memories(file.read_bytes())
    working = f"the server is importing {count if count is not None else 'the'} memories"
    with common.remote(config, url, token) as client, _transfer() as progress:
        task = progress.add_task(f"uploading {file.name}", total=size)
        with _ReadProgress(file, progress, task, working) as upload:
            result = client.post(
                "/api/v1/backup/import",
                params={"mode": mode.value},
                data=common.without_none({"user_id": user}),
                files={"file": (file.name, upload, "application/zip")},
                timeout=IMPORT_TIMEOUT,
            )
    if as_json:
        common.print_json(result)
        return
    overwritten = f" ({result['overwritten']} overwritten)" if result.get("overwritten") else ""
    out.print(
        common.text(
            f"{result['message']}: imported {result['imported']}{overwritten}, skipped {result['skipped']}"
        )
    )
