"""Tests of faircode.grid.strategies: feature sets, decisions, S3 scores, S4's calibration split."""

from __future__ import annotations

import numpy as np
import pytest
from fairlearn.postprocessing import ThresholdOptimizer
from fairlearn.reductions import ErrorRate

from faircode.audit.data import AuditData, load_audit
from faircode.audit.decision import Cutoff, DecisionRule
from faircode.core.cells import ModelFamily, Strategy
from faircode.core.config import BenchmarkConfig
from faircode.core.errors import DataError
from faircode.grid.calibration import calibration_split
from faircode.grid.models import make_model
from faircode.grid.strategies import (
    error_costs,
    feature_columns,
    fit_strategy,
    supports_constraint,
)

CONFIG = BenchmarkConfig(jobs=1).with_params({"mitigation.max_iter": 10})


@pytest.fixture(scope="module")
def german(audit_repo) -> AuditData:  # type: ignore[no-untyped-def]
    """The prepared German credit audit (1,000 rows)."""
    return load_audit(audit_repo.manifests["german_credit_lending"])


def _train(data: AuditData) -> dict:
    first = data.manifest.protected_attributes[0].name
    idx = data.train_index
    return {"X": data.X.iloc[idx], "y": data.y[idx],
            "sensitive": data.disadvantaged[first][idx], "manifest": data.manifest}


def test_feature_sets_follow_the_strategy_table(audit_repo) -> None:  # type: ignore[no-untyped-def]
    """S0 adds protected columns, S1 drops them, S2-S4 keep only core features."""
    m = audit_repo.manifests["insurance_denial"]
    core, proxy = m.core_features, m.proxy_features
    assert feature_columns(Strategy.BASELINE, m) == core + proxy + ("age", "gender")
    assert feature_columns(Strategy.UNAWARENESS, m) == core + proxy
    for s in (Strategy.UNAWARENESS_PROXY_REMOVAL, Strategy.IN_PROCESSING,
              Strategy.POST_PROCESSING):
        assert feature_columns(s, m) == core


def test_calibration_split_is_70_30_within_every_label_group_stratum(rng) -> None:  # type: ignore[no-untyped-def]
    """Each label x group stratum is split 70/30 (to the row), disjointly and completely."""
    y = rng.integers(0, 2, 997)
    g = rng.random(997) < 0.3
    fit, cal = calibration_split(y, g, random_state=7)
    assert np.intersect1d(fit, cal).size == 0
    assert np.array_equal(np.sort(np.concatenate([fit, cal])), np.arange(997))
    for label in (0, 1):
        for group in (False, True):
            stratum = np.flatnonzero((y == label) & (g == group))
            in_cal = np.isin(stratum, cal).sum()
            assert abs(in_cal - 0.3 * stratum.size) <= 1


def test_calibration_split_refuses_a_stratum_with_one_row() -> None:
    """A label x group combination with fewer than two rows is a clear DataError."""
    y = np.array([0, 0, 0, 1, 1, 1, 0, 0, 1, 1])
    g = np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 1], dtype=bool)
    with pytest.raises(DataError, match=r"label=1, disadvantaged=True has 1 training row"):
        calibration_split(y, g, random_state=0)


def test_threshold_one_half_reproduces_predict(german: AuditData) -> None:
    """S0-S2 with decision_threshold 0.5 decide exactly as the estimator's own predict."""
    fitted = fit_strategy(Strategy.BASELINE, ModelFamily.RANDOM_FOREST,
                          mitigation=CONFIG.mitigation,
                          **_train(german))
    X = german.X.iloc[german.test_index]
    decisions, score = fitted.predict(X, sensitive=np.zeros(len(X)), random_state=0)
    expected = fitted.estimator.predict(X.loc[:, list(fitted.columns)])
    assert np.array_equal(decisions, expected)
    assert score is not None and score.min() >= 0 and score.max() <= 1


def test_decision_threshold_moves_decisions(german: AuditData) -> None:
    """A higher cutoff predicts 1 for exactly the rows whose probability exceeds it."""
    fitted = fit_strategy(Strategy.UNAWARENESS, ModelFamily.LOGISTIC_REGRESSION,
                          mitigation=CONFIG.mitigation, **_train(german)
                          ).with_cutoff(Cutoff(0.8, inclusive=False))
    X = german.X.iloc[german.test_index]
    decisions, score = fitted.predict(X, sensitive=np.zeros(len(X)), random_state=0)
    assert score is not None
    assert np.array_equal(decisions, (score > 0.8).astype(np.int8))
    assert 0 < decisions.mean() < (score > 0.5).mean()


