"""What a point of the embedded vector store holds: the payload fields it indexes, the fields it
never keeps (the text), and the shape mem0 reads a point back in (:mod:`.edge_store`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qdrant_edge import PayloadSchemaType

from ..errors import BadInput

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
