"""Subgroup, BPSN and BNSP AUCs (Borkan et al. 2019) with cluster-bootstrap intervals.

For a subgroup (the sentences holding an identity term) and a score, Borkan, Dixon, Sorensen,
Thain & Vasserman ("Nuanced Metrics for Measuring Unintended Bias with Real Data for Text
Classification", WWW 2019 companion) compare three AUCs, each the probability that a positive
outscores a negative (ties ½):

* **subgroup AUC** -- positives and negatives of the subgroup;
* **BPSN** (background positive, subgroup negative) -- the background's positives against the
  subgroup's negatives: low when the subgroup's non-toxic sentences score like toxic ones
  (false-positive bias);
* **BNSP** (background negative, subgroup positive) -- the subgroup's positives against the
  background's negatives: low when the subgroup's toxic sentences score low;
* **pinned AUC** (Dixon, Li, Sorensen, Thain & Vasserman 2018) -- the AUC of the subgroup's
  sentences pooled with as many sentences of the whole data.  Dixon et al. draw that sample;
  here it is its population value, with no draw: every subgroup row weighs ``1/(2 n_t) +
  1/(2 n)`` and every other row ``1/(2 n)`` (``n_t`` subgroup rows of ``n``), the two halves
  of the pinned set in expectation, so the number is reproducible and its interval is the
  bootstrap's alone.

Design decisions
----------------
* **Units.**  Sentences of one template frame are not independent, so intervals come from the
  cluster percentile bootstrap over units: :func:`unit_weights` draws the multinomial weights of
  every unit once (``B × units``), and every AUC of an audit is evaluated on the same draws.
* **Count-level.**  An AUC's numerator only needs, per pair of units ``(i, j)``, the sum over
  their positive x negative row pairs of ``[s⁺ > s⁻] + ½[s⁺ = s⁻]`` (:func:`pair_matrix`:
  one side's counts per unit below each distinct score of the other), so a bootstrap draw
  is ``w_P' H w_N / ((w_P · n⁺)(w_N · n⁻))`` -- a matrix product over units, never over
  rows.  The point estimate is the same sum at unit weights, i.e. the Mann-Whitney AUC
  (``sklearn.metrics.roc_auc_score``) exactly.
* A draw without positives or negatives is NaN and left out of the percentile interval; an AUC
  with no positive or no negative row is NaN with a note.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core.checks import as_binary, as_mask, check_confidence, check_positive_int
from faircode.core.seeds import child_seed
from faircode.stats.resampling import percentile_interval

__all__ = ["AUC_METRICS", "PINNED_AUC", "AucResult", "CrossCounts", "UnitWeights", "auc",
           "pair_matrix", "subgroup_aucs", "unit_weights"]

AUC_METRICS = ("subgroup_auc", "bpsn_auc", "bnsp_auc")
PINNED_AUC = "pinned_auc"


@dataclass(frozen=True, slots=True)
class AucResult:
    """One AUC with its cluster-bootstrap interval and the rows it compares."""

    metric: str
    value: float
    ci_low: float
    ci_high: float
    n_positive: int
    n_negative: int
    note: str = ""


@dataclass(frozen=True, slots=True)
class UnitWeights:
    """Each row's unit (``0..U-1``) and the bootstrap weights of the units, shape ``(B, U)``."""

    unit: NDArray[np.int64]
    weights: NDArray[np.float64]


def unit_weights(units: ArrayLike | None, n_rows: int, *, n_resamples: int,
                 seed: int | np.random.SeedSequence) -> UnitWeights:
    """Multinomial weights of the units (each row its own unit without ``units``): ``B`` draws
    of ``U`` units with replacement, from ``seed``'s child 0."""
    check_positive_int("n_resamples", n_resamples)
    if units is None:
        unit = np.arange(n_rows, dtype=np.int64)
    else:
        u = np.asarray(units)
        if u.shape != (n_rows,):
            raise ValueError(f"units: expected {n_rows} unit ids, got shape {u.shape}")
        unit = np.unique(u, return_inverse=True)[1].reshape(-1).astype(np.int64)
    n_units = int(unit.max()) + 1 if n_rows else 0
    rng = np.random.default_rng(child_seed(seed, 0))
    weights = rng.multinomial(n_units, np.full(n_units, 1.0 / max(n_units, 1)),
                              size=n_resamples).astype(np.float64)
    return UnitWeights(unit, weights)


