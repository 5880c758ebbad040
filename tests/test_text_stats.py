"""Tests of the text statistics: CTF gap, flip direction, per-term rates and subgroup AUCs.

Hand-computed values on tiny inputs, and independent references (scipy, scikit-learn, brute
force) for the fast count-level code.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import roc_auc_score

from faircode.stats.paired_scores import NO_CHANGE, counterfactual_gap, flip_direction
from faircode.stats.subgroup_auc import (
    CrossCounts,
    auc,
    pair_matrix,
    subgroup_aucs,
    unit_weights,
)
from faircode.stats.term_rates import clopper_pearson, stratified_exact_p, subgroup_rates


def test_ctf_gap_and_shift_are_the_mean_absolute_and_signed_change() -> None:
    """Scores 0.1, 0.5, 0.9 -> 0.3, 0.5, 0.2 give gap (0.2 + 0 + 0.7) / 3 and shift −0.5 / 3."""
    g = counterfactual_gap([0.1, 0.5, 0.9], [0.3, 0.5, 0.2], n_resamples=50, n_permutations=50,
                           seed=1)
    assert g.gap == pytest.approx(0.9 / 3)
    assert g.shift == pytest.approx(-0.5 / 3)
    assert (g.n_pairs, g.n_units) == (3, 3)


def test_ctf_interval_resamples_whole_units() -> None:
    """With two units whose changes are 0 and 1, every cluster draw holds both units' pairs or
    one unit twice, so each draw's gap is 0, 0.5 or 1."""
    d = np.array([0.0, 0.0, 1.0, 1.0])
    g = counterfactual_gap(np.zeros(4), d, units=[7, 7, 9, 9], n_resamples=400,
                           n_permutations=10, seed=3)
    assert g.n_units == 2 and g.gap == 0.5
    assert g.gap_low == 0.0 and g.gap_high == 1.0


def test_ctf_without_any_score_change_has_no_test() -> None:
    """Pairs whose scores never move have gap 0 and a NaN p-value (left out of a family)."""
    g = counterfactual_gap([0.2, 0.4], [0.2, 0.4], n_resamples=20, n_permutations=20, seed=0)
    assert (g.gap, g.shift, g.note) == (0.0, 0.0, NO_CHANGE)
    assert math.isnan(g.p_value)


def test_shift_p_value_equals_the_exact_sign_flip_distribution() -> None:
    """The sign-flip test of 6 one-pair units converges to the exact enumeration of 2**6 signs."""
    d = np.array([0.3, 0.2, 0.25, 0.1, -0.05, 0.4])
    exact = np.mean([abs(np.dot(s, d)) >= abs(d.sum()) - 1e-12
                     for s in itertools.product((-1, 1), repeat=6)])
    g = counterfactual_gap(np.zeros(6), d, n_resamples=10, n_permutations=20000, seed=5)
    assert g.p_value == pytest.approx(exact, abs=0.01)


def test_flip_direction_without_units_is_mcnemar_exact() -> None:
    """Eight flips to 1 and one to 0 give scipy's two-sided binomial p of 8 in 9."""
    before = np.array([0] * 8 + [1] + [0] * 5)
    after = np.array([1] * 8 + [0] + [0] * 5)
    p = flip_direction(before, after, np.ones(14, dtype=bool), n_permutations=10, seed=0)
    assert p == pytest.approx(sps.binomtest(8, 9, 0.5).pvalue)


def test_flip_direction_without_flips_is_nan() -> None:
    """No decision changed: the direction test has nothing to tell apart (NaN)."""
    same = np.array([0, 1, 1])
    assert math.isnan(flip_direction(same, same, np.ones(3, dtype=bool), n_permutations=10,
                                     seed=0))


def test_term_rate_against_background_by_hand() -> None:
    """Label-0 rows: the term's 2 of 4 are errors, the background's 1 of 4: 0.5 against 0.25."""
    errors = np.array([1, 1, 0, 0, 1, 0, 0, 0, 1, 1], dtype=bool)
    eligible = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0, 0], dtype=bool)
    member = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 0], dtype=bool)
    (r,) = subgroup_rates(errors, eligible, [member])
    assert (r.n, r.errors, r.background_n, r.background_errors) == (4, 2, 4, 1)
    assert (r.rate, r.background_rate, r.difference) == (0.5, 0.25, 0.25)
    assert (r.ci_low, r.ci_high) == pytest.approx(clopper_pearson(2, 4, confidence=0.95))
    assert r.p_value == pytest.approx(sps.fisher_exact([[2, 2], [1, 3]]).pvalue)


