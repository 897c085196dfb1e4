"""What a point of the embedded vector store holds: the payload fields it indexes, the fields it
never keeps (the text), and the shape mem0 reads a point back in (:mod:`.edge_store`)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qdrant_edge import (
    EdgeShard,
    FloatIndexParams,
    IntegerIndexParams,
    KeywordIndexParams,
    PayloadSchemaType,
    UpdateOperation,
)

from ..errors import BadInput

logger = logging.getLogger(__name__)

#: Payload fields indexed by default. Filters on other fields work too (Edge then reads the
#: payloads of the candidates); an index makes a selective filter cheap at 100k points.
DEFAULT_PAYLOAD_INDEXES: dict[str, str] = {
    "user_id": "keyword",
    "agent_id": "keyword",
    "run_id": "keyword",
    "actor_id": "keyword",
    "app_id": "keyword",
    "project": "keyword",
    "state": "keyword",
    "expires_at": "float",
    "created_ts": "float",
}
#: Indexes earlier versions made and this one drops when it opens a shard. ``hash`` (mem0's
#: content digest, a different value on every point) was never a filter: it was the costliest
#: index to load and to keep up to date (docs/search.md, "Restart").
RETIRED_PAYLOAD_INDEXES = ("hash",)

SCHEMA_TYPES = {
    "keyword": PayloadSchemaType.Keyword,
    "integer": PayloadSchemaType.Integer,
    "float": PayloadSchemaType.Float,
    "datetime": PayloadSchemaType.Datetime,
    "text": PayloadSchemaType.Text,
    "uuid": PayloadSchemaType.Uuid,
}
#: Indexes kept on disk (memory-mapped) instead of rebuilt in memory when a shard is loaded. The
#: creation time's numeric index was the costliest part of loading a shard: 3.3 s → 1.9 s for
#: Edge to load a 1M shard with it on disk, with the same search times at 1M (filtered HNSW,
#: three rounds alternating; docs/performance.md, "1M"). The keyword indexes stay in memory:
#: on disk they saved ~0.5 s more but cost 1-2 ms a search.
ON_DISK_PAYLOAD_INDEXES = frozenset({"created_ts"})
#: The kinds whose index can live on disk, and how to ask for it.
_ON_DISK_PARAMS: dict[str, Callable[[], Any]] = {
    "keyword": lambda: KeywordIndexParams(on_disk=True),
    "float": lambda: FloatIndexParams(on_disk=True),
    "integer": lambda: IntegerIndexParams(lookup=True, range=True, on_disk=True),
}


def hex_of(point_id: object) -> str:
    """A point id's 32 hex digits (the form SQLite stores a memory's id in)."""
    return point_id.hex if isinstance(point_id, uuid.UUID) else str(point_id).replace("-", "")


def _kept_on_disk(field: str, kind: str) -> bool:
    return field in ON_DISK_PAYLOAD_INDEXES and kind in _ON_DISK_PARAMS


def index_schema(field: str, kind: str) -> Any:
    """What to create the index of ``field`` (of ``kind``, a key of :data:`SCHEMA_TYPES`) with."""
    return _ON_DISK_PARAMS[kind]() if _kept_on_disk(field, kind) else SCHEMA_TYPES[kind]


def index_on_disk(info: Any) -> bool:
    """Whether an index the shard reports (``info().payload_schema[field]``) lives on disk."""
    return bool(getattr(info.params, "on_disk", False)) if info.params is not None else False


def place_indexes(shard: EdgeShard, indexes: Mapping[str, str], where: object) -> None:
    """Give the shard the ``indexes`` ({field: kind}), each on disk or in memory as this version
    keeps it (an earlier version's index elsewhere is made again, once), and drop the retired."""
    existing = shard.info().payload_schema
    for field, kind in indexes.items():
        info = existing.get(field)
        on_disk = _kept_on_disk(field, kind)
        if info is not None and index_on_disk(info) == on_disk:
            continue
        if info is not None:
            logger.warning(
                "vector store %s: moving the %s index %s (once)",
                where,
                field,
                "to disk" if on_disk else "to memory",
            )
            shard.update(UpdateOperation.delete_field_index(field))
        shard.update(UpdateOperation.create_field_index(field, index_schema(field, kind)))
    for field in RETIRED_PAYLOAD_INDEXES:
        if field in existing and field not in indexes:
            shard.update(UpdateOperation.delete_field_index(field))


#: Payload fields a point never keeps: the memory's text as mem0 writes it (``data``) and its
#: lemmas for mem0's BM25 (``text_lemmatized``). Edge deletes logically and keeps old payloads
#: in its segment pages and its write-ahead log, so text stored here would outlive every
#: delete. The text lives in the databases that erase it (memories/lifecycle/erasure.py); mem0's reads
#: get it back through :attr:`QdrantEdgeStore.text_source`.
TEXT_FIELDS = ("data", "text_lemmatized")

#: ``ids -> {id: text}`` for the points mem0 reads back (get, search, list).
TextSource = Callable[[Sequence[str]], Mapping[str, str]]


@dataclass(slots=True)
class OutputData:
    """One point as mem0 reads it."""

    id: str
    score: float | None
    payload: dict[str, Any]


def point_id(value: Any) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise BadInput(f"vector ids must be UUIDs, got {value!r}") from None


def without_text(payload: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: value for key, value in (payload or {}).items() if key not in TEXT_FIELDS}


def output(point: Any, score: float | None = None) -> OutputData:
    return OutputData(id=str(point.id), score=score, payload=dict(point.payload or {}))
