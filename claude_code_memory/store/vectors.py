"""The service's only door to the engine's writes: :class:`Vectors` over mem0 and its store.

Every call that adds, changes or deletes a vector goes through here (``tests/test_gate.py``
checks it), and the two that store text accept only a write the policy gate admitted.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..domain.memory_state import MemoryState
from ..engine.filters import IN_OR_EMPTY, NOT_IDS
from ..errors import BadInput, NotFound
from ..policy.gate import Admitted
from .values import epoch_seconds

if TYPE_CHECKING:
    import numpy as np
    from mem0 import Memory
    from mem0.embeddings.base import EmbeddingBase
    from mem0.vector_stores.base import VectorStoreBase

    from ..engine.disk_space import DiskGuard

log = logging.getLogger(__name__)


def point_payload(
    *,
    app_name: str,
    app_id: str,
    state: MemoryState,
    channel: str | None,
    created_at: datetime,
    project: str | None = None,
    conversation_id: str | None = None,
    expires_at: datetime | None = None,
) -> dict[str, Any]:
    """The fields of a memory's vector payload that are ours (mem0 adds its own: the user id,
    role, hash and times). What searches filter on, and no more: the text and the caller's
    metadata live in the metadata database, which erases them on delete (edge_store.TEXT_FIELDS
    says why). ``created_at`` goes in as ``created_ts`` (epoch seconds, indexed) so date filters
    run inside the vector store. Written by :meth:`Vectors.add` and, for a point lost in a
    crash, by :meth:`Vectors.restore`."""
    payload: dict[str, Any] = {
        "source_app": "claude-code-memory",
        "mcp_client": app_name,
        "app_id": app_id,
        "state": state.value,
        "channel": channel,
        "created_ts": epoch_seconds(created_at),
    }
    if project:
        payload["project"] = project
    if conversation_id:
        payload["conversation_id"] = conversation_id
    if expires_at is not None:
        payload["expires_at"] = epoch_seconds(expires_at)
    return payload


class VectorEngine(Protocol):
    """What the service needs of :class:`claude_code_memory.engine.factory.Engine`: mem0's
    ``Memory`` (writes and its history database) and store helpers that work with the embedded
    store and a Qdrant server alike. Settings are not part of it: the service gets its own."""

    @property
    def memory(self) -> Memory: ...

    @property
    def embedder(self) -> EmbeddingBase: ...

    @property
    def store(self) -> VectorStoreBase: ...

    def server_errors(self) -> AbstractContextManager[None]: ...

    def embed(self, text: str) -> list[float]: ...

    def nearest(self, text: str, limit: int, filters: dict[str, Any]) -> list[tuple[str, float]]: ...

    def prepare_search(self) -> None: ...

    def set_payload(self, memory_id: str, fields: dict[str, Any]) -> None: ...

    def count(self, filters: dict[str, Any] | None = None) -> int: ...

    def point_ids(self, *, hex_form: bool = False) -> list[str]: ...

    def stored_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    @property
    def disk(self) -> DiskGuard: ...

    @property
    def embedded(self) -> bool: ...


class Vectors:
    """The service's only door to mem0: add, update, delete, search and embed.

    mem0 returns ``{"results": [...]}`` dicts and raises ``ValueError`` for ids it does not
    know; this turns those into plain lists and our typed errors, and reports a store that
    cannot serve as ``Unavailable``.
    """

    def __init__(self, engine: VectorEngine, *, has_llm: bool) -> None:
        self.engine = engine
        self.memory = engine.memory
        self.has_llm = has_llm

    def add(
        self, admitted: Admitted, *, app_id: str, infer: bool, created_at: datetime
    ) -> list[dict[str, Any]]:
        """Embed and store a write the policy gate admitted (nothing else is accepted).
        ``created_at`` (the SQL row's) goes into the payload as ``created_ts`` (epoch seconds,
        indexed) so date filters run inside the vector store."""
        if not isinstance(admitted, Admitted):
            raise TypeError("the engine stores only writes admitted by policy.gate.admit()")
        write = admitted.write
        payload = point_payload(
            app_name=write.app,
            app_id=app_id,
            state=MemoryState.active,
            channel=write.channel,
            created_at=created_at,
            project=write.project,
            conversation_id=write.conversation_id,
            expires_at=admitted.expires_at,
        )
        # Without an LLM, infer=True (OpenMemory's REST default) stores the text verbatim.
        try:
            with self.engine.server_errors():
                result = self.memory.add(
                    admitted.text, user_id=write.user_id, metadata=payload, infer=infer and self.has_llm
                )
        except ValueError as exc:
            raise BadInput(str(exc)) from exc
        return list(result.get("results", []))

    def add_many(
        self, writes: Sequence[tuple[str, Admitted, list[float], dict[str, Any]]], *, user_id: str
    ) -> None:
        """Store the points of several admitted writes in one upsert, and their mem0 ``ADD``
        history rows in one transaction: what :meth:`add` (mem0's ``Memory.add`` with
        ``infer=False``) stores for each, field for field. Each write is ``(id, admitted,
        vector, payload)``, the payload :func:`point_payload`'s. Points first, history after:
        a crash between them leaves points whose rows were never written, orphans the
        reconciler removes with their history."""
        for _, admitted, _, _ in writes:
            if not isinstance(admitted, Admitted):
                raise TypeError("the engine stores only writes admitted by policy.gate.admit()")
        if not writes:
            return
        # mem0 (and through it qdrant-client and httpx) loads with the engine, not with this
        # module: the server's start-up path imports none of them (tests/test_cli.py).
        from mem0.utils.lemmatization import lemmatize_for_bm25

        stamp = datetime.now(UTC).isoformat()  # mem0's own clock for its fields
        payloads = [
            {
                **payload,
                "user_id": user_id,
                "role": "user",
                "data": admitted.text,
                "hash": hashlib.md5(admitted.text.encode()).hexdigest(),  # mem0's digest of the text
                "created_at": stamp,
                "updated_at": stamp,
                "text_lemmatized": lemmatize_for_bm25(admitted.text),
            }
            for _, admitted, _, payload in writes
        ]
        with self.engine.server_errors():
            self.engine.store.insert(
                vectors=[vector for _, _, vector, _ in writes],
                payloads=payloads,
                ids=[memory_id for memory_id, _, _, _ in writes],
            )
        history = self.memory.db
        rows = [
            (str(uuid.uuid4()), memory_id, None, admitted.text, "ADD", stamp, stamp, 0, None, "user")
            for memory_id, admitted, _, _ in writes
        ]
        with history._lock:  # mem0's own lock around its sqlite connection
            history.connection.execute("BEGIN")
            try:
                history.connection.executemany(
                    "INSERT INTO history (id, memory_id, old_memory, new_memory, event, created_at,"
                    " updated_at, is_deleted, actor_id, role) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
            except Exception:
                history.connection.execute("ROLLBACK")
                raise
            history.connection.execute("COMMIT")

    def update(self, memory_id: str, admitted: Admitted) -> None:
        if not isinstance(admitted, Admitted):
            raise TypeError("the engine stores only writes admitted by policy.gate.admit()")
        try:
            with self.engine.server_errors():
                self.memory.update(memory_id, text=admitted.text)
        except ValueError as exc:
            raise NotFound(f"memory {memory_id} has no vector: {exc}") from exc

    def delete(self, memory_id: str) -> tuple[int, int]:
        """Remove the vector point and every mem0 history row of the memory (which keep its old
        text): deleting is for real. Returns (vectors deleted, history rows deleted)."""
        vectors = 1
        try:
            with self.engine.server_errors():
                self.memory.delete(memory_id)
        except ValueError:
            vectors = 0
            log.info("memory %s had no vector to delete", memory_id)
        return vectors, self.purge_history(memory_id)

    def restore(self, memory_id: str, text: str, *, user_id: str, payload: dict[str, Any]) -> None:
        """Put back the point of a stored memory whose vector a crash lost: ``text`` embedded
        again, under the same id, with ``payload`` (:func:`point_payload`) and the fields mem0
        would have added, and an ``ADD`` history row, where mem0's reads find the text
        (engine/factory.py ``history_texts``). The text was admitted when it was first
        written; the row it comes from is the source of truth."""
        vector = self.engine.embed(text)
        created = payload.get("created_ts")
        stamp = (
            datetime.fromtimestamp(float(created), UTC).isoformat()
            if created is not None
            else datetime.now(UTC).isoformat()
        )
        full = {
            **payload,
            "user_id": user_id,
            "role": "user",
            "data": text,  # a Qdrant server keeps it, as mem0 wrote it; the embedded store drops it
            "hash": hashlib.md5(text.encode()).hexdigest(),  # mem0's own digest of the text
            "created_at": stamp,
            "updated_at": stamp,
        }
        with self.engine.server_errors():
            self.engine.store.insert(vectors=[vector], payloads=[full], ids=[memory_id])
        self.purge_history(memory_id)  # one ADD row, however often a restore is retried
        self.memory.db.add_history(memory_id, None, text, "ADD", created_at=stamp, updated_at=stamp)

    def point_ids(self, *, hex_form: bool = False) -> list[str]:
        """Every point's id (no payloads, no vectors); ``hex_form``: the dashes left out."""
        with self.engine.server_errors():
            return self.engine.point_ids(hex_form=hex_form)

    def point_created_at(self, memory_id: str) -> datetime | None:
        """When mem0 wrote the point (its ``created_at``, wall-clock UTC), or None if it is gone."""
        with self.engine.server_errors():
            point = self.engine.store.get(memory_id)
        if point is None:
            return None
        stamp = (point.payload or {}).get("created_at")
        try:
            written = datetime.fromisoformat(str(stamp))
        except ValueError:
            return datetime.min.replace(tzinfo=UTC)  # no time: as old as can be
        return written if written.tzinfo else written.replace(tzinfo=UTC)

    def history_ids(self) -> set[str]:
        """The memory ids mem0's history holds rows for."""
        history = self.memory.db
        with history._lock:
            rows = history.connection.execute("SELECT DISTINCT memory_id FROM history").fetchall()
        return {str(row[0]) for row in rows}

    def history_keys(self) -> dict[str, str]:
        """:meth:`history_ids` by their form without dashes (a memory id's hex, as SQLite
        stores it: the reconciliation compares them so)."""
        history = self.memory.db
        with history._lock:
            query = "SELECT DISTINCT replace(memory_id, '-', ''), memory_id FROM history"
            return dict(history.connection.execute(query).fetchall())

    def history_written_at(self, memory_id: str) -> datetime | None:
        """When mem0 wrote the newest history row of the memory (wall-clock UTC)."""
        history = self.memory.db
        with history._lock:
            row = history.connection.execute(
                "SELECT max(created_at) FROM history WHERE memory_id = ?", (memory_id,)
            ).fetchone()
        if row is None or row[0] is None:
            return None
        try:
            written = datetime.fromisoformat(str(row[0]))
        except ValueError:
            return None
        return written if written.tzinfo else written.replace(tzinfo=UTC)

    def purge_history(self, memory_id: str) -> int:
        history = self.memory.db
        with history._lock:  # mem0's own lock around its sqlite connection
            deleted = history.connection.execute(
                "DELETE FROM history WHERE memory_id = ?", (memory_id,)
            ).rowcount
            history.connection.commit()
        return int(deleted)

    def history_count(self, memory_id: str) -> int:
        history = self.memory.db
        with history._lock:
            row = history.connection.execute(
                "SELECT count(*) FROM history WHERE memory_id = ?", (memory_id,)
            ).fetchone()
        return int(row[0])

    def exists(self, memory_id: str) -> bool:
        with self.engine.server_errors():
            return self.engine.store.get(memory_id) is not None

    def set_payload(self, memory_id: str, fields: dict[str, Any]) -> None:
        with self.engine.server_errors():
            self.engine.set_payload(memory_id, fields)

    def prepare_search(self) -> None:
        """Get what searches read ready now (the embedded store's exact scan: engine/scan_copy.py)
        instead of at the first search."""
        self.engine.prepare_search()

    def search(self, query: str, *, filters: dict[str, Any], limit: int) -> list[dict[str, Any]]:
        """The ``limit`` nearest memories that pass ``filters`` and do not point away from the
        query (cosine < 0); keyword search and fusion then rank. Straight to the vector store:
        mem0's ``Memory.search`` fetches max(4 × limit, 60) points with payloads and scores
        them again (lemmas, entities) to give the same order without an LLM: time for nothing
        (docs/search.md, "Measurements behind the code's choices")."""
        with self.engine.server_errors():
            hits = self.engine.nearest(query, limit, filters)
        return [{"id": memory_id, "score": score} for memory_id, score in hits if score >= 0.0]

    def scope_condition(self, project: str) -> dict[str, Any] | None:
        """The condition :meth:`search` reads for a scope (the project's memories and those of
        no project), or None where the store cannot read one: mem0's Qdrant server store has no
        condition for a field with no value, so a scoped search there filters after it."""
        return {IN_OR_EMPTY: [project]} if self.engine.embedded else None

    def exclusion(self, ids: Collection[str]) -> dict[str, Any] | None:
        """The condition :meth:`search` reads to leave these memories out, or None where the
        store cannot read one (mem0's Qdrant server store: the caller drops them after it)."""
        return {NOT_IDS: list(ids)} if self.engine.embedded else None

    def embed(self, text: str) -> list[float]:
        return self.engine.embed(text)

    def prefetch(self, text: str) -> None:
        """Start embedding ``text`` in the background when the embedder can (ours can), so the
        :meth:`add` that follows finds its vector ready."""
        prefetch = getattr(self.engine.embedder, "prefetch", None)
        if prefetch is not None:
            prefetch(text)

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        batch = getattr(self.engine.embedder, "embed_batch", None)
        if batch is not None:
            return batch(texts)
        return [self.engine.embed(t) for t in texts]

    def stored_or_embedded(self, ids: Sequence[str], texts: Sequence[str]) -> tuple[np.ndarray, int]:
        """The vector of each memory (``ids[i]`` holds ``texts[i]``): the one stored, which is
        the embedding of its text, or for a memory whose point is missing its text embedded
        now. Returns them as the rows of one float32 matrix, and how many had to be embedded."""
        import numpy as np

        with self.engine.server_errors():
            stored = self.engine.stored_vectors(list(ids))
        missing = [index for index, memory_id in enumerate(ids) if memory_id not in stored]
        fresh = self.embed_batch([texts[index] for index in missing]) if missing else []
        by_index = dict(zip(missing, fresh, strict=True))
        first = next(iter(stored.values()), None)
        width = len(first) if first is not None else len(fresh[0]) if fresh else 0
        vectors = np.empty((len(ids), width), dtype=np.float32)
        for index, memory_id in enumerate(ids):
            vectors[index] = stored[memory_id] if memory_id in stored else by_index[index]
        return vectors, len(missing)

    def require_room(self) -> None:
        """Refuse a write (507) while the data directory's disk is too full to take it safely."""
        self.engine.disk.require_room()

    def check(self) -> None:
        with self.engine.server_errors():
            self.engine.count({"user_id": "__health__"})
