"""One user's memory-tool files in our store: the :class:`~.commands.FileStore` the
commands run over. A file is a memory row with a ``path``; writes go through ``writes.py``
(the policy gate), deletes through ``states.py`` (tombstones, vectors and text gone)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, LargeBinary, and_, cast, func, select

from ...config import MemoryToolSettings
from ...db.database import Database
from ...db.models import Memory, User
from ...domain.memory_state import MemoryState
from ..lifecycle.states import States
from ..write.writes import Writes
from .commands import FileEntry, Stored, StoredFile

#: Provenance ``channel`` of what the memory tool writes.
CHANNEL = "memory_tool"


class SqlFileStore:
    """The files of ``user_id``; new ones are recorded as written by ``app_name``."""

    def __init__(
        self,
        database: Database,
        writes: Writes,
        states: States,
        limits: MemoryToolSettings,
        *,
        user_id: str,
        app_name: str,
    ) -> None:
        self.database = database
        self.writes = writes
        self.states = states
        self.limits = limits
        self.user_id = user_id
        self.app_name = app_name

    def get(self, path: str) -> StoredFile | None:
        with self.database.session() as session:
            row = session.execute(
                select(Memory.id, Memory.content).join(User).where(self._mine(), Memory.path == path)
            ).first()
        return StoredFile(str(row[0]), path, row[1]) if row is not None else None

    def files_under(self, directory: str) -> list[FileEntry]:
        """Sizes come from the database: a listing never reads the files' texts."""
        below = Memory.path.startswith(directory.rstrip("/") + "/", autoescape=True)
        with self.database.session() as session:
            size = (
                func.octet_length(Memory.content)
                if session.get_bind().dialect.name == "postgresql"
                else func.length(cast(Memory.content, LargeBinary))  # SQLite: the UTF-8 bytes
            )
            rows = session.execute(
                select(Memory.id, Memory.path, size)
                .join(User)
                .where(self._mine(), below)
                .order_by(Memory.path)
            ).all()
        return [FileEntry(str(memory_id), path or "", int(length or 0)) for memory_id, path, length in rows]

    def create(self, path: str, text: str) -> Stored:
        _, admitted = self.writes.add_file(
            user_id=self.user_id,
            app_name=self.app_name,
            path=path,
            text=text,
            max_files=self.limits.max_files,
            channel=CHANNEL,
        )
        return Stored(admitted.text, admitted.redactions)

    def rewrite(self, file: StoredFile, text: str) -> Stored:
        _, admitted = self.writes.rewrite(self.user_id, file.id, text, channel=CHANNEL)
        return Stored(admitted.text, admitted.redactions)

    def delete(self, files: Sequence[FileEntry | StoredFile]) -> None:
        self.states.delete_memories(
            [file.id for file in files], user_id=self.user_id, changed_by=self.user_id, app_name=self.app_name
        )

    def move(self, moves: Sequence[tuple[FileEntry | StoredFile, str]]) -> None:
        self.writes.move_files(user_id=self.user_id, moves=[(file.id, path) for file, path in moves])

    def _mine(self) -> ColumnElement[bool]:
        """The user's files that exist: a path, and not deleted (deleted rows keep no path)."""
        return and_(
            User.user_id == self.user_id, Memory.path.is_not(None), Memory.state != MemoryState.deleted
        )
