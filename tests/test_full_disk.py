"""A full disk under the data directory: 507 and a live server, never SIGBUS.

The end-to-end test mounts a real tmpfs (it needs root, as CI has: it fails, never skips, when
the mount is refused), runs a real server on it, fills it until writes are refused (over REST,
then once over MCP), restarts it on a disk filled further than the vector store's load fits (it
serves from SQL alone) and grows the disk again. The unit tests drive :class:`DiskGuard` with an
injected ``statvfs``.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace

import anyio
import httpx
import pytest

from claude_code_memory.engine.disk_space import (
    MIB,
    SQLITE_WAL_BYTES,
    WRITE_COPIES,
    DiskGuard,
    decide,
    room_to_load,
    unclaimed_bytes,
    write_reserve,
)
from claude_code_memory.errors import InsufficientStorage, error_for_status

from .support.full_disk import LoopExt4, Tmpfs, fill_until_refused, health, listed_ids, memory_text
from .support.server import MemoryServer
from .test_mcp import connect, failed


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
        "reserve": {"write_mb": 64.0, "next_load_mb": 32.0, "basis": "performance.min_free_disk_mb"},
    }

    free["bytes"] = 150 * MIB
    guard.require_room()
    free["bytes"] = 10 * MIB
    with pytest.raises(InsufficientStorage):
        guard.require_room()
    assert flushes == [1, 1]


def test_the_holes_are_counted_again_after_a_second_or_when_space_runs_short(tmp_path: Path) -> None:
    """Counting them stats every segment file; on a roomy disk a count a second old will do."""
    free, now, counts = {"bytes": 2000 * MIB}, {"s": 0.0}, []

    def claimed() -> int:
        counts.append(1)
        return 32 * MIB

    guard = DiskGuard(
        tmp_path,
        64 * MIB,
        claimed=claimed,
        statvfs=lambda path: fake_statvfs(free["bytes"], 4000 * MIB)(path),
        clock=lambda: now["s"],
    )
    for _ in range(5):
        guard.require_room()
    assert len(counts) == 1
    now["s"] = 1.5
    guard.require_room()
    assert len(counts) == 2
    free["bytes"] = 300 * MIB  # less than reserve + holes + CLAIMED_MARGIN: count every time
    guard.require_room()
    guard.require_room()
    assert len(counts) == 4


def test_the_reserve_is_what_the_largest_request_can_add_unless_it_is_set() -> None:
    assert write_reserve(2_000_000) == WRITE_COPIES * 2_000_000 + SQLITE_WAL_BYTES
    assert write_reserve(2_000_000) < 16 * MIB, "a 30 MB volume must have room left for writes"
    assert write_reserve(10_000_000) > write_reserve(2_000_000)
    assert write_reserve(2_000_000, 64) == 64 * MIB and write_reserve(2_000_000, 0) == 0


def test_clients_of_the_api_raise_the_same_error_for_507() -> None:
    error = error_for_status(507, "not enough disk space")
    assert isinstance(error, InsufficientStorage)


def test_a_load_claims_the_holes_of_every_segment_file_it_reads(tmp_path: Path) -> None:
    shard = tmp_path / "shard"
    segment = shard / "segments" / "seg"

    def sparse(relative: str, size: int, filled: int = 0) -> int:
        file = segment / relative if not relative.startswith("/") else shard / relative[1:]
        file.parent.mkdir(parents=True, exist_ok=True)
        with file.open("wb") as handle:
            handle.truncate(size)  # sparse, as Edge creates it
            handle.write(b"x" * filled)
        return size - os.stat(file).st_blocks * 512

    claimed = sparse("vector_storage/vectors/chunk_0.mmap", 8 * MIB, MIB)
    claimed += sparse("payload_index/abc-user_id-map/page_0.dat", 4 * MIB)
    claimed += sparse("payload_index/abc-user_id-map/tracker.dat", MIB, 4096)
    claimed += sparse("vector_storage/deleted/flags_a.dat", MIB, MIB // 2)
    # Read only as writes reach them, never at load: not counted.
    sparse("payload_storage/page_0.dat", 32 * MIB, 4096)
    sparse("/wal/open-1", 32 * MIB, 4096)

    assert unclaimed_bytes(shard) == claimed
    assert unclaimed_bytes(tmp_path / "nothing-here") == 0
    assert room_to_load(shard, fake_statvfs(100 * MIB))[0]
    fits, why = room_to_load(shard, fake_statvfs(2 * MIB))
    assert not fits and "2 MB free" in why and "not loaded" in why


# -- the real thing ---------------------------------------------------------------------------
#: An empty data directory takes ~20 MB, and the first load claims ~45 MB for the payload
#: indexes and 32 MiB for the first vector file (docs/disk-space.md): what is left beyond
#: those and the reserve is room for writes.
TMPFS_MB = 112
RESERVE_MB = 4
#: Free space a ballast leaves before the last restart: enough for SQLite, too little to load.
BALLAST_LEAVES_MB = 6


@pytest.mark.integration  # starts its own server on a tmpfs it mounts
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
        token = server.make_token(user)
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

        async def add_over_mcp() -> str:
            async with connect(server, "http", user, token) as session:
                return failed(await session.call_tool("add_memories", {"text": memory_text(7777)}))

        assert "not enough disk space" in anyio.run(add_over_mcp), "an MCP tool error the model can read"
        assert listed_ids(server, user) == set(fill.acknowledged)

        # Restart on a disk someone else filled further: too little is left to load the vector
        # store (its first load claims more than it held). The server starts without it.
        assert server.stop() == -signal.SIGTERM, "stopped by our SIGTERM, not by a SIGBUS"
        disk.fill_to(BALLAST_LEAVES_MB)
        server.start(degraded=True)
        status = health(server)
        assert status.status_code == 503, status.text
        assert "not loaded" in status.json()["vector_store"] and status.json()["disk"]["writes_refused"]
        assert listed_ids(server, user) == set(fill.acknowledged)
        with httpx.Client(base_url=server.base_url, headers=server.admin_headers(), timeout=30) as client:
            keyword = client.get("/api/v1/memories", params={"user_id": user, "search_query": "note 3:"})
            assert keyword.status_code == 200, keyword.text
            assert [item["id"] for item in keyword.json()["items"]] == [fill.acknowledged[3]]
            query = {"user_id": user, "query": memory_text(3)[:200], "limit": 3}
            meaning = client.post("/api/v1/memories/search", json=query)
            assert meaning.status_code == 503 and "free some space" in meaning.json()["detail"], meaning.text
            refused = client.post("/api/v1/memories", json={"user_id": user, "text": memory_text(9999)})
            assert refused.status_code == 507, refused.text

            # The disk grows: the vector store loads on the next use, writes work again.
            disk.resize(TMPFS_MB + 200)
            accepted = client.post("/api/v1/memories", json={"user_id": user, "text": memory_text(10_000)})
            assert accepted.status_code == 200, accepted.text
            meaning = client.post("/api/v1/memories/search", json=query)
            assert meaning.status_code == 200, meaning.text
            found = {item["id"] for item in meaning.json()["results"]}
            assert len(found) == 3 and found <= {*fill.acknowledged, accepted.json()["id"]}, found
        status = health(server)
        assert status.status_code == 200 and status.json()["disk"]["writes_refused"] is False, status.text
        assert listed_ids(server, user) == {*fill.acknowledged, accepted.json()["id"]}
        assert server.process is not None and server.process.poll() is None, server.log()
        assert server.stop() == -signal.SIGTERM, server.log()
    finally:
        server.stop()
        disk.unmount()


#: A small volume that an outside audit found refusing every write (the guard wanted 105-137 MB free).
SMALL_VOLUME_MB = 30


@pytest.mark.integration  # starts its own server on an ext4 volume it loop-mounts
def test_a_30_mb_ext4_volume_takes_writes_and_refuses_with_507_when_full(tmp_path: Path) -> None:
    """On ext4 a load claims no block for the holes, and the reserve is what one request can
    add: a 30 MB volume stores memories, then refuses with 507, keeps all, and restarts."""
    disk = LoopExt4(tmp_path / "disk", SMALL_VOLUME_MB)
    try:
        disk.mount()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    server = MemoryServer(tmp_path / "work", data_dir=disk.path / "data")
    user = "small"
    try:
        server.start()
        reserve = health(server).json()["disk"]["reserve"]
        assert reserve["next_load_mb"] == 0, reserve
        assert reserve["write_mb"] < 16 and "max_body_bytes" in reserve["basis"], reserve
        fill = fill_until_refused(server, disk, user=user)
        assert not fill.other_failures, f"{fill.other_failures}\n{server.log()}"
        assert len(fill.acknowledged) >= 50, f"{len(fill.acknowledged)} writes\n{server.log()}"
        assert fill.refusal_status == 507 and fill.refusal is not None, server.log()
        assert "not enough disk space" in fill.refusal["detail"]
        assert health(server).json()["disk"]["writes_refused"] is True
        assert listed_ids(server, user) == set(fill.acknowledged)
        assert server.stop() == -signal.SIGTERM, "stopped by our SIGTERM, not by a SIGBUS"
        server.start()
        assert listed_ids(server, user) == set(fill.acknowledged)
        with httpx.Client(base_url=server.base_url, headers=server.admin_headers(), timeout=30) as client:
            query = {"user_id": user, "query": memory_text(3)[:200], "limit": 1}
            found = client.post("/api/v1/memories/search", json=query)
            assert found.status_code == 200, found.text
            assert [hit["id"] for hit in found.json()["results"]][0] in fill.acknowledged, found.text
        assert server.stop() == -signal.SIGTERM, server.log()
    finally:
        server.stop()
        disk.unmount()
