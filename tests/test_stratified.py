"""Tests of the gap within strata (:mod:`faircode.stats.stratified`) against hand-computed values,
statsmodels and a row-level reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import StratifiedTable
from statsmodels.stats.meta_analysis import combine_effects

from faircode.stats.stratified import (
    cmh_p_value,
    heterogeneity,
    mantel_haenszel_rd,
    stratified_gap,
    stratum_counts,
)

# Two strata (n_d, x_d, n_a, x_a): D 3/10 vs A 10/20, then D 15/30 vs A 8/10.
COUNTS = np.array([[10, 3, 20, 10], [30, 15, 10, 8]])


def rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-level (decision, disadvantaged, stratum) arrays holding ``counts`` exactly."""
    yhat, dis, strata = [], [], []
    for k, (n_d, x_d, n_a, x_a) in enumerate(counts):
        for n, x, d in ((n_d, x_d, True), (n_a, x_a, False)):
            yhat += [1] * x + [0] * (n - x)
            dis += [d] * n
            strata += [k] * n
    return np.array(yhat), np.array(dis), np.array(strata)


def test_mantel_haenszel_gap_equals_the_hand_computed_value() -> None:
    """RD = (w1 d1 + w2 d2)/(w1 + w2) = (20/3 (-0.2) + 7.5 (-0.3)) / (85/6) = -43/170."""
    rd, _, compared = mantel_haenszel_rd(COUNTS)
    assert rd == pytest.approx(-43 / 170, rel=1e-12) and compared == 2


def test_sato_variance_equals_the_hand_computed_value() -> None:
    """V = (RD (P1 + P2) + Q1 + Q2) / (w1 + w2)^2 with P1 = 8/9, P2 = 27/16, Q1 = 5/3, Q2 = 15/8."""
    rd = -43 / 170
    expected = (rd * (8 / 9 + 27 / 16) + 5 / 3 + 15 / 8) / (85 / 6) ** 2
    _, variance, _ = mantel_haenszel_rd(COUNTS)
    assert variance == pytest.approx(expected, rel=1e-12)
    assert variance == pytest.approx(0.0144, abs=5e-5)


def test_one_stratum_gives_the_plain_gap_and_the_wald_variance() -> None:
    """With one stratum RD_MH is p_d - p_a and Sato's variance p(1-p)/n summed over groups."""
    rd, variance, _ = mantel_haenszel_rd([[100, 30, 80, 20]])
    assert rd == pytest.approx(0.30 - 0.25)
    assert variance == pytest.approx(0.3 * 0.7 / 100 + 0.25 * 0.75 / 80, rel=1e-12)


def test_sato_variance_matches_the_sampling_variance_of_the_estimate() -> None:
    """Over 4,000 simulated audits of four strata the mean Sato variance is within 8 % of the
    variance of the estimates (seeded; the Monte-Carlo error of that variance is about 2 %)."""
    rng = np.random.default_rng(7)
    n_d, n_a = np.array([20, 50, 200, 10]), np.array([30, 40, 100, 60])
    p_a = np.array([0.15, 0.3, 0.5, 0.8])
    draws = [mantel_haenszel_rd(np.stack([n_d, rng.binomial(n_d, p_a - 0.05), n_a,
                                          rng.binomial(n_a, p_a)], axis=1))
             for _ in range(4_000)]
    estimates, variances = np.array([d[0] for d in draws]), np.array([d[1] for d in draws])
    assert variances.mean() == pytest.approx(estimates.var(), rel=0.08)
    assert estimates.mean() == pytest.approx(-0.05, abs=0.003)


