"""Fault: the data directory's disk fills up. Needs root (it mounts a tmpfs).

    python -m bench.faults.full_disk [--size-mb 112] [--reserve-mb 4] [--rounds 1]

Each round: a real server on a fresh tmpfs is filled with ~10 KB memories over REST until it
answers 507; it is stopped by its PID, a ballast file fills the disk to a few MB free (too little
to load the vector store) and the server is started again; stopped again, the ballast goes and
it starts on the disk as the fill left it; then the tmpfs is grown and one more write is made.
Prints one JSON object: writes acknowledged, writes lost after the restarts (must be 0), crashes
(the server died, was stopped by anything but our SIGTERM, or did not start again: must be 0),
the free space at the first 507, and whether each start-up on the full disk served the memories.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
from pathlib import Path

import httpx

from tests.support.full_disk import Tmpfs, fill_until_refused, health, listed_ids, memory_text
from tests.support.server import MemoryServer

#: Free space the ballast leaves before the last start-up on the full disk.
BALLAST_LEAVES_MB = 6


def restart(
    server: MemoryServer, disk: Tmpfs, user: str, acknowledged: set[str], *, ballast: bool = False
) -> dict[str, object]:
    """Stop by PID (then fill the disk with a ballast file), start again; what the start-up served."""
    exit_code = server.stop()
    if ballast:
        disk.fill_to(BALLAST_LEAVES_MB)
    figures: dict[str, object] = {
        "exit_code_on_stop": exit_code,
        "free_mb_at_start": round(disk.free_mb(), 1),
    }
    try:
        server.start(degraded=True)
    except RuntimeError as exc:
        return figures | {"ok": False, "error": str(exc)[-500:], "writes_lost": None}
    status = health(server).json()
    lost = len(acknowledged - listed_ids(server, user))
    return figures | {
        "ok": lost == 0,
        "writes_lost": lost,
        "vector_store": status["vector_store"],
        "writes_refused": status["disk"]["writes_refused"],
    }


def one_round(root: Path, size_mb: int, reserve_mb: int, seed: int) -> dict[str, object]:
    disk = Tmpfs(root / "disk", size_mb).mount()
    reserve = {"CCMEM_PERFORMANCE__MIN_FREE_DISK_MB": str(reserve_mb)}
    server = MemoryServer(root / "work", data_dir=disk.path / "data", env=reserve)
    user = "filler"
    figures: dict[str, object] = {}
    try:
        server.start()
        fill = fill_until_refused(server, disk, user=user, seed=seed)
        free_at_507 = fill.free_mb_at_refusal
        figures |= {
            "writes_acknowledged": len(fill.acknowledged),
            "free_mb_at_first_507": None if free_at_507 is None else round(free_at_507, 1),
            "other_failures": fill.other_failures,
        }
        acknowledged = set(fill.acknowledged)
        # Behind the ballast first: the store has not loaded since the fill, so its load claims
        # more than is free and the server must start without it.
        behind_ballast = restart(server, disk, user, acknowledged, ballast=True)
        (disk.path / "ballast").unlink()
        as_left = restart(server, disk, user, acknowledged) if behind_ballast["ok"] else None
        starts = [start for start in (behind_ballast, as_left) if start is not None]
        figures |= {"startup_behind_ballast": behind_ballast, "startup_as_left": as_left}
        figures["writes_lost_after_restart"] = max(int(start["writes_lost"] or 0) for start in starts)
        if as_left is not None and as_left["ok"]:
            disk.resize(size_mb + 200)
            with httpx.Client(base_url=server.base_url, headers=server.admin_headers(), timeout=30) as client:
                after = client.post("/api/v1/memories", json={"user_id": user, "text": memory_text(99_999)})
            figures["write_after_growing_disk"] = after.status_code
            figures["writes_lost_after_growing_disk"] = len(acknowledged - listed_ids(server, user))
        figures["startup_on_full_disk_ok"] = all(start["ok"] for start in starts) and len(starts) == 2
        # A server that died is reaped by the next stop with its signal (SIGBUS: -7), not ours.
        stops = [start["exit_code_on_stop"] for start in starts] + [server.stop()]
        failed_starts = sum(1 for start in starts if start.get("error"))
        figures["crashes"] = failed_starts + sum(1 for code in stops if code not in (-signal.SIGTERM, None))
        return figures
    finally:
        server.stop()
        disk.unmount()


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument(
        "--size-mb",
        type=int,
        default=112,
        help="tmpfs size (the first load claims ~100 MB: docs/disk-space.md)",
    )
    parser.add_argument("--reserve-mb", type=int, default=4, help="performance.min_free_disk_mb")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    rounds = []
    for seed in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="ccmem-full-disk-") as root:
            rounds.append(one_round(Path(root), args.size_mb, args.reserve_mb, seed))
    summary = {
        "size_mb": args.size_mb,
        "reserve_mb": args.reserve_mb,
        "writes_acknowledged": sum(int(r.get("writes_acknowledged") or 0) for r in rounds),
        "writes_lost_after_restart": sum(int(r.get("writes_lost_after_restart") or 0) for r in rounds),
        "crashes": sum(int(r.get("crashes") or 0) for r in rounds),
        "free_mb_at_first_507": [r.get("free_mb_at_first_507") for r in rounds],
        "startup_on_full_disk_ok": all(r.get("startup_on_full_disk_ok") for r in rounds),
        "rounds": rounds,
    }
    print(json.dumps(summary, indent=2))
    ok = (
        summary["crashes"] == 0
        and summary["writes_lost_after_restart"] == 0
        and summary["startup_on_full_disk_ok"]
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
