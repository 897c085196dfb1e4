"""An OpenMemory database read on the user's machine, for ``ccmem import openmemory``.

OpenMemory (mem0's, deprecated and removed upstream) kept its data in SQLite through
SQLAlchemy: tables ``users``, ``apps``, ``memories``, ``categories``, ``memory_categories``,
``memory_access_logs`` and ``memory_status_history`` (its ``api/app/models.py``, last at mem0
commit 540d23d). SQLAlchemy wrote UUIDs as 32 hex digits, the state enum by name and
date-times as naive UTC text; this reads any of the forms those take.

Pure standard library (``sqlite3``), read-only: the file is never written. Deleted memories are
counted and left out (OpenMemory kept their text; we do not bring it over). What comes out is
JSON-ready rows for ``POST /api/v1/import/openmemory`` (``memories/portability/openmemory_import.py``).

A row that cannot be brought over (text that is not valid UTF-8, a state OpenMemory never had,
empty content, an id that is not a UUID) is left out and reported in
:attr:`OpenMemoryData.bad_rows` with its id and why; the rows around it are read as usual.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import BadInput

#: The columns the import needs, per table (OpenMemory's models have a few more).
REQUIRED = {
    "users": ("id", "user_id"),
    "apps": ("id", "owner_id", "name", "is_active"),
    "memories": ("id", "user_id", "app_id", "content", "metadata", "state", "created_at", "updated_at"),
}
STATES = ("active", "paused", "archived", "deleted")
#: Access-log rows kept per memory (the newest): every search logged each hit it returned.
MAX_ACCESS_LOGS = 1000
#: A batch stays under this many bytes of JSON (the server's body cap defaults to 2 MB).
BATCH_BYTES = 1_000_000
BATCH_MEMORIES = 100


@dataclass
class OpenMemoryData:
    """What an OpenMemory database holds, as the import sends it."""

    path: Path
    #: Every OpenMemory user's ``user_id`` (their name), with how many memories each has.
    users: Counter[str] = field(default_factory=Counter)
    #: Memories read, per state (deleted included).
    read_by_state: Counter[str] = field(default_factory=Counter)
    #: The memories to import (not deleted): JSON-ready rows, ``user_id`` not yet mapped.
    memories: list[dict[str, Any]] = field(default_factory=list)
    access_logs_dropped: int = 0
    #: State changes left out: a state OpenMemory never had.
    status_history_dropped: int = 0
    #: Memory rows left out, each ``{"openmemory_id", "reason"}``.
    bad_rows: list[dict[str, str]] = field(default_factory=list)
    #: Memory rows read, bad ones included.
    read: int = 0


class BadRow(ValueError):
    """A memory row the import cannot bring over; the message says why."""


class Undecodable(str):
    """Text SQLite holds that is not valid UTF-8, as read with replacement characters: kept
    apart so that the row holding it is reported instead of imported altered."""


def _decode(raw: bytes) -> str:
    """SQLite's text as ``str`` (the connection's ``text_factory``): a value that is not valid
    UTF-8 no longer stops the whole read, it is marked (:class:`Undecodable`)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return Undecodable(raw.decode("utf-8", "replace"))


def _key(value: Any) -> str | None:
    """A UUID column's value in one form, whatever SQLAlchemy wrote (hex, dashed, 16 bytes)."""
    if value is None:
        return None
    try:
        if isinstance(value, bytes) and len(value) == 16:
            return uuid.UUID(bytes=value).hex
        return uuid.UUID(str(value)).hex
    except ValueError:
        return str(value)


def _time(value: Any) -> str | None:
    """A DateTime column as naive-UTC ISO 8601 text (an aware one is converted)."""
    if value is None or value == "":
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat()


def _json_object(value: Any) -> dict[str, Any]:
    if isinstance(value, str) and value:
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _state(value: Any) -> str:
    name = str(value or "active").rsplit(".", 1)[-1].lower()  # "active" or "MemoryState.active"
    if isinstance(value, Undecodable) or name not in STATES:
        raise BadRow(f"unknown state {str(value)!r}; expected one of {', '.join(STATES)}")
    return name


