"""The vector index built in another process and swapped in (engine/index_build.py): the swap is
crash-safe (a real process killed with SIGKILL at each step, and the states between the two
renames), writes made during a build survive it, and searches answer from the new shard."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claude_code_memory.engine import shard_copy
from claude_code_memory.engine.edge_store import QdrantEdgeStore
from claude_code_memory.engine.index_build import IndexBuilder

ROOT = Path(__file__).resolve().parent.parent
VICTIM = ROOT / "tests" / "support" / "index_build_victim.py"
DIMS = 8
POINTS = 1500

pytestmark = pytest.mark.integration


def _vector(rng: random.Random) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(DIMS)]


def _run_until(path: Path, step: str, *, more_writes: int) -> tuple[set[str], str]:
    """Run the victim until it pauses after ``step`` of the build and ``more_writes`` writes
    were acknowledged after that; kill it with SIGKILL there. Returns the ids acknowledged
    before the kill and the output."""
    marker = f"index build: {step}"
    env = {**os.environ, "CCMEM_INDEX_BUILD_PAUSE": f"{step}:60", "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, str(VICTIM), str(path), str(POINTS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    acked: set[str] = set()
    seen = []
    deadline = time.monotonic() + 120
    try:
        assert process.stdout is not None
        for line in process.stdout:
            seen.append(line)
            if line.startswith("acked "):
                acked.add(line.split()[1])
            if marker in line:
                # Let a few more writes land inside the step (none can while the catch-up
                # holds the store's lock), then kill.
                after = 0
                for more in process.stdout if more_writes else []:
                    if more.startswith("acked "):
                        acked.add(more.split()[1])
                        after += 1
                        if after >= more_writes:
                            break
                break
            assert time.monotonic() < deadline, "".join(seen[-20:])
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    assert any(marker in line for line in seen), "".join(seen[-20:])
    return acked, "".join(seen)


@pytest.mark.parametrize(("step", "more_writes"), [("copied", 3), ("indexed", 3), ("caught-up", 0)])
def test_a_kill_during_a_build_leaves_a_working_store(tmp_path: Path, step: str, more_writes: int) -> None:
    acked, output = _run_until(tmp_path, step, more_writes=more_writes)
    assert acked, output
    store = QdrantEdgeStore("memories", tmp_path, DIMS)
    try:
        store.index.index_from = 10**9
        # Every acknowledged write is there, nothing was lost or duplicated, and it searches.
        missing = [point_id for point_id in acked if store.get(point_id) is None]
        assert not missing, (step, len(missing), len(acked))
        assert store.count() >= POINTS + len(acked)
        assert len(store.nearest(_vector(random.Random(1)), 5, {"user_id": "u"})) == 5
    finally:
        store.close()
    # The half-made copy is gone; nothing but the shard is left beside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memories"]


def _two_shards(tmp_path: Path) -> tuple[Path, set[str], set[str]]:
    """A live shard and an indexed copy that holds one point more (as after a catch-up)."""
    rng = random.Random(3)
    store = QdrantEdgeStore("memories", tmp_path, DIMS)
    store.index.index_from = 10**9
    old = set(store.insert([_vector(rng) for _ in range(50)], [{"user_id": "u"}] * 50))
    store.close()
    copy_path, _ = shard_copy.beside(store.shard_path, "index")
    shutil.copytree(store.shard_path, copy_path)
    copy = QdrantEdgeStore("memories.index-copy", tmp_path, DIMS)
    new = set(copy.insert([_vector(rng)], [{"user_id": "u"}]))
    copy.close()
    return store.shard_path, old, new


def test_a_kill_between_the_renames_puts_the_old_shard_back(tmp_path: Path) -> None:
    shard_path, old, new = _two_shards(tmp_path)
    _, retired = shard_copy.beside(shard_path, "index")
    shard_path.rename(retired)  # the first rename happened, the second did not
    store = QdrantEdgeStore("memories", tmp_path, DIMS)
    try:
        assert {store.get(i) is not None for i in old} == {True}
        assert all(store.get(i) is None for i in new)  # the copy was dropped, the old shard is back
    finally:
        store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memories"]


def test_a_kill_after_the_renames_keeps_the_complete_copy(tmp_path: Path) -> None:
    shard_path, old, new = _two_shards(tmp_path)
    copy_path, retired = shard_copy.beside(shard_path, "index")
    shard_path.rename(retired)
    copy_path.rename(shard_path)  # both renames happened; the old one was not removed yet
    store = QdrantEdgeStore("memories", tmp_path, DIMS)
    try:
        assert all(store.get(i) is not None for i in old | new)
    finally:
        store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memories"]


def test_a_build_indexes_the_shard_and_keeps_the_writes_made_meanwhile(tmp_path: Path) -> None:
    rng = random.Random(9)
    store = QdrantEdgeStore("memories", tmp_path, DIMS)
    try:
        store.index.index_from = 10**9
        kept = store.insert([_vector(rng) for _ in range(300)], [{"user_id": "u"}] * 300)
        doomed = kept[:5]
        builder = IndexBuilder(store)
        # Writes between the copy and the swap: what the catch-up must carry over.
        original = builder._index_in_child

        def child_with_writes(copy_path: Path) -> dict:
            result = original(copy_path)
            for point_id in doomed:
                store.delete(point_id)
            store.update(kept[10], payload={"edited": True})
            added.extend(store.insert([_vector(rng)], [{"user_id": "u"}]))
            return result

        added: list[str] = []
        builder._index_in_child = child_with_writes  # type: ignore[method-assign]
        report = builder.build()
        assert report["caught_up"] == len(doomed) + 2
        assert report["child"]["points"] == 300
        assert store.count() == 300 - len(doomed) + 1
        assert all(store.get(i) is None for i in doomed)
        edited = store.get(kept[10])
        assert edited is not None and edited.payload["edited"] is True
        assert store.get(added[0]) is not None
        assert len(store.nearest(_vector(rng), 10, {"user_id": "u"})) == 10
    finally:
        store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memories"]


def test_a_shard_replaced_during_a_build_is_not_swapped_back(tmp_path: Path) -> None:
    rng = random.Random(11)
    store = QdrantEdgeStore("memories", tmp_path, DIMS)
    try:
        store.index.index_from = 10**9
        store.insert([_vector(rng) for _ in range(100)], [{"user_id": "u"}] * 100)
        builder = store.index
        original = builder._index_in_child

        def child_then_reset(copy_path: Path) -> dict:
            result = original(copy_path)
            store.reset()  # every point deleted while the copy was being indexed
            return result

        builder._index_in_child = child_then_reset  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="replaced"):
            builder.build()
        assert store.count() == 0  # the indexed copy of the old points did not come back
    finally:
        store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memories"]


def test_when_a_build_is_due_and_the_setting_that_turns_it_off(tmp_path: Path) -> None:
    from claude_code_memory.config import load_settings
    from claude_code_memory.engine.factory import mem0_config

    builder = IndexBuilder(QdrantEdgeStore("memories", tmp_path, DIMS, index_from=10**9), index_from=20_000)
    try:
        assert not builder.due(19_999, 0) and builder.due(20_000, 0)
        assert builder.due(100_000, 79_000) and not builder.due(100_000, 81_000)  # a fifth unindexed
        assert not IndexBuilder(builder.store, index_from=0).due(10**6, 0)
    finally:
        builder.store.close()
    (tmp_path / "config.yaml").write_text(f"server:\n  data_dir: {tmp_path}\n")
    environ = {"CCMEM_STORAGE__VECTOR_INDEX_FROM": "0"}
    settings = load_settings(config_path=tmp_path / "config.yaml", environ=environ)
    assert mem0_config(settings)["vector_store"]["config"]["index_from"] == 0
