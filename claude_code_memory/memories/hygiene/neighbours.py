"""Each memory's nearest neighbours by cosine similarity: what the hygiene scan compares.

    neighbours(vectors, floor, k) -> list[list[tuple[int, float]]]

For row ``i``, up to ``k`` other rows whose similarity is at least ``floor``, nearest first.
Similarities are rounded to ``DECIMALS`` places and ties go to the lower row number, so both
ways of computing them give the same answer. Float32 matrix products find the candidates; the
similarity of each pair kept is computed again in float64 from its two rows alone, because a
float32 product sums in an order that depends on the shapes multiplied, and a pair whose
similarity lies near a rounding step would otherwise round either way by the way it was found:

- ``exact``: every pair, a matrix product block by block (a block of rows against all rows;
  never an n x n matrix). Cost grows with n².
- ``clustered``: the rows split into about sqrt(n) lists by spherical k-means; each row is
  compared only with the rows of its ``PROBES`` nearest lists, and every pair computed counts
  for both of its rows. A near pair whose rows lie in lists neither of them probes is missed,
  so this is for stores too large for ``exact`` (more than ``EXACT_UP_TO`` rows): at 100k rows
  it computes about a twentieth of the pairs. bench/quality/hygiene.py measures what it misses.

Pure numpy, no I/O.
"""

from __future__ import annotations

import numpy as np

#: Neighbours kept per row: clusters larger than this are found through their members.
K = 8
#: Up to this many rows, every pair is compared.
EXACT_UP_TO = 20_000
#: Lists of the clustered search each row looks in (its own and the nearest others).
PROBES = 16
#: The clustered search splits n rows into this many times sqrt(n) lists.
LISTS_PER_ROOT = 1.0
#: Decimal places similarities are rounded to, so both ways of computing them agree.
DECIMALS = 4
#: Rows of a similarity block (block x n float32 in ``exact``).
BLOCK = 512
_SCALE = 10**DECIMALS
_LOW = np.int64(0xFFFFFFFF)

Neighbours = list[list[tuple[int, float]]]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms == 0, 1, norms), dtype=np.float32)


def neighbours(vectors: np.ndarray, floor: float, k: int = K) -> Neighbours:
    """For each row, up to ``k`` other rows with cosine similarity >= ``floor``, nearest first:
    every pair compared up to ``EXACT_UP_TO`` rows, the clustered search above."""
    unit = unit_rows(np.asarray(vectors, dtype=np.float32))
    if len(unit) <= EXACT_UP_TO:
        return exact(unit, floor, k)
    return clustered(unit, floor, k)


def _keys(sims: np.ndarray, cols: np.ndarray, floor_q: int) -> np.ndarray:
    """One int64 per candidate that orders it: the rounded similarity, then the lower column;
    -1 for one below the floor. Larger is nearer."""
    quantised = np.rint(sims.astype(np.float64) * _SCALE).astype(np.int64)
    keys = ((quantised + _SCALE) << 32) | (_LOW - cols.astype(np.int64))
    return np.where(quantised >= floor_q, keys, -1)


