"""Rewriting an Edge shard by copying it into a new one that takes its place.

Edge deletes a point logically: its payload stays in the segment's payload pages, and its
upsert in the write-ahead log, whose files are recycled only when full. No call of qdrant-edge
0.9 erases them in place (``optimize()`` with a vacuum threshold rewrites the segment, not the
log). Copying the live points into a fresh shard beside the old one, then swapping the
directories, leaves nothing of the old files. An index build (:mod:`.index_build`) swaps in a
copy of the shard that another process indexed the same way. The swap is two renames, made only
once the copy is complete; a crash part-way is finished (or undone) by
:func:`finish_interrupted_swap` at the next open.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from qdrant_edge import EdgeShard, Point, ScrollRequest, UpdateOperation

#: Why a copy is made: an erasure (copy_points) or an index build (engine/index_build.py).
KINDS = ("erase", "index")
_PAGE = 1000


def beside(shard_path: Path, kind: str = "erase") -> tuple[Path, Path]:
    """Where the copy is made, and where the old shard waits while the copy takes its place."""
    return (
        shard_path.with_name(f"{shard_path.name}.{kind}-copy"),
        shard_path.with_name(f"{shard_path.name}.{kind}-retired"),
    )


def copy_points(
    source: EdgeShard, target: EdgeShard, payload: Callable[[Mapping[str, Any] | None], dict[str, Any]]
) -> int:
    """Upsert every live point of ``source`` into ``target``, each payload through ``payload``;
    returns how many."""
    copied, offset = 0, None
    while True:
        points, offset = source.scroll(
            ScrollRequest(offset=offset, limit=_PAGE, with_payload=True, with_vector=True)
        )
        kept = [Point(p.id, p.vector, payload(p.payload)) for p in points if p.vector is not None]
        if kept:
            target.update(UpdateOperation.upsert_points(kept))
            copied += len(kept)
        if offset is None:
            return copied


def swap_in(shard_path: Path, kind: str = "erase") -> None:
    """The copy beside ``shard_path`` takes its place; the old directory is removed."""
    copy_path, retired_path = beside(shard_path, kind)
    shard_path.rename(retired_path)
    copy_path.rename(shard_path)
    shutil.rmtree(retired_path)


def finish_interrupted_swap(shard_path: Path) -> None:
    """After a crash during a copy or a swap: a half-made copy is dropped; an old shard moved
    aside is removed when the copy took its place, and put back when it did not."""
    for kind in KINDS:
        copy_path, retired_path = beside(shard_path, kind)
        if retired_path.exists():
            if shard_path.exists():
                shutil.rmtree(retired_path)
            else:
                retired_path.rename(shard_path)
        shutil.rmtree(copy_path, ignore_errors=True)
