"""A full disk under the data directory: 507 and a live server, never SIGBUS (issue 17, item 2).

The end-to-end test mounts a real tmpfs (it needs root, as CI has: it fails, never skips, when
the mount is refused), runs a real server on it, fills it until writes are refused, restarts on
the still-full disk and grows the disk again. The unit tests drive :class:`DiskGuard` with an
injected ``statvfs``.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from claude_code_memory.engine.disk_space import MIB, DiskGuard, decide, room_to_load, unclaimed_bytes
from claude_code_memory.errors import InsufficientStorage, error_for_status

from .support.full_disk import Tmpfs, fill_until_refused, health, listed_ids, memory_text
from .support.server import MemoryServer


def fake_statvfs(free_bytes: int, total_bytes: int = 1000 * MIB):
    block = 4096
    return lambda _path: SimpleNamespace(
        f_bavail=free_bytes // block, f_frsize=block, f_blocks=total_bytes // block
    )


# -- the rule ---------------------------------------------------------------------------------
def test_a_write_needs_the_reserve_plus_what_the_next_load_claims() -> None:
    assert decide(free=100 * MIB, reserve=64 * MIB, claimed=0)
    assert not decide(free=63 * MIB, reserve=64 * MIB, claimed=0)
    assert decide(free=96 * MIB, reserve=64 * MIB, claimed=32 * MIB)
    assert not decide(free=95 * MIB, reserve=64 * MIB, claimed=32 * MIB)
    assert decide(free=0, reserve=0, claimed=32 * MIB), "a reserve of 0 turns the check off"


def test_the_guard_refuses_with_507_flushes_once_and_accepts_again(tmp_path: Path) -> None:
    free = {"bytes": 200 * MIB}
    flushes: list[int] = []
    guard = DiskGuard(
        tmp_path,
        64 * MIB,
        claimed=lambda: 32 * MIB,
        on_refuse=lambda: flushes.append(1),
        statvfs=lambda path: fake_statvfs(free["bytes"])(path),
    )
    guard.require_room()
    assert guard.status()["writes_refused"] is False

    free["bytes"] = 90 * MIB
    for _ in range(3):
        with pytest.raises(InsufficientStorage) as refused:
            guard.require_room()
    assert refused.value.status == 507 and refused.value.code == "insufficient_storage"
    assert "90 MB free" in refused.value.message
    assert "writes need 96 MB" in refused.value.message and "min_free_disk_mb = 64" in refused.value.message
    assert flushes == [1], "the store is flushed once when refusals start, not on every refusal"
    assert guard.status() == {
        "free_mb": 90,
        "total_mb": 1000,
        "min_free_mb": 64,
        "needed_mb": 96,
        "writes_refused": True,
    }

    free["bytes"] = 150 * MIB
    guard.require_room()
    free["bytes"] = 10 * MIB
    with pytest.raises(InsufficientStorage):
        guard.require_room()
    assert flushes == [1, 1]


def test_clients_of_the_api_raise_the_same_error_for_507() -> None:
    error = error_for_status(507, "not enough disk space")
    assert isinstance(error, InsufficientStorage)


def test_holes_in_the_vector_chunks_are_what_a_load_claims(tmp_path: Path) -> None:
    chunk = tmp_path / "shard" / "segments" / "seg" / "vector_storage" / "vectors" / "chunk_0.mmap"
    chunk.parent.mkdir(parents=True)
    with chunk.open("wb") as handle:
        handle.truncate(8 * MIB)  # sparse, as Edge creates it
        handle.write(b"x" * MIB)
    allocated = os.stat(chunk).st_blocks * 512
    assert unclaimed_bytes(tmp_path / "shard") == 8 * MIB - allocated
    assert unclaimed_bytes(tmp_path / "nothing-here") == 0
    assert room_to_load(tmp_path / "shard", fake_statvfs(100 * MIB))[0]
    fits, why = room_to_load(tmp_path / "shard", fake_statvfs(2 * MIB))
    assert not fits and "2 MB free" in why


# -- the real thing ---------------------------------------------------------------------------
#: An empty data directory takes ~20 MB (Edge's payload indexes) and the first vector file claims
#: 32 MiB at the next load: what is left beyond those and the reserve is room for writes.
TMPFS_MB = 80
RESERVE_MB = 4


def test_a_full_tmpfs_answers_507_keeps_the_server_up_and_loses_nothing(tmp_path: Path) -> None:
    disk = Tmpfs(tmp_path / "disk", TMPFS_MB)
    try:
        disk.mount()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    server = MemoryServer(
        tmp_path / "work",
        data_dir=disk.path / "data",
        env={"CCMEM_PERFORMANCE__MIN_FREE_DISK_MB": str(RESERVE_MB)},
    )
    user = "filler"
    try:
        server.start()
        fill = fill_until_refused(server, disk, user=user)
        assert not fill.other_failures, f"{fill.other_failures}\n{server.log()}"
        assert fill.refusal_status == 507, f"no 507 after {len(fill.acknowledged)} writes\n{server.log()}"
        assert fill.refusal is not None and fill.refusal["error"] == "insufficient_storage"
        assert "not enough disk space" in fill.refusal["detail"]
        assert len(fill.acknowledged) >= 20, "the reserve should leave room for some writes first"

        assert server.process is not None and server.process.poll() is None, server.log()
        status = health(server)
        assert status.status_code == 200, status.text
        assert status.json()["disk"]["writes_refused"] is True
        assert listed_ids(server, user) == set(fill.acknowledged)

        # Restart on the still-full disk: it starts (no SIGBUS) and serves reads.
        assert server.stop() == -signal.SIGTERM, "stopped by our SIGTERM, not by a SIGBUS"
        server.start()
        assert listed_ids(server, user) == set(fill.acknowledged)
        with httpx.Client(base_url=server.base_url, headers=server.admin_headers(), timeout=30) as client:
            found = client.post(
                "/api/v1/memories/search", json={"user_id": user, "query": memory_text(3)[:200], "limit": 3}
            )
            assert found.status_code == 200, found.text
            refused = client.post("/api/v1/memories", json={"user_id": user, "text": memory_text(9999)})
            assert refused.status_code in (200, 507), refused.text

            disk.resize(200)
            accepted = client.post("/api/v1/memories", json={"user_id": user, "text": memory_text(10_000)})
            assert accepted.status_code == 200, accepted.text
        assert health(server).json()["disk"]["writes_refused"] is False
        assert server.process is not None and server.process.returncode != -signal.SIGBUS
    finally:
        server.stop()
        disk.unmount()