def _pair_sims(unit: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The similarity of each pair ``(rows[i], cols[i])``, in float64 from the two rows alone:
    the same value whichever matrix product found the pair, and from either of its rows."""
    return np.einsum("ij,ij->i", unit[rows].astype(np.float64), unit[cols].astype(np.float64))


def _decode(best: np.ndarray) -> Neighbours:
    cols = (_LOW - (best & _LOW)).astype(np.int64)
    sims = ((best >> 32) - _SCALE) / _SCALE
    return [
        [(int(c), float(s)) for c, s, key in zip(row_cols, row_sims, row, strict=True) if key >= 0]
        for row_cols, row_sims, row in zip(cols.tolist(), sims.tolist(), best.tolist(), strict=True)
    ]


def _top(keys: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` largest keys of each row, largest first (-1 pads)."""
    if keys.shape[1] > k:
        keys = np.take_along_axis(keys, np.argpartition(-keys, k - 1, axis=1)[:, :k], axis=1)
    keys = -np.sort(-keys, axis=1)
    if keys.shape[1] < k:
        keys = np.pad(keys, ((0, 0), (0, k - keys.shape[1])), constant_values=-1)
    return keys


def exact(unit: np.ndarray, floor: float, k: int = K, rows: np.ndarray | None = None) -> Neighbours:
    """Every pair compared (rows of ``unit`` are unit length). ``rows``, if given: only these
    rows' neighbours (among all rows), in that order: what checks the clustered search."""
    count = len(unit)
    asked = np.arange(count) if rows is None else np.asarray(rows, dtype=np.int64)
    if count < 2:
        return [[] for _ in asked]
    k = min(k, count - 1)
    floor_q = int(np.ceil(floor * _SCALE - 1e-9))
    best = np.full((len(asked), k), -1, dtype=np.int64)
    for start in range(0, len(asked), BLOCK):
        these = asked[start : start + BLOCK]
        block = unit[these] @ unit.T
        block[np.arange(len(these)), these] = -np.inf  # not its own neighbour
        hit_rows, hit_cols = _nearest_in_block(block, floor_q, k)
        if len(hit_rows) == 0:
            continue
        keys = _keys(_pair_sims(unit, these[hit_rows], hit_cols), hit_cols, floor_q)
        _merge(best, start + hit_rows, keys, k)
    return _decode(best)


def _merge(best: np.ndarray, rows: np.ndarray, keys: np.ndarray, k: int) -> None:
    """Fold candidate ``keys`` of ``rows`` (rows repeating, any order) into ``best``."""
    keep = keys >= 0
    rows, keys = rows[keep], keys[keep]
    if len(rows) == 0:
        return
    # One candidate per (row, column): a pair computed twice counts once, at its nearer key.
    cols = keys & _LOW
    order = np.lexsort((-keys, cols, rows))
    rows, keys, cols = rows[order], keys[order], cols[order]
    first = np.r_[True, (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])]
    rows, keys = rows[first], keys[first]
    order = np.lexsort((-keys, rows))
    rows, keys = rows[order], keys[order]
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    rank = np.arange(len(rows)) - np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
    within = rank < k  # each row's best k candidates
    rows, keys, rank = rows[within], keys[within], rank[within]
    touched = rows[rank == 0]
    fresh = np.full((len(touched), k), -1, dtype=np.int64)
    fresh[np.searchsorted(touched, rows), rank] = keys
    combined = np.concatenate([best[touched], fresh], axis=1)
    combined = -np.sort(-combined, axis=1)
    # The same column already among the row's best: keep the first (nearer) of the two.
    cols = combined & _LOW
    earlier = np.triu(np.ones((combined.shape[1],) * 2, dtype=bool), k=1)
    repeated = ((cols[:, :, None] == cols[:, None, :]) & earlier[None]).any(axis=1)
    combined = np.where(repeated & (combined >= 0), -1, combined)
    best[touched] = _top(combined, k)


def _kmeans(unit: np.ndarray, lists: int, rng: np.random.Generator, rounds: int = 10) -> np.ndarray:
    """Spherical k-means on a sample: ``lists`` unit centroids."""
    sample = unit[rng.choice(len(unit), min(len(unit), 64 * lists), replace=False)]
    centroids = sample[rng.choice(len(sample), lists, replace=False)].copy()
    for _ in range(rounds):
        assigned = np.argmax(sample @ centroids.T, axis=1)
        order = np.argsort(assigned, kind="stable")
        starts = np.searchsorted(assigned[order], np.arange(lists))
        sums = np.add.reduceat(sample[order], np.minimum(starts, len(sample) - 1), axis=0)
        empty = np.bincount(assigned, minlength=lists) == 0  # their sums above are not theirs
        sums[empty] = sample[rng.choice(len(sample), int(empty.sum()), replace=False)]
        centroids = unit_rows(sums)
    return centroids


