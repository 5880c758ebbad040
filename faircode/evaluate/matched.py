"""Relaxed post-processing at the violation its rival reaches: the matched-violation comparisons.

``matched.csv`` settles, per audit, the claim of Cruz & Hardt (ICLR 2024) that post-processing
the most accurate model with a relaxed constraint matches or beats in-processing.  For every
matched comparison of the strategy table (:data:`faircode.core.cells.MATCHED`: S5 against S3 at
the violation S3 reaches, S5 against S4 at ε = 0) and every model family, on the audit's first
protected attribute (the one the constraint is enforced on):

1. **The target**: the reference's violation of the constraint on the rows it enforced it on
   (S3: its training rows; :attr:`faircode.grid.predictions.CellPredictions.violations`), or the
   comparison's fixed tolerance.  Never a test-row number: choosing the point on the test rows
   is the selection flaw ABCFair documents.
2. **The matched point** of the strategy's tolerance curve on the same replicate
   (:func:`match_point`): its points' training violations (or tolerances, for a fixed
   tolerance) are interpolated linearly to the target.  Between the two nearest points ``k``
   and ``k + 1`` at weight ``w`` the matched classifier is their mixture -- each test row
   decided by point ``k + 1`` with probability ``w``, by point ``k`` otherwise -- whose expected
   rates, violation and accuracy are the interpolation's.  A target beyond the curve takes its
   nearest end, and ``match`` says so: ``below_curve`` (the curve cannot reach a violation that
   low: the strategy is compared at a larger one) or ``above_curve`` (at a smaller one).
3. **The paired effect** of the matched strategy minus the reference on accuracy and balanced
   accuracy, on the same test rows, from the paired effects' engine
   (:func:`faircode.stats.paired.paired_comparisons`: the same resampling, interval, test of
   ``Δ = 0`` and equivalence test at ``stats.cost_margin``).
4. **Verdicts**: the audit's own Benjamini-Hochberg family of the table's tests (the
   equivalence tests another), and :func:`faircode.stats.matched.matched_q_values`
   (``better`` / ``worse`` / ``no_difference`` / ``inconclusive`` / ``uninformative``).  The
   report adds the benchmark-wide family and its verdict (:mod:`faircode.report.matched`).

Design decisions
----------------
* **Seeds by name.**  Comparison ``key = name_stream("<strategy>-<reference>-matched")``; the
  mixture's uniforms come from ``child_seed(master, Stream.PREDICTION, key, m)`` (a randomised
  prediction), the paired engine's from ``child_seed(master, Stream.EFFECTS, key, m, 0)``.
* **Uninformative**, with a note and NaN numbers: a cell of either strategy skipped, not fitted
  or degenerate (:func:`faircode.evaluate.effects.unusable`), or an undefined target.
* **Training replicates.**  The comparison is made on the evaluate step's replicate 0, whose
  test rows every other table reports; at K > 1 ``replicates`` says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import MATCHED, ModelFamily, Strategy
from faircode.core.config import StatsConfig
from faircode.core.seeds import Stream, child_seed, name_stream
from faircode.evaluate.effects import effect_margins, unusable
from faircode.evaluate.score import CellResult
from faircode.grid.predictions import CellPredictions
from faircode.stats.matched import matched_q_values
from faircode.stats.metrics import orient
from faircode.stats.paired import PERFORMANCE_EFFECTS, Comparison, paired_comparisons

__all__ = [
    "MATCHED_COLUMNS",
    "UNDEFINED_TARGET",
    "Match",
    "match_point",
    "matched_key",
    "matched_q_values",
    "matched_table",
]

UNDEFINED_TARGET = "undefined_target"
"""The note of a comparison whose reference reached no defined violation."""

MATCHED_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "reference", "model", "protected_attribute", "metric", "target",
    "match", "tolerance", "weight", "reference_violation", "strategy_violation", "value",
    "ci_low", "ci_high", "ci_method", "p_value", "q_value", "significant", "verdict",
    "equivalence_margin", "equivalence_p_value", "equivalence_q_value", "value_strategy",
    "value_reference", "n_disadvantaged", "n_advantaged", "n_units", "design_effect", "base",
    "replicates", "note")
"""Columns of ``matched.csv`` (one row per comparison x model family x performance metric)."""


def matched_key(strategy: Strategy, reference: Strategy) -> int:
    """A matched comparison's seed key (module docstring)."""
    return name_stream(f"{strategy.value}-{reference.value}-matched")


