"""Tests of S5 (faircode.grid.relaxed): ε = 0 is S4, every point is within its ε where it was
fitted, the equalized-odds LP against fairlearn's exact solution, the base model's choice."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from fairlearn.postprocessing import ThresholdOptimizer
from sklearn.base import BaseEstimator, ClassifierMixin

from faircode.audit.data import load_audit
from faircode.audit.prepared import PreparedAudit, prepare
from faircode.core.cells import ModelFamily, Strategy
from faircode.core.config import BenchmarkConfig
from faircode.grid import strategies
from faircode.grid.calibration import calibration_split
from faircode.grid.fit import fit_cell
from faircode.grid.relaxed import (
    Candidate,
    expected_decisions,
    fit_relaxed,
    lottery_pmf,
    solve_relaxed_odds,
)

S4, S5 = Strategy.POST_PROCESSING, Strategy.RELAXED_POST_PROCESSING


@pytest.fixture(scope="module")
def german(audit_repo) -> PreparedAudit:  # type: ignore[no-untyped-def]
    """The prepared German credit audit (1,000 rows)."""
    return prepare(load_audit(audit_repo.manifests["german_credit_lending"]))


def _cell(data: PreparedAudit, strategy: Strategy, family: ModelFamily, *,
          constraint: str = "demographic_parity") -> Any:
    mitigation = BenchmarkConfig().with_params({"mitigation.constraint": constraint}).mitigation
    return fit_cell(data, strategy, family, mitigation=mitigation,
                    seed=data.manifest.random_state, train=data.train_index,
                    test=data.test_index, perturbed=None, keep_train_scores=False)


@pytest.mark.parametrize("family", list(ModelFamily))
def test_s5_at_zero_on_s4s_base_model_decides_as_s4(german: PreparedAudit, family: ModelFamily,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """With S4's base model (S2's features) as its only candidate, S5's ε = 0 point -- its main
    decisions -- is S4's decisions for that family, row for row (same split, seed and draws)."""
    monkeypatch.setattr(strategies, "CANDIDATES", (Strategy.UNAWARENESS_PROXY_REMOVAL,))
    s4, s5 = _cell(german, S4, family), _cell(german, S5, family)
    assert s5.tolerances[0] == 0.0 and s5.base == Strategy.UNAWARENESS_PROXY_REMOVAL.value
    assert np.array_equal(s5.test_decision, s4.test_decision)
    assert np.array_equal(s5.curve_decision[0], s4.test_decision)
    assert s5.violations[0] == pytest.approx(s4.violations[0], abs=1e-12)


def _rates(y: np.ndarray, g: np.ndarray, p: np.ndarray) -> dict[str, np.ndarray]:
    """Each group's selection, true-positive and false-positive rate of expected decisions
    (written out here, not through faircode.grid.violation)."""
    out = {}
    for name, rows in (("selection", np.ones_like(y, dtype=bool)), ("tpr", y == 1),
                       ("fpr", y == 0)):
        out[name] = np.array([p[rows & (g == k)].mean() for k in (0, 1)])
    return out


@pytest.mark.parametrize(("constraint", "rates"), [
    ("demographic_parity", ("selection",)), ("true_positive_rate_parity", ("tpr",)),
    ("false_positive_rate_parity", ("fpr",)), ("equalized_odds", ("tpr", "fpr"))])
def test_every_point_is_within_its_tolerance_on_the_calibration_rows(
        german: PreparedAudit, constraint: str, rates: tuple[str, ...]) -> None:
    """Fixed seed: every S5 point's violation on the rows it was fitted on (the calibration
    split), from its expected decisions, is at most its ε, and the recorded violation is it."""
    data = german
    train = data.train_index
    first = data.manifest.protected_attributes[0].name
    sens = np.asarray(data.disadvantaged[first][train], dtype=np.int8)
    y = data.y[train]
    mitigation = BenchmarkConfig().with_params({"mitigation.constraint": constraint}).mitigation
    fitted = strategies.fit_strategy(S5, ModelFamily.GRADIENT_BOOSTING, X=data.X.iloc[train],
                                     y=y, sensitive=sens, manifest=data.manifest,
                                     mitigation=mitigation)
    estimator = fitted.estimator
    _, cal = calibration_split(y, sens, random_state=data.manifest.random_state)
    features = data.X.iloc[train].iloc[cal].loc[:, list(estimator.columns)]
    for tolerance, recorded, point in zip(estimator.tolerances, estimator.violations,
                                          estimator.points, strict=True):
        found = _rates(y[cal], sens[cal], expected_decisions(point, features, sens[cal]))
        gap = max(abs(found[r][1] - found[r][0]) for r in rates)
        assert gap <= tolerance + 1e-9, (constraint, tolerance, gap)
        assert recorded == pytest.approx(gap, abs=1e-9)


