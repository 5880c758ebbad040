"""The counts behind every table of one row set: a :class:`Tally`, mergeable over any chunking.

A row set (a grid cell's test decisions, a deployed system on every row, a decision log of
10⁸ rows) enters the statistics only through these counts; every number of ``fairness.csv``,
``performance.csv``, ``intersectional.csv``, ``groups.csv``, ``calibration.csv`` and
``calibration_gap.csv`` is a function of them (:mod:`faircode.evaluate.counted`):

* ``cells`` ``(2^A, 4)``: rows per **joint group** x confusion cell ``(TN, FP, FN, TP)`` in the
  target's label coding.  The joint group of a row is ``Σ_a 2^a · [disadvantaged on a]`` over the
  ``A`` protected attributes, so one attribute's groups, an attribute pair's four cells and the
  whole set are sums of joint groups (:func:`attribute_fold` ...).
* ``units`` (when some unit has several rows): the histogram of per-unit count vectors over the
  same ``2^A x 4`` slots (:class:`~faircode.stats.units.UnitHistogram`), from which every
  marginal's unit types follow.
* ``scores`` (when the row set has a score): the distinct values with rows per joint group x
  label (:class:`~faircode.stats.score_table.ScoreTable`), and ``bins`` with ``unit_bins`` -- the
  calibration bins and, with repeated units, per attribute and side the units' histogram over
  bin x label (a unit's part in that side).

Design decisions
----------------
* **Counts are added, histograms collapsed.**  Two chunks' tallies merge by adding cells and
  pooling their rows' per-unit and per-score counts (:mod:`faircode.stats.accumulate`), so a
  tally does not depend on how the rows were chunked, sharded or ordered; the in-memory path
  (:func:`tally_rows`) is the same counting over one chunk.
* Orientation is applied to marginals (``favourable``), never stored: the fairness statistics
  count the favourable outcome, the per-group and calibration tables the target's labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.stats import clusters
from faircode.stats.score_table import CountBins, ScoreTable, count_bins, table_from_rows
from faircode.stats.units import CountedTypes, UnitHistogram

__all__ = [
    "Tally",
    "joint_groups",
    "tally_rows",
]

Ints = NDArray[np.int64]
_CELLS = 4


def joint_groups(masks: Sequence[ArrayLike]) -> Ints:
    """The joint group of each row: ``Σ_a 2^a · masks[a]`` (masks: disadvantaged per attribute)."""
    if not masks:
        raise ValueError("masks: expected at least one protected attribute")
    out = np.zeros(np.asarray(masks[0]).shape[0], dtype=np.int64)
    for a, mask in enumerate(masks):
        out |= checks.as_mask(f"masks[{a}]", mask).astype(np.int64) << a
    return out


@dataclass(frozen=True, slots=True)
class Tally:
    """Counts of one row set (module docstring); build with :func:`tally_rows` or
    :class:`faircode.stats.accumulate.TallyBuilder`."""

    attributes: tuple[str, ...]
    cells: Ints
    units: UnitHistogram | None = None
    scores: ScoreTable | None = None
    bins: CountBins | None = None
    unit_bins: tuple[CountedTypes, ...] | None = None
    """Per attribute and side (disadvantaged, advantaged: ``2 a + side``), the units' histogram
    over ``2 * bin + label`` of the calibration bins."""

    def __post_init__(self) -> None:
        g = 1 << len(self.attributes)
        if self.cells.shape != (g, _CELLS):
            raise ValueError(f"Tally: cells: expected ({g}, 4), got {self.cells.shape}")
        if self.units is not None and self.units.n_slots != g * _CELLS:
            raise ValueError("Tally: units: expected the joint slots")
        if self.scores is not None and self.scores.n_slots != g * 2:
            raise ValueError("Tally: scores: expected joint group x label slots")
        if (self.unit_bins is not None) and (self.bins is None or self.units is None
                                             or len(self.unit_bins) != 2 * len(self.attributes)):
            raise ValueError("Tally: unit_bins: expected bins, repeated units and a histogram "
                             "per attribute side")

    @property
    def n_groups(self) -> int:
        """Joint groups ``2^A``."""
        return 1 << len(self.attributes)

    @property
    def n_rows(self) -> int:
        """Rows counted."""
        return int(self.cells.sum())

    def index(self, attribute: str) -> int:
        """The position of ``attribute``."""
        if attribute not in self.attributes:
            raise ValueError(f"attribute: expected one of {', '.join(self.attributes)}, got "
                             f"{attribute!r}")
        return self.attributes.index(attribute)

    # -- folds: 0/1 matrices summing the joint slots into a marginal layout ---------------------

    def side_of(self, a: int) -> Ints:
        """Per joint group: 0 when disadvantaged on attribute ``a``, 1 when advantaged."""
        return 1 - ((np.arange(self.n_groups) >> a) & 1)

    def group_fold(self, a: int, *, favourable: int | None) -> Ints:
        """Joint slots -> attribute ``a``'s (D, A) x 4 cells (oriented when ``favourable`` is
        given: cell ``c`` of label coding becomes ``3 - c`` for ``favourable = 0``)."""
        fold = np.zeros((self.n_groups * _CELLS, 2 * _CELLS), dtype=np.int64)
        side = self.side_of(a)
        for g in range(self.n_groups):
            for c in range(_CELLS):
                target = c if favourable in (None, 1) else _CELLS - 1 - c
                fold[g * _CELLS + c, side[g] * _CELLS + target] = 1
        return fold

    def overall_fold(self) -> Ints:
        """Joint slots -> the whole set's 4 cells (label coding)."""
        return np.tile(np.eye(_CELLS, dtype=np.int64), (self.n_groups, 1))

    def pair_fold(self, a: int, b: int, *, favourable: int, only_corners: bool) -> Ints:
        """Joint slots -> the pair's cells (dd, da, ad, aa) x (decided unfavourable, favourable)
        in the (TN, FP) slots of 4 (y unused); ``only_corners``: dd and aa as groups 0 and 1."""
        width = (2 if only_corners else 4) * _CELLS
        fold = np.zeros((self.n_groups * _CELLS, width), dtype=np.int64)
        side_a, side_b = self.side_of(a), self.side_of(b)
        for g in range(self.n_groups):
            cell = 2 * side_a[g] + side_b[g]
            if only_corners:
                if cell in (1, 2):
                    continue
                cell = 0 if cell == 0 else 1
            for c in range(_CELLS):
                decided = c & 1 if favourable == 1 else 1 - (c & 1)
                fold[g * _CELLS + c, cell * _CELLS + decided] = 1
        return fold

    # -- marginals ------------------------------------------------------------------------------

    def counts(self, fold: Ints) -> Ints:
        """The cells summed by ``fold``, shape ``(width // 4, 4)``."""
        return (self.cells.reshape(-1) @ fold).reshape(-1, _CELLS)

    def types(self, fold: Ints, n_groups: int) -> clusters.UnitTypes | None:
        """The units' types under ``fold`` (None when no unit repeats)."""
        return None if self.units is None else self.units.project(fold).unit_types(n_groups)

    def with_bins(self, *, scale: str, binning: str = "quantile", n_bins: int = 10) -> Tally:
        """This tally with the calibration bins of its scores (no unit histogram yet)."""
        if self.scores is None:
            raise ValueError("Tally: expected scores to bin")
        return replace(self, bins=count_bins(self.scores, scale=scale, binning=binning,
                                             n_bins=n_bins), unit_bins=None)