@dataclass(frozen=True, slots=True)
class Match:
    """Where a target falls on a curve: between points ``lower`` and ``lower + 1`` at
    ``weight`` (the probability of the upper point; 0 at a point), the interpolated
    ``tolerance`` and ``violation``, and ``where`` (``at_point``, ``interpolated``,
    ``below_curve``, ``above_curve``)."""

    lower: int
    weight: float
    tolerance: float
    violation: float
    where: str


def match_point(values: Sequence[float], target: float, *, tolerances: Sequence[float],
                violations: Sequence[float]) -> Match:
    """The point of a curve at ``target`` on the scale ``values`` (its violations, or its
    tolerances): the first bracket ``values[k] <= target <= values[k + 1]`` in curve order,
    linear weight between them; beyond the curve its nearest end (module docstring, step 2)."""
    v = np.asarray(values, dtype=float)
    t, w_ = np.asarray(tolerances, dtype=float), np.asarray(violations, dtype=float)
    if not (len(v) == len(t) == len(w_) > 0) or not math.isfinite(target):
        raise ValueError(f"match_point: expected a finite target and a non-empty curve, got "
                         f"{target!r} on {len(v)} points")

    def at(k: int, weight: float, where: str) -> Match:
        upper = min(k + 1, len(v) - 1)
        return Match(k, weight, float(t[k] + weight * (t[upper] - t[k])),
                     float(w_[k] + weight * (w_[upper] - w_[k])), where)

    if target <= v[0] or target >= v[-1]:
        k = 0 if target <= v[0] else len(v) - 1
        close = math.isclose(target, v[k], rel_tol=0.0, abs_tol=1e-12)
        return at(k, 0.0, "at_point" if close else "below_curve" if k == 0 else "above_curve")
    for k in range(len(v) - 1):
        if v[k] <= target <= v[k + 1]:
            span = v[k + 1] - v[k]
            weight = (target - v[k]) / span if span > 0 else 0.0
            if weight >= 1.0:
                return at(k + 1, 0.0, "at_point")
            return at(k, weight, "at_point" if weight == 0.0 else "interpolated")
    k = int(np.argmin(np.abs(v - target)))  # a curve that is not monotone: its nearest point
    return at(k, 0.0, "below_curve" if v[k] > target else "above_curve")


def _mixture(cell: CellPredictions, match: Match, seed: np.random.SeedSequence) -> np.ndarray:
    """The matched classifier's test decisions (label coding): point ``lower + 1`` with
    probability ``weight``, else point ``lower``."""
    low = np.asarray(cell.curve_decision[match.lower], dtype=np.int8)
    if match.weight == 0.0:
        return low
    upper = np.asarray(cell.curve_decision[match.lower + 1], dtype=np.int8)
    u = np.random.default_rng(seed).random(len(low))
    return np.where(u < match.weight, upper, low).astype(np.int8)


@dataclass(frozen=True, slots=True)
class _Planned:
    label: dict[str, Any]
    why: str
    match: Match | None


def _plan(cell: CellPredictions | None, reference: CellPredictions | None, result: str,
          tolerance: float | None) -> tuple[str, Match | None, float]:
    """``(why not, match, the reference's violation)`` of one comparison of one family."""
    ref_violation = reference.violations[0] if reference is not None and \
        reference.violations else math.nan
    if result:
        return result, None, ref_violation
    assert cell is not None
    if not cell.tolerances:
        return UNDEFINED_TARGET, None, ref_violation
    if tolerance is None:
        if not math.isfinite(ref_violation):
            return UNDEFINED_TARGET, None, ref_violation
        values, target = cell.violations, ref_violation
    else:
        values, target = cell.tolerances, tolerance
    return "", match_point(values, target, tolerances=cell.tolerances,
                           violations=cell.violations), ref_violation


