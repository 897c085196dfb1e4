"""Backup: export a user's memories as a zip, import such a zip.

The archive is OpenMemory's: ``memories.json`` (the SQL rows: user, apps, categories, memories
with ``category_ids``, memory_categories, status_history, access_controls, export_meta) and
``memories.jsonl.gz`` (one provider-neutral line per memory). Deleted memories are left out.
Vectors are not exported: an import re-embeds, so an archive restores into any embedder.

Import differs from OpenMemory on purpose:

* the archive is checked whole before anything is written (not a zip, a missing file, bad
  JSON, a bad field → BadInput naming it);
* every memory goes through ``Writes.add_memory`` like any other write, into the app it
  came from (OpenMemory re-homed everything to "openmemory"); its categories are computed
  afresh, its state (paused, archived) and creation time are kept;
* ``mode`` "skip" leaves a memory out when the user already has it (same id, or the same text up
  to case and whitespace); "overwrite" (the REST default, as in OpenMemory) replaces that
  memory's text and state with the archive's.
"""

from __future__ import annotations

import gzip
import io
import json
import uuid
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from ...config import Settings
from ...db.batches import slices
from ...db.database import Database
from ...db.models import App, Memory, MemoryCategory, MemoryStatusHistory, User, utcnow
from ...domain.memory_state import MemoryState
from ...errors import BadInput, Forbidden, MemoryStackError, NotFound, TooLarge
from ...policy.gate import content_hash
from ...policy.memory_paths import ROOT, memory_path
from ...store.owners import Owners
from ...store.values import DEFAULT_APP, validate_app_name, validate_text
from ..lifecycle.states import States
from ..read_model.shapes import iso
from ..write.writes import Writes

EXPORT_VERSION = "1"
SQL_MEMBER = "memories.json"
LINES_MEMBER = "memories.jsonl.gz"


def _naive_utc(epoch_seconds: int) -> datetime:
    return datetime.fromtimestamp(epoch_seconds, UTC).replace(tzinfo=None)


# -- export -----------------------------------------------------------------------------------
# -- reading an archive (pure: raises BadInput / TooLarge, writes nothing) -----------------------
@dataclass
class ImportRecord:
    content: str
    app_name: str
    state: MemoryState = MemoryState.active
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    original_id: uuid.UUID | None = None
    #: A memory-tool file's path (canonical), restored with the file.
    path: str | None = None


def _member(zf: zipfile.ZipFile, filename: str) -> zipfile.ZipInfo | None:
    # Archives re-zipped from a folder keep the members under a directory.
    for info in zf.infolist():
        if not info.is_dir() and info.filename.rsplit("/", 1)[-1] == filename:
            return info
    return None


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int) -> bytes:
    if info.file_size > max_bytes:
        raise TooLarge(f"{info.filename} unpacks to {info.file_size} bytes; the limit is {max_bytes}")
    with zf.open(info) as member:
        return member.read(max_bytes + 1)


def _gunzip(blob: bytes, max_bytes: int) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(blob), mode="rb") as gz:
            data = gz.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise BadInput(f"{LINES_MEMBER} is not valid gzip data: {exc}") from None
    if len(data) > max_bytes:
        raise TooLarge(f"{LINES_MEMBER} unpacks to more than {max_bytes} bytes")
    return data


