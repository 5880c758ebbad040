"""Scores as counts: the distinct score values of a row set with their rows per slot.

Every score statistic of the audit tables -- DeLong's AUC and its variance, the calibration
bins (quantiles of the scores, or one bin per ordinal level), each bin's rows, label-1 rows and
score sum -- is a function of the table ``distinct score value -> rows per slot`` (slot = joint
group x label, :mod:`faircode.stats.tally`).  A :class:`ScoreTable` gives that table as blocks
of ascending values (one block in memory; several from a counted stream's records, held or
spilled, :mod:`faircode.stats.accumulate`), and the functions here read it block by block, so a
table larger than memory is read the same way as a small one.

Design decisions
----------------
* **Exact, so order-free.**  The AUC is ``U / (m n)`` with the Mann-Whitney count ``U`` (ties
  counted half) in integers; DeLong's variance is a ratio of integer sums of the structural
  components (each a multiple of ``1 / 2n`` or ``1 / 2m``); a bin's score sum is the exact sum
  of its scores.  Each is rounded once, at the end, so no number depends on the order of rows,
  on chunking or on the worker that counted them.  (The former row code averaged float
  components in row order: its AUC, AUC interval and mean scores can differ from these in the
  last bit.)
* **Quantile edges are numpy's**: :func:`linear_quantiles` reproduces ``np.quantile``'s
  default (linear, Hyndman & Fan 7) bit for bit from the order statistics it needs, so the
  calibration bins are the ones the row code drew.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe

__all__ = [
    "BinTotals",
    "CountBins",
    "ScoreArray",
    "ScoreTable",
    "auc_from_table",
    "bin_sums",
    "bin_totals",
    "count_bins",
    "exact_sums",
    "linear_quantiles",
    "table_from_rows",
]

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
Block = tuple[Floats, Ints]
_EXPONENT_FLOOR = -1200  # below every float64 exponent (subnormals included)


class ScoreTable:
    """Distinct score values (ascending) and rows per slot, read as blocks of values."""

    n_slots: int

    def blocks(self) -> Iterator[Block]:
        """``(values (V,), counts (V, n_slots))`` blocks, values ascending across blocks."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class ScoreArray(ScoreTable):
    """A score table held in memory as one block."""

    values: Floats
    counts: Ints

    def __post_init__(self) -> None:
        v, c = self.values, self.counts
        if v.ndim != 1 or c.ndim != 2 or c.shape[0] != v.shape[0]:
            raise ValueError(f"ScoreArray: expected values (V,) and counts (V, S), got {v.shape} "
                             f"and {c.shape}")
        if v.size > 1 and not (np.diff(v) > 0).all():
            raise ValueError("ScoreArray: values: expected distinct ascending values")

    @property
    def n_slots(self) -> int:  # type: ignore[override]
        return int(self.counts.shape[1])

    def blocks(self) -> Iterator[Block]:
        yield self.values, self.counts


def table_from_rows(score: ArrayLike, slots: ArrayLike, n_slots: int) -> ScoreArray:
    """The table of row scores (finite floats) and their slots (ints in ``[0, n_slots)``)."""
    s = np.asarray(score, dtype=np.float64) + 0.0  # -0.0 and 0.0 are one value
    slot = np.asarray(slots, dtype=np.int64)
    values, inverse = np.unique(s, return_inverse=True)
    flat = np.bincount(inverse.reshape(-1) * n_slots + slot, minlength=values.size * n_slots)
    return ScoreArray(values, flat.astype(np.int64).reshape(values.size, n_slots))


def _folded(table: ScoreTable, fold: Ints) -> Iterator[Block]:
    """Blocks with the slots summed by ``fold`` (``(n_slots, S')`` 0/1)."""
    for values, counts in table.blocks():
        yield values, counts @ fold