def test_clopper_pearson_matches_scipy_at_integer_counts() -> None:
    """The beta-quantile interval equals scipy's exact binomial interval for 3 of 40."""
    ci = sps.binomtest(3, 40).proportion_ci(method="exact")
    assert clopper_pearson(3, 40, confidence=0.95) == pytest.approx((ci.low, ci.high))


def test_stratified_exact_test_matches_full_enumeration() -> None:
    """The convolution of hypergeometrics equals enumerating every within-stratum assignment of
    the member rows (Fisher's two-sided ordering)."""
    rows, errors, members = [5, 6, 4], [2, 3, 1], [2, 3, 2]
    strata = [list(itertools.combinations([1] * k + [0] * (n - k), m))
              for n, k, m in zip(rows, errors, members, strict=True)]
    totals: dict[int, int] = {}
    for choice in itertools.product(*strata):
        t = sum(sum(part) for part in choice)
        totals[t] = totals.get(t, 0) + 1
    count = sum(totals.values())
    pmf = {t: c / count for t, c in totals.items()}
    for observed in pmf:
        expected = sum(p for p in pmf.values() if p <= pmf[observed] * (1 + 1e-9))
        assert stratified_exact_p(rows, errors, members, observed) == pytest.approx(expected)


def test_design_effect_widens_a_term_interval_when_frames_agree() -> None:
    """Ten frames of ten rows, each frame all errors or none: the interval is that of about ten
    independent rows, not of a hundred."""
    errors = np.repeat(np.arange(10) % 2 == 0, 10)
    member = np.ones(100, dtype=bool)
    member[-1] = False
    eligible = np.ones(100, dtype=bool)
    clustered, = subgroup_rates(errors, eligible, [member], strata=np.repeat(np.arange(10), 10))
    flat, = subgroup_rates(errors, eligible, [member])
    assert clustered.design_effect > 5
    assert clustered.ci_high - clustered.ci_low > 2 * (flat.ci_high - flat.ci_low)


def _data(seed: int = 0, n: int = 600) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    units = rng.integers(0, 40, n)
    scores = np.round(rng.random(n), 2)  # ties on purpose
    labels = (rng.random(n) < 0.5).astype(np.int8)
    member = np.isin(units, np.arange(8)) & (rng.random(n) < 0.6)
    return units, scores, labels, member


def _brute_pairs(s: np.ndarray, units: np.ndarray, pos: np.ndarray, neg: np.ndarray,
                 pu: np.ndarray, nu: np.ndarray) -> np.ndarray:
    brute = np.zeros((pu.size, nu.size))
    for a in np.flatnonzero(pos):
        for b in np.flatnonzero(neg):
            brute[np.searchsorted(pu, units[a]), np.searchsorted(nu, units[b])] += (
                (s[a] > s[b]) + 0.5 * (s[a] == s[b]))
    return brute


def test_pair_matrix_matches_brute_force() -> None:
    """Each unit pair's sum of [s+ > s-] + 0.5 [s+ = s-] equals a double loop over rows."""
    units, s, y, _ = _data(n=200)
    pos, neg = y == 1, y == 0
    pu, nu, h = pair_matrix(s[pos], units[pos], s[neg], units[neg])
    assert np.array_equal(h, _brute_pairs(s, units, pos, neg, pu, nu))


@pytest.mark.parametrize("cells", [1, 7, 64])
def test_pair_matrix_in_runs_of_values_matches_brute_force(
        monkeypatch: pytest.MonkeyPatch, cells: int) -> None:
    """Held to a few table cells, the distinct scores go in many runs (one value each at 1
    cell): every run's counts, ties included, still sum to the double loop's, both ways
    round (the table on the negatives and on the positives)."""
    import faircode.stats.subgroup_auc as subgroup_auc

    monkeypatch.setattr(subgroup_auc, "_CELLS", cells)
    units, s, y, _ = _data(seed=5, n=160)
    for pos, neg in ((y == 1, y == 0), ((y == 1) & (units < 6), y == 0),
                     (y == 1, (y == 0) & (units < 6))):
        pu, nu, h = pair_matrix(s[pos], units[pos], s[neg], units[neg])
        assert np.array_equal(h, _brute_pairs(s, units, pos, neg, pu, nu))


