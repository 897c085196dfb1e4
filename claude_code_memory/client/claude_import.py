"""``ccmem import claude-code``: Claude Code's transcripts into the memory server, resumably.

Each turn goes to ``POST /api/v1/capture`` (the gate: redaction, caps, consent, dedup) with
its session as conversation, its cwd's project and its original time. A small state file per
transcript records the lines already sent, so a killed run goes on where it stopped and a
second run sends nothing new; the server's dedup is the second guard.

A line or a turn it cannot take is skipped and reported, never a stop: a line that is not JSON
or nested too deep, a turn holding a lone surrogate (found before sending), a turn the server
refuses for itself (413 too large, 422 a bad value), a file that is not a regular one or cannot
be read. The resume point moves past a refused turn, so a second run does not stop there again.
A refusal that is not the turn's (no server, a bad token, a full disk) stops the run, and what
it sent stays done.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..capture.projects import session_project
from ..errors import BadInput, TooLarge
from .claude_transcripts import BadLine, Turn, read_lines, read_turns, transcript_files

IMPORT_APP = "claude-code"
IMPORT_SOURCE = "claude-code-import"


def default_root() -> Path:
    return Path.home() / ".claude" / "projects"


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ccmem" / "claude-code-import"


@dataclass
class ImportReport:
    transcripts: int = 0
    read: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    pending_ids: list[str] = field(default_factory=list)

    def skip(self, transcript: Path, line: int | None, reason: str, detail: str | None = None) -> None:
        """A line (0-based; None: the whole file) left out, and why."""
        entry: dict[str, Any] = {
            "transcript": str(transcript),
            "line": None if line is None else line + 1,
            "reason": reason,
        }
        if detail:
            entry["detail"] = detail[:200]
        self.skipped.append(entry)

    def as_dict(self) -> dict[str, Any]:
        return {
            "transcripts": self.transcripts,
            "read": self.read,
            "imported": self.counts["stored"] + self.counts["pending"],
            "pending": self.counts["pending"],
            "duplicates": self.counts["duplicate"],
            "filtered": self.counts["filtered"],
            "skipped": len(self.skipped),
            "skipped_reasons": dict(Counter(item["reason"] for item in self.skipped)),
            "skipped_lines": self.skipped[:50],
        }


class StateFile:
    """Lines of one transcript already sent (one small JSON file per transcript)."""

    def __init__(self, state_dir: Path, transcript: Path) -> None:
        digest = hashlib.sha256(str(transcript.resolve()).encode()).hexdigest()[:24]
        self.path = state_dir / f"{digest}.json"
        self.transcript = transcript

    def lines_done(self) -> int:
        try:
            return int(json.loads(self.path.read_text())["lines"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0

    def save(self, lines: int) -> None:
        write_state(self.path, json.dumps({"transcript": str(self.transcript), "lines": lines}))


def write_state(path: Path, text: str) -> None:
    """A state file of the import or the sync, mode 0600 in a 0700 folder from the first byte,
    whatever the umask of the shell or hook that runs them: it names the user's transcripts, and
    the server takes away whatever others could read under its state directory, saying so."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_suffix(".tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.replace(partial, path)


def capture_body(turn: Turn, project: str | None) -> dict[str, Any]:
    when = turn.timestamp.astimezone(UTC).isoformat() if turn.timestamp else None
    return {
        "app": IMPORT_APP,
        "project": project,
        "conversation_id": turn.session_id[:128] or None,
        "messages": [{"role": "user", "content": turn.prompt}, {"role": "assistant", "content": turn.reply}],
        "captured_at": when,
        "metadata": {"source": IMPORT_SOURCE},
    }


def run_import(
    send: Callable[[dict[str, Any]], dict[str, Any]] | None,
    *,
    root: Path,
    state_dir: Path,
    project: str | None = None,
    since: datetime | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Import every transcript under ``root``; ``send`` None is a dry run (nothing saved)."""
    report = ImportReport()
    files, refused = transcript_files(root)
    report.transcripts = len(files)
    for path in refused:
        report.skip(path, None, "not a regular file (a link, a pipe or a device)")
    for index, path in enumerate(files):
        state = StateFile(state_dir, path)
        start = state.lines_done() if send is not None else 0
        try:
            lines = read_lines(path)[start:]
        except OSError as exc:
            report.skip(path, None, f"cannot be read ({exc.strerror or 'not a regular file'})")
            continue
        for item in read_turns(lines, session_id=path.stem, start_line=start):
            if isinstance(item, BadLine):
                report.skip(path, item.line, item.reason)
                continue
            report.read += 1
            turn_project = session_project(item.cwd, str(path))  # as the hooks name it
            if project is not None and project not in (turn_project, path.parent.name):
                report.counts["other_project"] += 1
                continue
            if since is not None and item.timestamp is not None and item.timestamp < since:
                report.counts["before_since"] += 1
                continue
            body = capture_body(item, turn_project)
            if not _sendable(body):  # JSON cannot carry half a character (the server says 422)
                report.skip(path, item.line, "a lone surrogate (half a character)")
                if send is not None:
                    state.save(item.next_line)
                continue
            if send is None:
                report.counts["would_import"] += 1
                continue
            try:
                answer = send(body)
            except TooLarge:
                report.skip(path, item.line, "too large for the server (413)")
                state.save(item.next_line)
                continue
            except BadInput as exc:  # the turn's own fault: a value the server refuses
                report.skip(path, item.line, f"refused by the server ({exc.status})", exc.message)
                state.save(item.next_line)
                continue
            status = str(answer.get("status", "stored"))
            report.counts[status] += 1
            if status == "pending" and answer.get("id"):
                report.pending_ids.append(str(answer["id"]))
            state.save(item.next_line)
        if progress is not None:
            progress(index + 1, len(files))
    return report


def _sendable(body: dict[str, Any]) -> bool:
    """Whether the body is valid Unicode throughout (no lone UTF-16 surrogate)."""
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def tty_progress(done: int, total: int) -> None:
    """A one-line progress bar on stderr, drawn only on a terminal."""
    if not sys.stderr.isatty():
        return
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} transcripts")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()
