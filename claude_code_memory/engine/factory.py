"""Build mem0's ``Memory`` from :class:`Settings`: the composition root of the engine.

How ``Memory`` gets our embedder and store. mem0 builds its parts in ``Memory.__init__``
through ``EmbedderFactory`` and ``VectorStoreFactory``, whose tables map a provider name to a
class path; only the pydantic wrappers ``EmbedderConfig``/``VectorStoreConfig`` refuse names
they do not list. So we add our two classes to the factories' tables and build those two
wrappers with ``model_construct`` (skipping only the name check), and mem0 constructs, owns and
resets our objects exactly as it does its own. The alternatives were worse: swapping
``memory.vector_store`` after construction first builds a stock store (a qdrant-client
directory or an in-memory client) and leaves mem0's entity store and ``reset()`` building stock
ones; re-implementing ``Memory.__init__`` in a subclass silently breaks when mem0 adds an
attribute. mem0 is pinned (2.2.1) and ``tests/test_engine.py`` exercises this path.

mem0 refuses to start without an LLM even when every write uses ``infer=False``. With
``llm.provider: none`` it gets :class:`NoLlm`, registered in ``LlmFactory`` like the other two
parts, which raises instead of sending anything. (A stock provider with a dummy key would
import and build an OpenAI client for nothing, slowing every start-up, and mem0's
OpenAI class follows ``OPENROUTER_API_KEY`` from the environment to a real host.)

Start-up time matters (restart targets and times: docs/search.md, "Restart"), so importing mem0
is kept to what we use: see :func:`_mem0_imported_lean`; what each import cost is in
docs/search.md, "Measurements behind the code's choices".
"""

from __future__ import annotations

import logging
import os
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ..config import Settings
from ..errors import ConfigError, Unavailable
from .disk_space import engine_guard

if TYPE_CHECKING:
    import numpy as np
    from mem0 import Memory
    from mem0.embeddings.base import EmbeddingBase
    from mem0.vector_stores.base import VectorStoreBase

logger = logging.getLogger(__name__)

EDGE_PROVIDER = "ccmem_qdrant_edge"
ONNX_PROVIDER = "ccmem_onnx_minilm"
NO_LLM_PROVIDER = "ccmem_no_llm"
ONNX_MODEL = "all-MiniLM-L6-v2"
EMBEDDING_CACHE_SIZE = 4096
#: Points per page when the ids of a Qdrant server's collection are listed.
SCROLL_PAGE = 1000


class EdgeStoreConfig(BaseModel):
    """What mem0's ``VectorStoreFactory`` passes to :class:`QdrantEdgeStore` as keywords."""

    collection_name: str
    path: str
    embedding_model_dims: int
    payload_indexes: dict[str, str] | None = None
    index_from: int | None = None
    exact_scan: bool = True


# -- configuration as plain data ---------------------------------------------------------------
def mem0_config(settings: Settings) -> dict[str, Any]:
    """mem0's configuration for these settings: ``vector_store``, ``embedder``, ``llm`` and
    ``history_db_path``, each a plain dict as ``Memory.from_config`` takes them."""
    data = settings.data_path
    return {
        "vector_store": _vector_store_config(settings, data),
        "embedder": _embedder_config(settings),
        "llm": _llm_config(settings),
        "history_db_path": str(data / "mem0" / "history.db"),
    }


def _vector_store_config(settings: Settings, data: Path) -> dict[str, Any]:
    storage = settings.storage
    dims = settings.embedder.dims
    if storage.qdrant_url:
        config: dict[str, Any] = {
            "collection_name": storage.collection_name,
            "embedding_model_dims": dims,
            "url": storage.qdrant_url,
        }
        if storage.qdrant_api_key:
            config["api_key"] = storage.qdrant_api_key
        return {"provider": "qdrant", "config": config}
    return {
        "provider": EDGE_PROVIDER,
        "config": {
            "collection_name": storage.collection_name,
            "path": str(data / "vectors"),
            "embedding_model_dims": dims,
            "index_from": storage.vector_index_from,
            "exact_scan": storage.vector_exact_scan,
        },
    }


