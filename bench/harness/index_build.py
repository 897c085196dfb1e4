"""The server's out-of-process HNSW build, seen from a bench: whether a shard is due one, waiting
for it (at normal priority on request) and the build reports from the server's log."""

from __future__ import annotations

import ast
import contextlib
import os
import time
from pathlib import Path

from bench.harness.paths import ROOT
from bench.harness.server import Server


def index_builds(server: Server) -> list[dict[str, object]]:
    """The reports of the server's HNSW builds (engine/index_build.py logs each one)."""
    marker = "vector index built and swapped in: "
    text = (server.data_dir / "server.log").read_text(errors="replace")
    return [
        ast.literal_eval(line.split(marker, 1)[1].strip()) for line in text.splitlines() if marker in line
    ]


def wait_for_index(server: Server, builds_before: int, timeout: float, renice: bool) -> dict[str, object]:
    """Wait until the server has swapped in one more HNSW index than ``builds_before``.
    ``renice``: run the build's child process at the server's priority rather than ``nice 10``
    (on a machine other jobs keep busy, a niced build gets almost no CPU)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        builds = index_builds(server)
        if len(builds) > builds_before:
            return {**builds[-1], "waited_s": round(time.perf_counter() - started, 1), "reniced": renice}
        if server.process.poll() is not None:
            raise SystemExit("the server stopped while waiting for its index build")
        if renice:
            for child in _children(server.process.pid, "index_build"):
                for task in Path(f"/proc/{child}/task").glob("*"):  # nice is per thread
                    with contextlib.suppress(OSError):
                        os.setpriority(os.PRIO_PROCESS, int(task.name), 0)
        time.sleep(2)
    raise SystemExit(f"no index build within {timeout:.0f} s; see {server.data_dir / 'server.log'}")


def _children(parent: int, marker: str) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == parent and marker.encode() in command:
            found.append(int(stat.parent.name))
    return found


def shard_counts(data: Path) -> dict[str, object]:
    """The stopped server's shard opened offline: points, segments and indexed vectors."""
    from claude_code_memory.engine.edge_store import QdrantEdgeStore

    store = QdrantEdgeStore("memories", data / "vectors", 384, index_from=0)
    try:
        info = store.col_info()
        return {key: info[key] for key in ("points_count", "segments_count", "indexed_vectors_count")}
    finally:
        store.close()


def build_due(counts: dict[str, object]) -> bool:
    """Whether a server opening a shard with these counts (:func:`shard_counts`) will build its
    HNSW index (engine/index_build.py: from ``storage.vector_index_from`` points, when a fifth
    of them are outside the index)."""
    from claude_code_memory.config import load_settings
    from claude_code_memory.engine.index_build import UNINDEXED_SHARE

    index_from = load_settings(ROOT / "config.yaml").storage.vector_index_from
    points, indexed = int(counts["points_count"]), int(counts["indexed_vectors_count"])  # type: ignore[call-overload]
    return 0 < index_from <= points and points - indexed >= UNINDEXED_SHARE * points
