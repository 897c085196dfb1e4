"""Qdrant Edge (``qdrant-edge-py``) as a mem0 vector store, in process, files under the data dir.

One :class:`QdrantEdgeStore` owns one Edge shard at ``<path>/<collection_name>``: it creates the
shard on first use and loads it afterwards. What mem0 2.2.1 expects of a store, and what this
one does:

* search/get/list hand back objects with ``.id`` (a ``str``: Edge returns ``uuid.UUID``, and
  mem0 compares and serialises ids as strings), ``.score`` and ``.payload`` (a dict);
* ``list()`` returns ``[records]``: ``Memory.delete_all`` indexes ``[0]`` and ``get_all``
  unwraps the first element when it is a list;
* scores are cosine similarities (higher is closer, 1.0 for the same direction), as in mem0's
  own qdrant store;
* ``update(id, vector, payload)`` with both replaces the point (mem0 passes the full payload);
  with only a payload it *merges* it into the stored one without touching the vector, as
  mem0's qdrant store does; with only a vector it swaps the vector.

Every filter is pushed into Edge (see :mod:`.filters`); nothing is filtered in Python.

Ids must be UUIDs (Edge accepts integers or UUIDs only; mem0 uses ``uuid4``). Durability: Edge
writes each update to its write-ahead log before returning, which survives a killed process
(measured: 30 unflushed upserts, SIGKILL, all there after reload); :meth:`close` flushes the
segments so the next start does not replay the log. Flushing after every write would cost
far more than the upsert and is not done (docs/search.md, "Measurements behind the code's
choices"). Edge locks its directory: one process per
store. Calls are serialised by a lock: Edge calls measured no faster from several threads than
one after another, so the lock costs nothing measurable, and it keeps :meth:`close` from racing
a call (Edge itself took concurrent reads and writes from 8 threads without errors).

Searches over points upserted since the shard was loaded run slower than over the same points
after a load (docs/search.md, "Latency", its last paragraph). So once the upserts since the
last load reach :data:`RELOAD_SHARE` of the points it held then (and at least
:data:`RELOAD_MIN`), the write that crosses the line flushes, closes and loads the shard again,
a fraction of a second during which other calls wait.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mem0.vector_stores.base import VectorStoreBase
from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeVectorParams,
    Point,
    PointVectors,
    Query,
    QueryBatchRequest,
    QueryRequest,
    ScrollRequest,
    UpdateOperation,
)

from ..errors import BadInput, ConfigError, NotFound, Unavailable
from . import shard_copy
from .disk_space import room_to_load
from .edge_points import (
    DEFAULT_PAYLOAD_INDEXES,
    TEXT_FIELDS,
    OutputData,
    TextSource,
    hex_of,
    place_indexes,
)
from .edge_points import SCHEMA_TYPES as _SCHEMA_TYPES
from .edge_points import output as _output
from .edge_points import point_id as _point_id
from .edge_points import without_text as _without_text
from .filters import edge_filter
from .index_build import IndexBuilder
from .scan_copy import EXACT_SCAN_MAX as SCAN_MAX
from .scan_copy import ScanCopy

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

#: Reload the shard once the points upserted since it was loaded reach this share of the points
#: it held then, and at least :data:`RELOAD_MIN` (see the module's docstring).
RELOAD_SHARE = 0.1
RELOAD_MIN = 1000

_SCROLL_PAGE = 1000
#: Ids alone come ten times as many a page: 1M in 3.0 s instead of 3.5 s.
_ID_PAGE = 10_000


class QdrantEdgeStore(VectorStoreBase):
    """A mem0 vector store on one Qdrant Edge shard at ``<path>/<collection_name>``."""

    def __init__(
        self,
        collection_name: str,
        path: str | Path,
        embedding_model_dims: int,
        payload_indexes: Mapping[str, str] | None = None,
        index_from: int | None = None,
        exact_scan: bool = True,
    ) -> None:
        self.collection_name = collection_name
        self.root = Path(path)
        self.embedding_model_dims = embedding_model_dims
        self.payload_indexes = dict(DEFAULT_PAYLOAD_INDEXES if payload_indexes is None else payload_indexes)
        unknown = {kind for kind in self.payload_indexes.values() if kind not in _SCHEMA_TYPES}
        if unknown:
            raise ConfigError(f"payload index types {sorted(unknown)} unknown; use {sorted(_SCHEMA_TYPES)}")
        #: Held by every call that touches the shard, and by the index builder while it copies
        #: the shard and swaps the indexed copy in.
        self.lock = threading.RLock()
        self._shard: EdgeShard | None = None
        #: Where mem0's reads find a point's text (the engine sets it; None: none comes back).
        self.text_source: TextSource | None = None
        self.reload_share, self.reload_min = RELOAD_SHARE, RELOAD_MIN
        #: Points upserted since the shard was loaded, the points it held then, and loads since.
        self._upserted = self._loaded_points = self.reloads = 0
        #: Points deleted since the last compaction (or since this process opened the shard):
        #: Edge keeps their vectors and payloads in its files until :meth:`compact`.
        self.deleted = 0
        #: Why the shard is not open yet: loading it would not fit on the disk (retried on use).
        self.deferred: str | None = None
        #: Builds the vector index in another process once the shard is large (index_build.py);
        #: while it runs, the ids written are noted here.
        self.index = IndexBuilder(self, index_from=index_from)
        self.written_since_copy: set[str] | None = None
        #: What :meth:`nearest` scans below the index size, lock released; every write keeps it.
        self.scan_copy = ScanCopy(embedding_model_dims, exact_scan, lambda: self.index.index_from or SCAN_MAX)
        self.scan_copy.attach(self.lock, lambda: self._shard)
        self.create_col(collection_name, embedding_model_dims, "cosine")

    @property
    def shard_path(self) -> Path:
        return self.root / self.collection_name

    # -- lifecycle --------------------------------------------------------------------------
    def create_col(
        self, name: str | None = None, vector_size: int | None = None, distance: Any = None
    ) -> None:
        """Open the shard, creating it when the directory holds none. Cosine distance only."""
        if name and name != self.collection_name:
            raise BadInput(f"this store serves collection {self.collection_name!r}, not {name!r}")
        dims = vector_size or self.embedding_model_dims
        config = self.shard_config(dims)
        path = self.shard_path
        with self.lock:
            if self._shard is not None:
                return
            if not self.index.running:  # a build's copy is not a crash's leftover
                shard_copy.finish_interrupted_swap(path)
            exists = (path / "edge_config.json").exists() or (path / "segments").exists()
            if exists and not self._room_to_load():
                return
            try:
                if exists:
                    # With a config, load checks it against the stored segments.
                    self._shard = EdgeShard.load(str(path), config)
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    self._shard = EdgeShard.create(str(path), config)
            except Exception as exc:
                raise self._open_error(exc, dims) from exc
            self._ensure_indexes()
            info = self._shard.info()
            self._upserted, self._loaded_points = 0, info.points_count
            if self._holds_text(self._shard):
                logger.warning("vector store %s holds memories' text (an older version): rewriting it", path)
                self.erase()
            elif not self.index.running:
                self.index.maybe_start(info.points_count, info.indexed_vectors_count)

    def _room_to_load(self) -> bool:
        """Loading fills the holes of the vector chunks; on a full tmpfs that is a SIGBUS, so
        the shard stays closed (reads answer 503, writes 507) until the disk has room."""
        fits, why = room_to_load(self.shard_path)
        if not fits and self.deferred != why:
            logger.warning("%s (%s)", why, self.shard_path)
        self.deferred = None if fits else why
        return fits

    def _open_error(self, exc: Exception, dims: int) -> Exception:
        message = str(exc)
        if "WouldBlock" in message:
            return Unavailable(
                f"vector store {self.shard_path} is in use by another process (one server per data directory)"
            )
        if "ncompatible" in message:
            return ConfigError(
                f"embedder.dims = {dims}: the vector store {self.shard_path} was built with other "
                f"vectors ({message}); use the embedder it was built with, or a new data_dir"
            )
        return Unavailable(f"cannot open vector store {self.shard_path}: {message}")

    @staticmethod
    def shard_config(dims: int) -> EdgeConfig:
        return EdgeConfig(vectors=EdgeVectorParams(size=dims, distance=Distance.Cosine))

    def _ensure_indexes(self, shard: EdgeShard | None = None) -> None:
        place_indexes(shard or self.require_shard(), self.payload_indexes, self.shard_path)

    # -- erasure and compaction -------------------------------------------------------------
    def erase(self) -> int:
        """Rewrite the shard with its live points and without :data:`TEXT_FIELDS`, through a
        copy that takes its place (:mod:`.shard_copy` says why); returns the points kept. Run
        once, when a shard an older version wrote still holds memories' text. Other calls wait.
        """
        return self.compact()

    def compact(self) -> int:
        """Reclaim what deleted points hold on disk: the live points are copied into a new shard
        (write-ahead log included) that takes this one's place; returns the points kept. Edge's
        own ``optimize()`` rewrites segments but keeps the log, and left more on disk
        (docs/storage.md, "Giving space back after deletes"). Other calls wait meanwhile, for a
        time that grows with the points kept (docs/storage.md, "Measured")."""
        with self.lock:
            shard = self.require_shard()
            self.index.cancel()
            copy_path, _ = shard_copy.beside(self.shard_path)
            shutil.rmtree(copy_path, ignore_errors=True)
            copy = EdgeShard.create(str(copy_path), self.shard_config(self.embedding_model_dims))
            try:
                self._ensure_indexes(copy)
                kept = shard_copy.copy_points(shard, copy, _without_text)
                copy.flush()
            finally:
                copy.close()
            self._shard = None
            shard.close()
            shard_copy.swap_in(self.shard_path)
            self.create_col(self.collection_name, self.embedding_model_dims)
            self.deleted = 0
        return kept

    @staticmethod
    def _holds_text(shard: EdgeShard) -> bool:
        """Whether points hold text fields, as every point written before :data:`TEXT_FIELDS`
        did (the first point tells: they were all written the same way)."""
        points, _ = shard.scroll(ScrollRequest(limit=1, with_payload=True, with_vector=False))
        return any(field in (point.payload or {}) for point in points for field in TEXT_FIELDS)

    def _with_text(self, records: list[OutputData]) -> list[OutputData]:
        """mem0's view of the points: the payload with the text (``data``) put back."""
        if self.text_source is None or not records:
            return records
        texts = self.text_source([record.id for record in records])
        for record in records:
            text = texts.get(record.id)
            if text is not None:
                record.payload["data"] = text
        return records

    def flush(self) -> None:
        with self.lock:
            if self._shard is not None:
                self._shard.flush()

    def _upserted_points(self, count: int) -> None:
        """Count upserts (lock held) and load the shard again when they reach the line."""
        self._upserted += count
        if self._upserted < max(self.reload_min, self.reload_share * self._loaded_points):
            return
        if not room_to_load(self.shard_path)[0]:
            return  # a reload only makes searches faster: not worth the disk it would claim
        started, upserted = time.perf_counter(), self._upserted
        shard = self.detach_shard()
        try:
            shard.flush()
        finally:
            shard.close()
        self.create_col(self.collection_name, self.embedding_model_dims)
        self.scan_copy.carry(shard, self._shard)  # the same points: the copy carries over
        self.reloads += 1
        logger.info(
            "vector store: loaded %s again after %d upserts (%.2f s): searches are faster on loaded points",
            self.shard_path,
            upserted,
            time.perf_counter() - started,
        )

    def close(self) -> None:
        """Flush and release the shard (and its directory lock). Safe to call twice."""
        self.index.close()
        with self.lock:
            self.deferred = None
            if self._shard is None:
                return
            shard, self._shard = self._shard, None
            try:
                shard.flush()
            finally:
                shard.close()

    def __enter__(self) -> QdrantEdgeStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def is_open(self) -> bool:
        return self._shard is not None

    def detach_shard(self) -> EdgeShard:
        """Take the open shard out of the store (``lock`` held); the caller flushes and closes
        it, and :meth:`create_col` opens what is on disk then."""
        shard, self._shard = self.require_shard(), None
        return shard

    def require_shard(self) -> EdgeShard:
        """The open shard; a shard deferred for want of disk is opened now if it fits."""
        if self._shard is None and self.deferred is not None:
            self.create_col(self.collection_name, self.embedding_model_dims)
        if self._shard is None:
            raise Unavailable(self.deferred or f"vector store {self.shard_path} is closed")
        return self._shard

    @contextmanager
    def _locked(self) -> Iterator[EdgeShard]:
        with self.lock:
            yield self.require_shard()

    # -- writes -----------------------------------------------------------------------------
    def insert(
        self,
        vectors: Sequence[Sequence[float]],
        payloads: Sequence[Mapping[str, Any]] | None = None,
        ids: Sequence[Any] | None = None,
    ) -> list[str]:
        """Upsert points; returns their ids (new UUIDs where ``ids`` is None)."""
        if payloads is not None and len(payloads) != len(vectors):
            raise BadInput(f"{len(vectors)} vectors but {len(payloads)} payloads")
        if ids is not None and len(ids) != len(vectors):
            raise BadInput(f"{len(vectors)} vectors but {len(ids)} ids")
        point_ids = [_point_id(i) for i in ids] if ids is not None else [str(uuid.uuid4()) for _ in vectors]
        written = [
            (point_id, self._vector(vector), _without_text(payloads[index]) if payloads else {})
            for index, (point_id, vector) in enumerate(zip(point_ids, vectors, strict=True))
        ]
        points = [Point(*point) for point in written]
        if points:
            with self._locked() as shard:
                shard.update(UpdateOperation.upsert_points(points))
                self.scan_copy.write(shard, lambda scan: scan.upsert_all(written))
                self._note(point_ids)
                self._upserted_points(len(points))
        return point_ids

    def update(
        self,
        vector_id: Any,
        vector: Sequence[float] | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> None:
        """Replace the point (vector and payload), merge a payload, or swap the vector."""
        point_id = _point_id(vector_id)
        with self._locked() as shard:
            self._note([point_id])
            if vector is not None and payload is not None:
                values, fields = self._vector(vector), _without_text(payload)
                shard.update(UpdateOperation.upsert_points([Point(point_id, values, fields)]))
                self.scan_copy.write(shard, lambda scan: scan.upsert(point_id, values, fields))
                self._upserted_points(1)
            elif payload is not None:
                fields = _without_text(payload)
                self._missing_is_not_found(
                    point_id, lambda: shard.update(UpdateOperation.set_payload([point_id], fields))
                )
                self.scan_copy.write(shard, lambda scan: scan.merge(point_id, fields))
            elif vector is not None:
                values = self._vector(vector)
                operation = UpdateOperation.update_vectors([PointVectors(point_id, values)])
                self._missing_is_not_found(point_id, lambda: shard.update(operation))
                self.scan_copy.write(shard, lambda scan: scan.revector(point_id, values))
                self._upserted_points(1)

    def set_payload(self, vector_id: Any, fields: Mapping[str, Any]) -> None:
        """Merge ``fields`` into the stored payload; the vector stays as it is."""
        self.update(vector_id, payload=fields)

    def delete(self, vector_id: Any) -> None:
        """Delete a point; deleting an id that is not there is not an error."""
        point_id = _point_id(vector_id)
        with self._locked() as shard:
            shard.update(UpdateOperation.delete_points([point_id]))
            self.scan_copy.write(shard, lambda scan: scan.remove(point_id))
            self.deleted += 1
            self._note([point_id])

    def _note(self, point_ids: Sequence[str]) -> None:
        """While an index build runs, note the points written (lock held)."""
        if self.written_since_copy is not None:
            self.written_since_copy.update(point_ids)

    def _vector(self, vector: Sequence[float]) -> list[float]:
        values = [float(x) for x in vector]
        if len(values) != self.embedding_model_dims:
            raise BadInput(
                f"vector has {len(values)} dimensions, the store holds {self.embedding_model_dims}"
            )
        return values

    @staticmethod
    def _missing_is_not_found(point_id: str, run: Any) -> None:
        try:
            run()
        except Exception as exc:
            if "No point with id" in str(exc):
                raise NotFound(f"no vector with id {point_id}") from None
            raise

    # -- reads ------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        vectors: Sequence[float],
        top_k: int = 5,
        filters: Mapping[str, Any] | None = None,
    ) -> list[OutputData]:
        """The ``top_k`` nearest points that pass ``filters``, best first."""
        request = self._query(vectors, top_k, filters)
        with self._locked() as shard:
            hits = shard.query(request)
        return self._with_text([_output(hit, hit.score) for hit in hits])

    def prepare_search(self) -> None:
        """Start reading the exact scan's copy now (its thread), not at the first search: ~1 s
        at 10k points that the first searches after a start waited behind."""
        with self._locked() as shard:
            self.scan_copy.of(shard)

    def nearest(
        self, vector: Sequence[float], top_k: int, filters: Mapping[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        """``(id, score)`` of the ``top_k`` nearest points that pass ``filters``, best first:
        :meth:`search` without the payloads, which cost more than the scan itself
        (docs/search.md, "Measurements behind the code's choices")."""
        with self._locked() as shard:
            scan = self.scan_copy.of(shard)
            found = scan.nearest(vector, top_k, filters) if scan is not None else None
            if found is not None:
                return found
            # Built only for Edge: a session's given ids made the request a tenth of a hook's time.
            hits = shard.query(self._query(vectors=vector, top_k=top_k, filters=filters, with_payload=False))
        return [(str(hit.id), float(hit.score)) for hit in hits]

    def search_batch(
        self,
        queries: Sequence[str],
        vectors_list: Sequence[Sequence[float]],
        top_k: int = 1,
        filters: Mapping[str, Any] | None = None,
    ) -> list[list[OutputData]]:
        requests = [self._query(vector, top_k, filters) for vector in vectors_list]
        if not requests:
            return []
        with self._locked() as shard:
            batches = shard.query_batch(QueryBatchRequest(requests))
        return [self._with_text([_output(hit, hit.score) for hit in hits]) for hits in batches]

    def keyword_search(
        self, query: str, top_k: int = 5, filters: Mapping[str, Any] | None = None
    ) -> list[OutputData] | None:
        """Not yet: ``None`` tells mem0 to rank by vectors alone (hybrid search comes later).

        Overridden rather than inherited so mem0 does not log a warning at every start-up.
        """
        return None

    def _query(
        self,
        vectors: Sequence[float],
        top_k: int,
        filters: Mapping[str, Any] | None,
        *,
        with_payload: bool = True,
    ) -> QueryRequest:
        if top_k < 1:
            raise BadInput(f"top_k must be at least 1, got {top_k}")
        return QueryRequest(
            limit=top_k,
            query=Query.Nearest(self._vector(vectors)),
            filter=edge_filter(filters),
            with_payload=with_payload,
            with_vector=False,
        )

    def get(self, vector_id: Any) -> OutputData | None:
        """The point with this id, or ``None`` (also for ids that are not UUIDs)."""
        try:
            point_id = _point_id(vector_id)
        except BadInput:
            return None
        with self._locked() as shard:
            records = shard.retrieve([point_id], True, False)
        return self._with_text([_output(records[0])])[0] if records else None

    def vectors(self, ids: Sequence[Any]) -> dict[str, np.ndarray]:
        """The stored vectors of these points by id (as stored: unit length), float32 (a list of
        Python floats costs eight times the memory); ids with no point are left out. What the
        hygiene job compares instead of embedding every text again."""
        import numpy as np

        found: dict[str, np.ndarray] = {}
        wanted: list[Any] = [_point_id(value) for value in ids]
        for start in range(0, len(wanted), _SCROLL_PAGE):
            with self._locked() as shard:  # per page: writes go on between pages
                records = shard.retrieve(wanted[start : start + _SCROLL_PAGE], False, True)
            for record in records:
                vector: Any = record.vector
                if isinstance(vector, dict):  # named vectors: this store keeps one, unnamed
                    vector = next(iter(vector.values()), None)
                if vector is not None:
                    found[str(record.id)] = np.asarray(vector, dtype=np.float32)
        return found

    def ids(self, *, hex_form: bool = False) -> list[str]:
        """Every point's id (``hex_form``: its 32 hex digits, as SQLite stores a memory's id),
        paged with neither payloads nor vectors: what the reconciliation with the metadata
        database compares (memories/lifecycle/reconcile.py)."""
        form = hex_of if hex_form else str
        found: list[str] = []
        offset: Any = None
        while True:
            request = ScrollRequest(offset=offset, limit=_ID_PAGE, with_payload=False, with_vector=False)
            with self._locked() as shard:  # per page: writes go on between pages
                points, offset = shard.scroll(request)
            found.extend(form(point.id) for point in points)
            if offset is None:
                return found

    def count(self, filters: Mapping[str, Any] | None = None) -> int:
        """How many points pass ``filters`` (exact)."""
        request = CountRequest(exact=True, filter=edge_filter(filters))
        with self._locked() as shard:
            return shard.count(request)

    # -- collections ------------------------------------------------------------------------
    def list_cols(self) -> list[str]:
        """Names of the Edge shards beside this one (directories with an ``edge_config.json``)."""
        if not self.root.is_dir():
            return []
        return sorted(child.name for child in self.root.iterdir() if (child / "edge_config.json").exists())

    def col_info(self) -> dict[str, Any]:
        with self._locked() as shard:
            info = shard.info()
            schema = {
                field: str(index.data_type).rsplit(".", 1)[-1] for field, index in info.payload_schema.items()
            }
            return {
                "name": self.collection_name,
                "path": str(self.shard_path),
                "points_count": info.points_count,
                "segments_count": info.segments_count,
                "indexed_vectors_count": info.indexed_vectors_count,
                "payload_schema": schema,
            }

    def delete_col(self) -> None:
        """Close the shard and remove its directory."""
        with self.lock:
            self.index.cancel()
            self.close()
            shutil.rmtree(self.shard_path, ignore_errors=True)

    def reset(self) -> None:
        """Delete every point: remove the shard and create it again, empty."""
        logger.warning("resetting vector store %s", self.shard_path)
        with self.lock:
            self.delete_col()
            self.create_col()

    # Last in the class: a method named `list` shadows the builtin in annotations below it.
    def list(
        self, filters: Mapping[str, Any] | None = None, top_k: int | None = 100
    ) -> list[list[OutputData]]:
        """``[records]``: up to ``top_k`` points (all when ``None``) that pass ``filters``."""
        condition = edge_filter(filters)
        records: list[OutputData] = []
        offset: Any = None
        with self._locked() as shard:
            while top_k is None or len(records) < top_k:
                page = _SCROLL_PAGE if top_k is None else min(_SCROLL_PAGE, top_k - len(records))
                request = ScrollRequest(
                    offset=offset, limit=page, filter=condition, with_payload=True, with_vector=False
                )
                points, offset = shard.scroll(request)
                records.extend(_output(point) for point in points)
                if offset is None:
                    break
        return [self._with_text(records)]
