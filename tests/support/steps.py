"""How much work SQLite does for a read: its virtual-machine steps, counted in tens by a
progress handler. Tests compare the count for a small store and a large one to show a read is
a seek (the same count) and not a walk (a count that grows with the store)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def sqlite_steps(session: Any, read: Callable[[], T]) -> tuple[T, int]:
    """``read()``'s answer, and the tens of steps SQLite ran for it on ``session``'s connection."""
    raw = session.connection().connection.driver_connection
    counted = [0]

    def step() -> int:
        counted[0] += 1
        return 0  # go on

    raw.set_progress_handler(step, 10)
    try:
        answer = read()
    finally:
        raw.set_progress_handler(None, 10)
    return answer, counted[0]
