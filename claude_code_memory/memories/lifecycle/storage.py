"""Where the bytes are: each store's files, each user's memories and quota, growth per day.

    Storage.report(user_id=None, days=30) -> dict      GET /api/v1/storage, the UI, ccmem doctor
    store_bytes(settings, database) -> [stores]         the files alone (doctor, without a server)
    Storage.quota_warning(user_id) -> dict | None      once a user nears the quota (writes say so)

``user_id`` None is every user (the admin's view); with one, the user rows and the growth are
that user's. Bytes of files are what they take on the disk (allocated blocks); a user's bytes
are the length of their memories' text, what the quota counts.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import case, func, select, text

from ...config import Settings
from ...db.database import Database
from ...db.models import Memory, User, utcnow
from ...domain.memory_state import MemoryState
from ...store.owners import Owners
from ..read_model.shapes import iso
from ..write.usage import Usage
from ..write.writes import Writes
from .reclaim import Reclaim, disk_bytes

KEPT_STATES = (MemoryState.active, MemoryState.paused, MemoryState.archived)


def _sqlite_path(database: Database) -> Path | None:
    if database.engine.dialect.name != "sqlite":
        return None
    name = database.engine.url.database
    return Path(name) if name and name != ":memory:" else None


def _entry(name: str, what: str, path: Path | None, size: int | None) -> dict[str, Any]:
    return {"store": name, "what": what, "path": str(path) if path else None, "bytes": size}


def store_bytes(settings: Settings, database: Database | None = None) -> list[dict[str, Any]]:
    """Bytes on the disk per store under the data directory, and the database's when it is
    PostgreSQL (``pg_database_size``; needs ``database``)."""
    data = settings.data_path
    sql = (
        Path(settings.database_url.removeprefix("sqlite:///"))
        if settings.database_url.startswith("sqlite")
        else None
    )
    history = data / "mem0" / "history.db"
    logs = settings.state_path / "logs"
    vectors = data / "vectors"
    wal = vectors / settings.storage.collection_name / "wal"
    entries = []
    if sql is not None:
        entries += [
            _entry("sql", "metadata database (memories' text, provenance)", sql, disk_bytes(sql)),
            _entry("sql_wal", "its write-ahead log", sql, _logs(sql)),
        ]
    elif database is not None:
        with database.engine.connect() as connection:
            size = connection.execute(text("SELECT pg_database_size(current_database())")).scalar()
        entries.append(_entry("sql", "PostgreSQL database (pg_database_size)", None, int(size or 0)))
    if not settings.storage.qdrant_url:
        entries += [
            _entry(
                "vectors",
                "vector store segments (Qdrant Edge)",
                vectors,
                disk_bytes(vectors) - disk_bytes(wal),
            ),
            _entry("vectors_wal", "vector store write-ahead log", wal, disk_bytes(wal)),
        ]
    entries += [
        _entry("history", "mem0 history (memories' text, purged on delete)", history, disk_bytes(history)),
        _entry("history_wal", "its write-ahead log", history, _logs(history)),
        # Where `ccmem stack` writes them: under server.state_dir when that is set, else data/.
        _entry("logs", "service logs (ccmem stack)", logs, disk_bytes(logs)),
    ]
    counted = sum(e["bytes"] for e in entries if e["path"] and str(e["path"]).startswith(str(data)))
    entries.append(
        _entry("other", "everything else in the data directory", data, max(0, disk_bytes(data) - counted))
    )
    return entries


def _logs(path: Path) -> int:
    return disk_bytes(Path(f"{path}-wal")) + disk_bytes(Path(f"{path}-shm"))


def quota_state(used: int, quota: int, ratio: float) -> dict[str, Any]:
    """A user's use of the quota, and a warning from ``ratio`` of it on."""
    share = used / quota if quota else 0.0
    state: dict[str, Any] = {
        "used_bytes": used,
        "quota_bytes": quota,
        "used_ratio": round(share, 4),
        "warning": None,
    }
    if share >= ratio:
        state["warning"] = (
            f"{share:.0%} of the memory quota used ({used:,} of {quota:,} bytes): writes are refused "
            "past 100%; delete memories or raise performance.max_memory_size_mb"
        )
    return state


