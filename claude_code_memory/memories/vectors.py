"""The service's only door to the engine's writes: :class:`Vectors` over mem0 and its store.

Every call that adds, changes or deletes a vector goes through here (``tests/test_gate.py``
checks it), and the two that store text accept only a write the policy gate admitted.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..db.models import MemoryState
from ..errors import BadInput, NotFound
from ..policy.gate import Admitted
from .values import epoch_seconds

if TYPE_CHECKING:
    from mem0 import Memory
    from mem0.embeddings.base import EmbeddingBase
    from mem0.vector_stores.base import VectorStoreBase

    from ..engine.disk_space import DiskGuard

log = logging.getLogger(__name__)


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

    def set_payload(self, memory_id: str, fields: dict[str, Any]) -> None: ...

    def count(self, filters: dict[str, Any] | None = None) -> int: ...

    @property
    def disk(self) -> DiskGuard: ...


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
        # What searches filter on, and no more: the text and the caller's metadata live in the
        # metadata database, which erases them on delete (edge_store.TEXT_FIELDS says why).
        payload = {
            "source_app": "claude-code-memory",
            "mcp_client": write.app,
            "app_id": app_id,
            "state": MemoryState.active.value,
            "channel": write.channel,
            "created_ts": epoch_seconds(created_at),
        }
        for key in ("project", "conversation_id"):
            if getattr(write, key):
                payload[key] = getattr(write, key)
        if admitted.expires_at is not None:
            payload["expires_at"] = epoch_seconds(admitted.expires_at)
        # Without an LLM, infer=True (OpenMemory's REST default) stores the text verbatim.
        try:
            with self.engine.server_errors():
                result = self.memory.add(
                    admitted.text, user_id=write.user_id, metadata=payload, infer=infer and self.has_llm
                )
        except ValueError as exc:
            raise BadInput(str(exc)) from exc
        return list(result.get("results", []))

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

    def search(self, query: str, *, filters: dict[str, Any], limit: int) -> list[dict[str, Any]]:
        """The ``limit`` nearest memories that pass ``filters`` and do not point away from the
        query (cosine < 0); keyword search and fusion then rank. Straight to the vector store:
        mem0's ``Memory.search`` fetches max(4 × limit, 60) points with payloads and scores
        them again (lemmas, entities) to give the same order without an LLM — measured 5 ms of
        a 10k search for nothing."""
        with self.engine.server_errors():
            hits = self.engine.nearest(query, limit, filters)
        return [{"id": memory_id, "score": score} for memory_id, score in hits if score >= 0.0]

    def embed(self, text: str) -> list[float]:
        return self.engine.embed(text)

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        batch = getattr(self.engine.embedder, "embed_batch", None)
        if batch is not None:
            return batch(texts)
        return [self.engine.embed(t) for t in texts]

    def require_room(self) -> None:
        """Refuse a write (507) while the data directory's disk is too full to take it safely."""
        self.engine.disk.require_room()

    def check(self) -> None:
        with self.engine.server_errors():
            self.engine.count({"user_id": "__health__"})
