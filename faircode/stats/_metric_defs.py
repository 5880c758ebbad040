"""Definitions of the group-fairness metrics as vectorised functions of confusion counts.

This private module is the *what* of :mod:`faircode.stats.metrics` (which holds the *how*:
intervals, resampling drivers, result records).  Every metric is a function of the two groups'
confusion counts, arrays of shape ``(..., 4)`` in the cell order ``(TN, FP, FN, TP)`` of
:mod:`faircode.stats.resampling`, so one function gives the point estimate, every bootstrap
resample and every permutation statistic, whatever feeds the counts (a row bootstrap today, a
cluster bootstrap tomorrow).  Each metric's :class:`Spec` is built from its record in
:data:`faircode.core.metrics.METRIC_TABLE` -- the cells of its group rate, its scale, its
components -- so a metric that compares a group rate needs no function of its own here.

Design decisions
----------------
* **One orientation.**  Counts are built from labels already relabelled by :func:`orient`:
  ``1`` means the manifest's *favourable* outcome (AIF360's ``favorable_label``), whatever its
  raw code.  "Positive rate" is the favourable-decision rate, TPR the favourable-decision rate
  among rows whose true outcome is favourable, FPR among rows whose true outcome is
  unfavourable, precision the share of favourable decisions whose true outcome is favourable.
  Every difference is disadvantaged minus advantaged and disparate impact the ratio of the
  favourable-decision rates, so a negative difference (a ratio below 1) means the disadvantaged
  group is worse off.
* **By scale** (:class:`~faircode.core.metrics.MetricInfo`): a ``difference`` is the rate's
  difference, permuted with ``|difference|``, interval Newcombe's; a ``ratio`` the rates' ratio
  (NaN when the advantaged rate is 0), permuted as the same rates' ``|difference|`` (the same
  null), interval Katz's log; a ``magnitude`` ``max(|component|)`` of its signed components.
* **Equalized odds** is ``max(|TPR gap|, |FPR gap|)`` (fairlearn's definition), a magnitude with
  no sign; the signed gaps are the separate metrics ``tpr_gap`` and ``fpr_gap``.  Its interval is
  on that same statistic: each gap's Newcombe interval ``[l, u]`` is mapped to an interval of
  ``|gap|`` (``[0, max(|l|, |u|)]`` if it contains 0, else ``[min(|l|, |u|), max(|l|, |u|)]``)
  and the two are combined by ``max`` endpoint-wise; it contains the truth whenever both gap
  intervals do.  A percentile bootstrap of the maximum covered only 0.83–0.88 on groups of
  25–40 rows (``bench/coverage.py``), since the maximum of absolute values is biased upwards.
* **One null, one test.**  Disparate impact tests the same null on the same stratum as
  demographic parity, and ``tpr_gap`` the same as equal opportunity (it *is* equal opportunity;
  it is repeated so the two signed components of equalized odds sit side by side).  Such a
  metric reports its twin's permutation p-value (:data:`SAME_NULL`, each record's
  ``same_null``) and enters the audit's Benjamini–Hochberg family once, through the twin.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe
from faircode.core.metrics import (
    FAIRNESS_METRICS,
    FN,
    FP,
    TN,
    TP,
    MetricInfo,
    metric_info,
    table_of,
)
from faircode.stats import resampling

Counts = NDArray[np.int64]
Floats = NDArray[np.float64]


SAME_NULL: dict[str, str] = {m.name: m.same_null.value for m in table_of("binary")
                             if m.same_null is not None}
"""A metric whose null hypothesis is another's reports that one's p-value (and q-value)."""


class Interval(StrEnum):
    """How a fairness metric's confidence interval is computed (column ``ci_method``)."""

    NEWCOMBE = "newcombe_hybrid_score"
    KATZ = "katz_log"
    NEWCOMBE_MAX = "newcombe_max_abs"


def orient(
    y_true: ArrayLike, y_pred: ArrayLike, *, favourable: int
) -> tuple[NDArray[np.int8], NDArray[np.int8]]:
    """Relabel validated 0/1 labels and decisions so that ``1`` is the favourable outcome.

    Call it once, before any group metric: with ``favourable = 0`` both arrays are flipped.
    """
    if isinstance(favourable, bool) or favourable not in (0, 1):
        raise ValueError(f"favourable: expected 0 or 1, got {describe(favourable)}")
    y = checks.as_binary("y_true", y_true)
    yhat = checks.as_binary("y_pred", y_pred)
    if favourable == 1:
        return y, yhat
    return (1 - y).astype(np.int8), (1 - yhat).astype(np.int8)


def ratio(num: ArrayLike, den: ArrayLike) -> Floats:
    """Divide elementwise, NaN where the denominator is 0."""
    num_f = np.asarray(num, dtype=np.float64)
    den_f = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num_f, den_f).shape, np.nan)
    np.divide(num_f, den_f, out=out, where=den_f > 0)
    return out


def positive_rate(c: Counts) -> Floats:
    return ratio(c[..., FP] + c[..., TP], c.sum(axis=-1))


def tpr(c: Counts) -> Floats:
    return ratio(c[..., TP], c[..., TP] + c[..., FN])


def accuracy(c: Counts) -> Floats:
    return ratio(c[..., TN] + c[..., TP], c.sum(axis=-1))


def dp(d: Counts, a: Counts) -> Floats:
    return positive_rate(d) - positive_rate(a)


