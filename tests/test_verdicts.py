"""Tests of faircode.stats.verdicts and faircode.stats.replicates: claims, verdicts, K-estimates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from faircode.stats import _metric_defs as defs
from faircode.stats.replicates import (
    combine,
    half_variances,
    replicate_evidence,
    required_informative,
    sampling_fraction,
)
from faircode.stats.verdicts import (
    EffectVerdict,
    Evidence,
    Margins,
    Verdict,
    effect_verdicts,
    family_level,
    far_end,
    gap_claims,
    gap_verdicts,
    interval_evidence,
    log_ratio_interval,
    max_abs_claims,
)

DP = "demographic_parity_diff"
MARGINS = Margins()


def _counts(n: int, rate: float) -> np.ndarray:
    """(TN, FP, FN, TP) of ``n`` rows, half with y = 1, a share ``rate`` decided favourably."""
    pos = round(rate * n)
    return np.array([n // 2 - pos // 2, pos // 2, n - n // 2 - (pos - pos // 2), pos - pos // 2])


def _one_fit_verdict(n: int, rate_d: float, rate_a: float) -> str:
    """The verdict of one fit's demographic-parity gap, alone in its families."""
    d, a = _counts(n, rate_d), _counts(n, rate_a)
    value = float(defs.metric_values(DP, d, a))
    low, high = defs.closed_form_interval(DP, d, a, confidence=0.95)
    evidence = interval_evidence(DP, [value], [low], [high], confidence=0.95)
    claims = gap_claims(DP, evidence, confidence=0.95, alpha=0.05, margins=MARGINS)
    shown = (claims.ci_low > 0) | (claims.ci_high < 0)
    return str(gap_verdicts(informative=[True], gap=shown & (claims.p_value < 0.05),
                            parity=claims.p_equivalence < 0.05)[0])


def test_no_gap_on_a_large_sample_is_parity() -> None:
    """A true gap of 0 measured on 20,000 rows per group is shown to lie within ±0.05."""
    assert _one_fit_verdict(20_000, 0.4, 0.4) == Verdict.PARITY


def test_no_gap_on_forty_rows_is_inconclusive() -> None:
    """The same gap of 0 on 40 rows per group shows neither a gap nor parity."""
    assert _one_fit_verdict(40, 0.4, 0.4) == Verdict.INCONCLUSIVE


def test_a_large_gap_is_a_gap() -> None:
    """A gap of -0.3 on 500 rows per group is shown."""
    assert _one_fit_verdict(500, 0.3, 0.6) == Verdict.GAP


def test_uninformative_wins_over_everything() -> None:
    """A row that is not informative (degenerate decisions) is uninformative whatever its tests;
    a gap shown wins over parity."""
    out = gap_verdicts(informative=[False, True, True, True], gap=[True, True, False, False],
                       parity=[True, True, True, False])
    assert list(out) == ["uninformative", "gap", "parity", "inconclusive"]


def _random_evidence(rng: np.random.Generator, n: int) -> Evidence:
    df = np.where(rng.random(n) < 0.3, np.inf, rng.uniform(1, 30, n))
    return Evidence(rng.normal(0, 0.06, n), rng.uniform(0.001, 0.05, n),
                    rng.uniform(0.001, 0.05, n), df, np.where(rng.random(n) < 0.5, df, np.inf))


def test_equivalence_p_below_alpha_exactly_when_the_narrow_interval_is_inside(
        rng: np.random.Generator) -> None:
    """TOST: p_equivalence < alpha iff the 1 - 2 alpha interval lies inside (-δ, δ)."""
    evidence = _random_evidence(rng, 5000)
    for alpha in (0.05, 0.1):
        low, high = evidence.interval(1 - 2 * alpha)
        inside = (low > -0.05) & (high < 0.05)
        p = evidence.p_equivalence(-0.05, 0.05)
        near = np.isclose(p, alpha, rtol=1e-9)
        assert inside.any() and (~inside).any()
        np.testing.assert_array_equal((p < alpha)[~near], inside[~near])


def test_p_value_below_one_minus_confidence_exactly_when_the_interval_excludes_null(
        rng: np.random.Generator) -> None:
    """The two-sided p-value and the interval never disagree (the side facing the null)."""
    evidence = _random_evidence(rng, 5000)
    for null in (0.0, 0.03):
        low, high = evidence.interval(0.95)
        excludes = (low > null) | (high < null)
        p = evidence.p_value(null)
        near = np.isclose(p, 0.05, rtol=1e-9)
        assert excludes.any() and (~excludes).any()
        np.testing.assert_array_equal((p < 0.05)[~near], excludes[~near])