def tally_rows(
    attributes: Sequence[str],
    y_true: ArrayLike,
    y_pred: ArrayLike,
    masks: Sequence[ArrayLike],
    *,
    units: ArrayLike | None = None,
    score: ArrayLike | None = None,
    scale: str | None = None,
) -> Tally:
    """The tally of row arrays (the in-memory path; every array one entry per row).

    ``masks[a]`` is attribute ``a``'s disadvantaged mask, ``units`` any ids (one per row),
    ``score`` finite floats with their ``scale`` (then the calibration bins and, with repeated
    units, their unit histogram are part of the tally).
    """
    y = checks.as_binary("y_true", y_true)
    yhat = checks.as_binary("y_pred", y_pred)
    checks.check_lengths(y_true=y, y_pred=yhat)
    group = joint_groups(masks)
    n_groups = 1 << len(attributes)
    slot = group * _CELLS + 2 * y.astype(np.int64) + yhat
    cells = np.bincount(slot, minlength=n_groups * _CELLS).astype(np.int64)
    hist = None
    if units is not None:
        u = np.asarray(units)
        if u.shape != y.shape:
            raise ValueError(f"units: expected {y.size} ids, got shape {u.shape}")
        hist = UnitHistogram.from_rows(u, slot, n_groups * _CELLS)
        hist = hist if hist.repeated() else None
    tally = Tally(tuple(attributes), cells.reshape(n_groups, _CELLS), hist)
    if score is None:
        return tally
    s = np.asarray(score, dtype=np.float64)
    table = table_from_rows(s, group * 2 + y, n_groups * 2)
    tally = replace(tally, scores=table)
    if scale is None:
        return tally
    tally = tally.with_bins(scale=scale)
    if hist is None:
        return tally
    assert tally.bins is not None and units is not None
    k, u = tally.bins.n_bins, np.asarray(units)
    local = 2 * tally.bins.index(s) + y
    sides = []
    for mask in masks:
        disadvantaged = checks.as_mask("mask", mask)
        for rows in (disadvantaged, ~disadvantaged):
            sides.append(UnitHistogram.from_rows(u[rows], local[rows], 2 * k))
    return replace(tally, unit_bins=tuple(sides))
