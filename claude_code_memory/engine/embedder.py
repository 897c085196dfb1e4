"""all-MiniLM-L6-v2 as int8 ONNX on onnxruntime, offline, as a mem0 embedder.

The model files, their pins and the onnxruntime session live in :mod:`.onnx_model`.

The ONNX graph returns one 384-d vector per token; a sentence embedding is the mean over the
real (unpadded) tokens, L2-normalised, as sentence-transformers does for this model.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np
from mem0.configs.embeddings.base import BaseEmbedderConfig
from mem0.embeddings.base import EmbeddingBase
from tokenizers import Tokenizer

from ..errors import BadInput, ConfigError
from .onnx_model import (
    TOKENIZER_SHA256,
    default_model_path,
    default_threads,
    default_tokenizer_path,
    load_session,
    verify_file,
)

MODEL_NAME = "all-MiniLM-L6-v2"
DIMS = 384
#: sentence-transformers' ``max_seq_length`` for this model; tokenizer.json itself says 128.
MAX_TOKENS = 256
DEFAULT_CACHE_SIZE = 4096
#: The texts of one batch run this many at a time, each on its own thread (a run uses one core
#: and releases the interpreter): a batch write's embeddings use every core of a small machine.
BATCH_THREADS = max(1, min(2, os.cpu_count() or 1))
#: How long :meth:`OnnxMiniLmEmbedder.prefetch` waits for its run to reach the model (a pool
#: busy with a batch takes longer, and then the caller goes on without waiting).
PREFETCH_HANDOFF_SECONDS = 0.002


class _Prefetch:
    """A text :meth:`OnnxMiniLmEmbedder.prefetch` started: its vector to come (``future``), and
    the pool's job that computes it (``job``, set once submitted)."""

    def __init__(self) -> None:
        self.future: Future[np.ndarray] = Future()
        self.job: Future[None] | None = None
        #: Whether a caller took the run over from the queued job (cancelled).
        self.taken = False


