"""Tests for faircode.strategies: feature sets, decisions, S3 scores and S4's calibration split."""

from __future__ import annotations

import numpy as np
import pytest
from fairlearn.postprocessing import ThresholdOptimizer

from faircode.config import BenchmarkConfig
from faircode.data import AuditData, load_audit
from faircode.errors import DataError
from faircode.models import ModelFamily, make_model
from faircode.strategies import (
    Strategy,
    calibration_split,
    feature_columns,
    fit_strategy,
    supports_constraint,
)

CONFIG = BenchmarkConfig(jobs=1, max_iter=10)


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
    fitted = fit_strategy(Strategy.BASELINE, ModelFamily.RANDOM_FOREST, config=CONFIG,
                          **_train(german))
    X = german.X.iloc[german.test_index]
    decisions, score = fitted.predict(X, sensitive=np.zeros(len(X)), random_state=0)
    expected = fitted.estimator.predict(X.loc[:, list(fitted.columns)])
    assert np.array_equal(decisions, expected)
    assert score is not None and score.min() >= 0 and score.max() <= 1


def test_decision_threshold_moves_decisions(german: AuditData) -> None:
    """A higher threshold predicts 1 for exactly the rows whose probability exceeds it."""
    config = CONFIG.replace(decision_threshold=0.8)
    fitted = fit_strategy(Strategy.UNAWARENESS, ModelFamily.LOGISTIC_REGRESSION, config=config,
                          **_train(german))
    X = german.X.iloc[german.test_index]
    decisions, score = fitted.predict(X, sensitive=np.zeros(len(X)), random_state=0)
    assert score is not None
    assert np.array_equal(decisions, (score > 0.8).astype(np.int8))
    assert 0 < decisions.mean() < (score > 0.5).mean()


def test_in_processing_score_is_the_mixture_probability(german: AuditData) -> None:
    """S3's score equals fairlearn's own pmf, and its decisions are seeded draws against it."""
    fitted = fit_strategy(Strategy.IN_PROCESSING, ModelFamily.LOGISTIC_REGRESSION,
                          config=CONFIG, **_train(german))
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
                          config=CONFIG, **train)
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