def _embedder_config(settings: Settings) -> dict[str, Any]:
    embedder = settings.embedder
    if embedder.provider == "onnx-minilm":
        if embedder.model != ONNX_MODEL:
            raise ConfigError(f"embedder.model = {embedder.model!r}: onnx-minilm runs only {ONNX_MODEL}")
        if embedder.dims != 384:
            raise ConfigError(f"embedder.dims = {embedder.dims!r}: {ONNX_MODEL} produces 384 dimensions")
        cache_size = EMBEDDING_CACHE_SIZE if settings.performance.cache_embeddings else 0
        return {
            "provider": ONNX_PROVIDER,
            "config": {
                "model": ONNX_MODEL,
                "embedding_dims": 384,
                "model_kwargs": {"cache_size": cache_size},
            },
        }
    config: dict[str, Any] = {"model": embedder.model, "embedding_dims": embedder.dims}
    if embedder.provider == "openai":
        config.update(api_key=embedder.api_key, openai_base_url=embedder.base_url)
    else:  # ollama
        config.update(ollama_base_url=embedder.base_url)
    return {"provider": embedder.provider, "config": _without_none(config)}


def _llm_config(settings: Settings) -> dict[str, Any]:
    llm = settings.llm
    if llm.provider == "none":
        return {"provider": NO_LLM_PROVIDER, "config": {}}
    base_url_key = {
        "openai": "openai_base_url",
        "anthropic": "anthropic_base_url",
        "ollama": "ollama_base_url",
    }
    config = {
        "model": llm.model,
        "api_key": llm.api_key,
        base_url_key[llm.provider]: llm.base_url,
        "temperature": llm.temperature,
        "max_tokens": llm.max_tokens,
    }
    return {"provider": llm.provider, "config": _without_none(config)}


def _without_none(config: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in config.items() if value is not None}


# -- construction ------------------------------------------------------------------------------
def _point_mem0_at(mem0_dir: Path) -> None:
    """Set mem0's environment; it reads it once, when ``mem0`` is first imported."""
    mem0_dir.mkdir(parents=True, exist_ok=True)
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["MEM0_DIR"] = str(mem0_dir)
    setup = sys.modules.get("mem0.memory.setup")
    if setup is not None and Path(setup.mem0_dir) != mem0_dir:
        # Harmless with telemetry off (mem0 keeps only a random id there), but worth knowing.
        logger.debug("mem0 was imported earlier and keeps its config in %s", setup.mem0_dir)


@contextmanager
def _mem0_imported_lean(settings: Settings) -> Iterator[None]:
    """Import mem0 without the parts of it the server never runs: a third of a start-up.

    * ``mem0/__init__.py`` imports the client of mem0's hosted platform, which imports
      ``requests``; ``mem0.memory.telemetry`` imports PostHog's SDK, which it uses only with
      telemetry on (:func:`_point_mem0_at` turns it off). Together they cost more than the
      rest of mem0 (docs/performance.md, "A start").
    * ``mem0.memory.main`` builds ``MemoryConfig()`` as a default argument while it is
      imported; that validates a default vector store config for provider "qdrant", and the
      class body of mem0's ``QdrantConfig`` imports qdrant-client, for a client the embedded
      store never uses (left alone when a Qdrant server is configured).

    While mem0 is first imported, stand-in modules answer for these three; afterwards they are
    gone from ``sys.modules``, so a later import of any of them gets the real module. What mem0
    keeps of them: ``mem0.MemoryClient`` and ``mem0.memory.telemetry.Posthog``, which refuse to
    be built (neither is, with telemetry off and no hosted platform).
    """
    if "mem0.memory.main" in sys.modules:
        yield
        return
    stand_ins = {"mem0.client.main": _client_stand_in()}
    if os.environ.get("MEM0_TELEMETRY", "").lower() not in ("true", "1", "yes"):
        stand_ins["posthog"] = _posthog_stand_in()
    if not settings.storage.qdrant_url:
        stand_ins["mem0.configs.vector_stores.qdrant"] = _qdrant_config_stand_in()
    installed = {name: module for name, module in stand_ins.items() if name not in sys.modules}
    sys.modules.update(installed)
    try:
        yield
    finally:
        for name, module in installed.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


