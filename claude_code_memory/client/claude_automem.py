"""Claude Code's auto-memory (``~/.claude/projects/<project>/memory/*.md``) kept in step with
the memory server, both ways, without ever writing Claude Code's own files.

Claude Code (2.1.x) keeps one fact per file, with YAML frontmatter (``name``, ``description``,
``metadata.type``: user, feedback, project or reference) and a Markdown body, and an index,
``MEMORY.md`` (one pointer line per memory, no content). :func:`sync_folder`:

* each of Claude Code's memory files becomes one memory of the folder's project (app
  ``claude-code``, metadata naming the file), through ``POST /api/v1/memories`` and so the
  policy gate; an edited file updates its memory, a deleted file deletes it;
* every other memory of that project in the server (and an imported one edited in the server)
  is written to a file of ours beside Claude Code's, :data:`OWN_FILE`, so Claude Code's memory
  recall finds it. ``MEMORY.md`` and Claude Code's files are only read.

Conflicts (see docs/import.md): a file changed since the last sync wins over an edit of its
memory in the server; a memory deleted in the server stays deleted while its file is unchanged;
:data:`OWN_FILE` is the server's view and is rewritten on every sync.

State (which file became which memory, and the file's hash at that time) is one small JSON file
per memory folder, so a second run sends nothing. A file that cannot be read or parsed, or that
the gate refuses, is reported and skipped; it never stops the sync.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from ..errors import BadInput, MemoryStackError, NotFound, TooLarge
from .claude_import import IMPORT_SOURCE
from .claude_transcripts import open_regular, project_of, real_folder, regular_file

APP = "claude-code"
SOURCE = "claude-code-auto-memory"
INDEX_FILE = "MEMORY.md"
#: The file of ours in each memory folder (Claude Code's recall reads it like its own).
OWN_FILE = "ccmem-memories.md"
#: Largest memory file read (Claude Code's own files are small; the gate caps the text again).
MAX_FILE_BYTES = 256 * 1024
TYPES = ("user", "feedback", "project", "reference")
#: ``metadata.source`` of conversation turns (the Stop hook's, the capture proxy's, the
#: transcript import's): a log of what was said, not facts for Claude Code's memory, so they stay
#: out of :data:`OWN_FILE`.
TURN_SOURCES = frozenset({"claude-code-hook", "proxy", IMPORT_SOURCE})


class Server(Protocol):
    """What the sync needs of :class:`~claude_code_memory.client.remote.Remote`."""

    def request(self, method: str, path: str, **kwargs: Any) -> Any: ...


class BadFile(ValueError):
    """A memory file that cannot be imported, and why."""


@dataclass(frozen=True)
class MemoryFile:
    """One of Claude Code's memory files, read."""

    path: Path
    name: str
    description: str | None
    kind: str | None
    body: str
    digest: str

    def text(self) -> str:
        """The memory's text: the description (what recall selects it by), then the body."""
        if self.description and self.description not in self.body:
            return f"{self.description}\n\n{self.body}".strip()
        return self.body


@dataclass
class SyncReport:
    folders: int = 0
    files: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    bad_files: list[dict[str, str]] = field(default_factory=list)

    def add(self, other: SyncReport) -> None:
        self.folders += other.folders
        self.files += other.files
        self.counts.update(other.counts)
        self.bad_files += other.bad_files

    def as_dict(self) -> dict[str, Any]:
        keys = (
            "imported",
            "already_stored",
            "updated",
            "deleted",
            "unchanged",
            "kept_deleted",
            "would_import",
            "own_written",
        )
        return {
            "memory_folders": self.folders,
            "memory_files": self.files,
            **{key: self.counts[key] for key in keys},
            "own_memories": self.counts["own_memories"],
            "bad_files": self.bad_files[:50],
        }


