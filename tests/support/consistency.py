"""A stopped server's data directory, read with the package's own classes: do SQL and the
vector store agree? (The embedded store locks its directory: the server must be stopped.)

    Stores(data_dir)                    SQL rows, vector points and mem0 history, opened offline
    Stores.check() -> Consistency       rows without points, points without live rows, ...
"""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

import claude_code_memory.engine  # noqa: F401 - first: it sets mem0's switches before mem0 loads
from claude_code_memory.config import Settings, load_settings
from claude_code_memory.db.database import Database
from claude_code_memory.db.models import Memory
from claude_code_memory.domain.memory_state import MemoryState
from claude_code_memory.engine.edge_store import QdrantEdgeStore

LIVE = {MemoryState.active, MemoryState.paused, MemoryState.archived}


def settings_for(data_dir: Path) -> Settings:
    return load_settings(config_path=None, environ={}, overrides={"server.data_dir": str(data_dir)})


@dataclass
class Consistency:
    rows: dict[str, str]
    points: set[str]
    #: Rows active, paused or archived without their vector: listed, invisible to meaning search.
    half_deleted: list[str] = field(default_factory=list)
    #: Points whose row is missing, deleted or pending: no delete or forget can reach them.
    orphans: list[str] = field(default_factory=list)

    @property
    def live(self) -> set[str]:
        return {memory_id for memory_id, state in self.rows.items() if state in {s.value for s in LIVE}}


class Stores:
    """The three stores of a data directory, opened by this process (close it before a start)."""

    def __init__(self, data_dir: Path, *, vectors: bool = True, database_url: str | None = None) -> None:
        """``vectors=False`` opens SQL alone, which a running server shares (its vector store
        is locked); ``database_url``: the server's PostgreSQL instead of the directory's SQLite."""
        self.settings = settings_for(data_dir)
        self.database = Database(database_url or self.settings.database_url)
        self._vectors = (
            QdrantEdgeStore(
                collection_name=self.settings.storage.collection_name,
                path=str(self.settings.data_path / "vectors"),
                embedding_model_dims=self.settings.embedder.dims,
            )
            if vectors
            else None
        )
        self.history_path = self.settings.data_path / "mem0" / "history.db"

    @property
    def vectors(self) -> QdrantEdgeStore:
        assert self._vectors is not None, "opened without the vector store"
        return self._vectors

    def rows(self) -> dict[str, str]:
        with self.database.session() as session:
            return {str(i): s.value for i, s in session.execute(select(Memory.id, Memory.state))}

    def check(self) -> Consistency:
        rows, points = self.rows(), set(self.vectors.ids())
        result = Consistency(rows=rows, points=points)
        result.half_deleted = sorted(result.live - points)
        result.orphans = sorted(points - result.live)
        return result

    def history_ids(self) -> set[str]:
        with sqlite3.connect(self.history_path) as connection:
            return {row[0] for row in connection.execute("SELECT DISTINCT memory_id FROM history")}

    def payload(self, memory_id: str) -> dict[str, Any] | None:
        point = self.vectors.get(memory_id)
        return dict(point.payload) if point is not None else None

    # -- planting inconsistencies, as a crash would leave them -------------------------------
    def drop_vector(self, memory_id: str) -> None:
        """A vector gone behind SQL's back (a delete killed after its vectors, before SQL)."""
        self.vectors.delete(memory_id)

    def plant_orphan(self, like: str) -> str:
        """A point with no SQL row (an ingest killed between the vector and the row): a copy of
        ``like``'s vector and payload under a new id."""
        source = self.vectors.require_shard().retrieve([like], True, True)[0]
        orphan = str(uuid.uuid4())
        self.vectors.insert([list(source.vector)], [dict(source.payload)], [orphan])  # type: ignore[arg-type]
        return orphan

    def tombstone_in_sql(self, memory_id: str) -> None:
        """A tombstone committed whose vector survived (a delete killed after SQL)."""
        with self.database.session() as session:
            session.execute(
                update(Memory)
                .where(Memory.id == uuid.UUID(memory_id))
                .values(state=MemoryState.deleted, content="", content_hash=None)
            )

    def close(self) -> None:
        if self._vectors is not None:
            self._vectors.close()
        self.database.close()

    def __enter__(self) -> Stores:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