def test_cmh_p_value_equals_statsmodels_test_null_odds() -> None:
    """The CMH p-value is statsmodels' StratifiedTable.test_null_odds(correction=False)."""
    rng = np.random.default_rng(3)
    counts = np.stack([rng.integers(5, 60, 6), rng.integers(0, 5, 6), rng.integers(5, 60, 6),
                       rng.integers(0, 5, 6)], axis=1)
    counts[:, 1] = np.minimum(counts[:, 1] + counts[:, 0] // 3, counts[:, 0])
    tables = np.stack([[[x_d, n_d - x_d], [x_a, n_a - x_a]] for n_d, x_d, n_a, x_a in counts],
                      axis=2)
    reference = StratifiedTable(tables).test_null_odds(correction=False).pvalue
    assert cmh_p_value(counts) == pytest.approx(reference, rel=1e-9)


def test_stratum_counts_count_rows_of_each_group() -> None:
    """stratum_counts rebuilds (n_d, x_d, n_a, x_a) per stratum from the rows."""
    assert stratum_counts(*rows(COUNTS)).tolist() == COUNTS.tolist()


def test_permutation_p_agrees_with_a_row_level_within_strata_shuffle() -> None:
    """The count-level (hypergeometric) test and a slow row shuffle within strata estimate the
    same p (both P = 2,000; Monte-Carlo s.e. about 0.011 each)."""
    counts = np.array([[40, 10, 50, 16], [30, 12, 25, 12], [20, 3, 60, 14]])
    yhat, dis, strata = rows(counts)
    fast = stratified_gap(yhat, dis, strata, n_permutations=2000, seed=11).p_value
    rng = np.random.default_rng(12)
    observed = abs(mantel_haenszel_rd(counts)[0])
    hits = 0
    for _ in range(2000):
        shuffled = dis.copy()
        for k in range(len(counts)):
            at = np.flatnonzero(strata == k)
            shuffled[at] = rng.permutation(dis[at])
        hits += abs(mantel_haenszel_rd(stratum_counts(yhat, shuffled, strata))[0]) >= observed
    slow = (1 + hits) / 2001
    assert 0.1 < slow < 0.9 and fast == pytest.approx(slow, abs=0.045)


def test_stratified_gap_reports_interval_tests_and_raw_gap() -> None:
    """The result holds RD, its z interval from Sato's variance, the CMH p and the raw gap."""
    yhat, dis, strata = rows(COUNTS)
    gap = stratified_gap(yhat, dis, strata, n_permutations=500, seed=0, confidence=0.95)
    rd, variance, _ = mantel_haenszel_rd(COUNTS)
    half = 1.959963984540054 * math.sqrt(variance)
    assert (gap.value, gap.ci_low, gap.ci_high) == pytest.approx((rd, rd - half, rd + half))
    assert gap.raw_gap == pytest.approx(18 / 40 - 18 / 30)
    assert gap.cmh_p_value == pytest.approx(cmh_p_value(COUNTS))
    assert (gap.strata, gap.strata_compared, gap.n_disadvantaged, gap.n_advantaged) == \
        (2, 2, 40, 30)
    assert 1 / 501 <= gap.p_value <= 1 and gap.note == ""


def test_a_stratum_with_one_group_carries_no_comparison() -> None:
    """A stratum holding only advantaged rows has weight 0: the gap is the other stratum's and
    the note counts it."""
    counts = np.array([[10, 3, 20, 10], [0, 0, 15, 9]])
    gap = stratified_gap(*rows(counts), n_permutations=200, seed=0)
    assert gap.value == pytest.approx(0.3 - 0.5)
    assert (gap.strata, gap.strata_compared) == (2, 1)
    assert gap.note == "strata_without_both_groups:1" and gap.n_advantaged == 20


def test_no_stratum_with_both_groups_is_insufficient_data() -> None:
    """When the groups never share a stratum there is no estimate, no interval and no test."""
    counts = np.array([[10, 3, 0, 0], [0, 0, 15, 9]])
    gap = stratified_gap(*rows(counts), n_permutations=200, seed=0)
    assert math.isnan(gap.value) and math.isnan(gap.p_value) and math.isnan(gap.ci_low)
    assert gap.note == "insufficient_data;strata_without_both_groups:2"
    assert gap.raw_gap == pytest.approx(0.3 - 0.6)


def test_the_interval_stays_within_minus_one_and_one() -> None:
    """A gap of -1 in a tiny stratum set keeps its interval inside [-1, 1]."""
    gap = stratified_gap(*rows(np.array([[3, 0, 3, 3], [2, 0, 2, 1]])), n_permutations=200,
                         seed=0)
    assert -1.0 <= gap.ci_low <= gap.value <= gap.ci_high <= 1.0


def test_the_same_seed_gives_the_same_p_value() -> None:
    """The permutation test draws only from its seed: equal seeds, equal p."""
    data = rows(np.array([[40, 10, 50, 16], [30, 12, 25, 12]]))
    assert stratified_gap(*data, n_permutations=300, seed=5).p_value == \
        stratified_gap(*data, n_permutations=300, seed=5).p_value


# HMDA's approvals within the six consumer-credit levels (n_d, x_d, n_a, x_a; chist 1..6):
# African-American applicants against the others, approvals = applications not denied.
HMDA_CONSUMER_CREDIT = np.array([[127, 110, 1226, 1159], [51, 40, 390, 350], [27, 20, 99, 83],
                                 [24, 13, 53, 47], [42, 22, 140, 118], [68, 38, 133, 95]])


def test_heterogeneity_of_hmda_consumer_credit_is_q_11_93_on_5_df() -> None:
    """Cochran's Q of the six levels' approval gaps is 11.93 on 5 df, p 0.036: the common
    difference the pooled gap assumes is not borne out."""
    h = heterogeneity(HMDA_CONSUMER_CREDIT)
    assert (round(h.q, 2), h.df, round(h.p_value, 3)) == (11.93, 5, 0.036)


def test_heterogeneity_equals_statsmodels_combine_effects() -> None:
    """Q and its df equal statsmodels' fixed-effect meta-analysis of the strata's differences."""
    c = HMDA_CONSUMER_CREDIT.astype(float)
    p_d, p_a = c[:, 1] / c[:, 0], c[:, 3] / c[:, 2]
    ref = combine_effects(p_d - p_a, p_d * (1 - p_d) / c[:, 0] + p_a * (1 - p_a) / c[:, 2])
    h = heterogeneity(c)
    assert h.q == pytest.approx(ref.q, rel=1e-12) and h.df == ref.df


def test_heterogeneity_leaves_out_strata_without_variance_or_a_group() -> None:
    """A stratum with a group's rate at 0 or 1 (no Wald variance: 6 of 8 against 0 of 1 would
    weigh like hundreds of rows), or with one group, carries no weight; fewer than two used
    strata is no test (NaN, df 0)."""
    base = np.array([[10, 3, 20, 10], [30, 15, 10, 8]])
    more = np.vstack([base, [[5, 5, 7, 7], [0, 0, 9, 4], [8, 6, 1, 0]]])
    assert heterogeneity(more) == heterogeneity(base)
    single = heterogeneity(base[:1])
    assert math.isnan(single.q) and single.df == 0 and math.isnan(single.p_value)


def test_stratified_gap_carries_its_heterogeneity() -> None:
    """The gap's heterogeneity is the test of its own strata."""
    gap = stratified_gap(*rows(HMDA_CONSUMER_CREDIT), n_permutations=100, seed=0)
    assert gap.heterogeneity == heterogeneity(HMDA_CONSUMER_CREDIT)
    assert gap.value == pytest.approx(-0.1428, abs=5e-5)
