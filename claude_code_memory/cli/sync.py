"""``ccmem sync claude-code``: Claude Code's auto-memory files and the server, kept in step.

Claude Code's memory files (``~/.claude/projects/<project>/memory/*.md``) come in as memories of
the project (an edited file updates its memory, a deleted one deletes it), and the project's
other memories go out to ``ccmem-memories.md`` beside them. Claude Code's own files are only
read. Run it by hand, from cron, or on Claude Code's SessionStart (docs/import.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from . import common
from .common import ConfigOpt, JsonOpt, TokenOpt, UrlOpt, UserOpt, out

app = typer.Typer(
    help="Keep memories in step with another tool: `ccmem sync claude-code`.", no_args_is_help=True
)

ProjectOpt = Annotated[
    str | None, typer.Option("--project", help="only this project (its transcript folder's name contains it)")
]
RootOpt = Annotated[
    Path | None, typer.Option("--root", help="Claude Code's projects folder (default ~/.claude/projects)")
]
StateOpt = Annotated[Path | None, typer.Option("--state-dir", help="where the sync state is kept")]


def print_report(summary: dict[str, Any]) -> None:
    """The auto-memory part of a sync or an import, as lines."""
    out.print(
        common.text(
            f"auto-memory: {summary['memory_files']} files in {summary['memory_folders']} folders: "
            f"imported {summary['imported']}, updated {summary['updated']}, deleted {summary['deleted']}, "
            f"unchanged {summary['unchanged']}, deleted in ccmem and left so {summary['kept_deleted']}"
        )
    )
    if summary["own_written"]:
        out.print(common.text(f"ccmem-memories.md written in {summary['own_written']} folders"))
    for bad in summary["bad_files"]:
        out.print(common.text(f"skipped {bad['file']}: {bad['reason']}"))


@app.command("claude-code")
def claude_code(
    project: ProjectOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="read and count; change nothing")] = False,
    root: RootOpt = None,
    state_dir: StateOpt = None,
    user: UserOpt = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Sync Claude Code's auto-memory files (~/.claude/projects/*/memory) with your memories.

    Each memory file becomes a memory of its project (through the policy gate); an edited file
    updates it, a deleted file deletes it. The project's other memories are written to
    ccmem-memories.md in the same folder for Claude Code to read. Claude Code's own files are
    never written; its auto-memory stays on. A bad file is reported and skipped.
    """
    from ..client.claude_automem import sync_all
    from ..client.claude_import import default_root, default_state_dir

    where: dict[str, Any] = {
        "root": root or default_root(),
        "state_dir": state_dir or default_state_dir(),
        "project": project,
    }
    if dry_run:
        report = sync_all(None, **where)
    else:
        with common.remote(config, url, token) as client:
            client.acting_for = user
            report = sync_all(client, **where)
    summary = report.as_dict() | {"dry_run": dry_run}
    if as_json:
        common.print_json(summary)
    elif dry_run:
        out.print(
            common.text(f"dry run: {summary['memory_files']} files, would import {summary['would_import']}")
        )
    else:
        print_report(summary)
