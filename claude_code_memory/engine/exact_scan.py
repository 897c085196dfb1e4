"""An exact nearest-neighbour scan in NumPy over a copy of a small shard's vectors.

    scan = ExactScan.of(points, dims)            from (id, vector, payload) triples; None if unfit
    scan.upsert(id, vector, payload)             a point written whole (the payload replaced)
    scan.merge(id, fields) / scan.revector(id, vector) / scan.remove(id)
    scan.nearest(vector, top_k, filters)         [(id, score)] best first; None: filters it cannot read

Why: below the size where the store builds an HNSW index, Qdrant Edge answers a query by
scanning every vector anyway, and its binding keeps the interpreter lock for the whole query,
about 3 ms under load at 10k points: the largest single holder of the lock in a search
(docs/performance.md, "Why 20 clients get 36 requests a second"). The same scan as one matrix
product takes about half a millisecond at 10k, and BLAS releases the lock meanwhile.

What it answers exactly as Edge would: cosine similarity (vectors normalised, as Edge does),
and the filters the search pipeline sends: equality of a string on ``user_id``, ``state``,
``app_id`` and ``project`` (``"*"``: any), ``{"in_or_empty": [...]}`` on them (one of the
values, or none: a scoped search's project), ``$not_ids`` (points left out), and a
``created_ts`` range with ``gte``/``lte``. A point whose field is missing does not match a
condition on it, as in Edge. Any other filter shape answers None, and the caller asks Edge.
Payload values of another kind than these (a list where a string is expected) make the copy
unfit: :meth:`of` and the writes report it, and the store then stops using it. The store owns
the copy and keeps it exact: every write it makes to the shard is made here too, under the same
lock (engine/scan_copy.py, engine/edge_store.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .filters import IN_OR_EMPTY, NOT_IDS

#: Payload fields matched by equality of strings.
KEYWORDS = ("user_id", "state", "app_id", "project")
#: The payload field matched by a range of numbers.
RANGE = "created_ts"
#: Range operators understood (what the search pipeline sends).
_BOUNDS = {"gte", "lte"}
_MISSING = -1
#: Points turned into a matrix at a time when a copy is read.
_PAGE = 1000
#: ``(id, vector, payload)``: a point as the store writes it.
Point = tuple[str, Any, Mapping[str, Any]]


class Unfit(Exception):
    """A payload value the copy cannot match as Edge would: stop using the copy."""


class ExactScan:
    def __init__(self, dims: int, capacity: int = 1024) -> None:
        self.dims = dims
        self._matrix = np.zeros((capacity, dims), dtype=np.float32)
        self._ids: list[str] = []
        self._row: dict[str, int] = {}
        #: Per keyword field: each point's value as a code (``_MISSING``: none), and the codes.
        self._codes = {field: np.full(capacity, _MISSING, dtype=np.int32) for field in KEYWORDS}
        self._code_of: dict[str, dict[str, int]] = {field: {} for field in KEYWORDS}
        self._created = np.full(capacity, np.nan, dtype=np.float64)

    @classmethod
    def of(cls, points: Iterable[Point], dims: int) -> ExactScan | None:
        """The copy of these points, or None when one of them cannot be matched as Edge would."""
        ids: list[str] = []
        payloads: list[Mapping[str, Any]] = []
        # Vectors are turned into float32 a page at a time: a whole shard's as Python floats
        # took ~110 MB at 12k points, which the process kept.
        chunks: list[np.ndarray] = []
        page: list[Any] = []
        try:
            for point_id, vector, payload in points:
                ids.append(point_id)
                payloads.append(payload)
                page.append(vector)
                if len(page) == _PAGE:
                    chunks.append(np.asarray(page, dtype=np.float32).reshape(len(page), dims))
                    page = []
            chunks.append(np.asarray(page, dtype=np.float32).reshape(len(page), dims))
        except (TypeError, ValueError):
            return None
        scan = cls(dims, capacity=max(1024, len(ids)))
        matrix = np.concatenate(chunks)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        scan._matrix[: len(ids)] = matrix / np.where(norms > 0, norms, 1)
        scan._ids = ids
        scan._row = {point_id: row for row, point_id in enumerate(ids)}
        if len(scan._row) != len(ids):
            return None  # an id twice: the shard never gives one
        try:
            for row, payload in enumerate(payloads):
                scan._set_fields(row, payload)
        except Unfit:
            return None
        return scan

    def __len__(self) -> int:
        return len(self._ids)

    # -- writes -------------------------------------------------------------------------------
    def upsert_all(self, points: Iterable[Point]) -> None:
        for point_id, vector, payload in points:
            self.upsert(point_id, vector, payload)

    def upsert(self, point_id: str, vector: Any, payload: Mapping[str, Any]) -> None:
        """The point as written whole: its vector and its payload (the old payload replaced)."""
        row = self._row.get(point_id)
        if row is None:
            row = len(self._ids)
            self._grow(row + 1)
            self._ids.append(point_id)
            self._row[point_id] = row
        self._matrix[row] = _unit(vector, self.dims)
        for field in KEYWORDS:
            self._codes[field][row] = _MISSING
        self._created[row] = np.nan
        self._set_fields(row, payload)

    def merge(self, point_id: str, fields: Mapping[str, Any]) -> None:
        """Payload fields merged into the point's (the others kept); an unknown id: nothing."""
        row = self._row.get(point_id)
        if row is not None:
            self._set_fields(row, fields)

    def revector(self, point_id: str, vector: Any) -> None:
        row = self._row.get(point_id)
        if row is not None:
            self._matrix[row] = _unit(vector, self.dims)

    def remove(self, point_id: str) -> None:
        """Forget the point (the last row moves into its place)."""
        row = self._row.pop(point_id, None)
        if row is None:
            return
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._ids[row] = moved
            self._row[moved] = row
            self._matrix[row] = self._matrix[last]
            for field in KEYWORDS:
                self._codes[field][row] = self._codes[field][last]
            self._created[row] = self._created[last]
        self._ids.pop()

    # -- reads --------------------------------------------------------------------------------
    def nearest(
        self, vector: Any, top_k: int, filters: Mapping[str, Any] | None
    ) -> list[tuple[str, float]] | None:
        """``(id, score)`` of the ``top_k`` points nearest to ``vector`` that pass ``filters``,
        best first; None when the filters are not of the shapes this copy reads."""
        size = len(self._ids)
        mask = self._mask(filters or {}, size)
        if mask is None:
            return None
        # One matrix-vector product over every row (no copy of the passing rows), the rows that
        # do not pass pushed to the bottom.
        scores = self._matrix[:size] @ _unit(vector, self.dims)
        passing = size
        if mask is not True:
            passing = int(np.count_nonzero(mask))
            scores = np.where(mask, scores, -np.inf)
        wanted = min(top_k, passing)
        if wanted < 1:
            return []
        best = np.argpartition(-scores, wanted - 1)[:wanted] if size > wanted else np.arange(size)
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(self._ids[row], float(scores[row])) for row in best]

    def _mask(self, filters: Mapping[str, Any], size: int) -> np.ndarray | bool | None:
        mask: np.ndarray | bool = True
        for key, value in filters.items():
            if key == NOT_IDS:
                condition = self._not_ids(value, size)
                if condition is None:
                    return None
            elif key in KEYWORDS:
                if value == "*":
                    continue
                if isinstance(value, Mapping):
                    condition = self._in_or_empty(key, value, size)
                    if condition is None:
                        return None
                elif not isinstance(value, str):
                    return None
                else:
                    code = self._code_of[key].get(value)
                    if code is None:
                        return np.zeros(size, dtype=bool)
                    condition = self._codes[key][:size] == code
            elif key == RANGE:
                if not isinstance(value, Mapping) or not value or set(value) - _BOUNDS:
                    return None
                if not all(_number(bound) for bound in value.values()):
                    return None
                created = self._created[:size]
                condition = np.ones(size, dtype=bool)
                with np.errstate(invalid="ignore"):  # NaN (no created_ts) compares false
                    if "gte" in value:
                        condition &= created >= float(value["gte"])
                    if "lte" in value:
                        condition &= created <= float(value["lte"])
            else:
                return None
            mask = condition if mask is True else mask & condition
        return mask

    def _in_or_empty(self, key: str, value: Mapping[str, Any], size: int) -> np.ndarray | None:
        """``{"in_or_empty": [strings]}``: one of the values, or none (a scope); None: another shape."""
        values = value.get(IN_OR_EMPTY)
        if set(value) != {IN_OR_EMPTY} or not isinstance(values, list | tuple) or not values:
            return None
        if not all(isinstance(item, str) for item in values):
            return None
        codes = self._codes[key][:size]
        known = [self._code_of[key][item] for item in values if item in self._code_of[key]]
        return np.isin(codes, [_MISSING, *known])

    def _not_ids(self, values: Any, size: int) -> np.ndarray | None:
        """``{"$not_ids": [ids]}``: every row but these points'; None: another shape."""
        if not isinstance(values, list | tuple | set | frozenset):
            return None
        condition = np.ones(size, dtype=bool)
        rows = [self._row[value] for value in values if isinstance(value, str) and value in self._row]
        condition[[row for row in rows if row < size]] = False
        return condition

    # -- internals ----------------------------------------------------------------------------
    def _set_fields(self, row: int, payload: Mapping[str, Any]) -> None:
        for field in KEYWORDS:
            if field not in payload:
                continue
            value = payload[field]
            if value is None:
                self._codes[field][row] = _MISSING
            elif isinstance(value, str):
                codes = self._code_of[field]
                self._codes[field][row] = codes.setdefault(value, len(codes))
            else:
                raise Unfit(f"payload field {field!r} holds a {type(value).__name__}")
        if RANGE in payload:
            value = payload[RANGE]
            if value is None:
                self._created[row] = np.nan
            elif _number(value):
                self._created[row] = float(value)
            else:
                raise Unfit(f"payload field {RANGE!r} holds a {type(value).__name__}")

    def _grow(self, needed: int) -> None:
        capacity = len(self._matrix)
        if needed <= capacity:
            return
        capacity = max(needed, capacity * 2)
        matrix = np.zeros((capacity, self.dims), dtype=np.float32)
        matrix[: len(self._ids)] = self._matrix[: len(self._ids)]
        self._matrix = matrix
        for field in KEYWORDS:
            codes = np.full(capacity, _MISSING, dtype=np.int32)
            codes[: len(self._ids)] = self._codes[field][: len(self._ids)]
            self._codes[field] = codes
        created = np.full(capacity, np.nan, dtype=np.float64)
        created[: len(self._ids)] = self._created[: len(self._ids)]
        self._created = created


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _unit(vector: Any, dims: int) -> np.ndarray:
    """The vector at unit length, float32; Unfit for anything but ``dims`` numbers."""
    try:
        array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise Unfit(f"a vector that is not {dims} numbers: {error}") from None
    if array.shape != (dims,):
        raise Unfit(f"a vector of shape {array.shape}, not ({dims},)")
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array