def clustered(unit: np.ndarray, floor: float, k: int = K, probes: int = PROBES, seed: int = 0) -> Neighbours:
    """Rows compared only within the ``probes`` lists nearest each (see the module's doc)."""
    count = len(unit)
    if count < 2:
        return [[] for _ in range(count)]
    k = min(k, count - 1)
    floor_q = int(np.ceil(floor * _SCALE - 1e-9))
    lists = max(1, int(round(LISTS_PER_ROOT * np.sqrt(count))))
    probes = min(probes, lists)
    centroids = _kmeans(unit, lists, np.random.default_rng(seed))
    probed = np.empty((count, probes), dtype=np.int64)  # each row's lists, its own first
    for start in range(0, count, 4096):
        sims = unit[start : start + 4096] @ centroids.T
        if probes < lists:
            top = np.argpartition(-sims, probes - 1, axis=1)[:, :probes]
        else:
            top = np.broadcast_to(np.arange(lists), sims.shape)
        nearest_first = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1, kind="stable")
        probed[start : start + 4096] = np.take_along_axis(top, nearest_first, axis=1)
    home = probed[:, 0]
    members = np.argsort(home, kind="stable")
    member_bounds = np.searchsorted(home[members], np.arange(lists + 1))
    flat_lists = probed.ravel()
    order = np.argsort(flat_lists, kind="stable")
    askers = np.repeat(np.arange(count), probes)[order]
    asker_bounds = np.searchsorted(flat_lists[order], np.arange(lists + 1))
    best = np.full((count, k), -1, dtype=np.int64)
    for index in range(lists):
        held = members[member_bounds[index] : member_bounds[index + 1]]
        asking = askers[asker_bounds[index] : asker_bounds[index + 1]]
        if len(held) == 0 or len(asking) == 0:
            continue
        block = unit[asking] @ unit[held].T
        # Every row asks its own list: the held rows are among the asking ones (both sorted).
        block[np.searchsorted(asking, held), np.arange(len(held))] = -np.inf
        # Both ways: the asking row gets the held one and the held row the asking one, so a
        # pair found from either side counts for both of its rows.
        above = block >= _candidate_floor(floor_q)
        for rows_of, cols_of, sims, hits in ((asking, held, block, above), (held, asking, block.T, above.T)):
            hit_rows, hit_cols = _nearest_in_block(sims, floor_q, k, hits)
            keys = _keys(_pair_sims(unit, rows_of[hit_rows], cols_of[hit_cols]), cols_of[hit_cols], floor_q)
            _merge(best, rows_of[hit_rows], keys, k)
    return _decode(best)


def _candidate_floor(floor_q: int) -> float:
    """The float32 similarity a candidate needs: half a rounding step below what rounds to the
    floor, far more than a float32 product of unit rows can be off; ``_keys`` drops those whose
    float64 similarity does not reach it."""
    return (floor_q - 1) / _SCALE


def _nearest_in_block(
    sims: np.ndarray, floor_q: int, k: int, above: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The entries of each row of ``sims`` that may be among its ``k`` nearest at or above the
    floor (``above``: which are at or above it, if known): all of them where a row has at most
    k; else those at least its k-th largest less a rounding step (rounded ties are all kept).
    Rows with more than k are rare in most stores, common in one full of templated texts:
    sorting only those keeps both cheap."""
    if above is None:
        above = sims >= _candidate_floor(floor_q)
    counts = np.count_nonzero(above, axis=1)
    dense = np.flatnonzero(counts > k)
    if len(dense) == 0:
        hit_rows, hit_cols = np.nonzero(above)
        return hit_rows, hit_cols
    sparse = np.flatnonzero(counts <= k)
    sparse_at, sparse_cols = np.nonzero(above[sparse])
    crowded = sims[dense]
    kth = -np.partition(-crowded, k - 1, axis=1)[:, k - 1]
    dense_at, dense_cols = np.nonzero(crowded >= (kth - 1.5 / _SCALE)[:, None])
    return np.concatenate([sparse[sparse_at], dense[dense_at]]), np.concatenate([sparse_cols, dense_cols])
