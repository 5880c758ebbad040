"""Tests of the gap conditional on covariates (:mod:`faircode.stats.adjusted`): hand-computed
cases, statsmodels' average marginal effect, and what cannot be estimated."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from faircode.stats.adjusted import ADJUSTED_CI_METHOD, AdjustedGap, adjusted_gap

Z95 = 1.959963984540054


def synthetic(rng: np.random.Generator, n: int = 1500) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """Decisions depending on the group, a ratio and a three-level factor (two indicators)."""
    d = rng.random(n) < 0.3
    ratio = rng.gamma(4.0, 0.08, size=n)
    level = rng.integers(0, 3, size=n)
    z = np.column_stack([ratio, level == 1, level == 2]).astype(float)
    eta = 1.2 - 0.6 * d - 2.0 * ratio + 0.5 * (level == 1) - 0.9 * (level == 2)
    return (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int), d, z


def test_without_covariates_the_adjusted_gap_is_the_raw_gap_and_its_wald_interval() -> None:
    """With the group alone the model is saturated: AME = p_D - p_A and the delta variance is
    the Wald variance p_D(1 - p_D)/n_D + p_A(1 - p_A)/n_A."""
    y = np.array([1] * 12 + [0] * 28 + [1] * 45 + [0] * 35)
    d = np.array([True] * 40 + [False] * 80)
    gap = adjusted_gap(y, d, np.empty((120, 0)))
    se = math.sqrt(0.3 * 0.7 / 40 + 0.5625 * 0.4375 / 80)
    assert gap.value == pytest.approx(0.3 - 0.5625, abs=1e-9)
    assert (gap.ci_low, gap.ci_high) == pytest.approx((gap.value - Z95 * se,
                                                       gap.value + Z95 * se), abs=1e-9)
    assert gap.raw_gap == pytest.approx(0.3 - 0.5625) and gap.terms == 0


def test_the_adjusted_gap_equals_statsmodels_average_marginal_effect(
        rng: np.random.Generator) -> None:
    """Value, interval and p equal ``Logit(...).get_margeff(at="overall", dummy=True)``."""
    y, d, z = synthetic(rng)
    gap = adjusted_gap(y, d, z)
    x = sm.add_constant(pd.DataFrame(np.column_stack([d, z]).astype(float)))
    ref = sm.Logit(y, x).fit(disp=0).get_margeff(at="overall", dummy=True).summary_frame()
    row = ref.iloc[0]
    assert gap.value == pytest.approx(row["dy/dx"], rel=1e-7)
    assert (gap.ci_low, gap.ci_high) == pytest.approx(
        (row["Conf. Int. Low"], row["Cont. Int. Hi."]), rel=1e-6)
    assert gap.p_value == pytest.approx(row["Pr(>|z|)"], rel=1e-6)
    assert gap.terms == 3 and gap.note == ""


def test_constant_and_dependent_covariates_are_dropped(rng: np.random.Generator) -> None:
    """A constant column and a copy of another change nothing; they do not count as terms."""
    y, d, z = synthetic(rng)
    padded = np.column_stack([z, np.zeros(len(y)), 2 * z[:, 0] + z[:, 1]])
    assert adjusted_gap(y, d, padded) == adjusted_gap(y, d, z)


def test_a_negative_gap_at_equal_covariates_is_found(rng: np.random.Generator) -> None:
    """Decisions built with a group effect of -0.6 on the log-odds give a negative AME whose
    interval excludes 0, and the raw gap of the same rows beside it."""
    y, d, z = synthetic(rng, n=4000)
    gap = adjusted_gap(y, d, z)
    assert gap.ci_high < 0 and gap.p_value < 0.001
    assert gap.raw_gap == pytest.approx(y[d].mean() - y[~d].mean())


@pytest.mark.parametrize(("y", "d", "note"), [
    ([1, 0, 1, 0], [True] * 4, "insufficient_data"),
    ([1, 1, 1, 1], [True, False, True, False], "zero_variance"),
    ([1, 1, 0, 0, 1, 0], [True, True, False, False, True, False], "separation"),
])
def test_what_cannot_be_estimated_is_nan_with_its_reason(y: list[int], d: list[bool],
                                                         note: str) -> None:
    """One group only, one decision only, or a group that separates the decisions (its
    coefficient runs off): NaN value, interval and p, and the reason."""
    gap = adjusted_gap(np.array(y), np.array(d), np.zeros((len(y), 0)))
    assert math.isnan(gap.value) and math.isnan(gap.p_value) and math.isnan(gap.ci_low)
    assert gap.note == note


def test_a_covariate_level_that_separates_leaves_the_gap_estimable(
        rng: np.random.Generator) -> None:
    """Two rows of a level both decided 1 (quasi-separation by a covariate, as HMDA's test rows
    with mhist 4): the fit stops where the likelihood settles and the AME equals statsmodels'
    (which stops there too, unconverged)."""
    y, d, z = synthetic(rng, n=600)
    rare = np.zeros(len(y))
    rare[:2] = 1.0
    y[:2] = 1
    gap = adjusted_gap(y, d, np.column_stack([z, rare]))
    x = sm.add_constant(pd.DataFrame(np.column_stack([d, z, rare]).astype(float)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = sm.Logit(y, x).fit(disp=0, maxiter=100)
    ref = fit.get_margeff(at="overall", dummy=True).summary_frame().iloc[0]
    assert gap.note == "" and gap.terms == 4
    assert gap.value == pytest.approx(ref["dy/dx"], abs=1e-6)
    assert gap.ci_low == pytest.approx(ref["Conf. Int. Low"], abs=1e-5)


def test_the_interval_is_clipped_and_the_method_named() -> None:
    """The interval stays inside [-1, 1]; its method name is the table's ``ci_method``."""
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    d = np.array([True, True, True, True, False, False, False, False])
    gap = adjusted_gap(y, d, np.zeros((8, 0)))
    assert -1.0 <= gap.ci_low <= gap.value <= gap.ci_high <= 1.0
    assert ADJUSTED_CI_METHOD == "logistic_ame_delta"


def test_an_inconsistent_result_is_refused() -> None:
    """A value with a NaN p-value is not a result."""
    with pytest.raises(ValueError, match="both NaN or both numbers"):
        AdjustedGap(0.1, 0.0, 0.2, float("nan"), 0.1, 10, 10, 0)
