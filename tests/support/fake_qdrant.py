"""A stand-in Qdrant server on 127.0.0.1, for running the server path (``QDRANT_URL``) here.

No Qdrant server binary or image can be had on these machines (see ENVIRONMENT.md), so the
tests of the server path talk to this instead. It speaks Qdrant's REST wire format — the
paths, request bodies and ``{"result", "status", "time"}`` envelopes that ``qdrant-client``'s
HTTP transport sends and parses — and answers from ``qdrant-client``'s own in-process
implementation of the same API (``QdrantClient(location=":memory:")``). Request bodies are
parsed with ``qdrant_client.http.models``, the models Qdrant's OpenAPI document generates, so
a body the real server would refuse is refused here too (400).

What it cannot show: the real server's speed, and that payload indexes change anything (the
in-process implementation accepts them and filters the same without them). Every request is
recorded, so tests can check what the product asked of the server: which indexes it created
and which filters went into a search.

It runs uvicorn in a thread of the test process, on a port the OS picks.
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from qdrant_client import QdrantClient
from qdrant_client.http import models
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .threaded_server import ThreadedServer


@dataclass
class RecordedRequest:
    method: str
    path: str
    body: Any


def _plain(value: Any) -> Any:
    """JSON-ready data for what the in-process client returns (models, lists, tuples)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _parse(model: Any, body: Any) -> Any:
    try:
        return TypeAdapter(model).validate_python(body)
    except ValidationError as exc:
        raise _Refused(400, f"Format error in JSON body: {exc}") from exc


