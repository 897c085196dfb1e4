"""``ccmem import``: bring memories in, from our own export (``archive``, the default) or from
an OpenMemory database (``openmemory``).

``ccmem import FILE.zip`` keeps working as before: a first argument that is not a subcommand
goes to ``archive``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from ..errors import BadInput, MemoryStackError, TooLarge
from . import common, memories
from .common import ConfigOpt, JsonOpt, TokenOpt, UrlOpt, UserOpt, out

if TYPE_CHECKING:
    from ..client.remote import Remote


class _ArchiveByDefault(TyperGroup):
    """``ccmem import FILE.zip`` (or ``--mode skip FILE.zip``) means ``ccmem import archive …``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: typer's vendored click
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["archive", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_ArchiveByDefault,
    help="Bring memories in: `ccmem import FILE.zip` (an export) or `ccmem import openmemory openmemory.db`.",
    no_args_is_help=True,
)
app.command("archive")(memories.import_)


def _user_map(pairs: list[str]) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for pair in pairs:
        theirs, sep, ours = pair.partition("=")
        if not sep or not theirs.strip() or not ours.strip():
            raise BadInput(f"--user-map {pair!r}: expected THEIRS=OURS, e.g. default_user=alice")
        mapping[theirs.strip()] = ours.strip()
    return mapping


@app.command("openmemory")
def openmemory(
    path: Annotated[
        Path, typer.Argument(dir_okay=False, help="OpenMemory's SQLite database (openmemory.db)")
    ],
    user: Annotated[
        str | None,
        typer.Option(
            "--user", help="the local user every OpenMemory user goes to (default: the token's user)"
        ),
    ] = None,
    user_map: Annotated[
        list[str] | None,
        typer.Option("--user-map", help="THEIRS=OURS: one OpenMemory user to a local user (repeatable)"),
    ] = None,
    keep_user_ids: Annotated[
        bool,
        typer.Option(
            "--keep-user-ids",
            help="each OpenMemory user to the local user of the same name (created if new; admin token)",
        ),
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="read and count; import nothing")] = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Move in from OpenMemory: its memories, apps, categories, states, dates and access logs.

    Reads the database here and sends its memories to the server in batches. Every memory passes
    the policy gate (redaction, caps) and is embedded again; deleted ones stay behind; duplicates
    and memories imported before are skipped, so running it twice imports nothing new.
    """
    from ..client.openmemory_db import batches, map_users, read_openmemory

    data = read_openmemory(path)
    targets = map_users(data, _user_map(user_map or []), user, keep_user_ids)
    totals: Counter[str] = Counter()
    by_state: Counter[str] = Counter()
    refusals: list[dict[str, str]] = []
    bad_rows = list(data.bad_rows)
    stopped: MemoryStackError | None = None
    answered = 0
    if not dry_run and data.memories:
        with common.remote(config, url, token) as client:
            try:
                for batch in batches(data.memories, targets):
                    for answer in _send(client, batch):
                        answered += 1
                        for key in _COUNTS:
                            totals[key] += answer.get(key, 0)
                        by_state.update(answer.get("imported_by_state", {}))
                        refusals += answer.get("refusals", [])
                        bad_rows += answer.get("bad_rows", [])
            except MemoryStackError as exc:
                if not answered:
                    raise  # nothing was done: the error alone says it
                stopped = exc  # reported with what was done; a new run goes on from there
    report: dict[str, Any] = {
        "path": str(path),
        "dry_run": dry_run,
        "users": {theirs: ours or "(the token's user)" for theirs, ours in targets.items()},
        "read": data.read,
        "read_by_state": dict(data.read_by_state),
        "skipped_deleted": data.read_by_state["deleted"],
        "imported": totals["imported"],
        "imported_by_state": dict(by_state),
        "skipped_duplicate": totals["skipped_duplicate"],
        "skipped_already_imported": totals["skipped_already_imported"],
        "refused": totals["refused"],
        "pending_consent": totals["pending_consent"],
        "access_logs": totals["access_logs"],
        "access_logs_dropped": data.access_logs_dropped,
        "status_history_dropped": data.status_history_dropped,
        "refusals": refusals,
        "skipped_bad_rows": len(bad_rows),
        "bad_rows": bad_rows,
    }
    if stopped is not None:
        report["stopped"] = stopped.message
    if as_json:
        common.print_json(report)
    else:
        _print(report)
    if stopped is not None:
        raise stopped


#: The counts of the server's answer that add up over batches.
_COUNTS = (
    "imported",
    "skipped_duplicate",
    "skipped_already_imported",
    "refused",
    "pending_consent",
    "access_logs",
)


def _send(client: Remote, batch: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The server's answers for one batch. A batch it refuses whole (over its body cap, or
    not valid) goes again one memory at a time, and a memory it refuses on its own is a bad row:
    one bad row never stops the import."""
    try:
        yield client.post(
            "/api/v1/import/openmemory", json={"memories": batch}, timeout=memories.IMPORT_TIMEOUT
        )
    except (TooLarge, BadInput) as refusal:
        if len(batch) > 1:
            for row in batch:
                yield from _send(client, [row])
            return
        yield {"bad_rows": [{"openmemory_id": batch[0]["openmemory_id"], "reason": refusal.message}]}