def auc_from_table(table: ScoreTable, labels: Ints) -> tuple[float, float]:
    """DeLong's AUC and variance of label 1 against label 0, exactly (module docstring).

    ``labels`` maps each slot to its label (0/1).  NaN AUC when a class is empty, NaN variance
    when a class has fewer than two rows (as :func:`faircode.stats.resampling.delong_auc`).
    """
    fold = np.stack([labels == 0, labels == 1], axis=1).astype(np.int64)
    n = m = 0
    for _, counts in _folded(table, fold):
        n, m = n + int(counts[:, 0].sum()), m + int(counts[:, 1].sum())
    if m == 0 or n == 0:
        return float("nan"), float("nan")
    s1 = s2 = t1 = t2 = 0
    neg_below = pos_below = 0
    for _, counts in _folded(table, fold):
        neg, pos = counts[:, 0], counts[:, 1]
        below_neg = neg_below + np.concatenate([[0], np.cumsum(neg)[:-1]])
        below_pos = pos_below + np.concatenate([[0], np.cumsum(pos)[:-1]])
        k = 2 * below_neg + neg              # 2n x V10 of a positive at this value
        j = 2 * (m - below_pos - pos) + pos  # 2m x V01 of a negative at this value
        s1 += int(np.dot(pos, k))
        t1 += int(np.dot(neg, j))
        s2 += int(np.dot(pos.astype(object), (k * k).astype(object)))
        t2 += int(np.dot(neg.astype(object), (j * j).astype(object)))
        neg_below, pos_below = neg_below + int(neg.sum()), pos_below + int(pos.sum())
    auc = float(Fraction(s1, 2 * n * m))
    if m < 2 or n < 2:
        return auc, float("nan")
    var = Fraction((m * s2 - s1 * s1) * (n - 1) + (n * t2 - t1 * t1) * (m - 1),
                   4 * m * m * n * n * (m - 1) * (n - 1))
    return auc, float(var)


def linear_quantiles(table: ScoreTable, q: Floats) -> Floats:
    """``np.quantile(rows, q)`` (method linear) of every row of ``table``, bit for bit."""
    total = sum(int(c.sum()) for _, c in table.blocks())
    if total == 0:
        raise ValueError("score: expected at least one score, got an empty array")
    virtual = (total - 1) * np.asarray(q, dtype=np.float64)
    previous = np.floor(virtual)
    above, below = virtual >= total - 1, virtual < 0
    prev_i = np.where(above, total - 1, np.where(below, 0, previous)).astype(np.int64)
    next_i = np.where(above, total - 1, np.where(below, 0, previous + 1)).astype(np.int64)
    gamma_prev = np.where(above, -1.0, np.where(below, 0.0, previous))
    wanted = np.unique(np.concatenate([prev_i, next_i]))
    found = _order_statistics(table, wanted)
    a = np.array([found[int(i)] for i in prev_i])
    b = np.array([found[int(i)] for i in next_i])
    gamma = virtual - gamma_prev
    diff = b - a
    out = a + diff * gamma
    return np.where(gamma >= 0.5, b - diff * (1 - gamma), out)


def _order_statistics(table: ScoreTable, wanted: Ints) -> dict[int, float]:
    """The ``i``-th smallest row score for each ``i`` of ``wanted`` (ascending, 0-based)."""
    found: dict[int, float] = {}
    seen = 0
    for values, counts in table.blocks():
        ends = seen + np.cumsum(counts.sum(axis=1))
        inside = wanted[(wanted >= seen) & (wanted < (ends[-1] if ends.size else seen))]
        for i, where in zip(inside, np.searchsorted(ends, inside, side="right"), strict=True):
            found[int(i)] = float(values[where])
        seen = int(ends[-1]) if ends.size else seen
    return found


