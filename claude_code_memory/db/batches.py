"""Long lists of ids in SQL: ``IN (...)`` binds one value per id, and a statement may bind at most
999 values on SQLite builds before 3.32 (32,766 after, 250,000 in Debian's) and 65,535 on
PostgreSQL. A read or change of every memory of a large store (a deletion of them all, an
export, the tiers archiving the coldest segments) goes a slice at a time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

#: Ids bound in one ``IN (...)``: under the smallest limit, with room for a statement's others.
IDS_PER_QUERY = 500

T = TypeVar("T")


def slices(items: Sequence[T], size: int = IDS_PER_QUERY) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
