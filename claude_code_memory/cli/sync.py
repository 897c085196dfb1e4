"""``ccmem sync claude-code``: Claude Code's auto-memory files and the server, kept in step.

Claude Code's memory files (``~/.claude/projects/<project>/memory/*.md``) come in as memories of
the project through consent (an edited file replaces its memory, a deleted one deletes it), and
the project's other memories go out to ``ccmem-memories.md`` beside them. Claude Code's own
files are only read. Claude Code's SessionStart hooks (``ccmem hooks install``'s and the
plugin's) run it for the session's folder in the background (``--cwd DIR --quiet``); run it by
hand for every folder (docs/import.md).
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
CwdOpt = Annotated[
    str | None,
    typer.Option("--cwd", help="only the memory folder of a Claude Code session in this directory"),
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", help="print nothing; skip, rather than wait, when another sync is running")
]


def print_report(summary: dict[str, Any]) -> None:
    """The auto-memory part of a sync or an import, as lines."""
    out.print(
        common.text(
            f"auto-memory: {summary['memory_files']} files in {summary['memory_folders']} folders: "
            f"imported {summary['imported']}, updated {summary['updated']}, deleted {summary['deleted']}, "
            f"unchanged {summary['unchanged']}, deleted in ccmem and left so {summary['kept_deleted']}"
        )
    )
    if summary["pending"]:
        out.print(common.text(f"{summary['pending']} wait for your consent: ccmem consent list"))
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
    cwd: CwdOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Sync Claude Code's auto-memory files (~/.claude/projects/*/memory) with your memories.

    Each memory file becomes a memory of its project (through the policy gate); an edited file
    updates it, a deleted file deletes it. The project's other memories are written to
    ccmem-memories.md in the same folder for Claude Code to read. Claude Code's own files are
    never written; its auto-memory stays on. A bad file is reported and skipped. New and
    changed files wait for consent as captured turns do (privacy.require_consent).
    """
    from ..client.claude_automem import sync_all, sync_lock, sync_session
    from ..client.claude_import import default_root, default_state_dir

    where: dict[str, Any] = {
        "root": root or default_root(),
        "state_dir": state_dir or default_state_dir(),
        "project": project,
    }
    if cwd is not None:
        with sync_lock(where["state_dir"]) as mine:
            if not mine:  # another session's sync is taking the files in
                if not quiet:
                    out.print(common.text("another sync is running: nothing done"))
                return
            with common.remote(config, url, token) as client:
                report = sync_session(client, cwd, where["root"], where["state_dir"])
        if quiet:
            return
        if as_json:
            common.print_json(report.as_dict())
        else:
            print_report(report.as_dict())
        return
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