class OnnxMiniLmEmbedder(EmbeddingBase):
    """A mem0 embedder: ``embed(text) -> list[float]`` (384 floats, unit length).

    ``config`` is mem0's :class:`BaseEmbedderConfig`; when mem0's factory builds the embedder
    it can carry ``model_kwargs`` with ``cache_size``, ``model_path``, ``tokenizer_path`` and
    ``threads``; keyword arguments win over those. ``cache_size=0`` turns the cache off.
    Thread-safe: onnxruntime sessions and tokenizers may be shared between threads and the
    cache has its own lock.
    """

    def __init__(
        self,
        config: BaseEmbedderConfig | None = None,
        *,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        cache_size: int | None = None,
        threads: int | None = None,
    ) -> None:
        super().__init__(config)
        options: dict[str, Any] = dict(self.config.model_kwargs or {})
        if self.config.embedding_dims not in (None, DIMS):
            raise ConfigError(
                f"embedder.dims = {self.config.embedding_dims!r}: {MODEL_NAME} produces {DIMS} dimensions"
            )
        self.config.model = self.config.model or MODEL_NAME
        self.config.embedding_dims = DIMS

        model = Path(model_path or options.get("model_path") or default_model_path())
        tokenizer_file = Path(tokenizer_path or options.get("tokenizer_path") or default_tokenizer_path())
        verify_file(tokenizer_file, TOKENIZER_SHA256)

        if threads is None:
            threads = int(options.get("threads") or default_threads())
        self._session = load_session(model, threads)  # verifies the model file
        self._input_names = {item.name for item in self._session.get_inputs()}

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        # tokenizer.json ships with truncation at 128 and fixed padding to 128; the model was
        # trained with 256 and padding to the longest text in a batch is all we need.
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

        if cache_size is None:
            cache_size = int(options.get("cache_size", DEFAULT_CACHE_SIZE))
        self._cache_size = max(0, cache_size)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        #: Texts being embedded by :meth:`prefetch`, until their vector is in the cache.
        self._running: dict[str, _Prefetch] = {}
        self.cache_hits = 0
        self.cache_misses = 0
        #: Runs started by :meth:`prefetch`.
        self.prefetches = 0

    # -- mem0 interface -------------------------------------------------------------------
    def embed(
        self, text: str, memory_action: Literal["add", "search", "update"] | None = None
    ) -> list[float]:
        """The embedding of one text; ``memory_action`` is accepted for mem0 and ignored."""
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str], memory_action: str | None = "add") -> list[list[float]]:
        """One embedding per text, in order; each uncached text runs through the model once."""
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise BadInput(f"only text can be embedded, got {type(text).__name__}")
        found: dict[str, np.ndarray] = {}
        if self._cache_size:
            with self._cache_lock:
                for text in texts:
                    vector = self._cache.get(text)
                    if vector is not None:
                        self._cache.move_to_end(text)
                        found[text] = vector
                self.cache_hits += sum(1 for text in texts if text in found)
        missing = list(dict.fromkeys(text for text in texts if text not in found))
        if missing and self._running:
            with self._cache_lock:
                started = {text: self._running[text] for text in missing if text in self._running}
            for text, prefetch in started.items():
                found[text] = self._collect(text, prefetch)
            missing = [text for text in missing if text not in found]
        if missing:
            # One text a run: the int8 model quantizes each run's activations with one scale,
            # so in a batch a text's vector would depend on the texts (and padding) beside it.
            # Batching gained little on 2 cores with the float model anyway (docs/search.md,
            # "Measurements behind the code's choices").
            fresh = dict(zip(missing, self._run_each(missing), strict=True))
            found.update(fresh)
            self._remember(fresh)
        return [found[text].tolist() for text in texts]

    def prefetch(self, text: str) -> None:
        """Start embedding ``text`` on another thread and return at once: a write calls this
        before its database work, so the model runs on the other core meanwhile. An
        :meth:`embed` of the text waits for this run (and its vector is cached) instead of
        running the model again. Does nothing when the text is cached, already running, or
        the cache is off (the vector would have nowhere to go)."""
        if not self._cache_size or not isinstance(text, str):
            return
        with self._cache_lock:
            if text in self._cache or text in self._running:
                return
            prefetch = _Prefetch()
            self._running[text] = prefetch
            self.prefetches += 1
        future = prefetch.future
        entered = threading.Event()
        try:
            prefetch.job = self._executor().submit(self._prefetched, text, future, entered)
        except BaseException as exc:  # a pool shut down: the text is embedded when asked for
            self._settle(text, future, exc)
            return
        # Until the run is inside the model, which lets go of the interpreter: from there it
        # runs beside the caller's Python work. Started later, it would wait for the
        # interpreter until the caller blocks (measured: no overlap at all with ORM work).
        entered.wait(PREFETCH_HANDOFF_SECONDS)

    def _prefetched(self, text: str, future: Future[np.ndarray], entered: threading.Event) -> None:
        try:
            vector = self._run([text], entered)[0]
        except BaseException as exc:  # the waiter gets the error (and may try again)
            self._settle(text, future, exc)
        else:
            self._remember({text: vector})
            self._settle(text, future, vector)

    def _collect(self, text: str, prefetch: _Prefetch) -> np.ndarray:
        """A prefetched text's vector: its run's result, or when the run is still queued behind
        others (a batch on the pool), the text run here and now instead of waiting for them."""
        with self._cache_lock:  # one caller takes a queued run over; the others wait for it
            job = prefetch.job
            mine = job is not None and not prefetch.taken and job.cancel()
            prefetch.taken = prefetch.taken or mine
        if not mine:
            return prefetch.future.result()  # running or done: its run ends in the cache
        try:
            vector = self._run([text])[0]
        except BaseException as exc:
            self._settle(text, prefetch.future, exc)
            raise
        self._remember({text: vector})
        self._settle(text, prefetch.future, vector)
        return vector

    def _settle(self, text: str, future: Future[np.ndarray], outcome: np.ndarray | BaseException) -> None:
        with self._cache_lock:
            self._running.pop(text, None)
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    # -- internals --------------------------------------------------------------------------
    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(BATCH_THREADS, thread_name_prefix="embed")
            return self._pool

    def _run_each(self, texts: list[str]) -> list[np.ndarray]:
        """Each text alone through the model, :data:`BATCH_THREADS` at a time."""
        if len(texts) < 2 or BATCH_THREADS < 2:
            return [self._run([text])[0] for text in texts]
        return list(self._executor().map(lambda text: self._run([text])[0], texts))

    def _run(self, texts: list[str], entered: threading.Event | None = None) -> np.ndarray:
        """The texts through the model in one run; ``entered`` is set as the run starts."""
        encodings = self._tokenizer.encode_batch(texts)
        input_ids = np.array([item.ids for item in encodings], dtype=np.int64)
        attention = np.array([item.attention_mask for item in encodings], dtype=np.int64)
        feeds = {"input_ids": input_ids, "attention_mask": attention}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        if entered is not None:
            entered.set()
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        mask = attention[:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def _remember(self, vectors: dict[str, np.ndarray]) -> None:
        with self._cache_lock:
            self.cache_misses += len(vectors)
            if not self._cache_size:
                return
            for text, vector in vectors.items():
                self._cache[text] = vector
                self._cache.move_to_end(text)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