def _parse_time(value: Any, where: str) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadInput(f"{where}: expected an ISO 8601 date-time string, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"{where}: {value!r} is not an ISO 8601 date-time") from None
    return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed


def _record(item: Any, where: str, app_name: Any) -> ImportRecord | None:
    """One memory from either member, checked; None for a deleted one (nothing to restore)."""
    if not isinstance(item, dict):
        raise BadInput(f"{where}: expected a JSON object")
    state_name = item.get("state") or MemoryState.active.value
    try:
        state = MemoryState(state_name)
    except ValueError:
        choices = ", ".join(s.value for s in MemoryState)
        raise BadInput(f"{where}.state: unknown state {state_name!r}; expected one of {choices}") from None
    if state == MemoryState.deleted:
        return None
    try:
        content = validate_text(item.get("content"), "content")
        app = validate_app_name(app_name if app_name is not None else DEFAULT_APP)
    except (BadInput, TooLarge) as exc:
        raise type(exc)(f"{where}: {exc.message}") from None
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise BadInput(f"{where}.metadata: expected a JSON object")
    original_id = None
    if item.get("id") is not None:
        try:
            original_id = uuid.UUID(str(item["id"]))
        except ValueError:
            raise BadInput(f"{where}.id: {item['id']!r} is not a UUID") from None
    path = item.get("path")
    if path is not None:
        try:
            canonical = memory_path(path)
        except BadInput as exc:
            raise BadInput(f"{where}.path: {exc.message}") from None
        if canonical != path or canonical == ROOT:
            raise BadInput(f"{where}.path: {path!r} is not a memory file's path (as an export writes it)")
    return ImportRecord(
        content=content,
        app_name=app,
        state=state,
        metadata=dict(metadata or {}),
        created_at=_parse_time(item.get("created_at"), f"{where}.created_at"),
        original_id=original_id,
        path=path,
    )


def _records_from_document(raw: bytes) -> list[ImportRecord]:
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"{SQL_MEMBER} is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise BadInput(f"{SQL_MEMBER}: the top level must be a JSON object")
    apps, memories = document.get("apps") or [], document.get("memories")
    if not isinstance(memories, list):
        raise BadInput(f"{SQL_MEMBER}: 'memories' must be a list")
    if not isinstance(apps, list) or not all(isinstance(a, dict) for a in apps):
        raise BadInput(f"{SQL_MEMBER}: 'apps' must be a list of objects")
    app_names = {str(a.get("id")): a.get("name") for a in apps}
    records = []
    for index, item in enumerate(memories):
        where = f"{SQL_MEMBER}: memories[{index}]"
        app_name = app_names.get(str(item.get("app_id"))) if isinstance(item, dict) else None
        record = _record(item, where, app_name)
        if record is not None:
            records.append(record)
    return records


def _records_from_lines(raw: bytes) -> list[ImportRecord]:
    records = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{LINES_MEMBER}: line {number}"
        try:
            item = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadInput(f"{where} is not valid JSON: {exc}") from None
        record = _record(item, where, item.get("app") if isinstance(item, dict) else None)
        if record is not None:
            records.append(record)
    return records


def read_archive(data: bytes, max_bytes: int) -> list[ImportRecord]:
    """The memories in an export zip, all checked; raises BadInput naming the first problem."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            document_info, lines_info = _member(zf, SQL_MEMBER), _member(zf, LINES_MEMBER)
            if document_info is None and lines_info is None:
                raise BadInput(
                    f"the archive has neither {SQL_MEMBER} nor {LINES_MEMBER}; is it a memories export?"
                )
            document = _read_member(zf, document_info, max_bytes) if document_info else None
            lines = _read_member(zf, lines_info, max_bytes) if lines_info else None
    except zipfile.BadZipFile:
        raise BadInput("the uploaded file is not a zip archive") from None
    except (zipfile.LargeZipFile, RuntimeError, NotImplementedError, EOFError, zlib.error, OSError) as exc:
        raise BadInput(f"the zip archive cannot be read: {exc}") from None
    # Both members are checked when both are there: a damaged half means a damaged archive.
    from_lines = _records_from_lines(_gunzip(lines, max_bytes)) if lines is not None else None
    if document is not None:
        return _records_from_document(document)
    assert from_lines is not None
    return from_lines


# -- import -----------------------------------------------------------------------------------
@dataclass
class ImportCounts:
    imported: int = 0
    skipped: int = 0
    overwritten: int = 0


#: Records embedded per batch during import (well under the embedder's cache size).
PRIME_CHUNK = 64


class Backup:
    """A user's export archive, and an archive imported through the write path."""

    def __init__(
        self, database: Database, settings: Settings, owners: Owners, writes: Writes, states: States
    ) -> None:
        self.database = database
        self.settings = settings
        self.owners = owners
        self.writes = writes
        self.states = states

    def build_export(
        self,
        user_id: str,
        *,
        app_id: str | None = None,
        from_date: int | None = None,
        to_date: int | None = None,
    ) -> tuple[dict[str, Any], bytes]:
        """The two archive members for one user: the SQL document and the gzipped JSON lines."""
        with self.database.session() as session:
            user = self.owners.find_user(session, user_id)
            # Pending captures are not memories until approved (and only their owner may read them).
            query = select(Memory).where(
                Memory.user_id == user.id, Memory.state.notin_([MemoryState.deleted, MemoryState.pending])
            )
            app_filter = None
            if app_id is not None:
                try:
                    app_filter = uuid.UUID(app_id)
                except ValueError:
                    raise BadInput(f"invalid app_id {app_id!r}: expected a UUID") from None
                app = session.get(App, app_filter)
                if app is None or app.owner_id != user.id:
                    raise NotFound(f"app {app_id} not found for user {user_id!r}")
                query = query.where(Memory.app_id == app_filter)
            if from_date is not None:
                query = query.where(Memory.created_at >= _naive_utc(from_date))
            if to_date is not None:
                query = query.where(Memory.created_at <= _naive_utc(to_date))
            memories = list(session.scalars(query.order_by(Memory.created_at, Memory.id)))
            memory_ids = [m.id for m in memories]

            app_ids = {m.app_id for m in memories}
            apps = (
                list(session.scalars(select(App).where(App.id.in_(app_ids)).order_by(App.name)))
                if app_ids
                else []
            )
            app_names = {a.id: a.name for a in apps}
            categories = sorted(
                {c.id: c for m in memories for c in m.categories}.values(), key=lambda c: c.name
            )
            # Every memory of the export: its ids a slice at a time (db/batches.py).
            links = [
                link
                for some in slices(memory_ids)
                for link in session.scalars(select(MemoryCategory).where(MemoryCategory.memory_id.in_(some)))
            ]
            history = sorted(
                (
                    change
                    for some in slices(memory_ids)
                    for change in session.scalars(
                        select(MemoryStatusHistory).where(MemoryStatusHistory.memory_id.in_(some))
                    )
                ),
                key=lambda change: change.changed_at,
            )

            document = {
                "user": {
                    "id": str(user.id),
                    "user_id": user.user_id,
                    "name": user.name,
                    "email": user.email,
                    "metadata": user.metadata_ or {},
                    "created_at": iso(user.created_at),
                    "updated_at": iso(user.updated_at),
                },
                "apps": [
                    {
                        "id": str(a.id),
                        "owner_id": str(a.owner_id),
                        "name": a.name,
                        "description": a.description,
                        "metadata": a.metadata_ or {},
                        "is_active": a.is_active,
                        "created_at": iso(a.created_at),
                        "updated_at": iso(a.updated_at),
                    }
                    for a in apps
                ],
                "categories": [
                    {
                        "id": str(c.id),
                        "name": c.name,
                        "description": c.description,
                        "created_at": iso(c.created_at),
                        "updated_at": iso(c.updated_at),
                    }
                    for c in categories
                ],
                "memories": [
                    {
                        "id": str(m.id),
                        "user_id": str(m.user_id),
                        "app_id": str(m.app_id),
                        "content": m.content,
                        "metadata": m.metadata_ or {},
                        "state": m.state.value,
                        "created_at": iso(m.created_at),
                        "updated_at": iso(m.updated_at),
                        "archived_at": iso(m.archived_at),
                        "deleted_at": iso(m.deleted_at),
                        "category_ids": [str(c.id) for c in m.categories],
                        **({"path": m.path} if m.path else {}),
                    }
                    for m in memories
                ],
                "memory_categories": [
                    {"memory_id": str(link.memory_id), "category_id": str(link.category_id)} for link in links
                ],
                "status_history": [
                    {
                        "id": str(h.id),
                        "memory_id": str(h.memory_id),
                        "changed_by": str(h.changed_by) if h.changed_by else None,
                        "old_state": h.old_state,
                        "new_state": h.new_state,
                        "changed_at": iso(h.changed_at),
                    }
                    for h in history
                ],
                # We keep no per-app ACL rows (OpenMemory never wrote any either).
                "access_controls": [],
                "export_meta": {
                    "version": EXPORT_VERSION,
                    "exported_at": iso(utcnow()),
                    "source": "claude-code-memory",
                    "app_id_filter": str(app_filter) if app_filter else None,
                    "from_date": from_date,
                    "to_date": to_date,
                },
            }

            lines = io.BytesIO()
            with gzip.GzipFile(fileobj=lines, mode="wb") as gz:
                for m in memories:
                    record = {
                        "id": str(m.id),
                        "content": m.content,
                        "metadata": m.metadata_ or {},
                        "created_at": iso(m.created_at),
                        "updated_at": iso(m.updated_at),
                        "state": m.state.value,
                        "app": app_names.get(m.app_id),
                        "categories": [c.name for c in m.categories],
                        **({"path": m.path} if m.path else {}),
                    }
                    gz.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        return document, lines.getvalue()

    def export_archive(
        self,
        user_id: str,
        *,
        app_id: str | None = None,
        from_date: int | None = None,
        to_date: int | None = None,
    ) -> bytes:
        """A zip of one user's memories: ``memories.json`` and ``memories.jsonl.gz``."""
        document, lines = self.build_export(user_id, app_id=app_id, from_date=from_date, to_date=to_date)
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(SQL_MEMBER, json.dumps(document, indent=2, ensure_ascii=False))
            zf.writestr(LINES_MEMBER, lines)
        return archive.getvalue()

    def _existing(self, user_id: str, record: ImportRecord) -> Memory | None:
        """The user's memory this record duplicates: the same id, else the same normalised text."""
        with self.database.session() as session:
            user = session.scalar(select(User).where(User.user_id == user_id))
            if user is None:
                return None
            alive = (Memory.user_id == user.id, Memory.state != MemoryState.deleted)
            if record.original_id is not None:
                same = session.scalar(select(Memory).where(Memory.id == record.original_id, *alive))
                if same is not None:
                    return same
            if record.path is not None:  # a file is its path
                return session.scalar(select(Memory).where(Memory.path == record.path, *alive))
            return session.scalar(
                select(Memory).where(Memory.content_hash == content_hash(record.content), *alive).limit(1)
            )

    def _refuse_paused_apps(self, user_id: str, records: list[ImportRecord]) -> None:
        """Fail before writing anything if a target app is paused (its adds would be refused)."""
        names = sorted({r.app_name for r in records})
        with self.database.session() as session:
            user = session.scalar(select(User).where(User.user_id == user_id))
            if user is None or not names:
                return
            paused = session.scalars(
                select(App.name).where(App.owner_id == user.id, App.name.in_(names), App.is_active.is_(False))
            ).all()
        if paused:
            raise Forbidden(
                f"app {', '.join(paused)} is paused for user {user_id!r}; resume it before importing"
            )

    def import_records(
        self,
        changed_by: str,
        user_id: str,
        records: list[ImportRecord],
        mode: str,
        counts: ImportCounts,
    ) -> None:
        """Write each record through the service, counting into ``counts`` as it goes."""
        for index, record in enumerate(records):
            if index % PRIME_CHUNK == 0:  # embed the next chunk in one batch (performance.batch_operations)
                self.writes.prime_embeddings(r.content for r in records[index : index + PRIME_CHUNK])
            existing = self._existing(user_id, record)
            if existing is not None:
                if mode == "skip":
                    counts.skipped += 1
                    continue
                if existing.content != record.content:
                    self.writes.update_memory(user_id, existing.id, record.content)
                if existing.state != record.state:
                    self.states.change_state(
                        [existing.id], record.state, user_id=user_id, changed_by=changed_by
                    )
                counts.imported += 1
                counts.overwritten += 1
                continue
            if record.path is not None:
                memory_id, _ = self.writes.add_file(
                    user_id=user_id,
                    app_name=record.app_name,
                    path=record.path,
                    text=record.content,
                    max_files=self.settings.memory_tool.max_files,
                    channel="import",
                )
                ids = [uuid.UUID(memory_id)]
            else:
                results = self.writes.add_memory(
                    user_id=user_id,
                    app_name=record.app_name,
                    text=record.content,
                    infer=False,
                    metadata=record.metadata,
                    channel="import",
                )
                ids = [uuid.UUID(r["id"]) for r in results if r.get("event") == "ADD"]
            if not ids:
                counts.skipped += 1
                continue
            if record.state != MemoryState.active:
                self.states.change_state(ids, record.state, user_id=user_id, changed_by=changed_by)
            if record.created_at is not None:
                self.writes.backdate(ids, record.created_at)
            counts.imported += 1

    def import_archive(
        self, user_id: str, data: bytes, *, mode: str, changed_by: str, max_bytes: int
    ) -> ImportCounts:
        """Restore an export zip into ``user_id``: ``mode`` "skip" keeps memories the user has,
        "overwrite" replaces them. The archive is checked whole before anything is written."""
        records = read_archive(data, max_bytes)
        self._refuse_paused_apps(user_id, records)
        counts = ImportCounts()
        try:
            self.import_records(changed_by, user_id, records, mode, counts)
        except MemoryStackError as exc:
            # Say how far it got: the memories before the failing one are in.
            done = counts.imported + counts.skipped
            raise type(exc)(
                f"{exc.message} (the import stopped after {done} of {len(records)} memories)"
            ) from None
        return counts