@dataclass
class FakeQdrant:
    """``start()`` it (or use it as a context manager); ``url`` is what ``QDRANT_URL`` takes."""

    requests: list[RecordedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.store = QdrantClient(location=":memory:")
        self._lock = threading.Lock()
        self._server: ThreadedServer | None = None
        self.port = 0

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeQdrant:
        self._server = ThreadedServer(self._app(), name="fake-qdrant").start()
        self.port = self._server.port
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        self.store.close()

    def __enter__(self) -> FakeQdrant:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- what tests look at ---------------------------------------------------------------
    def recorded(self, method: str, path_end: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method and r.path.endswith(path_end)]

    def indexed_fields(self, collection: str) -> dict[str, Any]:
        """Field name → schema of every payload index the product asked for on ``collection``."""
        return {
            r.body["field_name"]: r.body.get("field_schema")
            for r in self.recorded("PUT", f"/collections/{collection}/index")
        }

    # -- the API ----------------------------------------------------------------------------
    def _app(self) -> Starlette:
        c = "/collections/{name}"
        routes = [
            ("GET", "/", self._root),
            ("GET", "/collections", self._collections),
            ("GET", c, self._collection),
            ("GET", c + "/exists", self._exists),
            ("PUT", c, self._create_collection),
            ("DELETE", c, self._delete_collection),
            ("PUT", c + "/index", self._create_index),
            ("PUT", c + "/points", self._upsert),
            ("POST", c + "/points", self._retrieve),
            ("POST", c + "/points/query", self._query),
            ("POST", c + "/points/query/batch", self._query_batch),
            ("POST", c + "/points/scroll", self._scroll),
            ("POST", c + "/points/count", self._count),
            ("POST", c + "/points/delete", self._delete_points),
            ("POST", c + "/points/payload", self._set_payload),
            ("PUT", c + "/points/payload", self._overwrite_payload),
            ("POST", c + "/points/payload/delete", self._delete_payload),
            ("PUT", c + "/points/vectors", self._update_vectors),
        ]
        return Starlette(
            routes=[Route(path, self._handler(handler), methods=[method]) for method, path, handler in routes]
        )

    def _handler(self, handler: Callable[..., Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            raw = await request.body()
            body = json.loads(raw) if raw else None
            self.requests.append(RecordedRequest(request.method, request.url.path, body))
            started = time.perf_counter()
            try:
                with self._lock:
                    result = handler(body, **request.path_params)
            except _Refused as exc:
                return JSONResponse({"status": {"error": str(exc)}, "time": 0.0}, status_code=exc.status)
            except (ValueError, KeyError) as exc:
                status = 404 if "not found" in str(exc).lower() else 400
                return JSONResponse({"status": {"error": str(exc)}, "time": 0.0}, status_code=status)
            if request.url.path == "/":
                return JSONResponse(result)
            return JSONResponse(
                {"result": _plain(result), "status": "ok", "time": time.perf_counter() - started}
            )

        return endpoint

    @staticmethod
    def _done() -> models.UpdateResult:
        return models.UpdateResult(operation_id=0, status=models.UpdateStatus.COMPLETED)

    def _root(self, body: Any) -> dict[str, str]:
        # The client warns when the server's version is far from its own: claim its own.
        return {"title": "qdrant - vector search engine", "version": version("qdrant-client")}

    def _collections(self, body: Any) -> Any:
        return self.store.get_collections()

    def _collection(self, body: Any, name: str) -> Any:
        return self.store.get_collection(name)

    def _exists(self, body: Any, name: str) -> Any:
        return models.CollectionExistence(exists=self.store.collection_exists(name))

    def _create_collection(self, body: Any, name: str) -> bool:
        spec = _parse(models.CreateCollection, body or {})
        if self.store.collection_exists(name):
            raise _Refused(409, f"Wrong input: Collection `{name}` already exists!")
        return self.store.create_collection(
            name, vectors_config=spec.vectors, sparse_vectors_config=spec.sparse_vectors
        )

    def _delete_collection(self, body: Any, name: str) -> bool:
        return self.store.delete_collection(name)

    def _create_index(self, body: Any, name: str) -> Any:
        spec = _parse(models.CreateFieldIndex, body)
        self._require(name)
        with warnings.catch_warnings():  # "payload indexes have no effect in the local Qdrant"
            warnings.simplefilter("ignore", UserWarning)
            self.store.create_payload_index(name, field_name=spec.field_name, field_schema=spec.field_schema)
        return self._done()

    def _upsert(self, body: Any, name: str) -> Any:
        operation = _parse(models.PointInsertOperations, body)
        points = operation.points if isinstance(operation, models.PointsList) else operation.batch
        self.store.upsert(name, points=points)
        return self._done()

    def _retrieve(self, body: Any, name: str) -> Any:
        spec = _parse(models.PointRequest, body)
        return self.store.retrieve(
            name,
            ids=spec.ids,
            with_payload=spec.with_payload if spec.with_payload is not None else True,
            with_vectors=spec.with_vector if spec.with_vector is not None else False,
        )

    def _query(self, body: Any, name: str) -> Any:
        return self._run_query(name, _parse(models.QueryRequest, body))

    def _query_batch(self, body: Any, name: str) -> Any:
        batch = _parse(models.QueryRequestBatch, body)
        return [self._run_query(name, spec) for spec in batch.searches]

    def _run_query(self, name: str, spec: models.QueryRequest) -> Any:
        if spec.prefetch:
            raise _Refused(400, "prefetch is not served by this stand-in")
        return self.store.query_points(
            name,
            query=spec.query,
            using=spec.using,
            query_filter=spec.filter,
            search_params=spec.params,
            limit=spec.limit if spec.limit is not None else 10,
            offset=spec.offset,
            with_payload=spec.with_payload if spec.with_payload is not None else False,
            with_vectors=spec.with_vector if spec.with_vector is not None else False,
            score_threshold=spec.score_threshold,
        )

    def _scroll(self, body: Any, name: str) -> Any:
        spec = _parse(models.ScrollRequest, body or {})
        points, next_offset = self.store.scroll(
            name,
            scroll_filter=spec.filter,
            limit=spec.limit if spec.limit is not None else 10,
            offset=spec.offset,
            with_payload=spec.with_payload if spec.with_payload is not None else True,
            with_vectors=spec.with_vector if spec.with_vector is not None else False,
            order_by=spec.order_by,
        )
        return models.ScrollResult(points=points, next_page_offset=next_offset)

    def _count(self, body: Any, name: str) -> Any:
        spec = _parse(models.CountRequest, body or {})
        return self.store.count(
            name, count_filter=spec.filter, exact=spec.exact if spec.exact is not None else True
        )

    def _delete_points(self, body: Any, name: str) -> Any:
        selector = _parse(models.PointsSelector, body)
        self.store.delete(name, points_selector=selector)
        return self._done()

    def _set_payload(self, body: Any, name: str) -> Any:
        spec = _parse(models.SetPayload, body)
        self.store.set_payload(name, payload=spec.payload, points=self._selected(spec), key=spec.key)
        return self._done()

    def _overwrite_payload(self, body: Any, name: str) -> Any:
        spec = _parse(models.SetPayload, body)
        self.store.overwrite_payload(name, payload=spec.payload, points=self._selected(spec))
        return self._done()

    def _delete_payload(self, body: Any, name: str) -> Any:
        spec = _parse(models.DeletePayload, body)
        self.store.delete_payload(name, keys=spec.keys, points=self._selected(spec))
        return self._done()

    def _update_vectors(self, body: Any, name: str) -> Any:
        spec = _parse(models.UpdateVectors, body)
        self.store.update_vectors(name, points=spec.points)
        return self._done()

    @staticmethod
    def _selected(spec: Any) -> Any:
        if spec.points is not None:
            return spec.points
        if spec.filter is not None:
            return spec.filter
        raise _Refused(400, "either points or filter is required")

    def _require(self, name: str) -> None:
        if not self.store.collection_exists(name):
            raise _Refused(404, f"Not found: Collection `{name}` doesn't exist!")