def _client_stand_in() -> types.ModuleType:
    class MemoryClient:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise Unavailable("mem0's hosted platform client is not loaded by this server")

    module = types.ModuleType("mem0.client.main")
    module.MemoryClient = module.AsyncMemoryClient = MemoryClient  # type: ignore[attr-defined]
    return module


def _posthog_stand_in() -> types.ModuleType:
    class Posthog:  # what mem0's telemetry builds only when telemetry is on
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise Unavailable("PostHog's SDK is not loaded by this server (MEM0_TELEMETRY is off)")

    module = types.ModuleType("posthog")
    module.Posthog = Posthog  # type: ignore[attr-defined]
    return module


def _qdrant_config_stand_in() -> types.ModuleType:
    class QdrantConfig(BaseModel):  # answers for the one default object, never passed to Memory
        model_config = ConfigDict(extra="allow")

    module = types.ModuleType("mem0.configs.vector_stores.qdrant")
    module.QdrantConfig = QdrantConfig  # type: ignore[attr-defined]
    return module


def _register_providers() -> None:
    from mem0.configs.llms.base import BaseLlmConfig
    from mem0.utils.factory import EmbedderFactory, LlmFactory, VectorStoreFactory

    EmbedderFactory.provider_to_class[ONNX_PROVIDER] = f"{__package__}.embedder.OnnxMiniLmEmbedder"
    VectorStoreFactory.provider_to_class[EDGE_PROVIDER] = f"{__package__}.edge_store.QdrantEdgeStore"
    LlmFactory.provider_to_class[NO_LLM_PROVIDER] = (f"{__name__}.NoLlm", BaseLlmConfig)


def build_memory(settings: Settings) -> Memory:
    """A ready mem0 ``Memory`` for these settings (the vector store is open: close it)."""
    config = mem0_config(settings)
    _point_mem0_at(settings.data_path / "mem0")

    with _mem0_imported_lean(settings):
        from mem0 import Memory
    from mem0.configs.base import MemoryConfig
    from mem0.embeddings.configs import EmbedderConfig
    from mem0.llms.configs import LlmConfig
    from mem0.vector_stores.configs import VectorStoreConfig

    _register_providers()
    # mem0 validates what it knows; our parts are added unvalidated (model_construct and
    # model_copy skip the provider-name check, which would otherwise run again on MemoryConfig).
    stock: dict[str, Any] = {"history_db_path": config["history_db_path"]}
    ours: dict[str, Any] = {}
    llm = config["llm"]
    if llm["provider"] == NO_LLM_PROVIDER:
        ours["llm"] = LlmConfig.model_construct(**llm)
    else:
        stock["llm"] = LlmConfig(**llm)
    vector_store = config["vector_store"]
    if vector_store["provider"] == EDGE_PROVIDER:
        ours["vector_store"] = VectorStoreConfig.model_construct(
            provider=EDGE_PROVIDER, config=EdgeStoreConfig(**vector_store["config"])
        )
    else:
        stock["vector_store"] = VectorStoreConfig(**vector_store)
    embedder = config["embedder"]
    if embedder["provider"] == ONNX_PROVIDER:
        ours["embedder"] = EmbedderConfig.model_construct(**embedder)
    else:
        stock["embedder"] = EmbedderConfig(**embedder)
    # Every part is validated above (ours by their own models); MemoryConfig has no validators
    # of its own. Constructing it without validation also keeps its default vector store config
    # (provider "qdrant") from importing qdrant-client, which slows every start-up, for nothing.
    memory_config = MemoryConfig.model_construct(**stock, **ours)
    try:
        memory = Memory(memory_config)
    except ImportError as exc:
        # mem0 imports a provider's client library only when that provider is chosen.
        raise ConfigError(
            f"embedder.provider = {settings.embedder.provider!r} / llm.provider = "
            f"{settings.llm.provider!r}: a library it needs is not installed ({exc})"
        ) from exc
    except Exception as exc:
        if vector_store["provider"] != "qdrant" or isinstance(exc, ConfigError | Unavailable):
            raise
        # mem0's qdrant store talks to the server in its constructor (it creates the collection).
        raise Unavailable(f"Qdrant at {settings.storage.qdrant_url} cannot be used: {exc}") from exc
    _tune_history_db(memory)
    if vector_store["provider"] == EDGE_PROVIDER:
        memory.vector_store.text_source = history_texts(memory)
    if vector_store["provider"] == "qdrant":
        _index_server_fields(memory.vector_store)
    return memory