@dataclass(frozen=True, slots=True)
class CountBins:
    """Score bins defined on values: labels, bounds, note and how a value finds its bin.

    ``ordinal``: one bin per distinct level (``points``); ``probability``: bins
    ``[e_k, e_k+1)`` of the distinct edges ``points`` (the last closed).
    """

    scale: str
    points: Floats
    labels: tuple[str, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    note: str = ""

    @property
    def n_bins(self) -> int:
        """Number of bins."""
        return len(self.labels)

    def index(self, values: ArrayLike) -> Ints:
        """The bin of each value (a value of the binned rows)."""
        v = np.asarray(values, dtype=np.float64)
        if self.scale == "ordinal":
            return np.searchsorted(self.points, v, side="left").astype(np.int64)
        return np.clip(np.searchsorted(self.points, v, side="right") - 1, 0,
                       self.points.size - 2).astype(np.int64)


def count_bins(table: ScoreTable, *, scale: str, binning: str = "quantile",
               n_bins: int = 10) -> CountBins:
    """The bins :func:`faircode.stats.calibration.score_bins` draws, from the table alone."""
    if scale == "ordinal":
        values = np.concatenate([v[c.sum(axis=1) > 0] for v, c in table.blocks()])
        if values.size == 0:
            raise ValueError("score: expected at least one score, got an empty array")
        labels = tuple(str(int(v)) for v in values)
        bounds = tuple(float(v) for v in values)
        return CountBins("ordinal", values, labels, bounds, bounds)
    if binning not in ("quantile", "uniform"):
        raise ValueError(f"binning: expected one of quantile, uniform, got {describe(binning)}")
    checks.check_positive_int("n_bins", n_bins)
    grid = np.linspace(0.0, 1.0, n_bins + 1)
    edges = grid if binning == "uniform" else linear_quantiles(table, grid)
    unique = np.unique(edges)
    if unique.size == 1:  # every score equal: one bin
        unique = np.array([unique[0], unique[0]])
    merged = edges.size - unique.size
    low, high = tuple(float(e) for e in unique[:-1]), tuple(float(e) for e in unique[1:])
    labels = tuple(f"[{a:.3g}, {b:.3g}{']' if k == len(low) - 1 else ')'}"
                   for k, (a, b) in enumerate(zip(low, high, strict=True)))
    note = f"tied_edges_merged:{merged}" if merged and binning == "quantile" else ""
    return CountBins("probability", unique, labels, low, high, note)


@dataclass(frozen=True, slots=True)
class BinTotals:
    """Per bin and slot of a table: rows ``(k, S)`` and the exact score sums ``(k, S)`` (Python
    integers in units of ``2**-1200``, so sums of slots stay exact until :meth:`fold`)."""

    rows: Ints
    exact: NDArray[np.object_]

    def fold(self, fold: Ints) -> tuple[Ints, Floats]:
        """Rows and score sums of the slots summed by ``fold`` ``(S, S')``, each sum rounded
        once."""
        f = np.asarray(fold, dtype=np.int64)
        exact = self.exact @ f.astype(object)
        sums = np.array([[_to_float(int(x)) for x in row] for row in exact], dtype=np.float64)
        return self.rows @ f, sums.reshape(exact.shape)


def bin_totals(table: ScoreTable, bins: CountBins) -> BinTotals:
    """Rows and exact score sums of every bin x slot of ``table`` (one pass over its blocks)."""
    k, width = bins.n_bins, table.n_slots
    rows = np.zeros((k, width), dtype=np.int64)
    exact = np.zeros((k, width), dtype=object)
    exact[...] = 0
    for values, counts in table.blocks():
        index = bins.index(values)
        np.add.at(rows, index, counts)
        for b in np.unique(index):
            inside = index == b
            exact[b] += np.array(exact_sums(values[inside], counts[inside].T), dtype=object)
    return BinTotals(rows, exact)


def bin_sums(table: ScoreTable, bins: CountBins, fold: Ints) -> tuple[Ints, Floats]:
    """Per bin and folded slot: rows ``(k, S')`` and the exact score sum ``(k, S')``."""
    return bin_totals(table, bins).fold(fold)


def exact_sums(values: Floats, weights: Ints) -> list[int]:
    """``Σ_i w_ri · v_i`` for each row ``r`` of ``weights``, as integers in units of
    ``2**_EXPONENT_FLOOR`` (exact; :func:`_to_float` rounds them once).

    Each value is ``m · 2^e`` with a 53-bit integer ``m`` (``np.frexp``); ``m`` is split into
    27- and 26-bit halves so that a weight below ``2^31`` times a half fits an int64, and
    blocks of 16 such products are summed in int64 before the Python integers take over.
    """
    fraction, exponent = np.frexp(values)
    mantissa = (fraction * 2.0**53).astype(np.int64)
    out = [0] * weights.shape[0]
    small = weights.size == 0 or int(np.abs(weights).max()) < 2**31
    for e in np.unique(exponent):
        at = exponent == e
        shift = int(e) - 53 - _EXPONENT_FLOOR
        if not small:
            part = np.dot(weights[:, at].astype(object), mantissa[at].astype(object))
            for r in range(weights.shape[0]):
                out[r] += int(part[r]) << shift
            continue
        high, low = mantissa[at] >> 26, mantissa[at] & ((1 << 26) - 1)
        for r in range(weights.shape[0]):
            w = weights[r, at].astype(np.int64)
            total = 0
            for half, bits in ((high, 26), (low, 0)):
                products = w * half
                blocks = np.add.reduceat(products, np.arange(0, products.size, 16)) \
                    if products.size else products
                total += sum(int(x) for x in blocks) << bits
            out[r] += total << shift
    return out


def _to_float(total: int) -> float:
    return float(Fraction(total, 2 ** (-_EXPONENT_FLOOR)))