def read_memory_file(path: Path) -> MemoryFile:
    """Parse one memory file; :class:`BadFile` says why it cannot be imported."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BadFile(f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise BadFile(f"larger than {MAX_FILE_BYTES // 1024} KiB")
    try:
        content = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise BadFile("not UTF-8 text") from None
    front: dict[str, Any] = {}
    body = content
    lines = content.splitlines(keepends=True)
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is None:
            raise BadFile("frontmatter without its closing ---")
        try:
            loaded = yaml.safe_load("".join(lines[1:end]))
        except yaml.YAMLError as exc:
            raise BadFile(f"frontmatter is not YAML ({exc.__class__.__name__})") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise BadFile("frontmatter is not a mapping")
        front = loaded or {}
        body = "".join(lines[end + 1 :])
    body = body.strip()
    if not body:
        raise BadFile("no memory text")
    nested = front.get("metadata")
    metadata: dict[str, Any] = nested if isinstance(nested, dict) else {}
    kind = metadata.get("type", front.get("type"))
    description = front.get("description")
    return MemoryFile(
        path=path,
        name=str(front.get("name") or path.stem),
        description=str(description).strip() if description else None,
        kind=kind if kind in TYPES else None,
        body=body,
        digest=hashlib.sha256(raw).hexdigest(),
    )


def memory_folders(root: Path, project: str | None = None) -> list[Path]:
    """``<root>/<project>/memory`` folders; ``project`` keeps those whose folder name contains it."""
    if not root.is_dir():
        return []
    return [
        folder / "memory"
        for folder in sorted(root.iterdir())
        if real_folder(folder)
        and real_folder(folder / "memory")
        and (project is None or project in folder.name)
    ]


def folder_project(memory_dir: Path) -> str:
    """The project a memory folder belongs to, named as the hooks and the transcript import name
    it: from the ``cwd`` of a transcript beside it, else the folder's own name."""
    for transcript in sorted(memory_dir.parent.glob("*.jsonl")):
        try:
            with open_regular(transcript) as handle:  # never a link out, never a pipe's wait
                for _, line in zip(range(50), handle, strict=False):
                    try:
                        entry = json.loads(line)
                    except (ValueError, RecursionError):
                        continue
                    if isinstance(entry, dict) and isinstance(entry.get("cwd"), str):
                        return project_of(entry["cwd"]) or memory_dir.parent.name
        except OSError:
            continue
    return memory_dir.parent.name


class FolderState:
    """Which of a folder's files became which memory, with the file's hash and the text sent."""

    def __init__(self, state_dir: Path, memory_dir: Path) -> None:
        digest = hashlib.sha256(str(memory_dir.resolve()).encode()).hexdigest()[:24]
        self.path = state_dir / "auto-memory" / f"{digest}.json"
        self.memory_dir = memory_dir
        try:
            files = json.loads(self.path.read_text())["files"]
            self.files: dict[str, dict[str, Any]] = files if isinstance(files, dict) else {}
        except (OSError, ValueError, KeyError, TypeError):
            self.files = {}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"folder": str(self.memory_dir), "files": self.files}, indent=1))
        os.replace(temporary, self.path)


def _metadata(memory: MemoryFile) -> dict[str, Any]:
    return {"source": SOURCE, "file": str(memory.path), "name": memory.name, "type": memory.kind}


def _add(server: Server, memory: MemoryFile, project: str) -> tuple[str | None, str, bool]:
    """The memory's id, its text as stored (after the gate's redaction), and whether the sync
    made it (False: the gate's de-duplication found the same text stored already, a memory of
    the user's that the sync must never delete or rewrite)."""
    body = {"text": memory.text(), "app": APP, "project": project, "metadata": _metadata(memory)}
    answer = server.request("POST", "/api/v1/memories", json=body)
    if not isinstance(answer, dict) or not answer.get("id"):
        return None, memory.text(), False
    return str(answer["id"]), _content(answer) or memory.text(), not answer.get("already_existed")


def _current(server: Server, memory_id: str) -> dict[str, Any] | None:
    try:
        answer = server.request("GET", f"/api/v1/memories/{memory_id}")
    except NotFound:
        return None
    if not isinstance(answer, dict) or answer.get("state") not in ("active", "paused", "archived"):
        return None
    return answer


def _content(row: dict[str, Any]) -> str:
    return str(row.get("content") or row.get("text") or "")


def project_memories(server: Server, project: str) -> list[dict[str, Any]]:
    """Every listed memory of ``project`` in the server (a page at a time)."""
    rows: list[dict[str, Any]] = []
    page = 1
    while True:
        answer = server.request(
            "GET", "/api/v1/memories", params={"project": project, "page": page, "size": 100}
        )
        items = answer.get("items", []) if isinstance(answer, dict) else []
        rows += items
        if not items or len(rows) >= int(answer.get("total", 0)):
            return rows
        page += 1


def render_own_file(project: str, rows: list[dict[str, Any]]) -> str:
    """:data:`OWN_FILE`'s text: Claude Code's memory-file shape, one bullet per memory."""
    lines = [
        "---",
        "name: ccmem-memories",
        f"description: Memories kept in ccmem (claude-code-memory) for the project {json.dumps(project)}",
        "metadata:",
        "  type: project",
        "---",
        "",
        "Written by `ccmem sync claude-code` from the ccmem memory server; rewritten on every sync.",
        "Change these memories in ccmem (web UI or `ccmem`), not in this file.",
        "",
    ]
    for row in sorted(rows, key=lambda item: (str(item.get("created_at") or ""), str(item.get("id")))):
        text = " ".join(_content(row).split())
        lines.append(f"- {text} <!-- ccmem:{row.get('id')} -->")
    return "\n".join(lines) + "\n"


