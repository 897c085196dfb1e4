"""Fault: the data directory's disk fills up (issue 17, item 2). Needs root (it mounts a tmpfs).

    python bench/fault_full_disk.py [--size-mb 80] [--reserve-mb 4] [--rounds 1]

Each round: a real server on a fresh tmpfs is filled with ~10 KB memories over REST until it
answers 507; it is stopped by its PID and started again on the still-full disk; the tmpfs is
grown and one more write is made. Prints one JSON object: writes acknowledged, writes lost after
the restart (must be 0), crashes (the server died, or did not start again: must be 0), and the
fill level of the disk at the first 507.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.full_disk import Tmpfs, fill_until_refused, listed_ids, memory_text  # noqa: E402
from tests.support.server import MemoryServer  # noqa: E402


def one_round(root: Path, size_mb: int, reserve_mb: int, seed: int) -> dict[str, object]:
    disk = Tmpfs(root / "disk", size_mb).mount()
    reserve = {"CCMEM_PERFORMANCE__MIN_FREE_DISK_MB": str(reserve_mb)}
    server = MemoryServer(root / "work", data_dir=disk.path / "data", env=reserve)
    user = "filler"
    crashes = 0
    figures: dict[str, object] = {}
    free_at_507 = None
    try:
        server.start()
        fill = fill_until_refused(server, disk, user=user, seed=seed)
        if server.process is None or server.process.poll() is not None:
            crashes += 1
        free_at_507 = fill.free_mb_at_refusal
        figures |= {
            "writes_acknowledged": len(fill.acknowledged),
            "first_507_fill_percent": None
            if free_at_507 is None
            else round(100 - 100 * free_at_507 / size_mb, 1),
            "free_mb_at_first_507": None if free_at_507 is None else round(free_at_507, 1),
            "other_failures": fill.other_failures,
        }
        exit_code = server.stop()
        figures["exit_code_on_stop"] = exit_code
        try:
            server.start()
        except RuntimeError as exc:
            crashes += 1
            figures["restart_error"] = str(exc)[-500:]
            figures |= {"writes_lost_after_restart": None, "crashes": crashes}
            return figures
        figures["free_mb_after_restart"] = round(disk.free_mb(), 1)
        figures["writes_lost_after_restart"] = len(set(fill.acknowledged) - listed_ids(server, user))
        disk.resize(size_mb + 200)
        with httpx.Client(base_url=server.base_url, headers=server.admin_headers(), timeout=30) as client:
            after = client.post("/api/v1/memories", json={"user_id": user, "text": memory_text(99_999)})
        figures["write_after_growing_disk"] = after.status_code
        if server.process is None or server.process.poll() is not None:
            crashes += 1
        figures["crashes"] = crashes
        return figures
    finally:
        server.stop()
        disk.unmount()


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--size-mb", type=int, default=80, help="tmpfs size (an empty data dir takes ~20 MB)")
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
        "rounds": rounds,
    }
    print(json.dumps(summary, indent=2))
    sys.exit(0 if summary["crashes"] == 0 and summary["writes_lost_after_restart"] == 0 else 1)


if __name__ == "__main__":
    main()
