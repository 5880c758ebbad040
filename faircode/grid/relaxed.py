"""S5, relaxed post-processing: group thresholds within a tolerance ε on the most accurate model.

Cruz & Hardt ("Unprocessing seven years of algorithmic fairness", ICLR 2024) report that
post-processing the most accurate model, with the constraint relaxed to a tolerance, reaches every
fairness-accuracy trade-off the other methods they evaluated reach.  S5 is that procedure inside
the grid, for the cell's model family and the first protected attribute
(:func:`fit_relaxed`), on the training rows only:

1. The training rows are split exactly as S4 splits them (the same stratified 70/30 split, the
   same seed: :func:`faircode.grid.strategies.calibration_split`).
2. **The base model.**  The candidates are the cell's family on the feature sets of the
   unmitigated strategies, fewest features first (S2's, S1's, S0's; a set equal to an earlier
   one is fitted once).  Each is fitted on the 70 % and scored on the 30 % by the
   post-processor's objective at that objective's Bayes cutoff (accuracy at 0.5; balanced
   accuracy at the fitting rows' label rate); the best is kept, a tie going to the leaner set.
   The test rows are never seen: choosing on them would be the selection flaw ABCFair documents.
3. **The curve.**  For every tolerance ε of ``mitigation.tolerances`` a post-processor of that
   base model is fitted on the 30 %: fairlearn's ``ThresholdOptimizer(prefit=True, tol=ε)``
   (fairlearn >= 0.13, PR #1453) -- at ε = 0 with ``tol=None``, S4's own call -- and, for
   equalized odds with ε > 0, which fairlearn's ``tol`` does not cover, :class:`RelaxedOdds`:
   a linear program over the two groups' ROC hulls (:func:`solve_relaxed_odds`).
4. **The violation** each point reaches on the 30 % (the rows its constraint was enforced on),
   from its expected decisions (:func:`faircode.grid.violation.constraint_violation`): within ε
   by construction.

Design decisions
----------------
* **S4's split, seed and draws.**  With S4's base model (S2's features) and ε = 0, S5's
  thresholds are S4's, and with S4's prediction draws (the strategy table's ``draws``) so are its
  decisions, bit for bit: S4 vs S5 at ε = 0 is the base-model choice alone.
* **One uniform per row**, decide 1 when ``P(1 | x) >= u`` (fairlearn's
  ``InterpolatedThresholder`` rule), the same uniforms for every point of the curve: the points
  differ by their thresholds only.
* The main tables show the first tolerance's decisions (the exact constraint by default); the
  whole curve goes to ``frontier.csv`` and ``matched.csv`` (:mod:`faircode.evaluate.matched`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from fairlearn.postprocessing import ThresholdOptimizer
from scipy.optimize import linprog
from sklearn.utils import check_random_state

from faircode.core.cells import Strategy
from faircode.core.errors import DataError
from faircode.grid.violation import constraint_violation

__all__ = ["Candidate", "RelaxedOdds", "RelaxedPostProcessor", "expected_decisions",
           "fit_relaxed", "lottery_pmf", "solve_relaxed_odds", "validation_score"]

OBJECTIVES = ("accuracy_score", "balanced_accuracy_score")


@dataclass(frozen=True, slots=True)
class Candidate:
    """A base model S5 may post-process: the feature set of ``strategy`` and a maker of a fresh,
    seeded estimator of the cell's family for those columns."""

    strategy: Strategy
    columns: tuple[str, ...]
    make: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class RelaxedOdds:
    """Equalized odds within ε: per group, a lottery over thresholds of the base model's score.

    ``thresholds[g]``/``weights[g]``: group ``g``'s thresholds (decide 1 when the score is at
    least one) and their probabilities (summing to 1), from :func:`solve_relaxed_odds`.
    """

    estimator: Any
    thresholds: tuple[np.ndarray, np.ndarray]
    weights: tuple[np.ndarray, np.ndarray]

    def pmf(self, X: pd.DataFrame, *, sensitive_features: np.ndarray) -> np.ndarray:
        """P(decide 1) of every row of ``X``."""
        return lottery_pmf(self.estimator.predict_proba(X)[:, 1],
                           np.asarray(sensitive_features), self.thresholds, self.weights)

    def predict(self, X: pd.DataFrame, *, sensitive_features: np.ndarray,
                random_state: int | None = None) -> np.ndarray:
        """Decisions: 1 where :meth:`pmf` is at least the row's uniform."""
        p = self.pmf(X, sensitive_features=sensitive_features)
        return (p >= check_random_state(random_state).rand(len(p))).astype(np.int8)