def _write_own(memory_dir: Path, text: str | None) -> bool:
    """Write (or, with ``text`` None, remove) :data:`OWN_FILE`; True when it changed."""
    target = memory_dir / OWN_FILE
    old = target.read_text(encoding="utf-8") if target.exists() else None
    if text == old:
        return False
    if text is None:
        target.unlink()
        return True
    temporary = memory_dir / f".{OWN_FILE}.tmp"
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, target)
    return True


def sync_folder(server: Server | None, memory_dir: Path, state_dir: Path) -> SyncReport:
    """Sync one memory folder; ``server`` None is a dry run (read and count, change nothing)."""
    report = SyncReport(folders=1)
    project = folder_project(memory_dir)
    state = FolderState(state_dir, memory_dir)
    present: set[str] = set()
    for path in sorted(memory_dir.glob("*.md")):
        if path.name in (INDEX_FILE, OWN_FILE) or not regular_file(path):
            continue
        report.files += 1
        present.add(path.name)
        try:
            memory = read_memory_file(path)
        except BadFile as exc:
            report.bad_files.append({"file": str(path), "reason": str(exc)})
            continue
        if server is None:
            report.counts["would_import" if path.name not in state.files else "unchanged"] += 1
            continue
        try:
            _sync_file(server, memory, project, state, report)
        except (BadInput, TooLarge) as exc:  # the gate refused it: reported, the rest goes on
            report.bad_files.append({"file": str(path), "reason": exc.message})
            continue
        state.save()
    if server is None:
        return report
    for name in sorted(set(state.files) - present):  # Claude Code deleted the file
        gone = state.files.pop(name)
        memory_id = gone.get("memory_id") if gone.get("ours", True) else None
        if memory_id and _current(server, memory_id) is not None:
            server.request("DELETE", "/api/v1/memories", json={"memory_ids": [memory_id]})
            report.counts["deleted"] += 1
        state.save()
    imported = {
        entry["memory_id"]: entry.get("text") for entry in state.files.values() if entry.get("memory_id")
    }
    own = [
        row
        for row in project_memories(server, project)
        if (str(row.get("id")) not in imported or _content(row) != imported[str(row.get("id"))])
        and (row.get("metadata_") or {}).get("source") not in TURN_SOURCES
    ]
    report.counts["own_memories"] += len(own)
    if _write_own(memory_dir, render_own_file(project, own) if own else None):
        report.counts["own_written"] += 1
    return report


def _sync_file(
    server: Server, memory: MemoryFile, project: str, state: FolderState, report: SyncReport
) -> None:
    entry = state.files.get(memory.path.name)
    text = memory.text()
    ours = True
    if entry is None:
        memory_id, text, ours = _add(server, memory, project)
        report.counts["imported" if ours else "already_stored"] += 1
    elif entry.get("digest") == memory.digest:
        report.counts[
            "unchanged" if entry.get("memory_id") and _exists(server, entry) else "kept_deleted"
        ] += 1
        return
    elif (
        entry.get("memory_id")
        and entry.get("ours", True)
        and _current(server, entry["memory_id"]) is not None
    ):
        memory_id = entry["memory_id"]
        answer = server.request("PUT", f"/api/v1/memories/{memory_id}", json={"memory_content": text})
        text = _content(answer) if isinstance(answer, dict) and _content(answer) else text
        report.counts["updated"] += 1  # the file changed since the last sync: the file wins
    else:
        memory_id, text, ours = _add(server, memory, project)
        report.counts["imported" if ours else "already_stored"] += 1
    state.files[memory.path.name] = {
        "digest": memory.digest,
        "memory_id": memory_id,
        "text": text,
        "ours": ours,
    }


def _exists(server: Server, entry: dict[str, Any]) -> bool:
    return _current(server, str(entry["memory_id"])) is not None


def sync_all(server: Server | None, root: Path, state_dir: Path, project: str | None = None) -> SyncReport:
    """Sync every memory folder under ``root``; a folder that fails is reported, the rest go on."""
    total = SyncReport()
    for memory_dir in memory_folders(root, project):
        try:
            total.add(sync_folder(server, memory_dir, state_dir))
        except (OSError, MemoryStackError) as exc:
            reason = exc.message if isinstance(exc, MemoryStackError) else str(exc)
            total.bad_files.append({"file": str(memory_dir), "reason": reason})
    return total
