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
comparable objective (:func:`faircode.grid.strategies.objectives`).

A cell is **degenerate** (:func:`is_degenerate`) when its decisions cannot show a gap: its
selection rate is below ``min_selection_rate`` or above ``max_selection_rate``, or its balanced
accuracy lies within ``balanced_accuracy_margin`` of 0.5 (inclusive), or is undefined.
:func:`operating_point_metrics` gives the numbers the rule reads, with bootstrap CIs from the
count-level engine of :mod:`faircode.stats.resampling`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import config_error, describe

__all__ = [
    "RULES",
    "Cutoff",
    "DecisionRule",
    "Rule",
    "decide",
    "decision_cutoff",
    "resolve_rule",
]

Rule = Literal["threshold", "base_rate", "top_fraction"]
RULES: tuple[str, ...] = get_args(Rule)



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
        y = checks.as_binary("train_labels", train_labels)
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