_CELLS = 4_000_000  # table cells (distinct query values x units) held at once


def _value_table(small: NDArray[np.float64], small_unit: NDArray[np.int64], n_small: int,
                 values: NDArray[np.float64], *, above: bool) -> NDArray[np.float64]:
    """``(len(values), n_small)``: per sorted distinct query value ``v`` and small-side unit,
    ``#[small < v] + ½#[small = v]`` (``above``: ``#[small > v] + ½#[=]``).

    Two sorted searches place every small row among the values; the counts below each value are
    a cumulative sum of those places per unit, the ties a count at the value itself.  A small row
    beyond the last value counts for none, so any sorted run of the values is its own table.
    """
    n_values = values.size
    right = np.searchsorted(values, small, side="right")  # values <= small: below from there
    left = np.searchsorted(values, small, side="left")
    places = np.bincount(right * n_small + small_unit, minlength=(n_values + 1) * n_small)
    below = np.cumsum(places.reshape(n_values + 1, n_small)[:n_values], axis=0)
    tie = right > left  # the small row equals values[left]
    equal = np.bincount(left[tie] * n_small + small_unit[tie],
                        minlength=n_values * n_small).reshape(n_values, n_small)
    if above:
        totals = np.bincount(small_unit, minlength=n_small)
        return (totals - below - equal) + 0.5 * equal
    return below + 0.5 * equal