def matched_table(data: PreparedAudit, results: Sequence[CellResult],
                  cells: Sequence[CellPredictions], *, stats: StatsConfig,
                  master: int | None = None, replicates: int = 1) -> pd.DataFrame:
    """``matched.csv`` of one replicate's scored ``results`` and their predictions ``cells``
    (module docstring); ``replicates`` is recorded (the run's K)."""
    master = data.manifest.random_state if master is None else master
    test = data.test_index
    first = data.manifest.protected_attributes[0].name
    mask = np.asarray(data.disadvantaged[first][test], dtype=bool)
    units = None if data.unit is None else np.asarray(data.unit)[test]
    scored = {(str(r.strategy), str(r.family)): r for r in results}
    fitted = {(str(c.strategy), str(c.family)): c for c in cells}
    planned: list[_Planned] = []
    todo: list[Comparison] = []
    for strategy, matched in MATCHED:
        key = matched_key(strategy, matched.reference)
        for m, family in enumerate(ModelFamily):
            mine, theirs = (strategy.value, family.value), (matched.reference.value, family.value)
            if mine not in fitted and theirs not in fitted:
                continue  # neither strategy in this run (a subset of the grid)
            a, b = scored.get(mine), scored.get(theirs)
            why, match, ref_violation = _plan(fitted.get(mine), fitted.get(theirs),
                                              unusable(a, b), matched.tolerance)
            label = {"strategy": strategy.value, "reference": matched.reference.value,
                     "model": family.value, "protected_attribute": first,
                     "target": "reference_violation" if matched.tolerance is None
                     else f"tolerance={matched.tolerance:g}",
                     "reference_violation": ref_violation,
                     "base": fitted[mine].base if mine in fitted else ""}
            planned.append(_Planned(label, why, match))
            if match is None:
                continue
            assert a is not None and b is not None and a.decided and b.decided
            decisions = _mixture(fitted[mine], match,
                                 child_seed(master, Stream.PREDICTION, key, m))
            _, yhat = orient(data.y[test], decisions, favourable=data.manifest.target.favourable)
            todo.append(Comparison(b.decided.y_fav, yhat, b.decided.yhat_fav, mask,
                                   child_seed(master, Stream.EFFECTS, key, m, 0), units))
    done = iter(paired_comparisons(todo, n_resamples=stats.n_resamples,
                                   n_permutations=stats.n_permutations,
                                   confidence=stats.confidence, margins=effect_margins(stats)))
    rows = [row for p in planned for row in _rows(p, next(done)[0] if p.match else None,
                                                   n=len(test), mask=mask, units=units)]
    frame = pd.DataFrame(rows, columns=[c for c in MATCHED_COLUMNS if c not in (
        "audit", "q_value", "significant", "verdict", "equivalence_q_value", "replicates")])
    frame.insert(0, "audit", data.manifest.name)
    frame["replicates"] = replicates
    return matched_q_values(frame.reindex(columns=list(MATCHED_COLUMNS)), alpha=stats.alpha)


def _rows(p: _Planned, effects: Sequence[Any] | None, *, n: int, mask: np.ndarray,
          units: np.ndarray | None) -> list[dict[str, Any]]:
    """The accuracy and balanced accuracy rows of one planned comparison."""
    nan = math.nan
    match = p.match
    where = {"match": match.where, "tolerance": match.tolerance, "weight": match.weight,
             "strategy_violation": match.violation} if match else {
        "match": "", "tolerance": nan, "weight": nan, "strategy_violation": nan}
    found = {e.metric: e for e in effects or ()}
    rows = []
    for metric in PERFORMANCE_EFFECTS:
        e = found.get(metric)
        numbers = {"value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
                   "ci_method": e.ci_method, "p_value": e.p_value,
                   "equivalence_p_value": e.equivalence_p_value, "value_strategy": e.gap_a,
                   "value_reference": e.gap_b, "n_disadvantaged": e.n_disadvantaged,
                   "n_advantaged": e.n_advantaged, "n_units": e.n_units,
                   "design_effect": e.design_effect, "note": e.note} if e is not None else {
            "value": nan, "ci_low": nan, "ci_high": nan, "ci_method": "", "p_value": nan,
            "equivalence_p_value": nan, "value_strategy": nan, "value_reference": nan,
            "n_disadvantaged": int(mask.sum()), "n_advantaged": int((~mask).sum()),
            "n_units": n if units is None else int(np.unique(units).size),
            "design_effect": nan, "note": p.why}
        rows.append({**p.label, "metric": metric, **where, **numbers})
    return rows
