"""A delivered or dropped turn leaves the outbox's files: the database, its log and its index,
read as bytes, hold none of its text; turns still waiting are found (so the scan reads)."""

from __future__ import annotations

import secrets
from pathlib import Path

from ccmem_capture.outbox import Outbox


def turn(mark: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": f"my code name is {mark} " + "padding " * 40}]}


def found(directory: Path, mark: str) -> list[str]:
    return [path.name for path in sorted(directory.iterdir()) if mark.encode() in path.read_bytes()]


def test_delivered_and_dropped_turns_leave_no_bytes(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "outbox.db", max_rows=3)
    marks = [f"mark{secrets.token_hex(8)}" for _ in range(5)]
    for index, mark in enumerate(marks):
        outbox.add(f"capture-{index}", turn(mark))  # the fourth and fifth push out the two oldest
    delivered = outbox.oldest(1)[0]
    assert delivered.payload == turn(marks[2])
    outbox.delete(delivered.id)
    gone, waiting = marks[:3], marks[3:]  # two dropped, one delivered

    assert {mark: found(tmp_path, mark) for mark in gone} == {mark: [] for mark in gone}
    assert all(found(tmp_path, mark) for mark in waiting)
    outbox.close()
    assert {mark: found(tmp_path, mark) for mark in gone} == {mark: [] for mark in gone}
    assert all(found(tmp_path, mark) for mark in waiting)