def test_from_interval_reproduces_its_interval() -> None:
    """Evidence from a closed-form interval gives back that interval at its confidence."""
    d, a = np.array([[40, 10, 25, 25]]), np.array([[30, 30, 10, 30]])
    low, high = defs.closed_form_interval(DP, d, a, confidence=0.9)
    value = defs.metric_values(DP, d, a)
    got = interval_evidence(DP, value, low, high, confidence=0.9).interval(0.9)
    np.testing.assert_allclose(got, (low, high), rtol=1e-12)


def test_ratio_is_tested_on_the_log_scale_against_its_own_range() -> None:
    """Disparate impact: Katz's log interval is symmetric in log; parity means its 90 %
    interval inside [0.8, 1.25]; the claims are ratios again."""
    z90, z95 = sps.norm.ppf(0.95), sps.norm.ppf(0.975)
    value, se = 0.95, 0.05
    low, high = value * math.exp(-z95 * se), value * math.exp(z95 * se)
    evidence = interval_evidence("disparate_impact_ratio", [value], [low], [high],
                                 confidence=0.95)
    claims = gap_claims("disparate_impact_ratio", evidence, confidence=0.95, alpha=0.05,
                        margins=MARGINS)
    assert claims.value[0] == pytest.approx(value)
    assert (claims.ci_low[0], claims.ci_high[0]) == pytest.approx((low, high))
    lower = sps.norm.sf((math.log(value) - math.log(0.8)) / se)
    upper = sps.norm.sf((math.log(1.25) - math.log(value)) / se)
    assert claims.p_equivalence[0] == pytest.approx(max(lower, upper))
    assert claims.bound[0] == pytest.approx(value * math.exp(-z90 * se))


def test_a_zero_ratio_enters_at_the_corrected_count() -> None:
    """A ratio of 0 (Katz lower limit 0) is log(high) - z·√2 with standard error √2."""
    z = sps.norm.ppf(0.975)
    log_v, log_lo, log_hi = log_ratio_interval([0.0], [0.0], [0.3], confidence=0.95)
    assert log_v[0] == pytest.approx(math.log(0.3) - z * math.sqrt(2))
    assert log_hi[0] - log_v[0] == pytest.approx(log_v[0] - log_lo[0])
    assert np.isnan(log_ratio_interval([np.nan], [0.0], [0.3], confidence=0.95)[0][0])


def test_equalized_odds_claims_come_from_its_signed_components() -> None:
    """max(|tpr|, |fpr|): the components' 97.5 % intervals mapped to |·| and maximised, p of
    no gap Bonferroni over the two, equivalence both inside the margin."""
    inf = np.array([np.inf])
    tpr = Evidence(np.array([0.10]), np.array([0.02]), np.array([0.02]), inf, inf)
    fpr = Evidence(np.array([-0.02]), np.array([0.02]), np.array([0.02]), inf, inf)
    claims = max_abs_claims(tpr, fpr, confidence=0.95, alpha=0.05, margins=MARGINS)
    z = sps.norm.ppf(0.9875)
    assert claims.value[0] == pytest.approx(0.10)
    assert (claims.ci_low[0], claims.ci_high[0]) == pytest.approx((0.10 - z * 0.02,
                                                                  0.10 + z * 0.02))
    assert claims.p_value[0] == pytest.approx(min(1, 4 * sps.norm.sf(5.0)))
    assert claims.p_equivalence[0] == pytest.approx(sps.norm.sf(-2.5))
    assert claims.bound[0] == pytest.approx(0.10 + sps.norm.ppf(0.95) * 0.02)


def test_equalized_odds_at_parity_straddles_zero() -> None:
    """Both components at 0: the magnitude's interval starts at 0 and the p-value is 1."""
    inf = np.array([np.inf])
    zero = Evidence(np.array([0.0]), np.array([0.01]), np.array([0.01]), inf, inf)
    claims = max_abs_claims(zero, zero, confidence=0.95, alpha=0.05, margins=MARGINS)
    assert claims.ci_low[0] == 0.0 and claims.p_value[0] == 1.0
    assert claims.p_equivalence[0] < 1e-6


def test_far_end_is_the_end_farther_from_the_null() -> None:
    """far_end picks -0.08 from [-0.08, 0.02], 0.06 from [-0.01, 0.06], NaN from NaN."""
    got = far_end([-0.08, -0.01, np.nan], [0.02, 0.06, 0.1])
    np.testing.assert_array_equal(got[:2], [-0.08, 0.06])
    assert np.isnan(got[2])


