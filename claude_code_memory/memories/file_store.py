"""One user's memory-tool files in our store: the :class:`~.memory_files.FileStore` the
commands run over. A file is a memory row with a ``path``; writes go through ``writes.py``
(the policy gate), deletes through ``states.py`` (tombstones, vectors and text gone)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from ..config import MemoryToolSettings
from ..db.database import Database
from ..db.models import Memory, MemoryState, User
from .memory_files import Stored, StoredFile
from .states import States
from .writes import Writes

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
        rows = self._select(Memory.path == path)
        return rows[0] if rows else None

    def files_under(self, directory: str) -> list[StoredFile]:
        return self._select(Memory.path.startswith(directory.rstrip("/") + "/", autoescape=True))

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

    def delete(self, files: Sequence[StoredFile]) -> None:
        self.states.delete_memories(
            [file.id for file in files], user_id=self.user_id, changed_by=self.user_id, app_name=None
        )

    def move(self, moves: Sequence[tuple[StoredFile, str]]) -> None:
        self.writes.move_files(user_id=self.user_id, moves=[(file.id, path) for file, path in moves])

    def _select(self, condition: object) -> list[StoredFile]:
        with self.database.session() as session:
            rows = session.execute(
                select(Memory.id, Memory.path, Memory.content)
                .join(User, Memory.user_id == User.id)
                .where(
                    User.user_id == self.user_id,
                    Memory.path.is_not(None),
                    Memory.state != MemoryState.deleted,
                    condition,  # type: ignore[arg-type]
                )
                .order_by(Memory.path)
            ).all()
        return [StoredFile(str(memory_id), path or "", content) for memory_id, path, content in rows]
