"""The memory engine: mem0's ``Memory`` on an offline embedder and an embedded vector store.

    OnnxMiniLmEmbedder   all-MiniLM-L6-v2 (int8 ONNX) as a mem0 embedder      (embedder.py)
    QdrantEdgeStore      Qdrant Edge, in process, as a mem0 vector store      (edge_store.py)
    edge_filter          mem0 filter dicts → Qdrant Edge filters              (filters.py)
    build_memory/Engine  the composition of the above from ``Settings``       (factory.py)

Importing this package sets the environment variables that keep mem0 and onnxruntime from
phoning home and mem0 out of ``~/.mem0``. Both libraries read them once, when first imported
(importing *any* ``mem0.*`` module runs mem0's package ``__init__``, which writes
``$MEM0_DIR/config.json``), so this must run before the first ``import mem0`` in the process:
import mem0 only through this package. :func:`build_memory` points ``MEM0_DIR`` at
``<data_dir>/mem0`` before it imports mem0; until then a per-user temporary directory stands in,
so a test or tool that imports a submodule first still writes nothing under ``~``. The public
names are loaded lazily: importing the package imports neither mem0 nor onnxruntime.
"""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Any

# mem0 sends PostHog events and fetches a notice config from GitHub unless this is false.
os.environ["MEM0_TELEMETRY"] = "False"
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
# mem0 keeps nothing we need in MEM0_DIR once telemetry is off (a random id, notice state), but
# it writes there at import time; never let that be the home directory.
os.environ.setdefault("MEM0_DIR", os.path.join(tempfile.gettempdir(), f"ccmem-mem0-{os.getuid()}"))

if TYPE_CHECKING:
    from .edge_store import QdrantEdgeStore
    from .embedder import OnnxMiniLmEmbedder
    from .factory import Engine, build_memory, mem0_config

__all__ = ["Engine", "OnnxMiniLmEmbedder", "QdrantEdgeStore", "build_memory", "mem0_config"]

_LAZY = {
    "Engine": "factory",
    "build_memory": "factory",
    "mem0_config": "factory",
    "OnnxMiniLmEmbedder": "embedder",
    "QdrantEdgeStore": "edge_store",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
