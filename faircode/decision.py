"""Operating points: how a score becomes a decision, and whether the decisions say anything.

A manifest may declare a ``decision`` block (:class:`DecisionRule`); without one an audit
decides as before, ``score > models.decision_threshold`` (the global config's value).  The block
beats the global value.  Three rules:

* ``threshold`` -- ``ŷ = 1`` when ``score > threshold``.
* ``base_rate`` -- ``ŷ = 1`` when ``score > p``, ``p`` the *training* label rate.
* ``top_fraction`` -- the cutoff is fixed on the *training* scores, as a deployed system fixes
  it in advance: with ``n`` training rows and ``k = ceil(fraction · n)`` (``fraction`` read as
  the decimal it is written as, so 0.1 of 30 rows is 3, not 4), the cutoff is the ``k``-th
  largest training score and ``ŷ = 1`` when ``score >= cutoff``.  It is the highest cutoff that
  flags at least ``fraction`` of the training rows; every row tied at the cutoff is flagged, so
  with ties the training share flagged exceeds ``fraction`` by the tied rows only.

Everything here works from stored arrays (scores, labels, decisions) alone, so a fit step can
store scores and an evaluate step can decide later.  Which strategies the rule applies to is
the caller's business: S0-S2 (and any other deterministic score) go through
:func:`decision_cutoff`; S3/S4 keep their own randomised decisions but are fitted with a
comparable objective (:func:`faircode.strategies.objectives`).

A cell is **degenerate** (:func:`is_degenerate`) when its decisions cannot show a gap: its
selection rate is below ``min_selection_rate`` or above ``max_selection_rate``, or its balanced
accuracy lies within ``balanced_accuracy_margin`` of 0.5 (inclusive), or is undefined.
:func:`operating_point_metrics` gives the numbers the rule reads, with bootstrap CIs from the
count-level engine of :mod:`faircode.stats`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode import stats
from faircode.errors import config_error, describe

__all__ = [
    "DEGENERATE_NOTE",
    "OPERATING_POINT_METRICS",
    "RULES",
    "Cutoff",
    "DecisionRule",
    "OperatingPoint",
    "Rule",
    "decide",
    "decision_cutoff",
    "is_degenerate",
    "operating_point_metrics",
    "resolve_rule",
]

Rule = Literal["threshold", "base_rate", "top_fraction"]
RULES: tuple[str, ...] = get_args(Rule)
DEGENERATE_NOTE = "degenerate_decisions"
"""Note carried by every fairness row of a degenerate cell (beside any other note)."""
OPERATING_POINT_METRICS: tuple[str, ...] = (
    "selection_rate",
    "balanced_accuracy",
    "majority_baseline_accuracy",
)
"""Whole-test-set metrics of :func:`operating_point_metrics`, in order, each with a CI."""

_TN, _FP, _FN, _TP = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class DecisionRule:
    """An operating point: ``rule`` plus its ``threshold`` (threshold) or ``fraction``."""

    rule: Rule
    threshold: float | None = None
    fraction: float | None = None

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise config_error("decision.rule", f"one of {', '.join(RULES)}", self.rule)
        for key, value, wanted in (("threshold", self.threshold, "threshold"),
                                   ("fraction", self.fraction, "top_fraction")):
            if self.rule == wanted:
                number = value if isinstance(value, int | float) else None
                inside = number is not None and not isinstance(number, bool) and (
                    0.0 < number < 1.0 if key == "fraction" else 0.0 <= number <= 1.0)
                if not inside:
                    span = "(0, 1)" if key == "fraction" else "[0, 1]"
                    raise config_error(f"decision.{key}", f"a number in {span}", value)
            elif value is not None:
                raise config_error(f"decision.{key}", f"nothing for rule {self.rule}", value)

    @property
    def default_objective(self) -> bool:
        """Whether S3/S4 keep their accuracy objectives (only under the ``threshold`` rule)."""
        return self.rule == "threshold"

    def as_dict(self) -> dict[str, object]:
        """The rule as a plain mapping (for ``run.json``), without unset keys."""
        out: dict[str, object] = {"rule": self.rule}
        if self.threshold is not None:
            out["threshold"] = self.threshold
        if self.fraction is not None:
            out["fraction"] = self.fraction
        return out


def resolve_rule(declared: DecisionRule | None, *, default_threshold: float) -> DecisionRule:
    """Return the manifest's rule, or ``threshold`` at the global ``default_threshold``."""
    if declared is not None:
        return declared
    return DecisionRule("threshold", threshold=float(default_threshold))