def lottery_pmf(score: np.ndarray, groups: np.ndarray,
                thresholds: tuple[np.ndarray, np.ndarray],
                weights: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``Σ_j w_gj [score >= t_gj]`` of every row (``g`` its group, 0 or 1)."""
    out = np.zeros(len(score))
    for g in (0, 1):
        mine = groups == g
        above = score[mine, None] >= thresholds[g][None, :]
        out[mine] = above.astype(float) @ weights[g]
    return out


def _hull(fpr: np.ndarray, tpr: np.ndarray) -> np.ndarray:
    """The positions of the vertices of the convex hull of the points (Andrew's monotone chain;
    collinear points dropped): every point the LP needs."""
    order = np.lexsort((tpr, fpr))
    points = np.column_stack([fpr, tpr])[order]

    def half(idx: Sequence[int]) -> list[int]:
        chain: list[int] = []
        for i in idx:
            while len(chain) >= 2:
                (x1, y1), (x2, y2) = points[chain[-2]], points[chain[-1]]
                x3, y3 = points[i]
                if (x2 - x1) * (y3 - y1) - (y2 - y1) * (x3 - x1) > 0:
                    break
                chain.pop()
            chain.append(i)
        return chain

    lower, upper = half(range(len(points))), half(range(len(points) - 1, -1, -1))
    return np.unique(order[np.array(lower[:-1] + upper[:-1] or [0])])


def _roc(score: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(thresholds, fpr, tpr)`` of "decide 1 when score >= t" at every distinct score, and
    of deciding 0 always (t = inf), reduced to the convex hull's vertices."""
    t = np.append(np.unique(score), np.inf)
    pos, neg = np.sort(score[y == 1]), np.sort(score[y == 0])
    if not len(pos) or not len(neg):
        raise DataError("relaxed_post_processing: equalized odds: a group of the calibration "
                        "rows lacks a label (its ROC curve is undefined)")
    tpr = (len(pos) - np.searchsorted(pos, t, side="left")) / len(pos)
    fpr = (len(neg) - np.searchsorted(neg, t, side="left")) / len(neg)
    keep = _hull(fpr, tpr)
    return t[keep], fpr[keep], tpr[keep]


def solve_relaxed_odds(score: np.ndarray, y: np.ndarray, groups: np.ndarray, *,
                       tolerance: float, objective: str,
                       ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The best lottery over each group's ROC points with both rate gaps within ``tolerance``.

    Variables: each group's probabilities ``λ_gj >= 0`` (summing to 1) on its ROC hull's
    vertices ``(fpr_gj, tpr_gj)`` -- every classifier of the group's scores is in that hull.
    Maximised: the expected ``objective`` on these rows (accuracy: ``Σ_g n_g1·TPR_g + n_g0·(1 −
    FPR_g)``; balanced accuracy: the mean of the overall TPR and TNR), linear in ``λ``.
    Constraints: ``|TPR_1 − TPR_0| <= ε`` and ``|FPR_1 − FPR_0| <= ε``.  Solved by HiGHS
    (``scipy.optimize.linprog``).  Returns ``(thresholds, weights)`` per group.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {objective!r}")
    y = np.asarray(y, dtype=np.int64)
    groups = np.asarray(groups, dtype=np.int64)
    rocs = [_roc(score[groups == g], y[groups == g]) for g in (0, 1)]
    n1, n0 = int((y == 1).sum()), int((y == 0).sum())
    coefficients, sizes = [], []
    for g, (_, fpr, tpr) in enumerate(rocs):
        p1, p0 = int(((groups == g) & (y == 1)).sum()), int(((groups == g) & (y == 0)).sum())
        gain = (p1 * tpr - p0 * fpr) / len(y) if objective == "accuracy_score" else (
            0.5 * (p1 / n1) * tpr - 0.5 * (p0 / n0) * fpr)
        coefficients.append(-gain)
        sizes.append(len(fpr))
    c = np.concatenate(coefficients)
    a_eq = np.zeros((2, len(c)))
    a_eq[0, :sizes[0]] = 1.0
    a_eq[1, sizes[0]:] = 1.0
    rows = []
    for k in (1, 2):  # fpr, tpr: group 1's rate minus group 0's, both ways
        gap = np.concatenate([-rocs[0][k], rocs[1][k]])
        rows += [gap, -gap]
    solved = linprog(c, A_ub=np.array(rows), b_ub=np.full(4, tolerance), A_eq=a_eq,
                     b_eq=np.ones(2), bounds=(0, None), method="highs")
    if not solved.success:
        raise DataError(f"relaxed_post_processing: equalized odds within {tolerance:g}: the "
                        f"linear program failed ({solved.message})")
    out_t, out_w = [], []
    for g, part in enumerate(np.split(np.clip(solved.x, 0.0, None), [sizes[0]])):
        used = part > 1e-12
        out_t.append(rocs[g][0][used])
        out_w.append(part[used] / part[used].sum())
    return (out_t[0], out_t[1]), (out_w[0], out_w[1])


def validation_score(score: np.ndarray, y: np.ndarray, *, objective: str,
                     base_rate: float) -> float:
    """A candidate base model's ``objective`` on the validation rows at its Bayes cutoff:
    accuracy of ``score > 0.5``, or balanced accuracy of ``score > base_rate``."""
    y = np.asarray(y, dtype=np.int64)
    if objective == "accuracy_score":
        return float(np.mean((score > 0.5) == (y == 1)))
    decided = score > base_rate
    rates = [np.mean(decided[y == 1]) if (y == 1).any() else np.nan,
             np.mean(~decided[y == 0]) if (y == 0).any() else np.nan]
    return float(np.nanmean(rates))


@dataclass(frozen=True, slots=True)
class RelaxedPostProcessor:
    """A fitted S5 cell: its base model and one post-processor per tolerance.

    ``base`` is the strategy whose features the chosen model reads (``columns``), ``validation``
    every candidate's validation score; ``points`` the post-processors in ``tolerances`` order
    and ``violations`` the violation each reached on the calibration rows.
    """

    base: Strategy
    columns: tuple[str, ...]
    estimator: Any
    points: tuple[Any, ...]
    tolerances: tuple[float, ...]
    violations: tuple[float, ...]
    validation: tuple[tuple[Strategy, float], ...]

    def predict(self, X: pd.DataFrame, *, sensitive_features: np.ndarray,
                random_state: int | None = None) -> np.ndarray:
        """The first tolerance's decisions (the main tables')."""
        return np.asarray(self.points[0].predict(X, sensitive_features=sensitive_features,
                                                 random_state=random_state), dtype=np.int8)

    def predict_curve(self, X: pd.DataFrame, *, sensitive_features: np.ndarray,
                      random_state: int | None = None) -> tuple[np.ndarray, ...]:
        """Every tolerance's decisions, with the same uniforms."""
        return tuple(np.asarray(p.predict(X, sensitive_features=sensitive_features,
                                          random_state=random_state), dtype=np.int8)
                     for p in self.points)

    @property
    def record(self) -> str:
        """What ``run.json`` says of the choice: ``base S0's features (validation 0.752;
        S2 0.741, ...)`` spelled with the strategies' names."""
        scores = ", ".join(f"{s.value} {v:.4f}" for s, v in self.validation)
        return f"base model: {self.base.value}'s features (validation {scores})"


def expected_decisions(point: Any, X: pd.DataFrame, sensitive: np.ndarray) -> np.ndarray:
    """P(decide 1) of every row of a fitted post-processor (fairlearn's
    ``ThresholdOptimizer`` or :class:`RelaxedOdds`)."""
    if isinstance(point, RelaxedOdds):
        return point.pmf(X, sensitive_features=sensitive)
    return np.asarray(point._pmf_predict(X, sensitive_features=sensitive))[:, 1]


def _choose(candidates: Sequence[Candidate], X: pd.DataFrame, y: np.ndarray,
            fit_idx: np.ndarray, cal_idx: np.ndarray, *, objective: str,
            ) -> tuple[Candidate, Any, tuple[tuple[Strategy, float], ...]]:
    """The most accurate candidate on the calibration rows (module docstring, step 2)."""
    base_rate = float(np.mean(y[fit_idx]))
    best: tuple[float, Candidate, Any] | None = None
    scores, seen = [], set()
    for candidate in candidates:
        if candidate.columns in seen:
            continue
        seen.add(candidate.columns)
        model = candidate.make()
        model.fit(X.iloc[fit_idx].loc[:, list(candidate.columns)], y[fit_idx])
        score = model.predict_proba(X.iloc[cal_idx].loc[:, list(candidate.columns)])[:, 1]
        value = validation_score(score, y[cal_idx], objective=objective, base_rate=base_rate)
        scores.append((candidate.strategy, value))
        if best is None or value > best[0]:
            best = (value, candidate, model)
    assert best is not None
    return best[1], best[2], tuple(scores)


def fit_relaxed(
    candidates: Sequence[Candidate], *, X: pd.DataFrame, y: np.ndarray, sensitive: np.ndarray,
    fit_idx: np.ndarray, cal_idx: np.ndarray, constraint: str, fairlearn_constraint: str,
    objective: str, tolerances: Sequence[float],
) -> RelaxedPostProcessor:
    """Choose the base model and fit the curve (module docstring, steps 2-4).

    ``X``/``y``/``sensitive``: the training rows (every candidate's columns); ``fit_idx`` and
    ``cal_idx`` their split; ``constraint`` the ``mitigation.constraint`` (its violation is
    measured) and ``fairlearn_constraint`` ThresholdOptimizer's name for it.
    """
    if not candidates or not tolerances:
        raise ValueError("fit_relaxed: candidates, tolerances: expected at least one each")
    chosen, base, validation = _choose(candidates, X, y, fit_idx, cal_idx, objective=objective)
    features = X.iloc[cal_idx].loc[:, list(chosen.columns)]
    y_cal, s_cal = y[cal_idx], np.asarray(sensitive)[cal_idx]
    points, violations = [], []
    for tolerance in tolerances:
        point: Any
        if constraint == "equalized_odds" and tolerance > 0:
            score = base.predict_proba(features)[:, 1]
            thresholds, weights = solve_relaxed_odds(score, y_cal, s_cal, tolerance=tolerance,
                                                     objective=objective)
            point = RelaxedOdds(base, thresholds, weights)
        else:
            point = ThresholdOptimizer(estimator=base, constraints=fairlearn_constraint,
                                       objective=objective, prefit=True,
                                       predict_method="predict_proba",
                                       tol=tolerance if tolerance > 0 else None)
            point.fit(features, y_cal, sensitive_features=s_cal)
        points.append(point)
        expected = expected_decisions(point, features, s_cal)
        violations.append(constraint_violation(y_cal, s_cal, expected, constraint=constraint))
    return RelaxedPostProcessor(chosen.strategy, chosen.columns, base, tuple(points),
                                tuple(float(t) for t in tolerances), tuple(violations),
                                validation)