def test_combine_matches_a_hand_computed_example() -> None:
    """Three replicates 0.1, 0.2, 0.3 (s_b² = 0.01), within variance 0.0025, f = 0.2:
    V = 0.01/3 + 0.0005, ν = 2·V / (0.01/3)."""
    out = combine([[0.1, 0.2, 0.3]], [[0.0025] * 3], [[0.0025] * 3], [[True] * 3],
                  fraction=0.2)
    v = 0.01 / 3 + 0.2 * 0.0025
    ev = out.evidence
    assert ev.estimate[0] == pytest.approx(0.2)
    assert ev.se_low[0] == pytest.approx(math.sqrt(v)) == ev.se_high[0]
    assert ev.df_low[0] == pytest.approx(2 * v / (0.01 / 3))
    assert out.n_informative[0] == 3 and out.sd_between[0] == pytest.approx(0.1)
    assert out.sd_within[0] == pytest.approx(0.05)


def _reference(theta: np.ndarray, lo: np.ndarray, hi: np.ndarray, ok: np.ndarray,
               fraction: float) -> list[tuple[float, float, float, float, float]]:
    """A plain loop over rows: mean, one-sided standard errors, ν = (K − 1)·V / (s_b²/K)."""
    out = []
    for t, a, b, o in zip(theta, lo, hi, ok, strict=True):
        keep = [i for i in range(len(t)) if o[i]]
        if len(keep) < 2:
            out.append((math.nan,) * 5)
            continue
        x = [t[i] for i in keep]
        mean = sum(x) / len(x)
        sb2 = sum((v - mean) ** 2 for v in x) / (len(x) - 1)
        row = [mean]
        for w in (a, b):
            total = sb2 / len(x) + fraction * sum(w[i] for i in keep) / len(x)
            row.append(math.sqrt(total))
        for w in (a, b):
            total = sb2 / len(x) + fraction * sum(w[i] for i in keep) / len(x)
            row.append((len(x) - 1) * total / (sb2 / len(x)) if sb2 > 0 else math.inf)
        out.append(tuple(row))  # type: ignore[arg-type]
    return out


