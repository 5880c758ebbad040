"""Units as counts: the multiset of per-unit count vectors, in one canonical order.

Every unit-level statistic of faircode (cluster bootstrap, cluster permutation, design effects;
:mod:`faircode.stats.clusters`) is a function of the *unit types*: the distinct per-unit count
vectors and how many units share each.  A :class:`UnitHistogram` is that multiset over any
layout of count slots (``C`` per unit: e.g. joint group x confusion cell), canonical so that it
depends only on the multiset, never on the order of rows or units, on how rows were chunked or
on which worker counted them.  Marginal layouts (one attribute's two groups, an attribute pair's
four cells, the label-1 rows of a score bin) are a linear map of the slots followed by the same
canonical collapse (:meth:`UnitHistogram.project`), so they equal what
:func:`faircode.stats.clusters.unit_types` gives on the rows themselves (``tests/test_tally.py``).

Design decisions
----------------
* **Canonical order: lexicographic** over the slots (the order ``np.unique(axis=0)`` and
  :func:`faircode.stats.clusters.unit_types` give), distinct vectors, no all-zero vector (a unit
  with no row in the layout is no unit of it).  The draws of the resampling engine run over the
  types in this order, so two equal histograms give bit-identical resamples.
* **Closed-form design effects are exact** (:func:`ratio_design_effects`): the ratio
  estimator's ``deff = Σ_u (x_u − p m_u)² / (M p (1 − p))`` is a rational function of the integer
  sums ``Σx², Σxm, Σm²`` over the types, computed in integers and rounded once, so it does not
  depend on the order in which units are summed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.stats import clusters

__all__ = ["CountedTypes", "SparseAccumulator", "SparseTypes", "UnitHistogram", "collapse",
           "densify", "design_effects_of_sums", "merge", "merge_sparse", "ratio_design_effects",
           "ratio_sums", "sparse_collapse", "sparse_types", "unique_rows"]

Ints = NDArray[np.int64]


def unique_rows(rows: Ints) -> tuple[Ints, Ints]:
    """``(distinct, inverse)`` of non-negative integer rows, distinct rows in lexicographic order.

    Rows are packed into one int64 in base ``max + 1`` where that fits (the integer order of the
    packed keys is the rows' lexicographic order); wide rows with few non-zero entries (a unit's
    vector over many slots) are grouped by their sorted ``(slot, count)`` entries and only the
    distinct rows sorted lexicographically; else ``np.unique(axis=0)``.  All three give the
    same result.
    """
    n, width = rows.shape
    if n == 0:
        return rows.reshape(0, width), np.zeros(0, dtype=np.int64)
    base = int(rows.max()) + 1
    if width * np.log2(max(base, 2)) < 62:
        weights = base ** np.arange(width - 1, -1, -1, dtype=np.int64)
        _, first, inverse = np.unique(rows @ weights, return_index=True, return_inverse=True)
        return rows[first], inverse.reshape(-1).astype(np.int64)
    r, c = np.nonzero(rows)
    length = np.bincount(r, minlength=n)
    longest = int(length.max())
    if 2 * longest >= width or base >= 2**31:
        distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
        return distinct, inverse.reshape(-1).astype(np.int64)
    packed = np.full((n, longest + 1), -1, dtype=np.int64)
    packed[:, 0] = length
    starts = np.concatenate([[0], np.cumsum(length)[:-1]])
    packed[r, 1 + np.arange(r.size) - starts[r]] = (c.astype(np.int64) << 32) | rows[r, c]
    order = np.lexsort(packed.T[::-1])
    ordered = packed[order]
    new = np.concatenate([[True], (ordered[1:] != ordered[:-1]).any(axis=1)])
    group = np.cumsum(new) - 1
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = group
    distinct = rows[order[new]]
    canonical = np.lexsort(distinct.T[::-1])
    rank = np.empty(canonical.size, dtype=np.int64)
    rank[canonical] = np.arange(canonical.size)
    return distinct[canonical], rank[inverse]


class CountedTypes(Protocol):
    """Unit types read block by block: a :class:`UnitHistogram`, or the packed types of a log
    (:mod:`faircode.stats.packed_units`), in memory or spilled."""

    @property
    def multiplicity(self) -> Ints: ...

    @property
    def n_slots(self) -> int: ...

    @property
    def n_units(self) -> int: ...

    def blocks(self) -> Iterator[Ints]:
        """The dense vectors ``(t, n_slots)``, consecutive blocks of rows in canonical order."""
        ...


@dataclass(frozen=True, slots=True)
class UnitHistogram:
    """Distinct per-unit count vectors ``(T, C)`` (canonical order) and their multiplicities.

    Build one with :func:`collapse` (or :meth:`from_rows`), which establishes the invariants:
    rows distinct, in lexicographic order, none all zero, multiplicities >= 1.
    """

    vectors: Ints
    multiplicity: Ints

    def __post_init__(self) -> None:
        v, m = self.vectors, self.multiplicity
        if v.ndim != 2 or m.shape != (v.shape[0],):
            raise ValueError(f"UnitHistogram: expected vectors (T, C) and multiplicity (T,), "
                             f"got {v.shape} and {m.shape}")

    @property
    def n_slots(self) -> int:
        """Slots per unit ``C``."""
        return int(self.vectors.shape[1])

    @property
    def n_units(self) -> int:
        """Units counted (sum of multiplicities)."""
        return int(self.multiplicity.sum())

    def blocks(self) -> Iterator[Ints]:
        """The vectors, as one block (:class:`CountedTypes`)."""
        yield self.vectors

    def repeated(self) -> bool:
        """Whether some unit has several rows (else rows are the independent units)."""
        return bool((self.vectors.sum(axis=1) > 1).any())

    @classmethod
    def from_rows(cls, units: ArrayLike, slots: ArrayLike, n_slots: int) -> UnitHistogram:
        """The histogram of rows: ``units`` any 1-D ids, ``slots`` ints in ``[0, n_slots)``
        (``-1``: the row counts in no slot)."""
        u, s = np.asarray(units), np.asarray(slots, dtype=np.int64)
        if u.shape != s.shape or u.ndim != 1:
            raise ValueError(f"units and slots: expected two 1-D arrays of one length, got "
                             f"{u.shape} and {s.shape}")
        _, inverse = np.unique(u, return_inverse=True)
        keep = s >= 0
        unit, slot = inverse.reshape(-1).astype(np.int64)[keep], s[keep]
        if unit.size == 0:
            return collapse(np.zeros((0, n_slots), dtype=np.int64), np.zeros(0, dtype=np.int64))
        order = np.lexsort((slot, unit))
        unit, slot = unit[order], slot[order]
        start = np.flatnonzero(np.concatenate([[True], (unit[1:] != unit[:-1])
                                               | (slot[1:] != slot[:-1])]))
        count = np.diff(np.concatenate([start, [unit.size]]))
        unit = np.cumsum(np.concatenate([[True], unit[start][1:] != unit[start][:-1]])) - 1
        return sparse_collapse(unit, slot[start], count, n_slots)

    def project(self, matrix: ArrayLike) -> UnitHistogram:
        """The histogram of ``vectors @ matrix`` (``(C, C')`` non-negative integers), collapsed."""
        m = np.asarray(matrix, dtype=np.int64)
        if m.ndim != 2 or m.shape[0] != self.n_slots:
            raise ValueError(f"matrix: expected ({self.n_slots}, C'), got {m.shape}")
        return collapse(self.vectors @ m, self.multiplicity)

    def unit_types(self, n_groups: int) -> clusters.UnitTypes:
        """The engine's :class:`~faircode.stats.clusters.UnitTypes` (slots read as G x cells)."""
        t, c = self.vectors.shape
        if c % n_groups:
            raise ValueError(f"n_groups: {n_groups} does not divide the {c} slots")
        counts = self.vectors.reshape(t, n_groups, c // n_groups)
        has_rows = counts.sum(axis=2) > 0
        pattern = (has_rows * (1 << np.arange(n_groups, dtype=np.int64))).sum(axis=1)
        return clusters.UnitTypes(counts.astype(np.int64), self.multiplicity.astype(np.int64),
                                  pattern.astype(np.int64))


def collapse(vectors: ArrayLike, multiplicity: ArrayLike) -> UnitHistogram:
    """The canonical histogram of ``vectors`` weighted by ``multiplicity`` (zero rows dropped)."""
    v = np.asarray(vectors, dtype=np.int64)
    m = np.asarray(multiplicity, dtype=np.int64)
    if v.ndim != 2 or m.shape != (v.shape[0],):
        raise ValueError(f"collapse: expected vectors (N, C) and multiplicity (N,), got "
                         f"{v.shape} and {m.shape}")
    keep = (v.sum(axis=1) > 0) & (m > 0)
    v, m = v[keep], m[keep]
    distinct, inverse = unique_rows(v)
    weight = np.bincount(inverse, weights=m, minlength=distinct.shape[0])  # exact below 2**53
    return UnitHistogram(distinct.astype(np.int64), weight.astype(np.int64))


@dataclass(frozen=True, slots=True)
class SparseTypes:
    """Distinct unit vectors kept sparse while counting: each row ``packed[t]`` is the number of
    non-zero slots, then ``slot << 32 | count`` per slot in slot order, padded with -1; and the
    multiplicity of each.  Two rows are equal exactly when their vectors are."""

    packed: Ints
    multiplicity: Ints

    @property
    def n_types(self) -> int:
        return int(self.multiplicity.size)


def _group_rows(packed: Ints, multiplicity: Ints) -> SparseTypes:
    """Equal rows of ``packed`` pooled (multiplicities added), in an arbitrary fixed order."""
    if packed.shape[0] == 0:
        return SparseTypes(packed, multiplicity)
    order = np.lexsort(packed.T[::-1])
    ordered = packed[order]
    new = np.concatenate([[True], (ordered[1:] != ordered[:-1]).any(axis=1)])
    group = np.cumsum(new) - 1
    weight = np.bincount(group, weights=multiplicity[order]).astype(np.int64)  # exact < 2**53
    return SparseTypes(ordered[new], weight)


def sparse_types(unit: Ints, slot: Ints, count: Ints) -> SparseTypes:
    """The distinct vectors of units given as entries sorted by unit then slot (each pair once,
    ``unit`` consecutive ids ``0..U-1``)."""
    if unit.size == 0:
        return SparseTypes(np.zeros((0, 1), dtype=np.int64), np.zeros(0, dtype=np.int64))
    n = int(unit[-1]) + 1
    length = np.bincount(unit, minlength=n)
    starts = np.concatenate([[0], np.cumsum(length)[:-1]])
    packed = np.full((n, int(length.max()) + 1), -1, dtype=np.int64)
    packed[:, 0] = length
    packed[unit, 1 + np.arange(unit.size) - starts[unit]] = (slot << 32) | count
    return _group_rows(packed, np.ones(n, dtype=np.int64))


def merge_sparse(parts: list[SparseTypes]) -> SparseTypes:
    """The distinct vectors of disjoint unit sets, pooled."""
    width = max((p.packed.shape[1] for p in parts), default=1)
    padded = [np.pad(p.packed, ((0, 0), (0, width - p.packed.shape[1])), constant_values=-1)
              for p in parts]
    return _group_rows(np.concatenate(padded) if padded else np.zeros((0, width), np.int64),
                       np.concatenate([p.multiplicity for p in parts]) if parts
                       else np.zeros(0, dtype=np.int64))


def densify(types: SparseTypes, n_slots: int) -> UnitHistogram:
    """The canonical (dense, lexicographic) histogram of sparse types.

    The types are distinct and none is all zero already (:class:`SparseTypes`), so this is
    :func:`collapse` without its copies: the lexicographic order is found from the sparse
    entries (one int64 key per type where it fits) and the dense rows are written once, in that
    order.  A log's unit types grow with its length, and every dense copy of them costs
    ``8 * n_slots`` bytes a type (the streamed audit's peak grew by that)."""
    packed = types.packed
    n = packed.shape[0]
    row, col = np.nonzero(packed[:, 1:] >= 0)
    values = packed[row, col + 1]
    del col
    slot, count = values >> 32, values & ((1 << 32) - 1)
    del values
    base = int(count.max()) + 1 if count.size else 1
    if n_slots * np.log2(max(base, 2)) < 62:  # one key per type, in the dense rows' order
        weights = base ** np.arange(n_slots - 1, -1, -1, dtype=np.int64)
        keys = np.bincount(row, weights=count * weights[slot], minlength=n)
        if keys.max(initial=0) < 2**53:  # bincount adds in float64: exact below 2**53
            order = np.argsort(keys.astype(np.int64), kind="stable")
            del keys
            rank = np.empty(n, dtype=np.int64)
            rank[order] = np.arange(n)
            dense = np.zeros((n, n_slots), dtype=np.int64)
            dense[rank[row], slot] = count
            return UnitHistogram(dense, types.multiplicity[order])
    dense = np.zeros((n, n_slots), dtype=np.int64)
    dense[row, slot] = count
    order = np.lexsort(dense.T[::-1])
    return UnitHistogram(dense[order], types.multiplicity[order])


class SparseAccumulator:
    """Sparse types of disjoint unit sets added one at a time, pooled when they double."""

    def __init__(self) -> None:
        self._merged: SparseTypes | None = None
        self._pending: list[SparseTypes] = []
        self._rows = 0

    def add(self, types: SparseTypes) -> None:
        self._pending.append(types)
        self._rows += types.n_types
        base = 0 if self._merged is None else self._merged.n_types
        if self._rows > max(1 << 16, base):  # merged at most log times per row: no quadratic
            self._merged = self.result()
            self._pending, self._rows = [], 0

    def result(self) -> SparseTypes:
        parts = ([] if self._merged is None else [self._merged]) + self._pending
        return merge_sparse(parts)


def sparse_collapse(unit: Ints, slot: Ints, count: Ints, n_slots: int) -> UnitHistogram:
    """The histogram of units given as entries sorted by unit then slot (each pair once):
    ``unit`` consecutive ids ``0..U-1``; only the distinct vectors are ever made dense."""
    return densify(sparse_types(unit, slot, count), n_slots)


def merge(parts: list[UnitHistogram], n_slots: int) -> UnitHistogram:
    """The histogram of disjoint unit sets: their vectors pooled and collapsed again."""
    if not parts:
        return UnitHistogram(np.zeros((0, n_slots), dtype=np.int64), np.zeros(0, dtype=np.int64))
    return collapse(np.concatenate([p.vectors for p in parts]),
                    np.concatenate([p.multiplicity for p in parts]))


def ratio_sums(numerator: Ints, denominator: Ints, multiplicity: Ints) -> NDArray[np.object_]:
    """The multiplicity-weighted sums ``X = Σx, M = Σm, Sxx = Σx², Sxm = Σxm, Smm = Σm²`` per
    column of ``(T, R)`` numerators and denominators, ``(5, R)`` exact integers: sums of
    consecutive blocks of types add up to the sums of all (:func:`design_effects_of_sums`)."""
    x = np.asarray(numerator, dtype=np.int64)
    m = np.asarray(denominator, dtype=np.int64)
    w = np.asarray(multiplicity, dtype=np.int64)[:, None]
    top = max(int(x.max(initial=0)), int(m.max(initial=0)))
    exact = int(w.max(initial=0)) * top * top * max(1, w.shape[0]) < 2**62
    kind = np.int64 if exact else object  # int64 where no sum can overflow, else Python ints
    x, m, w = x.astype(kind), m.astype(kind), w.astype(kind)
    wx, wm = w * x, w * m
    return np.array([wx.sum(axis=0), wm.sum(axis=0), (wx * x).sum(axis=0),
                     (wx * m).sum(axis=0), (wm * m).sum(axis=0)], dtype=object)


def design_effects_of_sums(sums: NDArray[np.object_]) -> NDArray:
    """The ratio design effects of :func:`ratio_sums` (:func:`ratio_design_effects`)."""
    out = np.full(sums.shape[1], np.nan)
    for r in range(sums.shape[1]):
        big_x, big_m, sxx, sxm, smm = (int(v) for v in sums[:, r])
        if big_m == 0 or big_x == 0 or big_x == big_m:
            continue
        spread = big_m * big_m * sxx - 2 * big_x * big_m * sxm + big_x * big_x * smm
        out[r] = float(Fraction(spread, big_m * big_x * (big_m - big_x)))
    return out


def ratio_design_effects(numerator: Ints, denominator: Ints, multiplicity: Ints) -> NDArray:
    """Exact ratio-estimator design effects of ``Σx/Σm`` per column, over unit types.

    ``numerator``/``denominator`` are ``(T, R)``: each type's ``x_u``/``m_u`` for ``R`` rates.
    ``deff = (M² Sxx − 2 X M Sxm + X² Smm) / (M X (M − X))`` with the multiplicity-weighted sums
    ``X = Σx``, ``M = Σm``, ``Sxx = Σx²`` ... -- equal to ``Σ_u (x_u − p m_u)² / (M p (1 − p))``,
    ``p = X / M``, in exact arithmetic, rounded once.  NaN where ``M = 0`` or ``p`` is 0 or 1.
    """
    return design_effects_of_sums(ratio_sums(numerator, denominator, multiplicity))
