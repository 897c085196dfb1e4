"""Claude Code's auto-memory (``~/.claude/projects/<project>/memory/*.md``) kept in step with
the memory server, both ways, without ever writing Claude Code's own files.

Claude Code (2.1.x) keeps one fact per file, with YAML frontmatter (``name``, ``description``,
``metadata.type``: user, feedback, project or reference) and a Markdown body, and an index,
``MEMORY.md`` (one pointer line per memory, no content). :func:`sync_folder`:

* each of Claude Code's memory files becomes one memory of the folder's project (app
  ``claude-code``, metadata naming the file), through ``POST /api/v1/capture`` and so the
  policy gate with consent as for a captured turn (pending until approved while
  ``privacy.require_consent`` is on); an edited file comes in as a new capture that replaces
  its memory, a deleted file deletes it;
* every other memory of that project in the server (and an imported one edited in the server)
  is written to a file of ours beside Claude Code's, :data:`OWN_FILE`, so Claude Code's memory
  recall finds it. ``MEMORY.md`` and Claude Code's files are only read.

Conflicts (see docs/import.md): a file changed since the last sync wins over an edit of its
memory in the server; a memory deleted in the server stays deleted while its file is unchanged;
:data:`OWN_FILE` is the server's view and is rewritten on every sync.

State (which file became which memory, and the file's hash at that time) is one small JSON file
per memory folder, so a second run sends nothing. A file that cannot be read or parsed, or that
the gate refuses, is reported and skipped; it never stops the sync.

:func:`sync_session` is the same for the one folder of a session's working directory (run by
the SessionStart hooks in the background, under :func:`sync_lock`). A sync makes a folder only
to write a file into it, and removes a folder it made once it holds nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from ..capture.projects import session_project
from ..errors import BadInput, MemoryStackError, NotFound, TooLarge
from .claude_import import IMPORT_SOURCE, write_state
from .claude_transcripts import open_regular, real_folder, regular_file

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
            "pending",
            "filtered",
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
                        return session_project(entry["cwd"], str(transcript)) or memory_dir.parent.name
        except OSError:
            continue
    return memory_dir.parent.name


class FolderState:
    """Which of a folder's files became which memory, with the file's hash and the text sent."""

    def __init__(self, state_dir: Path, memory_dir: Path) -> None:
        digest = hashlib.sha256(str(memory_dir.resolve()).encode()).hexdigest()[:24]
        self.path = state_dir / "auto-memory" / f"{digest}.json"
        self.memory_dir = memory_dir
        #: The sync made the memory folder (to write :data:`OWN_FILE`): it removes it when empty.
        self.made_folder = False
        try:
            saved = json.loads(self.path.read_text())
            files = saved["files"]
            self.files: dict[str, dict[str, Any]] = files if isinstance(files, dict) else {}
            self.made_folder = saved.get("made_folder") is True
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.files = {}

    def save(self) -> None:
        saved = {"folder": str(self.memory_dir), "files": self.files, "made_folder": self.made_folder}
        write_state(self.path, json.dumps(saved, indent=1))


def _metadata(memory: MemoryFile) -> dict[str, Any]:
    return {"source": SOURCE, "file": str(memory.path), "name": memory.name, "type": memory.kind}


@dataclass(frozen=True)
class Captured:
    """What the gate made of a file: the memory's id (None: the capture filter dropped it), its
    text as stored (after redaction), how (``stored``, ``pending`` consent, ``duplicate``:
    the same text was stored already, a memory of the user's that the sync must never delete
    or rewrite; ``filtered``)."""

    memory_id: str | None
    text: str
    status: str

    @property
    def ours(self) -> bool:
        return self.memory_id is not None and self.status != "duplicate"


def _capture(server: Server, memory: MemoryFile, project: str) -> Captured:
    """The file's text into the write path on the ``capture`` channel: Claude Code wrote it
    unasked, so it waits for consent as a captured turn does."""
    body = {"text": memory.text(), "app": APP, "project": project, "metadata": _metadata(memory)}
    answer = server.request("POST", "/api/v1/capture", json=body)
    if not isinstance(answer, dict):
        return Captured(None, memory.text(), "filtered")
    memory_id = str(answer["id"]) if answer.get("id") else None
    return Captured(memory_id, str(answer.get("memory") or memory.text()), str(answer.get("status")))


def _current(server: Server, memory_id: str) -> dict[str, Any] | None:
    try:
        answer = server.request("GET", f"/api/v1/memories/{memory_id}")
    except NotFound:
        return None
    if not isinstance(answer, dict) or answer.get("state") not in ("active", "paused", "archived", "pending"):
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


def _write_own(memory_dir: Path, text: str | None, state: FolderState) -> bool:
    """Write (or, with ``text`` None, remove) :data:`OWN_FILE`; True when it changed. The
    folder is made only to write the file, and removed with it when the sync made it and
    nothing else is in it."""
    target = memory_dir / OWN_FILE
    old = target.read_text(encoding="utf-8") if target.exists() else None
    if text == old:
        return False
    if text is None:
        target.unlink()
        if state.made_folder and not any(memory_dir.iterdir()):
            memory_dir.rmdir()
            state.made_folder = False
            state.save()
        return True
    if not memory_dir.is_dir():
        memory_dir.mkdir(parents=True)
        state.made_folder = True
        state.save()
    temporary = memory_dir / f".{OWN_FILE}.tmp"
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, target)
    return True


def sync_folder(
    server: Server | None, memory_dir: Path, state_dir: Path, project: str | None = None
) -> SyncReport:
    """Sync one memory folder (it need not exist: then only the way out, when there is
    something to write); ``server`` None is a dry run (read and count, change nothing).
    ``project``: the folder's project (default: :func:`folder_project`)."""
    report = SyncReport(folders=1)
    project = project or folder_project(memory_dir)
    state = FolderState(state_dir, memory_dir)
    present: set[str] = set()
    approved: dict[str, str] | None = None  # read when a pending capture's id is gone
    for path in sorted(memory_dir.glob("*.md")) if memory_dir.is_dir() else []:
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
        entry = state.files.get(path.name)
        if entry is not None and entry.get("pending") and not _exists(server, entry):
            # Approval stores a pending item under a new id: the file's memory is found by its file.
            approved = approved if approved is not None else _approved_files(server, project)
            found = approved.get(str(path))
            entry["memory_id"], entry["pending"] = found or entry.get("memory_id"), False
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
    if _write_own(memory_dir, render_own_file(project, own) if own else None, state):
        report.counts["own_written"] += 1
    return report