@dataclass(frozen=True, slots=True)
class Spec:
    """How one fairness metric is computed, subset, permuted and given an interval.

    ``value`` maps counts to the metric, ``statistic`` to the permutation statistic ``|T|``,
    ``subsets`` are the row sets (cell tuples) its group rates are defined on (the permutation
    strata), ``success`` the cells counted as a success in the (first) subset, ``components``
    a magnitude's signed components (the names of other metrics).
    """

    value: Callable[[Counts, Counts], Floats]
    statistic: Callable[[Counts, Counts], Floats]
    subsets: tuple[tuple[int, ...], ...]
    interval: Interval
    success: tuple[int, ...]
    components: tuple[str, ...] = ()


def _rate(info: MetricInfo) -> Callable[[Counts], Floats]:
    """The group rate of ``info``: its numerator cells over its denominator cells."""
    num, den = list(info.numerator), list(info.denominator)
    return lambda c: ratio(c[..., num].sum(axis=-1), c[..., den].sum(axis=-1))


def _build(info: MetricInfo) -> Spec:
    """The :class:`Spec` of one record of the metric table (module docstring: by scale)."""
    if info.scale == "magnitude":
        parts = [_build(metric_info(c)) for c in info.components]

        def largest(d: Counts, a: Counts) -> Floats:  # NaN if any component is NaN
            return functools.reduce(np.maximum, [np.abs(p.value(d, a)) for p in parts])

        return Spec(largest, largest, tuple(s for p in parts for s in p.subsets),
                    Interval.NEWCOMBE_MAX, (), tuple(c.value for c in info.components))
    rate = _rate(info)

    def difference(d: Counts, a: Counts) -> Floats:
        return rate(d) - rate(a)

    def statistic(d: Counts, a: Counts) -> Floats:
        return np.abs(difference(d, a))

    if info.scale == "ratio":
        def quotient(d: Counts, a: Counts) -> Floats:
            rate_a = rate(a)
            return ratio(rate(d), np.where(rate_a > 0, rate_a, 0.0))

        return Spec(quotient, statistic, (info.denominator,), Interval.KATZ, info.numerator)
    return Spec(difference, statistic, (info.denominator,), Interval.NEWCOMBE, info.numerator)


SPECS: dict[str, Spec] = {m.name: _build(m) for m in table_of("binary")}
"""Every fairness metric's :class:`Spec`, in :data:`FAIRNESS_METRICS` order."""


def spec(metric: str) -> Spec:
    """Return the :class:`Spec` of ``metric`` or raise a ValueError naming the valid ones."""
    if metric not in SPECS:
        raise ValueError(
            f"metric: expected one of {', '.join(FAIRNESS_METRICS)}, got {describe(metric)}"
        )
    return SPECS[metric]


def metric_values(metric: str, counts_d: ArrayLike, counts_a: ArrayLike) -> Floats:
    """Evaluate fairness ``metric`` on confusion counts of shape ``(..., 4)`` (NaN if undefined)."""
    return spec(metric).value(np.asarray(counts_d, np.int64), np.asarray(counts_a, np.int64))


def closed_form_interval(
    metric: str, counts_d: ArrayLike, counts_a: ArrayLike, *, confidence: float
) -> tuple[Floats, Floats]:
    """Return the interval of ``metric`` (its :class:`Interval`), vectorised over leading axes."""
    s = spec(metric)
    # float counts: the clustered path passes effective (design-effect-deflated) counts; integer
    # counts give the same sums as before, so the row-level intervals are unchanged bit for bit
    d, a = np.asarray(counts_d, np.float64), np.asarray(counts_a, np.float64)
    if s.interval is Interval.NEWCOMBE_MAX:  # endpoint-wise max of the components' |intervals|
        parts = [_abs_interval(*closed_form_interval(c, d, a, confidence=confidence))
                 for c in s.components]
        return (functools.reduce(np.maximum, [p[0] for p in parts]),  # NaN if any is NaN
                functools.reduce(np.maximum, [p[1] for p in parts]))
    subset = list(s.subsets[0])
    x_d, n_d = d[..., list(s.success)].sum(-1), d[..., subset].sum(-1)
    x_a, n_a = a[..., list(s.success)].sum(-1), a[..., subset].sum(-1)
    if s.interval is Interval.KATZ:
        return resampling.katz_ratio_interval(x_d, n_d, x_a, n_a, confidence=confidence)
    return resampling.newcombe_interval(x_d, n_d, x_a, n_a, confidence=confidence)


def larger_component(metric: str, counts_d: Counts, counts_a: Counts) -> NDArray[np.str_]:
    """The component of magnitude ``metric`` that carries it (the first on a tie), elementwise
    (a ``str`` array; meaningless where the value is undefined)."""
    s = spec(metric)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = s.value(counts_d, counts_a)
        out = np.asarray(s.components[-1])
        for component in reversed(s.components[:-1]):
            size = np.abs(SPECS[component].value(counts_d, counts_a))
            out = np.where(size >= value, component, out)
    return out


def _abs_interval(low: Floats, high: Floats) -> tuple[Floats, Floats]:
    """Map an interval of ``g`` to the interval of ``|g|`` it implies."""
    straddles = (low <= 0.0) & (high >= 0.0)
    lower = np.where(straddles, 0.0, np.minimum(np.abs(low), np.abs(high)))
    return np.where(np.isnan(low), np.nan, lower), np.maximum(np.abs(low), np.abs(high))