def test_in_processing_score_is_the_mixture_probability(german: AuditData) -> None:
    """S3's score equals fairlearn's own pmf, and its decisions are seeded draws against it."""
    fitted = fit_strategy(Strategy.IN_PROCESSING, ModelFamily.LOGISTIC_REGRESSION,
                          mitigation=CONFIG.mitigation, **_train(german))
    X = german.X.iloc[german.test_index]
    decisions, score = fitted.predict(X, sensitive=np.zeros(len(X)), random_state=123)
    pmf = fitted.estimator._pmf_predict(X.loc[:, list(fitted.columns)])[:, 1]
    np.testing.assert_allclose(score, pmf, rtol=0, atol=1e-12)
    draws = np.random.RandomState(123).rand(len(X))
    assert np.array_equal(decisions, (pmf >= draws).astype(np.int8))
    again, _ = fitted.predict(X, sensitive=np.zeros(len(X)), random_state=123)
    assert np.array_equal(decisions, again)
    assert "sensitive" not in fitted.columns and "age" not in fitted.columns


def test_post_processing_calibrates_on_rows_the_model_never_saw(german: AuditData) -> None:
    """S4's base model is fitted on the 70 % part and its thresholds on the held-out 30 %."""
    train = _train(german)
    fitted = fit_strategy(Strategy.POST_PROCESSING, ModelFamily.LOGISTIC_REGRESSION,
                          mitigation=CONFIG.mitigation, **train)
    fit_idx, cal_idx = calibration_split(train["y"], train["sensitive"],
                                         random_state=german.manifest.random_state)
    cols = list(fitted.columns)
    X_tr = train["X"].loc[:, cols]
    base = make_model(ModelFamily.LOGISTIC_REGRESSION, random_state=german.manifest.random_state)
    base.fit(X_tr.iloc[fit_idx], train["y"][fit_idx])
    reference = ThresholdOptimizer(estimator=base, prefit=True, predict_method="predict_proba")
    reference.fit(X_tr.iloc[cal_idx], train["y"][cal_idx],
                  sensitive_features=train["sensitive"][cal_idx].astype(np.int8))
    X = german.X.iloc[german.test_index]
    sens = german.disadvantaged["age"][german.test_index]
    decisions, score = fitted.predict(X, sensitive=sens, random_state=5)
    expected = reference.predict(X.loc[:, cols], sensitive_features=sens.astype(np.int8),
                                 random_state=5)
    assert score is None
    assert np.array_equal(decisions, expected)


def test_threshold_optimizer_has_no_error_rate_parity() -> None:
    """S4 cannot enforce error-rate parity; every other strategy can."""
    assert not supports_constraint(Strategy.POST_PROCESSING, "error_rate_parity")
    assert supports_constraint(Strategy.IN_PROCESSING, "error_rate_parity")
    assert supports_constraint(Strategy.POST_PROCESSING, "equalized_odds")


def test_calibration_split_by_unit_puts_no_unit_in_both_parts(rng: np.random.Generator) -> None:
    """S4's fit and calibration parts share no unit when groups are given."""
    units = np.repeat(np.arange(300), rng.integers(1, 4, size=300))
    y = (rng.random(units.size) < 0.4).astype(np.int64)
    sens = np.repeat(rng.random(300) < 0.5, np.bincount(units)).astype(np.int64)
    fit, cal = calibration_split(y, sens, random_state=1, groups=units)
    assert np.intersect1d(units[fit], units[cal]).size == 0
    assert sorted([*fit, *cal]) == list(range(units.size))
    assert 0.2 < len(cal) / units.size < 0.4


def test_no_strategy_trains_on_the_target_column(audit_repo) -> None:  # type: ignore[no-untyped-def]
    """No strategy's columns and no column of X is the target's source column (no leakage)."""
    for manifest in audit_repo.manifests.values():
        for strategy in Strategy:
            assert manifest.target.column not in feature_columns(strategy, manifest)
    german = load_audit(audit_repo.manifests["german_credit_lending"])
    assert german.manifest.target.column not in german.X.columns
    assert list(german.X.columns) == list(german.manifest.feature_columns)


def test_default_rule_keeps_the_accuracy_objectives(german: AuditData) -> None:
    """Without a rule (or with threshold) S3 uses fairlearn's default error, S4 accuracy."""
    s3 = fit_strategy(Strategy.IN_PROCESSING, ModelFamily.LOGISTIC_REGRESSION,
                      mitigation=CONFIG.mitigation,
                      decision=DecisionRule("threshold", threshold=0.5), **_train(german))
    s4 = fit_strategy(Strategy.POST_PROCESSING, ModelFamily.LOGISTIC_REGRESSION,
                      mitigation=CONFIG.mitigation,
                      **_train(german))
    assert s3.estimator.objective is None and s3.objective == "error_rate"
    assert s4.estimator.objective == "accuracy_score" == s4.objective