def _content(value: Any) -> str:
    """A memory's text, or :class:`BadRow` saying why there is none to bring over."""
    if isinstance(value, bytes):  # stored as a BLOB
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRow("content is not valid UTF-8 text") from None
    if isinstance(value, Undecodable):
        raise BadRow("content is not valid UTF-8 text")
    if not isinstance(value, str):
        raise BadRow(f"content is not text ({type(value).__name__})")
    if not value.strip():
        raise BadRow("empty content")
    return value


def _memory_id(key: str) -> str:
    """The id the import keys a memory by (a UUID with dashes), or :class:`BadRow`."""
    try:
        return str(uuid.UUID(key))
    except ValueError:
        raise BadRow(f"id {key!r} is not a UUID") from None


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')}


def _open(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise BadInput(f"{path} is not a file: give the OpenMemory database (openmemory.db)")
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        connection.execute("SELECT 1 FROM sqlite_master LIMIT 1")
    except sqlite3.DatabaseError as exc:
        raise BadInput(f"{path} is not a SQLite database ({exc})") from None
    for table, needed in REQUIRED.items():
        present = _columns(connection, table)
        missing = [column for column in needed if column not in present]
        if missing:
            connection.close()
            what = f"table {table!r} lacks {', '.join(missing)}" if present else f"it has no {table!r} table"
            raise BadInput(f"{path} is not an OpenMemory database: {what}")
    return connection


def read_openmemory(path: Path) -> OpenMemoryData:
    """Everything the import brings over from the OpenMemory database at ``path``."""
    data = OpenMemoryData(path=path)
    connection = _open(path)
    try:
        connection.row_factory = sqlite3.Row
        connection.text_factory = _decode
        users = {_key(r["id"]): r["user_id"] for r in connection.execute("SELECT id, user_id FROM users")}
        app_columns = _columns(connection, "apps")
        apps = {
            _key(r["id"]): {
                "name": r["name"],
                "is_active": r["is_active"] is None or bool(r["is_active"]),
                "description": r["description"] if "description" in app_columns else None,
                "created_at": _time(r["created_at"]) if "created_at" in app_columns else None,
            }
            for r in connection.execute("SELECT * FROM apps")
        }
        categories = _categories(connection)
        logs = _access_logs(connection, apps)
        history = _status_history(connection, data)
        has_archived_at = "archived_at" in _columns(connection, "memories")
        for row in connection.execute("SELECT * FROM memories ORDER BY created_at, id"):
            data.read += 1
            memory_id = _key(row["id"]) or ""
            try:
                state = _state(row["state"])
            except BadRow as bad:
                data.bad_rows.append({"openmemory_id": _shown_id(memory_id), "reason": str(bad)})
                continue
            data.read_by_state[state] += 1
            owner = users.get(_key(row["user_id"])) or str(row["user_id"])
            data.users[owner] += 1
            if state == "deleted":
                continue
            app = apps.get(_key(row["app_id"])) or {"name": "openmemory", "is_active": True}
            try:
                openmemory_id = _memory_id(memory_id)
            except BadRow as bad:
                data.bad_rows.append({"openmemory_id": memory_id, "reason": str(bad)})
                continue
            try:
                content = _content(row["content"])
                if isinstance(row["metadata"], Undecodable):
                    raise BadRow("metadata is not valid UTF-8 text")
                if isinstance(owner, Undecodable) or isinstance(app["name"], Undecodable):
                    raise BadRow("its user's or app's name is not valid UTF-8 text")
            except BadRow as bad:
                data.bad_rows.append({"openmemory_id": openmemory_id, "reason": str(bad)})
                continue
            memory_logs = logs.get(memory_id, [])
            if len(memory_logs) > MAX_ACCESS_LOGS:
                data.access_logs_dropped += len(memory_logs) - MAX_ACCESS_LOGS
                memory_logs = memory_logs[-MAX_ACCESS_LOGS:]
            memory = {
                "openmemory_id": openmemory_id,
                "openmemory_user": owner,
                "user_id": None,
                "app": app,
                "content": content,
                "metadata": _json_object(row["metadata"]),
                "state": state,
                "created_at": _time(row["created_at"]),
                "updated_at": _time(row["updated_at"]),
                "archived_at": _time(row["archived_at"]) if has_archived_at else None,
                "categories": categories.get(memory_id, []),
                "access_logs": memory_logs,
                "status_history": history.get(memory_id, []),
            }
            try:
                json.dumps(memory, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate, from a JSON escape in the metadata
                data.bad_rows.append(
                    {"openmemory_id": openmemory_id, "reason": "holds text that is not valid Unicode"}
                )
                continue
            data.memories.append(memory)
    except sqlite3.DatabaseError as exc:
        raise BadInput(f"{path} cannot be read as an OpenMemory database: {exc}") from None
    finally:
        connection.close()
    return data


def _tables(connection: sqlite3.Connection) -> set[str]:
    return {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _categories(connection: sqlite3.Connection) -> dict[str, list[str]]:
    if not {"categories", "memory_categories"} <= _tables(connection):
        return {}
    names = {_key(r[0]): r[1] for r in connection.execute("SELECT id, name FROM categories")}
    found: dict[str, list[str]] = {}
    for memory_id, category_id in connection.execute("SELECT memory_id, category_id FROM memory_categories"):
        name = names.get(_key(category_id))
        if name and not isinstance(name, Undecodable):
            found.setdefault(_key(memory_id) or "", []).append(name)
    return {key: sorted(set(value)) for key, value in found.items()}


def _access_logs(
    connection: sqlite3.Connection, apps: Mapping[str | None, dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    if "memory_access_logs" not in _tables(connection):
        return {}
    found: dict[str, list[dict[str, Any]]] = {}
    query = (
        "SELECT memory_id, app_id, accessed_at, access_type, metadata FROM memory_access_logs"
        " ORDER BY accessed_at"
    )
    for memory_id, app_id, accessed_at, access_type, metadata in connection.execute(query):
        app = apps.get(_key(app_id))
        found.setdefault(_key(memory_id) or "", []).append(
            {
                "app": app["name"] if app else "openmemory",
                "accessed_at": _time(accessed_at),
                "access_type": str(access_type or "access")[:32],
                "metadata": {} if isinstance(metadata, Undecodable) else _json_object(metadata),
            }
        )
    return found


def _status_history(connection: sqlite3.Connection, data: OpenMemoryData) -> dict[str, list[dict[str, Any]]]:
    """Each memory's state changes, oldest first; one naming a state OpenMemory never had is
    left out (and counted in ``data.status_history_dropped``)."""
    if "memory_status_history" not in _tables(connection):
        return {}
    found: dict[str, list[dict[str, Any]]] = {}
    query = (
        "SELECT memory_id, old_state, new_state, changed_at FROM memory_status_history ORDER BY changed_at"
    )
    for memory_id, old_state, new_state, changed_at in connection.execute(query):
        try:
            change = {"old_state": _state(old_state), "new_state": _state(new_state)}
        except BadRow:
            data.status_history_dropped += 1
            continue
        found.setdefault(_key(memory_id) or "", []).append(change | {"changed_at": _time(changed_at)})
    return found


def _shown_id(key: str) -> str:
    """A row's id as a report names it: with dashes when it is a UUID, else as stored."""
    try:
        return str(uuid.UUID(key))
    except ValueError:
        return key


def map_users(
    data: OpenMemoryData, user_map: Mapping[str, str], default: str | None, keep_user_ids: bool
) -> dict[str, str | None]:
    """Each OpenMemory user's local user: ``user_map`` first, then (``keep_user_ids``) the same
    name, else ``default`` (None: the token's own user, as the server decides)."""
    unknown = sorted(set(user_map) - set(data.users))
    if unknown:
        known = ", ".join(sorted(data.users)) or "none"
        raise BadInput(
            f"--user-map names {', '.join(unknown)}, not users of this database (its users: {known})"
        )
    return {
        theirs: user_map.get(theirs, theirs if keep_user_ids else default) for theirs in sorted(data.users)
    }


def batches(
    memories: list[dict[str, Any]], targets: Mapping[str, str | None]
) -> Iterator[list[dict[str, Any]]]:
    """The memories with their local user, in request-sized batches."""
    batch: list[dict[str, Any]] = []
    size = 0
    for memory in memories:
        row = {**memory, "user_id": targets.get(memory["openmemory_user"])}
        row_size = len(json.dumps(row, ensure_ascii=False).encode("utf-8"))
        if batch and (size + row_size > BATCH_BYTES or len(batch) >= BATCH_MEMORIES):
            yield batch
            batch, size = [], 0
        batch.append(row)
        size += row_size
    if batch:
        yield batch