def _day(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


class Storage:
    """Where a server's bytes are and how near each user is to the quota."""

    def __init__(
        self,
        database: Database,
        settings: Settings,
        owners: Owners,
        usage: Usage,
        writes: Writes,
        reclaim: Reclaim,
    ) -> None:
        self.database = database
        self.settings = settings
        self.owners = owners
        self.usage = usage
        self.writes = writes
        self.reclaim = reclaim

    def quota_bytes(self) -> int:
        return int(self.writes.policy.quota_bytes)

    def quota_warning(self, user_id: str, user_pk: uuid.UUID | None = None) -> dict[str, Any] | None:
        """The user's quota state when it is at ``performance.quota_warning_ratio`` or over, else
        None. Cheap: the usage is counted once, then kept up to date in process; with the user's
        key (``user_pk``, a row just written has it) and the count kept, no query at all."""
        used = self.usage.known(user_pk) if user_pk is not None else None
        if used is None:
            with self.database.session() as session:
                user = self.owners.find_user(session, user_id)
                used = self.usage.used(session, user.id)
        state = quota_state(used, self.quota_bytes(), self.settings.performance.quota_warning_ratio)
        return state if state["warning"] else None

    def _users(self, user_pk: Any | None) -> list[dict[str, Any]]:
        kept = Memory.state.in_(KEPT_STATES)
        query = (
            select(
                User.user_id,
                func.count(Memory.id).filter(kept),
                func.count(Memory.id).filter(Memory.state == MemoryState.pending),
                func.count(Memory.id).filter(Memory.state == MemoryState.deleted),
                func.coalesce(
                    func.sum(
                        case((Memory.state != MemoryState.deleted, func.length(Memory.content)), else_=0)
                    ),
                    0,
                ),
            )
            .outerjoin(Memory, Memory.user_id == User.id)
            .group_by(User.id, User.user_id)
            .order_by(User.user_id)
        )
        if user_pk is not None:
            query = query.where(User.id == user_pk)
        quota, ratio = self.quota_bytes(), self.settings.performance.quota_warning_ratio
        with self.database.session() as session:
            rows = session.execute(query).all()
        return [
            {
                "user_id": uid,
                "memories": int(kept_count),
                "pending": int(pending),
                "tombstones": int(deleted),
                "text_bytes": int(used or 0),
                **quota_state(int(used or 0), quota, ratio),
            }
            for uid, kept_count, pending, deleted, used in rows
        ]

    def _growth(self, user_pk: Any | None, days: int) -> list[dict[str, Any]]:
        """Per day over the last ``days``: memories created (any state but deleted), their text
        bytes, and the running total of memories created up to that day."""
        start = (utcnow() - timedelta(days=days - 1)).date()
        since = datetime.combine(start, datetime.min.time())
        where = [Memory.state != MemoryState.deleted]
        if user_pk is not None:
            where.append(Memory.user_id == user_pk)
        with self.database.session() as session:
            before = session.scalar(
                select(func.count()).select_from(Memory).where(*where, Memory.created_at < since)
            )
            per_day: dict[date, tuple[int, int]] = {}
            for day, count, size in session.execute(
                select(
                    func.date(Memory.created_at),
                    func.count(),
                    func.coalesce(func.sum(func.length(Memory.content)), 0),
                )
                .where(*where, Memory.created_at >= since)
                .group_by(func.date(Memory.created_at))
            ):
                count_so_far, size_so_far = per_day.get(_day(day), (0, 0))
                per_day[_day(day)] = (count_so_far + int(count), size_so_far + int(size or 0))
        total = int(before or 0)
        series = []
        for offset in range(days):
            day = start + timedelta(days=offset)
            count, size = per_day.get(day, (0, 0))
            total += count
            series.append({"date": day.isoformat(), "created": count, "text_bytes": size, "total": total})
        return series

    def report(self, user_id: str | None = None, days: int = 30) -> dict[str, Any]:
        """The storage view: every store's bytes on disk, the users' memories and quota (one user,
        or all), memories created per day, and the last reclaim."""
        user_pk = None
        if user_id is not None:
            with self.database.session() as session:
                user_pk = self.owners.find_user(session, user_id).id
        stores = store_bytes(self.settings, self.database)
        return {
            "scope": user_id or "all users",
            "stores": stores,
            "total_bytes": sum(e["bytes"] or 0 for e in stores),
            "users": self._users(user_pk),
            "quota_warning_ratio": self.settings.performance.quota_warning_ratio,
            "growth": self._growth(user_pk, days),
            "last_reclaim": self.reclaim.last_report,
            "generated_at": iso(utcnow()),
        }