@pytest.mark.parametrize("rule", [DecisionRule("base_rate"),
                                  DecisionRule("top_fraction", fraction=0.3)])
def test_non_default_rule_gives_s3_costs_and_s4_balanced_accuracy(
    german: AuditData, rule: DecisionRule
) -> None:
    """Under base_rate/top_fraction S3 gets ErrorRate(fp 2p, fn 2(1-p)), S4 balanced accuracy."""
    train = _train(german)
    p = float(train["y"].mean())  # German credit: 0.7 of the training rows are 'good'
    s3 = fit_strategy(Strategy.IN_PROCESSING, ModelFamily.LOGISTIC_REGRESSION,
                      mitigation=CONFIG.mitigation,
                      decision=rule, **train)
    objective = s3.estimator.objective
    assert isinstance(objective, ErrorRate)
    assert objective.fp_cost == pytest.approx(2 * p) and objective.fn_cost == pytest.approx(
        2 * (1 - p))
    assert objective.fp_cost == pytest.approx(1.4)
    assert "error_rate(costs=" in s3.objective
    s4 = fit_strategy(Strategy.POST_PROCESSING, ModelFamily.LOGISTIC_REGRESSION,
                      mitigation=CONFIG.mitigation,
                      decision=rule, **train)
    assert s4.estimator.objective == "balanced_accuracy_score" == s4.objective


def test_error_costs_follow_the_training_label_rate() -> None:
    """A label rate of 1/4 gives fp cost 0.5 and fn cost 1.5 (their ratio puts the cutoff at p)."""
    assert error_costs(np.array([1, 0, 0, 0])) == {"fp": 0.5, "fn": 1.5}


def test_with_cutoff_moves_s0_to_an_inclusive_cutoff(german: AuditData) -> None:
    """A score cutoff from a rule replaces the threshold; inclusive means score >= cutoff."""
    fitted = fit_strategy(Strategy.BASELINE, ModelFamily.LOGISTIC_REGRESSION,
                          mitigation=CONFIG.mitigation,
                          **_train(german))
    X = german.X.iloc[german.test_index]
    _, score = fitted.predict(X, sensitive=np.zeros(len(X)), random_state=0)
    assert score is not None
    at = float(np.sort(score)[100])
    moved = fitted.with_cutoff(Cutoff(at, inclusive=True))
    decisions, _ = moved.predict(X, sensitive=np.zeros(len(X)), random_state=0)
    assert np.array_equal(decisions, (score >= at).astype(np.int8))
    assert int(decisions.sum()) == int((score >= at).sum()) >= 100


def test_with_cutoff_refuses_randomised_strategies(german: AuditData) -> None:
    """S4's decisions are not a cutoff on a score, so a rule's cutoff cannot be put on it."""
    fitted = fit_strategy(Strategy.POST_PROCESSING, ModelFamily.LOGISTIC_REGRESSION,
                          mitigation=CONFIG.mitigation, **_train(german))
    with pytest.raises(ValueError, match="not a cutoff"):
        fitted.with_cutoff(Cutoff(0.3, inclusive=False))


def _nominal(data: AuditData) -> tuple[str, ...]:
    return tuple(c for c in data.X.columns if data.encoder.kinds[c] == "categorical")


@pytest.mark.parametrize("strategy", [Strategy.BASELINE, Strategy.IN_PROCESSING,
                                      Strategy.POST_PROCESSING])
def test_onehot_changes_logistic_regression_only(german: AuditData, strategy: Strategy) -> None:
    """models.encoding onehot: the LR cell's model one-hot encodes the nominal columns and
    decides otherwise; a forest decides exactly as under label (S0, S3 and S4)."""
    test = german.X.iloc[german.test_index]
    sens = german.disadvantaged[german.manifest.protected_attributes[0].name][german.test_index]
    got = {}
    for family in (ModelFamily.LOGISTIC_REGRESSION, ModelFamily.RANDOM_FOREST):
        for encoding in ("label", "onehot"):
            fitted = fit_strategy(strategy, family, mitigation=CONFIG.mitigation,
                                  encoding=encoding, nominal=_nominal(german), **_train(german))
            got[family, encoding] = fitted.predict(test, sensitive=sens, random_state=3)[0]
    lr, rf = ModelFamily.LOGISTIC_REGRESSION, ModelFamily.RANDOM_FOREST
    assert not np.array_equal(got[lr, "label"], got[lr, "onehot"])
    np.testing.assert_array_equal(got[rf, "label"], got[rf, "onehot"])