def test_shared_cross_counts_in_runs_of_values_are_those_of_the_row_by_row_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-distinct-score tables built in many runs give the row-by-row AUCs, bit for bit."""
    import faircode.stats.subgroup_auc as subgroup_auc

    units, s, y, member = _data(seed=6)
    weights = unit_weights(units, s.size, n_resamples=100, seed=3)
    slow = subgroup_aucs(s, y, member, weights=weights)
    monkeypatch.setattr(subgroup_auc, "_CELLS", 50)
    fast = CrossCounts(s, y, weights=weights).aucs(member)
    for a, b in zip(fast, slow, strict=True):
        assert (a.metric, a.value, a.ci_low, a.ci_high) == (b.metric, b.value, b.ci_low,
                                                            b.ci_high)


def test_aucs_equal_scikit_learn_on_their_subsets() -> None:
    """Subgroup, BPSN and BNSP AUC equal roc_auc_score on the rows each compares."""
    units, s, y, member = _data()
    weights = unit_weights(units, s.size, n_resamples=50, seed=1)
    sub, bpsn, bnsp = subgroup_aucs(s, y, member, weights=weights)
    for result, rows in ((sub, member), (bpsn, (member & (y == 0)) | (~member & (y == 1))),
                         (bnsp, (member & (y == 1)) | (~member & (y == 0)))):
        assert result.value == pytest.approx(roc_auc_score(y[rows], s[rows]))
    overall = auc(s, y == 1, y == 0, weights=weights)
    assert overall.value == pytest.approx(roc_auc_score(y, s))


def test_shared_cross_counts_give_the_same_aucs_and_intervals() -> None:
    """The shared-counts path gives every AUC and interval of the row-by-row path, bit for bit."""
    units, s, y, member = _data(seed=2)
    weights = unit_weights(units, s.size, n_resamples=200, seed=4)
    fast = CrossCounts(s, y, weights=weights).aucs(member)
    slow = subgroup_aucs(s, y, member, weights=weights)
    for a, b in zip(fast, slow, strict=True):
        assert (a.metric, a.value, a.ci_low, a.ci_high) == (b.metric, b.value, b.ci_low,
                                                            b.ci_high)


def test_auc_interval_is_a_cluster_bootstrap_of_units() -> None:
    """A unit drawn k times counts k times: weights of one draw reproduce its weighted AUC."""
    units, s, y, _ = _data(seed=3, n=120)
    weights = unit_weights(units, s.size, n_resamples=1, seed=9)
    w = weights.weights[0][weights.unit]
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    h = (s[pos][:, None] > s[neg][None, :]) + 0.5 * (s[pos][:, None] == s[neg][None, :])
    expected = (w[pos] @ h @ w[neg]) / (w[pos].sum() * w[neg].sum())
    result = auc(s, y == 1, y == 0, weights=weights)
    assert result.ci_low == pytest.approx(expected) and result.ci_high == pytest.approx(expected)


def test_pinned_auc_is_the_weighted_auc_of_the_pinned_halves() -> None:
    """The pinned AUC equals scikit-learn's AUC with every subgroup row weighing 1/(2 n_t) +
    1/(2 n) and every other 1/(2 n), and lies near the mean of Dixon et al.'s sampled version."""
    rng = np.random.default_rng(1)
    n = 600
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n) + 0.3 * y, 2)
    member = rng.random(n) < 0.2
    weights = unit_weights(rng.integers(0, 40, n), n, n_resamples=200, seed=3)
    pinned = CrossCounts(s, y, weights=weights).aucs(member, pinned=True)[3]
    n_t = int(member.sum())
    w = np.where(member, 1 / (2 * n_t) + 1 / (2 * n), 1 / (2 * n))
    assert pinned.metric == "pinned_auc"
    assert pinned.value == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=1e-12)
    sampled = []
    for _ in range(400):
        pick = rng.choice(n, n_t, replace=False)
        sampled.append(roc_auc_score(np.r_[y[member], y[pick]], np.r_[s[member], s[pick]]))
    assert pinned.value == pytest.approx(np.mean(sampled), abs=0.005)
    assert pinned.ci_low < pinned.value < pinned.ci_high


def test_fped_sums_each_terms_distance_from_the_overall_rate() -> None:
    """Two terms of 4 and 2 label-0 rows among 8: FPR 2/4 and 0/2 against the overall 3/8;
    FPED = |3/8 - 1/2| + |3/8 - 0| = 1/2; a term without rows is left out."""
    from faircode.stats.error_equality import equality_difference

    errors = np.array([1, 1, 0, 0, 0, 0, 1, 0], dtype=bool)
    eligible = np.ones(8, dtype=bool)
    first = np.array([1, 1, 1, 1, 0, 0, 0, 0], dtype=bool)
    second = np.array([0, 0, 0, 0, 1, 1, 0, 0], dtype=bool)
    weights = unit_weights(np.arange(8), 8, n_resamples=300, seed=0)
    eq = equality_difference(errors, eligible, [first, second, np.zeros(8, dtype=bool)],
                             weights=weights)
    assert eq.overall == pytest.approx(3 / 8)
    np.testing.assert_allclose(eq.differences[:2], [1 / 8, -3 / 8])
    assert math.isnan(eq.differences[2]) and eq.n_terms == 2
    assert eq.total == pytest.approx(0.5)
    assert eq.total_low <= eq.total <= eq.total_high