@dataclass(frozen=True, slots=True)
class Cutoff:
    """A fixed score cutoff: ``ŷ = 1`` when ``score >= value`` (inclusive) or ``> value``."""

    value: float
    inclusive: bool

    def __post_init__(self) -> None:
        if not math.isfinite(self.value):
            raise ValueError(f"Cutoff: value: expected a finite number, got {describe(self.value)}")

    def apply(self, scores: ArrayLike) -> NDArray[np.int8]:
        """Return the 0/1 decisions of ``scores`` at this cutoff."""
        s = _scores("scores", scores)
        return (s >= self.value if self.inclusive else s > self.value).astype(np.int8)


def _scores(name: str, values: ArrayLike) -> NDArray[np.float64]:
    s = np.asarray(values, dtype=np.float64)
    if s.ndim != 1 or not np.all(np.isfinite(s)):
        raise ValueError(f"{name}: expected a 1-D array of finite floats, got {describe(values)}")
    return s


def decision_cutoff(
    rule: DecisionRule, *, train_scores: ArrayLike | None, train_labels: ArrayLike | None
) -> Cutoff:
    """Fix the score cutoff of ``rule`` from the training rows (see the module docstring).

    ``threshold`` needs neither array; ``base_rate`` needs ``train_labels``; ``top_fraction``
    needs ``train_scores`` (at least one row).
    """
    if rule.rule == "threshold":
        assert rule.threshold is not None
        return Cutoff(float(rule.threshold), inclusive=False)
    if rule.rule == "base_rate":
        if train_labels is None:
            raise ValueError("decision_cutoff: base_rate needs train_labels")
        y = stats.as_binary("train_labels", train_labels)
        if y.size == 0:
            raise ValueError("train_labels: expected at least one row, got 0")
        return Cutoff(float(y.mean()), inclusive=False)
    if train_scores is None:
        raise ValueError("decision_cutoff: top_fraction needs train_scores")
    s = _scores("train_scores", train_scores)
    n = s.size
    if n == 0:
        raise ValueError("train_scores: expected at least one row, got 0")
    assert rule.fraction is not None
    k = min(n, max(1, math.ceil(Fraction(repr(float(rule.fraction))) * n)))
    return Cutoff(float(np.partition(s, n - k)[n - k]), inclusive=True)


def decide(
    rule: DecisionRule,
    *,
    train_scores: ArrayLike | None,
    train_labels: ArrayLike | None,
    test_scores: ArrayLike,
) -> tuple[Cutoff, NDArray[np.int8]]:
    """Return the cutoff fixed on the training rows and the test rows' 0/1 decisions."""
    cutoff = decision_cutoff(rule, train_scores=train_scores, train_labels=train_labels)
    return cutoff, cutoff.apply(test_scores)


# ------------------------------------------------------------------------------ degenerate


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """One operating-point number of a cell: value, bootstrap CI (NaN if none), rows, group."""

    metric: str
    value: float
    ci_low: float
    ci_high: float
    n: int
    protected_attribute: str = ""
    note: str = ""


def is_degenerate(
    *,
    selection_rate: float,
    balanced_accuracy: float,
    min_selection_rate: float,
    max_selection_rate: float,
    balanced_accuracy_margin: float,
) -> bool:
    """Whether a cell's decisions are uninformative (see the module docstring for the rule)."""
    if math.isnan(selection_rate) or math.isnan(balanced_accuracy):
        return True
    return (selection_rate < min_selection_rate or selection_rate > max_selection_rate
            or abs(balanced_accuracy - 0.5) <= balanced_accuracy_margin)


def _selection(c: NDArray[np.int64]) -> NDArray[np.float64]:
    return _ratio(c[..., _FP] + c[..., _TP], c.sum(axis=-1))