def _value_tables(query: NDArray[np.float64], small: NDArray[np.float64],
                  small_unit: NDArray[np.int64], n_small: int, *, above: bool
                  ) -> tuple[NDArray[np.int64], int, Iterator[tuple[int, NDArray[np.float64]]]]:
    """Each query row's code (its distinct value's index), the number of distinct values, and
    their :func:`_value_table`, one run of about :data:`_CELLS` cells at a time: ``(start,
    table)``, the table's rows being the codes ``start, start + 1, ...``."""
    values, code = np.unique(query, return_inverse=True)
    step = max(1, _CELLS // max(n_small, 1))
    runs = ((start, _value_table(small, small_unit, n_small, values[start:start + step],
                                 above=above)) for start in range(0, values.size, step))
    return code.reshape(-1), values.size, runs


def _side_sums(small: NDArray[np.float64], small_unit: NDArray[np.int64], n_small: int,
               query: NDArray[np.float64], query_unit: NDArray[np.int64], n_query: int, *,
               above: bool) -> NDArray[np.float64]:
    """``(n_query, n_small)``: per query unit and small-side unit, the sum over their row pairs
    of ``[small < query] + ½[small = query]`` (``above``: ``[small > query] + ½[=]``).

    The tables of the distinct query values (:func:`_value_tables`), summed by query unit, run
    by run.  Every sum is of half-integers far below 2**53, so it is exact, whatever the order.
    """
    code, _, runs = _value_tables(query, small, small_unit, n_small, above=above)
    by_unit = np.argsort(query_unit, kind="stable")
    code_by_unit = code[by_unit]
    out = np.zeros((n_query, n_small))
    for start, table in runs:
        rows = by_unit[(code_by_unit >= start) & (code_by_unit < start + len(table))]
        units = query_unit[rows]
        cuts = np.r_[0, np.flatnonzero(np.diff(units)) + 1]
        out[units[cuts]] += np.add.reduceat(table[code[rows] - start], cuts, axis=0)
    return out


def _row_table(query: NDArray[np.float64], small: NDArray[np.float64],
               small_unit: NDArray[np.int64], n_small: int, *, above: bool
               ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """Each query row's code and the float32 table of the distinct values
    (:func:`_value_tables`): row ``r``'s counts are ``table[code[r]]`` (half-integers far below
    2**23, exact)."""
    code, n_values, runs = _value_tables(query, small, small_unit, n_small, above=above)
    table = np.empty((n_values, n_small), dtype=np.float32)
    for start, part in runs:
        table[start:start + len(part)] = part
    return code, table


def pair_matrix(pos_scores: ArrayLike, pos_units: ArrayLike, neg_scores: ArrayLike,
                neg_units: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64],
                                               NDArray[np.float64]]:
    """``(positive units, negative units, H)`` with ``H[i, j]`` the sum over positive rows of unit
    ``i`` and negative rows of unit ``j`` of ``[s⁺ > s⁻] + ½[s⁺ = s⁻]``."""
    sp, sn = np.asarray(pos_scores, dtype=np.float64), np.asarray(neg_scores, dtype=np.float64)
    pu, pi = np.unique(np.asarray(pos_units, dtype=np.int64), return_inverse=True)
    nu, ni = np.unique(np.asarray(neg_units, dtype=np.int64), return_inverse=True)
    pi, ni = pi.reshape(-1), ni.reshape(-1)
    # the counts are read once per query row and small-side unit: the cheaper way round
    negatives = sp.size * nu.size <= sn.size * pu.size
    if negatives:
        h = _side_sums(sn, ni, nu.size, sp, pi, pu.size, above=False)
    else:
        h = _side_sums(sp, pi, pu.size, sn, ni, nu.size, above=True).T
    return pu, nu, h


def _from_matrix(metric: str, w_pos: NDArray[np.float64], w_neg: NDArray[np.float64],
                 h: NDArray[np.float64], count_pos: NDArray[np.int64],
                 count_neg: NDArray[np.int64], *, confidence: float) -> AucResult:
    """The AUC of the unit-pair sums ``h`` (positive units x negative units, with each unit's
    rows ``count_pos`` and ``count_neg``) and its cluster-bootstrap percentile interval on the
    draws ``w_pos`` and ``w_neg`` of those units (``B x units`` each)."""
    n_pos, n_neg = int(count_pos.sum()), int(count_neg.sum())
    if n_pos == 0 or n_neg == 0:
        nan = math.nan
        return AucResult(metric, nan, nan, nan, n_pos, n_neg,
                         "no_positive_rows" if n_pos == 0 else "no_negative_rows")
    value = float(h.sum()) / (n_pos * n_neg)
    numerator = _numerators(w_pos, w_neg, h)
    denominator = (w_pos @ count_pos) * (w_neg @ count_neg)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = np.where(denominator > 0, numerator / denominator, np.nan)
    low, high = percentile_interval(draws, confidence=confidence)
    return AucResult(metric, value, low, high, n_pos, n_neg)


def _numerators(w_pos: NDArray[np.float64], w_neg: NDArray[np.float64],
                h: NDArray[np.float64]) -> NDArray[np.float64]:
    """Every draw's ``w_P' H w_N`` (``B`` numbers)."""
    return np.einsum("bi,bi->b", w_pos @ h, w_neg)


def auc(scores: ArrayLike, positive: ArrayLike, negative: ArrayLike, *, weights: UnitWeights,
        metric: str = "auc", confidence: float = 0.95) -> AucResult:
    """The AUC of the ``positive`` rows against the ``negative`` ones (boolean masks) with its
    cluster-bootstrap percentile interval on ``weights``' draws."""
    s = np.asarray(scores, dtype=np.float64)
    pos, neg = as_mask("positive", positive), as_mask("negative", negative)
    check_confidence(confidence)
    unit = weights.unit
    pu, nu, h = pair_matrix(s[pos], unit[pos], s[neg], unit[neg])
    count_pos = np.bincount(np.searchsorted(pu, unit[pos]), minlength=pu.size)
    count_neg = np.bincount(np.searchsorted(nu, unit[neg]), minlength=nu.size)
    return _from_matrix(metric, weights.weights[:, pu], weights.weights[:, nu], h, count_pos,
                        count_neg, confidence=confidence)


def _sum_by_unit(rows: NDArray[np.float32], unit: NDArray[np.int64]
                 ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The distinct ``unit`` values and the float64 sums of ``rows`` per unit."""
    order = np.argsort(unit, kind="stable")
    u = unit[order]
    cuts = np.r_[0, np.flatnonzero(np.diff(u)) + 1] if u.size else np.zeros(0, dtype=np.int64)
    if not u.size:
        return u, np.zeros((0, rows.shape[1]))
    return u[cuts], np.add.reduceat(rows[order].astype(np.float64), cuts, axis=0)


class CrossCounts:
    """One score's counts of every row against every unit of the other label, so that many
    subgroups' BPSN and BNSP AUCs share them.

    ``neg_vs_pos[neg_code[r], i]`` sums ``[s⁺ > s⁻] + ½[=]`` over the positives of unit ``i``
    for negative row ``r``; ``pos_vs_neg[pos_code[r], j]`` over the negatives of unit ``j`` for
    positive row ``r`` -- one row per distinct score, shared by the rows that have it
    (:func:`_row_table`).  A subgroup's background side is then the sum of its own rows' counts
    minus its subgroup-by-subgroup part, at a cost of its rows x units.
    """

    def __init__(self, scores: ArrayLike, labels: ArrayLike, *, weights: UnitWeights) -> None:
        s = np.asarray(scores, dtype=np.float64)
        y = as_binary("labels", labels).astype(bool)
        self.scores, self.y, self.weights = s, y, weights
        unit = weights.unit
        self.pos_rows, self.neg_rows = np.flatnonzero(y), np.flatnonzero(~y)
        self.pu, pi = np.unique(unit[y], return_inverse=True)
        self.nu, ni = np.unique(unit[~y], return_inverse=True)
        self.pos_count = np.bincount(pi.reshape(-1), minlength=self.pu.size)
        self.neg_count = np.bincount(ni.reshape(-1), minlength=self.nu.size)
        self.w_pos, self.w_neg = weights.weights[:, self.pu], weights.weights[:, self.nu]
        sp, sn = s[y], s[~y]
        self.neg_code, self.neg_vs_pos = _row_table(sn, sp, pi.reshape(-1), self.pu.size,
                                                    above=True)
        self.pos_code, self.pos_vs_neg = _row_table(sp, sn, ni.reshape(-1), self.nu.size,
                                                    above=False)
        self._all: tuple[float, NDArray[np.float64]] | None = None

    def _overall(self) -> tuple[float, NDArray[np.float64]]:
        """Every positive against every negative: the sum and its draws (computed once)."""
        if self._all is None:
            _, by_neg = _sum_by_unit(self.neg_vs_pos[self.neg_code],
                                     self.weights.unit[self.neg_rows])
            h_all = by_neg.T  # (positive units, negative units)
            self._all = (float(h_all.sum()), _numerators(self.w_pos, self.w_neg, h_all))
        return self._all

    def aucs(self, member: ArrayLike, *, confidence: float = 0.95,
             pinned: bool = False) -> tuple[AucResult, ...]:
        """Subgroup, BPSN and BNSP AUC (:data:`AUC_METRICS` order) of the ``member`` rows; and
        with ``pinned`` their pinned AUC after them (module docstring)."""
        mem = as_mask("member", member)
        unit, s, w = self.weights.unit, self.scores, self.weights
        mp, mn = mem[self.pos_rows], mem[self.neg_rows]  # member rows among each label
        pu_t, nu_t, h_sub = pair_matrix(s[self.pos_rows[mp]], unit[self.pos_rows[mp]],
                                        s[self.neg_rows[mn]], unit[self.neg_rows[mn]])
        sub_pos = np.bincount(np.searchsorted(pu_t, unit[self.pos_rows[mp]]),
                              minlength=pu_t.size)
        sub_neg = np.bincount(np.searchsorted(nu_t, unit[self.neg_rows[mn]]),
                              minlength=nu_t.size)
        w_pos_t, w_neg_t = w.weights[:, pu_t], w.weights[:, nu_t]
        subgroup = _from_matrix("subgroup_auc", w_pos_t, w_neg_t, h_sub, sub_pos, sub_neg,
                                confidence=confidence)
        at_pos, at_neg = np.searchsorted(self.pu, pu_t), np.searchsorted(self.nu, nu_t)
        # BPSN: every positive (minus the subgroup's) against the subgroup's negatives
        _, by_neg = _sum_by_unit(self.neg_vs_pos[self.neg_code[mn]],
                                 unit[self.neg_rows[mn]])
        h_bpsn = by_neg.T  # (all positive units, subgroup negative units)
        h_bpsn[at_pos] -= h_sub
        bg_pos = self.pos_count.copy()
        bg_pos[at_pos] -= sub_pos
        bpsn = _from_matrix("bpsn_auc", self.w_pos, w_neg_t, h_bpsn, bg_pos, sub_neg,
                            confidence=confidence)
        # BNSP: the subgroup's positives against every negative (minus the subgroup's)
        _, h_bnsp = _sum_by_unit(self.pos_vs_neg[self.pos_code[mp]],
                                 unit[self.pos_rows[mp]])
        h_bnsp[:, at_neg] -= h_sub
        bg_neg = self.neg_count.copy()
        bg_neg[at_neg] -= sub_neg
        bnsp = _from_matrix("bnsp_auc", w_pos_t, self.w_neg, h_bnsp, sub_pos, bg_neg,
                            confidence=confidence)
        if not pinned:
            return subgroup, bpsn, bnsp
        blocks = [(h_sub, w_pos_t, w_neg_t), (h_bpsn, self.w_pos, w_neg_t),
                  (h_bnsp, w_pos_t, self.w_neg)]
        sums = np.array([float(h.sum()) for h, _, _ in blocks])
        draws = np.stack([_numerators(wp, wn, h) for h, wp, wn in blocks])
        counts = (sub_pos, bg_pos, sub_neg, bg_neg)
        drawn = np.stack([w_pos_t @ sub_pos, self.w_pos @ bg_pos, w_neg_t @ sub_neg,
                          self.w_neg @ bg_neg])
        return subgroup, bpsn, bnsp, self._pinned(sums, draws, counts, drawn,
                                                  confidence=confidence)

    def _pinned(self, sums: NDArray[np.float64], draws: NDArray[np.float64],
                counts: tuple[NDArray[np.int64], ...], drawn: NDArray[np.float64], *,
                confidence: float) -> AucResult:
        """The pinned AUC from the three blocks' sums (subgroup, BPSN, BNSP), the overall sum,
        and each side's subgroup and background rows (point: ``counts``; draws: ``drawn``)."""
        total, total_draws = self._overall()
        point = np.array([float(c.sum()) for c in counts])
        n_pos, n_neg = int(point[0]), int(point[2])
        if n_pos + n_neg == 0 or point[0] + point[1] == 0 or point[2] + point[3] == 0:
            nan = math.nan
            return AucResult(PINNED_AUC, nan, nan, nan, n_pos, n_neg, "empty_group")
        value = _pinned_value(sums, total, point)
        with np.errstate(invalid="ignore", divide="ignore"):
            values = _pinned_value(draws, total_draws, drawn)
        low, high = percentile_interval(values, confidence=confidence)
        return AucResult(PINNED_AUC, float(value), low, high, n_pos, n_neg)


def _pinned_value(sums: NDArray[np.float64], total: NDArray[np.float64] | float,
                  counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """The pinned AUC from the subgroup, BPSN and BNSP numerators (``sums[0..2]``), the overall
    one and the rows (subgroup positives, background positives, subgroup negatives,
    background negatives): the AUC at weight ``1/(2 n_t) + 1/(2 n)`` per subgroup row and
    ``1/(2 n)`` per other row (elementwise over draws)."""
    s_mm, s_om, s_mo = sums[0], sums[1], sums[2]
    s_oo = total - s_mm - s_om - s_mo
    p_m, p_o, n_m, n_o = counts
    n_t, n = p_m + n_m, p_m + p_o + n_m + n_o
    beta = 1.0 / (2.0 * n)
    alpha = 1.0 / (2.0 * n_t) + beta
    numerator = alpha**2 * s_mm + alpha * beta * (s_om + s_mo) + beta**2 * s_oo
    return np.asarray(numerator / ((alpha * p_m + beta * p_o) * (alpha * n_m + beta * n_o)))


def subgroup_aucs(scores: ArrayLike, labels: ArrayLike, member: ArrayLike, *,
                  weights: UnitWeights, confidence: float = 0.95) -> tuple[AucResult, ...]:
    """Subgroup, BPSN and BNSP AUC (:data:`AUC_METRICS` order) of the ``member`` rows; label 1
    is positive.  Each from its own rows (:func:`auc`): the reference of :class:`CrossCounts`."""
    y = as_binary("labels", labels).astype(bool)
    mem = as_mask("member", member)
    return (auc(scores, mem & y, mem & ~y, weights=weights, metric="subgroup_auc",
                confidence=confidence),
            auc(scores, ~mem & y, mem & ~y, weights=weights, metric="bpsn_auc",
                confidence=confidence),
            auc(scores, mem & y, ~mem & ~y, weights=weights, metric="bnsp_auc",
                confidence=confidence))
