"""A small tmpfs as the data directory's disk, and a server filled until it refuses writes.

Used by ``tests/test_full_disk.py`` and ``bench/faults/full_disk.py``. Mounting needs root (CI runs
as root); :meth:`Tmpfs.mount` raises with a clear message when it cannot.
"""

from __future__ import annotations

import os
import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from .server import MemoryServer

#: ~10 KB of ordinary words per memory: text that neither compresses away nor looks like a secret.
WORDS = [
    "river", "stone", "lantern", "orchard", "violet", "harbour", "meadow", "copper",
    "signal", "thistle", "ember", "quarry", "willow", "compass", "saddle", "beacon",
    "garnet", "ferry", "summit", "hollow", "marble", "cedar", "falcon", "prairie",
]  # fmt: skip


def memory_text(index: int, size: int = 10_000, seed: int = 0) -> str:
    rng = random.Random(seed * 1_000_003 + index)
    words = [f"note {index}:"]
    length = len(words[0])
    while length < size:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


class Tmpfs:
    """A tmpfs of ``size_mb`` at ``path``; unmounted by path in :meth:`unmount`."""

    def __init__(self, path: Path, size_mb: int) -> None:
        self.path = path
        self.size_mb = size_mb
        self.mounted = False

    def mount(self) -> Tmpfs:
        self.path.mkdir(parents=True, exist_ok=True)
        command = ["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m", "tmpfs", str(self.path)]
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise RuntimeError(
                f"cannot mount a {self.size_mb} MB tmpfs at {self.path} (uid {os.getuid()}; "
                f"this needs root, as CI has): {completed.stderr.strip()}"
            )
        self.mounted = True
        return self

    def resize(self, size_mb: int) -> None:
        options = f"remount,size={size_mb}m"
        subprocess.run(["mount", "-o", options, str(self.path)], check=True, capture_output=True)
        self.size_mb = size_mb

    def free_mb(self) -> float:
        stat = os.statvfs(self.path)
        return stat.f_bavail * stat.f_frsize / 1024 / 1024

    def fill_to(self, free_mb: float, name: str = "ballast") -> Path:
        """Write a file of real blocks until about ``free_mb`` is left (another tenant's data)."""
        ballast = self.path / name
        with ballast.open("ab") as handle:
            while (room := self.free_mb() - free_mb) >= 1 / 16:
                handle.write(b"\xa5" * int(min(room, 4) * 1024 * 1024))
                handle.flush()
                os.fsync(handle.fileno())
        return ballast

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", str(self.path)], check=False, capture_output=True)
            self.mounted = False

    def __enter__(self) -> Tmpfs:
        return self.mount()

    def __exit__(self, *exc_info: object) -> None:
        self.unmount()


class LoopExt4(Tmpfs):
    """An ext4 filesystem of ``size_mb`` in a file, loop-mounted at ``path`` (needs root): a
    disk where reading a sparse file's hole claims no block, unlike tmpfs."""

    def mount(self) -> LoopExt4:
        self.path.mkdir(parents=True, exist_ok=True)
        image = self.path.with_suffix(".img")
        with image.open("wb") as handle:
            handle.truncate(self.size_mb * 1024 * 1024)
        for command in (
            ["mkfs.ext4", "-q", "-F", str(image)],
            ["mount", "-o", "loop", str(image), str(self.path)],
        ):
            completed = subprocess.run(command, capture_output=True, text=True, check=False)
            if completed.returncode != 0:
                raise RuntimeError(
                    f"cannot make a {self.size_mb} MB ext4 volume at {self.path} (uid {os.getuid()}; "
                    f"this needs root and a loop device, as CI has): {completed.stderr.strip()}"
                )
        self.mounted = True
        return self


@dataclass
class Fill:
    """What filling the disk did: ids of the writes answered 2xx, and the first refusal."""

    acknowledged: list[str] = field(default_factory=list)
    refusal: dict[str, Any] | None = None
    refusal_status: int | None = None
    free_mb_at_refusal: float | None = None
    other_failures: list[str] = field(default_factory=list)


def fill_until_refused(
    server: MemoryServer, tmpfs: Tmpfs, *, user: str, limit: int = 5000, seed: int = 0
) -> Fill:
    """POST ~10 KB memories until the server answers 507 (or stops answering)."""
    fill = Fill()
    with httpx.Client(base_url=server.base_url, headers=server.admin_headers(), timeout=30) as client:
        for index in range(limit):
            try:
                response = client.post(
                    "/api/v1/memories", json={"user_id": user, "text": memory_text(index, seed=seed)}
                )
            except httpx.HTTPError as exc:
                fill.other_failures.append(f"write {index}: {exc!r}")
                return fill
            if response.status_code == 507:
                fill.refusal, fill.refusal_status = response.json(), 507
                fill.free_mb_at_refusal = tmpfs.free_mb()
                return fill
            if response.is_success:
                fill.acknowledged.append(response.json()["id"])
            else:
                problem = f"write {index}: HTTP {response.status_code} {response.text[:300]}"
                fill.other_failures.append(problem)
                return fill
    return fill


def listed_ids(server: MemoryServer, user: str) -> set[str]:
    """Every memory id the server lists for ``user``."""
    ids: set[str] = set()
    with httpx.Client(base_url=server.base_url, headers=server.admin_headers(), timeout=30) as client:
        page = 1
        while True:
            body = client.get("/api/v1/memories", params={"user_id": user, "size": 100, "page": page}).json()
            ids |= {item["id"] for item in body["items"]}
            if page * 100 >= body["total"]:
                return ids
            page += 1


def health(server: MemoryServer) -> httpx.Response:
    return httpx.get(f"{server.base_url}/health", timeout=10)