def _balanced(c: NDArray[np.int64]) -> NDArray[np.float64]:
    tpr = _ratio(c[..., _TP], c[..., _TP] + c[..., _FN])
    tnr = _ratio(c[..., _TN], c[..., _TN] + c[..., _FP])
    return (tpr + tnr) / 2.0


def _majority(c: NDArray[np.int64]) -> NDArray[np.float64]:
    positives = _ratio(c[..., _FN] + c[..., _TP], c.sum(axis=-1))
    return np.maximum(positives, 1.0 - positives)


def _ratio(num: ArrayLike, den: ArrayLike) -> NDArray[np.float64]:
    num_f, den_f = np.asarray(num, np.float64), np.asarray(den, np.float64)
    out = np.full(np.broadcast(num_f, den_f).shape, np.nan)
    np.divide(num_f, den_f, out=out, where=den_f > 0)
    return out


def operating_point_metrics(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    groups: Mapping[str, ArrayLike],
    *,
    n_resamples: int,
    confidence: float,
    seed: int | np.random.SeedSequence,
) -> tuple[OperatingPoint, ...]:
    """Selection rate, balanced accuracy and majority-class baseline accuracy of one cell.

    The three whole-test-set metrics (:data:`OPERATING_POINT_METRICS`) get percentile CIs from
    one multinomial bootstrap of the 2x2 counts (``child_seed(seed, 0)``).  The baseline is the
    accuracy of always deciding the test set's majority class.  Then, for each entry of
    ``groups`` (attribute name -> 0/1 disadvantaged mask), ``selection_rate_disadvantaged`` and
    ``selection_rate_advantaged`` as plain values (no CI).
    """
    y = stats.as_binary("y_true", y_true)
    yhat = stats.as_binary("y_pred", y_pred)
    stats.check_lengths(y_true=y, y_pred=yhat)
    stats.check_positive_int("n_resamples", n_resamples)
    stats.check_confidence(confidence)
    counts = stats.confusion_counts(y, yhat)
    n, nan = int(y.size), float("nan")
    rng = np.random.default_rng(stats.child_seed(seed, 0))
    draws = stats.bootstrap_counts(counts, n_resamples=n_resamples, rng=rng) if n else None
    out: list[OperatingPoint] = []
    for name, fn in zip(OPERATING_POINT_METRICS, (_selection, _balanced, _majority), strict=True):
        value = float(fn(counts))
        if np.isnan(value) or draws is None:
            out.append(OperatingPoint(name, value, nan, nan, n, note="insufficient_data"))
            continue
        low, high = stats.percentile_interval(fn(draws), confidence=confidence)
        out.append(OperatingPoint(name, value, low, high, n))
    for attribute, mask in groups.items():
        dis = stats.as_mask(attribute, mask)
        stats.check_lengths(y_pred=yhat, disadvantaged=dis)
        for side, rows in (("disadvantaged", dis), ("advantaged", ~dis)):
            size = int(rows.sum())
            rate = float(yhat[rows].mean()) if size else nan
            out.append(OperatingPoint(f"selection_rate_{side}", rate, nan, nan, size,
                                      protected_attribute=attribute,
                                      note="" if size else "insufficient_data"))
    return tuple(out)


def check_degenerate_bounds(
    *, min_selection_rate: float, max_selection_rate: float, balanced_accuracy_margin: float,
    where: str = "config",
) -> None:
    """Raise :class:`ConfigError` unless ``0 <= min < max <= 1`` and the margin is in [0, 0.5)."""
    for key, value in (("degenerate_min_selection_rate", min_selection_rate),
                       ("degenerate_max_selection_rate", max_selection_rate)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise config_error(f"{where}.{key}", "a number in [0, 1]", value)
    if not min_selection_rate < max_selection_rate:
        raise config_error(f"{where}.degenerate_max_selection_rate",
                           f"a number above degenerate_min_selection_rate "
                           f"({min_selection_rate:g})", max_selection_rate)
    margin = balanced_accuracy_margin
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin < 0.5:
        raise config_error(f"{where}.degenerate_balanced_accuracy_margin", "a number in [0, 0.5)",
                           margin)