def test_combine_matches_a_slow_reference(rng: np.random.Generator) -> None:
    """Random rows of five replicates, some not informative: combine equals a plain loop."""
    theta = rng.normal(0, 0.1, (200, 5))
    lo, hi = rng.uniform(1e-4, 1e-2, (200, 5)), rng.uniform(1e-4, 1e-2, (200, 5))
    ok = rng.random((200, 5)) < 0.7
    out = combine(theta, lo, hi, ok, fraction=0.25)
    want = np.array(_reference(theta, lo, hi, ok, 0.25))
    ev = out.evidence
    got = np.stack([ev.estimate, ev.se_low, ev.se_high, ev.df_low, ev.df_high], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.isnan(got[ok.sum(axis=1) < 2]).all()
    np.testing.assert_array_equal(out.n_informative, ok.sum(axis=1))


def test_identical_replicates_have_the_dataset_term_only() -> None:
    """With no spread between replicates the variance is f·w̄ and ν infinite (normal)."""
    out = combine([[0.05] * 5], [[0.0004] * 5], [[0.0009] * 5], [[True] * 5], fraction=0.2)
    ev = out.evidence
    assert (ev.se_low[0], ev.se_high[0]) == pytest.approx((math.sqrt(0.2 * 0.0004),
                                                           math.sqrt(0.2 * 0.0009)))
    assert ev.df_low[0] == math.inf


def test_half_variances_keep_a_score_interval_asymmetric() -> None:
    """A rate gap near 0 with interval [-0.004, 0.03] keeps its two halves."""
    low, high = half_variances([0.0], [-0.004], [0.03], confidence=0.95)
    z = sps.norm.ppf(0.975)
    assert (low[0], high[0]) == pytest.approx(((0.004 / z) ** 2, (0.03 / z) ** 2))


def test_replicate_evidence_of_a_ratio_is_a_geometric_mean() -> None:
    """Disparate impact combines on the log scale: its estimate is the geometric mean."""
    value = np.array([[0.5, 0.8, 1.0]])
    comb = replicate_evidence("disparate_impact_ratio", value, value * 0.9, value / 0.9,
                              np.ones((1, 3), bool), fraction=0.2, confidence=0.95)
    assert math.exp(comb.evidence.estimate[0]) == pytest.approx((0.5 * 0.8 * 1.0) ** (1 / 3))


def test_sampling_fraction_and_the_replicate_rule() -> None:
    """f is 1 in model mode and n_test/N in split mode; ⌈share·K⌉ replicates are needed."""
    assert sampling_fraction(seed_mode="model", n_test=200, n_total=1000) == 1.0
    assert sampling_fraction(seed_mode="split", n_test=200, n_total=1000) == 0.2
    assert [required_informative(k, 0.6) for k in (1, 2, 3, 5, 10)] == [1, 2, 2, 3, 6]
    with pytest.raises(ValueError, match="fraction"):
        combine([[0.1, 0.2]], [[0.1, 0.1]], [[0.1, 0.1]], [[True, True]], fraction=0.0)


def test_effect_verdicts_follow_the_sign_of_a_change_shown() -> None:
    """reduced / increased where significant (the side of the interval), no_change where
    equivalent, else inconclusive; uninformative where not informative."""
    out = effect_verdicts([-0.2, 0.05, -0.01, -0.03, 0.1], [-0.05, 0.2, 0.01, 0.07, 0.4],
                          informative=[1, 1, 1, 1, 0], significant=[1, 1, 0, 0, 1],
                          equivalent=[0, 0, 1, 0, 0])
    assert list(out) == ["reduced", "increased", "no_change", "inconclusive", "uninformative"]


def test_each_verdict_from_a_hand_made_row() -> None:
    """Below 0 and significant: reduced; above: increased; equivalent: no_change; neither:
    inconclusive; not informative or no interval: uninformative."""
    low = [-0.2, 0.01, -0.02, -0.3, -0.2, np.nan]
    high = [-0.01, 0.2, 0.02, 0.1, -0.01, np.nan]
    got = effect_verdicts(low, high, significant=[True, True, False, False, True, False],
                          equivalent=[False, False, True, False, False, False],
                          informative=[True, True, True, True, False, True])
    assert list(got) == ["reduced", "increased", "no_change", "inconclusive", "uninformative",
                         "uninformative"]


def test_a_shown_change_wins_over_equivalence() -> None:
    """A small, real change (significant and inside the margin) is reduced, not no_change."""
    got = effect_verdicts([-0.02], [-0.005], significant=[True], equivalent=[True],
                          informative=[True])
    assert list(got) == [EffectVerdict.REDUCED.value]


def test_significance_without_an_interval_excluding_zero_is_not_a_change() -> None:
    """A significant flag with an interval containing 0 never gives reduced or increased."""
    got = effect_verdicts([-0.1], [0.1], significant=[True], equivalent=[False],
                          informative=[True])
    assert list(got) == ["inconclusive"]


def test_margins_are_validated() -> None:
    """A margin outside (0, 1) or a ratio range not around 1 is refused."""
    with pytest.raises(ValueError, match="difference"):
        Margins(difference=0.0)
    with pytest.raises(ValueError, match="ratio"):
        Margins(ratio=(1.1, 1.25))
    assert Margins().bounds("disparate_impact_ratio") == pytest.approx(
        (math.log(0.8), math.log(1.25)))


def test_family_level_is_where_benjamini_hochberg_decides(rng: np.random.Generator) -> None:
    """A p-value is rejected by BH at alpha exactly when it is at most family_level; an empty
    or all-accepted family gives alpha/m (alpha when empty)."""
    from faircode.stats.resampling import benjamini_hochberg

    for _ in range(200):
        p = np.concatenate([rng.uniform(0, 0.02, rng.integers(0, 5)), rng.uniform(0, 1, 20)])
        level = family_level(p, alpha=0.05)
        np.testing.assert_array_equal(benjamini_hochberg(p) < 0.05 + 1e-12, p <= level)
    assert family_level([0.5, 0.9], alpha=0.05) == pytest.approx(0.025)
    assert family_level([], alpha=0.05) == 0.05


def test_a_difference_interval_and_bound_stay_inside_minus_one_one() -> None:
    """A K = 2 t-interval (one degree of freedom) of a large gap reaches past 1; the reported
    interval and the gap that cannot be excluded are clipped to [-1, 1], where every difference
    of rates lies, and the tests are unchanged."""
    evidence = Evidence(np.array([-0.6]), np.array([0.3]), np.array([0.3]), np.array([1.0]),
                        np.array([1.0]))
    raw_low, _ = evidence.interval(0.95)
    assert raw_low[0] < -1.0  # -0.6 - 12.7 * 0.3
    claims = gap_claims(DP, evidence, confidence=0.95, alpha=0.05, margins=MARGINS)
    assert claims.ci_low[0] == -1.0 and claims.bound[0] == -1.0
    assert -1.0 < claims.ci_high[0] <= 1.0
    assert claims.p_value[0] == pytest.approx(float(evidence.p_value(0.0)[0]))