def _print(report: dict[str, Any]) -> None:
    states = ", ".join(f"{count} {state}" for state, count in sorted(report["read_by_state"].items()))
    out.print(common.text(f"read {report['read']} memories from {report['path']} ({states or 'none'})"))
    for theirs, ours in report["users"].items():
        out.print(common.text(f"  OpenMemory user {theirs} → {ours}"))
    if report["dry_run"]:
        out.print("dry run: nothing imported")
        return
    imported = ", ".join(f"{count} {state}" for state, count in sorted(report["imported_by_state"].items()))
    lines = [
        f"imported {report['imported']}" + (f" ({imported})" if imported else ""),
        f"skipped: {report['skipped_deleted']} deleted in OpenMemory, "
        f"{report['skipped_duplicate']} duplicates, {report['skipped_already_imported']} imported before",
        f"refused by the policy gate: {report['refused']}",
        f"access-log rows: {report['access_logs']}",
    ]
    if report["pending_consent"]:
        lines.append(
            f"waiting for consent (privacy.consent_channels names import): {report['pending_consent']}"
        )
    if report["access_logs_dropped"]:
        lines.append(f"older access-log rows left behind: {report['access_logs_dropped']}")
    for line in lines:
        out.print(common.text(line))
    for refusal in report["refusals"]:
        out.print(common.text(f"  refused {refusal['openmemory_id']}: {refusal['reason']}"))
    if report["bad_rows"]:
        out.print(common.text(f"rows that could not be imported: {report['skipped_bad_rows']}"))
    for row in report["bad_rows"]:
        out.print(common.text(f"  skipped {row['openmemory_id']}: {row['reason']}"))
    if report["status_history_dropped"]:
        out.print(
            common.text(
                f"state changes with an unknown state left behind: {report['status_history_dropped']}"
            )
        )
    if "stopped" in report:
        out.print(common.text(f"stopped: {report['stopped']}; run the import again to go on from here"))


def _since(value: str | None) -> Any:
    from datetime import datetime

    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"--since {value!r}: expected a date such as 2026-01-31") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@app.command("claude-code")
def claude_code(
    project: Annotated[
        str | None, typer.Option("--project", help="only this project (its name, or its transcript folder)")
    ] = None,
    since: Annotated[str | None, typer.Option("--since", help="only turns from this date on")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="read and count; import nothing")] = False,
    approve: Annotated[
        bool, typer.Option("--approve", help="approve the imported turns (default: the consent queue)")
    ] = False,
    root: Annotated[
        Path | None, typer.Option("--root", help="Claude Code's projects folder (default ~/.claude/projects)")
    ] = None,
    state_dir: Annotated[
        Path | None, typer.Option("--state-dir", help="where the per-transcript resume state is kept")
    ] = None,
    auto_memory: Annotated[
        bool,
        typer.Option(
            "--auto-memory/--no-auto-memory",
            help="also sync Claude Code's auto-memory files (memory/*.md), as `ccmem sync claude-code`",
        ),
    ] = True,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Your Claude Code history: each prompt and reply in ~/.claude/projects becomes a turn memory.

    Every turn passes the policy gate (redaction, caps, dedup) and waits in the consent queue
    unless --approve. Turns the Stop hook or the proxy stored already are duplicates. Running
    it again imports nothing new; a killed run goes on where it stopped. Claude Code's
    auto-memory files (memory/*.md) are synced too, as `ccmem sync claude-code` does.
    """
    from ..client.claude_automem import SyncReport, sync_all
    from ..client.claude_import import default_root, default_state_dir, run_import, tty_progress

    options = {
        "root": root or default_root(),
        "state_dir": state_dir or default_state_dir(),
        "project": project,
        "since": _since(since),
        "progress": tty_progress,
    }
    where: dict[str, Any] = {"root": options["root"], "state_dir": options["state_dir"], "project": project}
    memory_report = SyncReport()
    if dry_run:
        report = run_import(None, **options)
        if auto_memory:
            memory_report = sync_all(None, **where)
    else:
        with common.remote(config, url, token) as client:
            client.acting_for = user
            report = run_import(lambda body: client.post("/api/v1/capture", json=body), **options)
            if auto_memory:
                memory_report = sync_all(client, **where)
            if approve:
                ids, page = report.pending_ids, common.APPROVE_PAGE
                common.approve_pages(client, (ids[i : i + page] for i in range(0, len(ids), page)))
    summary = report.as_dict()
    summary["dry_run"] = dry_run
    summary["approved"] = len(report.pending_ids) if approve and not dry_run else 0
    summary["auto_memory"] = memory_report.as_dict() if auto_memory else None
    if as_json:
        common.print_json(summary)
        return
    out.print(common.text(f"read {summary['read']} turns from {summary['transcripts']} transcripts"))
    if dry_run:
        out.print(common.text(f"dry run: would import {report.counts['would_import']}"))
    else:
        out.print(
            common.text(
                f"imported {summary['imported']} ({summary['pending']} waiting for consent, "
                f"{summary['approved']} approved), duplicates {summary['duplicates']}, "
                f"filtered {summary['filtered']}"
            )
        )
    for reason, count in summary["skipped_reasons"].items():
        out.print(common.text(f"skipped {count} lines: {reason}"))
    if auto_memory and not dry_run:
        from .sync import print_report

        print_report(summary["auto_memory"])