def _index_server_fields(store: Any) -> None:
    """The payload indexes of the embedded store, on the server too: mem0 makes four
    (user_id, agent_id, run_id, actor_id); searches also filter on the app, project, state and
    date (``created_ts``). Asking again for an index the server has is harmless."""
    from .edge_store import DEFAULT_PAYLOAD_INDEXES

    for field, schema in DEFAULT_PAYLOAD_INDEXES.items():
        try:
            store.client.create_payload_index(
                collection_name=store.collection_name, field_name=field, field_schema=schema
            )
        except Exception as exc:  # the index exists already, or the server refuses: not fatal
            logger.debug("payload index %s not created: %s", field, exc)


def _tune_history_db(memory: Memory) -> None:
    """mem0 opens its history SQLite in rollback-journal mode with full fsync, which makes every
    write wait for the disk. WAL with NORMAL sync survives a process crash (what a
    server needs) and is the setting our own metadata database uses. ``secure_delete`` zeroes
    the pages of deleted history rows (which hold memories' old texts), as in our database."""
    with memory.db._lock:
        memory.db.connection.execute("PRAGMA journal_mode=WAL")
        memory.db.connection.execute("PRAGMA synchronous=NORMAL")
        memory.db.connection.execute("PRAGMA secure_delete=ON")
        # Texts are looked up (and purged) by memory id; mem0 indexes nothing.
        memory.db.connection.execute("CREATE INDEX IF NOT EXISTS history_memory_id ON history (memory_id)")