class _Scores(ClassifierMixin, BaseEstimator):
    """A fitted 'model' whose probability of label 1 is the first column of X."""

    def fit(self, X: Any, y: Any) -> _Scores:
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        p = np.asarray(X, dtype=float)[:, 0]
        return np.column_stack([1 - p, p])

    def predict(self, X: Any) -> np.ndarray:
        return (self.predict_proba(X)[:, 1] > 0.5).astype(int)

    def __sklearn_is_fitted__(self) -> bool:
        return True


def _synthetic(rng: np.random.Generator, n: int = 1500) -> tuple[np.ndarray, ...]:
    g = (rng.random(n) < 0.35).astype(np.int8)
    y = (rng.random(n) < np.where(g == 1, 0.35, 0.55)).astype(np.int64)
    score = np.clip(0.5 + 0.25 * (2 * y - 1) + rng.normal(0, 0.25, n) - 0.08 * g, 0.001, 0.999)
    return np.round(score, 3), y, g


def _objective(y: np.ndarray, p: np.ndarray, objective: str) -> float:
    if objective == "accuracy_score":
        return float(np.mean(p * y + (1 - p) * (1 - y)))
    return float(0.5 * (p[y == 1].mean() + (1 - p[y == 0]).mean()))


@pytest.mark.parametrize("objective", ["accuracy_score", "balanced_accuracy_score"])
def test_equalized_odds_lp_at_zero_is_fairlearns_exact_solution(
        rng: np.random.Generator, objective: str) -> None:
    """At ε = 0 the LP's classifier has equal TPRs and FPRs and the objective of fairlearn's
    exact equalized-odds ThresholdOptimizer, up to fairlearn's grid of 1/1000 (never below)."""
    score, y, g = _synthetic(rng)
    X = pd.DataFrame({"score": score})
    exact = ThresholdOptimizer(estimator=_Scores(), constraints="equalized_odds",
                               objective=objective, prefit=True, predict_method="predict_proba")
    exact.fit(X, y, sensitive_features=g)
    theirs = _objective(y, exact._pmf_predict(X, sensitive_features=g)[:, 1], objective)
    thresholds, weights = solve_relaxed_odds(score, y, g, tolerance=0.0, objective=objective)
    p = lottery_pmf(score, g, thresholds, weights)
    found = _rates(y, g, p)
    assert abs(found["tpr"][1] - found["tpr"][0]) < 1e-9
    assert abs(found["fpr"][1] - found["fpr"][0]) < 1e-9
    ours = _objective(y, p, objective)
    assert theirs - 1e-9 <= ours <= theirs + 2e-3


def test_equalized_odds_lp_relaxes_monotonely_to_the_unconstrained_optimum(
        rng: np.random.Generator) -> None:
    """Each ε keeps both gaps within it, the accuracy never falls as ε grows, and at ε = 1 it
    is each group's own best threshold."""
    score, y, g = _synthetic(rng)
    previous = -np.inf
    for tolerance in (0.0, 0.01, 0.05, 0.2, 1.0):
        thresholds, weights = solve_relaxed_odds(score, y, g, tolerance=tolerance,
                                                 objective="accuracy_score")
        p = lottery_pmf(score, g, thresholds, weights)
        found = _rates(y, g, p)
        for rate in ("tpr", "fpr"):
            assert abs(found[rate][1] - found[rate][0]) <= tolerance + 1e-9
        accuracy = _objective(y, p, "accuracy_score")
        assert accuracy >= previous - 1e-12
        previous = accuracy
    best = sum(max(np.mean((score[g == k] >= t) == y[g == k]) for t in
                   (*np.unique(score[g == k]), np.inf)) * np.mean(g == k) for k in (0, 1))
    assert previous == pytest.approx(best, abs=1e-9)


def test_the_base_model_is_chosen_on_training_rows_and_a_tie_goes_to_the_leaner(
        rng: np.random.Generator) -> None:
    """The candidate with the higher validation accuracy wins; equal ones, the first (fewest
    features); the choice sees only the rows it is given."""
    n = 400
    good = rng.random(n)
    y = (good > 0.5).astype(np.int64)
    X = pd.DataFrame({"good": good, "noise": rng.random(n), "same": good})
    g = (rng.random(n) < 0.4).astype(np.int8)
    fit_idx, cal_idx = np.arange(0, 280), np.arange(280, n)

    def pick(*columns: str) -> str:
        candidates = [Candidate(s, (c,), _Scores) for s, c in zip(
            (Strategy.UNAWARENESS_PROXY_REMOVAL, Strategy.UNAWARENESS, Strategy.BASELINE),
            columns, strict=False)]
        fitted = fit_relaxed(candidates, X=X, y=y, sensitive=g, fit_idx=fit_idx,
                             cal_idx=cal_idx, constraint="demographic_parity",
                             fairlearn_constraint="demographic_parity",
                             objective="accuracy_score", tolerances=(0.0,))
        return fitted.base.value

    assert pick("noise", "good") == Strategy.UNAWARENESS.value
    assert pick("good", "same") == Strategy.UNAWARENESS_PROXY_REMOVAL.value