def _sync_file(
    server: Server, memory: MemoryFile, project: str, state: FolderState, report: SyncReport
) -> None:
    entry = state.files.get(memory.path.name)
    if entry is not None and entry.get("digest") == memory.digest:
        report.counts[
            "unchanged" if entry.get("memory_id") and _exists(server, entry) else "kept_deleted"
        ] += 1
        return
    captured = _capture(server, memory, project)
    replaced = entry.get("memory_id") if entry is not None and entry.get("ours", True) else None
    if replaced and replaced == captured.memory_id:
        report.counts["unchanged"] += 1  # the file changed, its text did not
    elif replaced and _current(server, replaced) is not None:
        # The file changed since the last sync: the file wins, its new text through consent.
        server.request("DELETE", "/api/v1/memories", json={"memory_ids": [replaced]})
        report.counts["updated"] += 1
    elif captured.memory_id is None:
        report.counts["filtered"] += 1
    else:
        report.counts["imported" if captured.ours else "already_stored"] += 1
    if captured.status == "pending":
        report.counts["pending"] += 1
    state.files[memory.path.name] = {
        "digest": memory.digest,
        "memory_id": captured.memory_id,
        "text": captured.text,
        "ours": captured.ours or captured.memory_id == replaced,
        "pending": captured.status == "pending",
    }


def _approved_files(server: Server, project: str) -> dict[str, str]:
    """The project's memories that came from a memory file, by the file's path."""
    return {
        str(row["metadata_"]["file"]): str(row["id"])
        for row in project_memories(server, project)
        if isinstance(row.get("metadata_"), dict)
        and row["metadata_"].get("source") == SOURCE
        and row["metadata_"].get("file")
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


#: The lock file beside the sync's state: one sync at a time, whoever starts it.
LOCK_FILE = "sync.lock"


@contextmanager
def sync_lock(state_dir: Path) -> Iterator[bool]:
    """Hold the sync's lock while inside; yields False (holding nothing) when another sync
    holds it. Two sessions started together run one sync, and the other skips its turn: the
    next session start takes in whatever it missed. Where ``fcntl`` is missing (Windows) it
    yields True without a lock."""
    try:
        import fcntl
    except ImportError:
        yield True
        return
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(descriptor, "r+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_NOT_IN_A_FOLDER_NAME = re.compile(r"[^A-Za-z0-9]")


def session_folder(root: Path, cwd: str) -> Path:
    """The memory folder Claude Code keeps for a session in ``cwd``: under ``root``, the git
    work tree holding ``cwd`` (else ``cwd``) with every character but a letter or a digit made
    ``-``, then ``memory`` (the pinned CLI's ``init`` event names the same folder)."""
    path = Path(cwd)
    top = next((folder for folder in (path, *path.parents) if (folder / ".git").exists()), path)
    return root / _NOT_IN_A_FOLDER_NAME.sub("-", str(top)) / "memory"


def sync_session(server: Server, cwd: str, root: Path, state_dir: Path) -> SyncReport:
    """Sync the memory folder of a session in ``cwd``, its project named as the hooks name a
    session started where that folder's is (:func:`folder_project` names it the same)."""
    folder = session_folder(root, cwd)
    return sync_folder(server, folder, state_dir, session_project(cwd, str(folder)))