def history_texts(memory: Memory) -> Callable[[Sequence[str]], dict[str, str]]:
    """Memories' current texts from mem0's history: the embedded store keeps no text (see
    ``edge_store.TEXT_FIELDS``), and mem0 records every text it adds or updates there. A
    deleted memory's history is purged with it, so its text comes back from nowhere."""

    def texts(ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        history: Any = memory.db
        for start in range(0, len(ids), 500):  # SQLite's bound-parameter limit, with room
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            with history._lock:
                rows = history.connection.execute(
                    f"SELECT memory_id, new_memory FROM history WHERE memory_id IN ({marks}) "
                    "AND new_memory IS NOT NULL ORDER BY rowid",
                    chunk,
                ).fetchall()
            found.update((str(memory_id), text) for memory_id, text in rows)  # the newest wins
        return found

    return texts


class _QdrantServerErrors:
    """qdrant-client's errors for a server that is down, slow, refusing the API key or missing
    the collection, as :class:`Unavailable` (HTTP 503 at the API's edge). Other refusals (a
    request the server finds malformed) stay what they are: a bug here, not an outage."""

    _UNAVAILABLE_STATUSES = frozenset({401, 403, 404, 408, 429})

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            return
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        # The server's address goes to the log, not to API clients.
        if isinstance(exc, ResponseHandlingException):  # connection refused, timeout, bad reply
            logger.warning("Qdrant at %s cannot be reached: %s", self.url, exc)
            raise Unavailable(f"the Qdrant server cannot be reached ({exc})") from exc
        if isinstance(exc, UnexpectedResponse) and (
            exc.status_code in self._UNAVAILABLE_STATUSES or (exc.status_code or 0) >= 500
        ):
            logger.warning("Qdrant at %s answered HTTP %s: %s", self.url, exc.status_code, exc.content[:500])
            raise Unavailable(f"the Qdrant server answered HTTP {exc.status_code}") from exc


class NoLlm:
    """mem0's LLM when none is configured: nothing leaves the machine, a clear error instead."""

    def __init__(self, config: object = None) -> None:
        self.config = config

    def generate_response(self, *args: Any, **kwargs: Any) -> str:
        raise Unavailable(
            "no LLM is configured (llm.provider = 'none'): store memories with infer=False, "
            "or set llm.provider to openai, anthropic or ollama"
        )


class Engine:
    """mem0's ``Memory`` with its embedder and vector store, and helpers that work with the
    embedded store and with a Qdrant server alike."""

    def __init__(self, memory: Memory, settings: Settings) -> None:
        self.memory = memory
        self.settings = settings
        self.disk = engine_guard(self)

    @classmethod
    def open(cls, settings: Settings) -> Engine:
        return cls(build_memory(settings), settings)

    @property
    def embedder(self) -> EmbeddingBase:
        return self.memory.embedding_model

    @property
    def store(self) -> VectorStoreBase:
        return self.memory.vector_store

    @property
    def embedded(self) -> bool:
        """True when vectors live in Qdrant Edge under the data directory."""
        return not self.settings.storage.qdrant_url

    def server_errors(self) -> AbstractContextManager[None]:
        """Around every call that reaches the vector store: a Qdrant server that cannot serve
        becomes :class:`Unavailable`. (The embedded store raises our errors itself.)"""
        if self.embedded:
            return nullcontext()
        return _QdrantServerErrors(str(self.settings.storage.qdrant_url))

    def embed(self, text: str) -> list[float]:
        """The vector mem0 stores for ``text`` (cached: embedding it again is free)."""
        return self.embedder.embed(text, "add")

    def prepare_search(self) -> None:
        """Get the embedded store's exact scan ready (a Qdrant server has none)."""
        if self.embedded:
            store: Any = self.store
            store.prepare_search()

    def nearest(self, text: str, limit: int, filters: dict[str, Any]) -> list[tuple[str, float]]:
        """``(id, score)`` of the ``limit`` memories nearest to ``text`` that pass ``filters``,
        best first; the embedded store leaves the payloads out."""
        vector = self.embedder.embed(text, "search")
        store: Any = self.store
        if self.embedded:
            return store.nearest(vector, limit, filters)
        return [(str(hit.id), float(hit.score or 0.0)) for hit in store.search(text, vector, limit, filters)]

    def set_payload(self, memory_id: str, fields: dict[str, Any]) -> None:
        """Merge ``fields`` into a memory's stored payload without re-embedding it."""
        # Both our store and mem0's qdrant store merge on a payload-only update.
        self.store.update(vector_id=memory_id, vector=None, payload=fields)

    def count(self, filters: dict[str, Any] | None = None) -> int:
        store: Any = self.store
        if self.embedded:
            return int(store.count(filters))
        condition = store._create_filter(filters) if filters else None
        result = store.client.count(collection_name=store.collection_name, count_filter=condition, exact=True)
        return int(result.count)

    def point_ids(self, *, hex_form: bool = False) -> list[str]:
        """Every point's id, without payloads or vectors (for memories/lifecycle/reconcile.py);
        ``hex_form``: its 32 hex digits, the dashes left out."""
        from .edge_points import hex_of  # with the stores, as edge_store is (not at import)

        store: Any = self.store
        if self.embedded:
            return list(store.ids(hex_form=hex_form))
        found: list[str] = []
        offset: Any = None
        while True:
            points, offset = store.client.scroll(
                collection_name=store.collection_name,
                limit=SCROLL_PAGE,
                offset=offset,
                with_payload=False,
                with_vectors=False,
            )
            found.extend(hex_of(point.id) if hex_form else str(point.id) for point in points)
            if offset is None:
                return found

    def stored_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors stored for these memory ids (missing points are left out), read rather
        than embedded again; float32."""
        import numpy as np

        store: Any = self.store
        if self.embedded:
            return dict(store.vectors(ids))
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), SCROLL_PAGE):
            points = store.client.retrieve(
                collection_name=store.collection_name,
                ids=list(ids[start : start + SCROLL_PAGE]),
                with_payload=False,
                with_vectors=True,
            )
            for point in points:
                vector = point.vector
                if isinstance(vector, dict):
                    vector = next(iter(vector.values()), None)
                if vector is not None:
                    found[str(point.id)] = np.asarray(vector, dtype=np.float32)
        return found

    def flush(self) -> None:
        flush = getattr(self.store, "flush", None)
        if flush is not None:
            flush()

    def close(self) -> None:
        """Flush and release the vector stores and mem0's history database."""
        memory: Any = self.memory
        stores = [memory.vector_store, memory._entity_store]
        for store in stores:
            if store is None:
                continue
            close = getattr(store, "close", None) or getattr(getattr(store, "client", None), "close", None)
            if close is not None:
                close()
        memory.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
