"""Tests of the resampling engine (faircode.stats.resampling)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from sklearn.metrics import roc_auc_score

from faircode.core import checks
from faircode.core.seeds import child_seed
from faircode.stats import resampling


def test_child_seed_matches_spawn_key_construction() -> None:
    """An int master gives SeedSequence(master, spawn_key=key)."""
    child = child_seed(7, 1, 2, 3)
    expected = np.random.SeedSequence(7, spawn_key=(1, 2, 3))
    assert np.array_equal(child.generate_state(8), expected.generate_state(8))


def test_child_seed_appends_to_parent_without_mutating_it() -> None:
    """Nested keys append, the parent is untouched, and a fresh parent's spawn agrees."""
    parent = np.random.SeedSequence(11)
    nested = child_seed(child_seed(parent, 4), 5)
    assert nested.spawn_key == (4, 5)
    assert parent.n_children_spawned == 0
    assert np.array_equal(nested.generate_state(4), child_seed(11, 4, 5).generate_state(4))
    spawned = np.random.SeedSequence(11).spawn(1)[0]
    assert np.array_equal(child_seed(11, 0).generate_state(4), spawned.generate_state(4))


def test_child_seed_different_keys_give_different_streams() -> None:
    """Two keys differing in one position give different random draws."""
    a = np.random.default_rng(child_seed(3, 0, 1)).random(4)
    b = np.random.default_rng(child_seed(3, 0, 2)).random(4)
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "0"])
def test_child_seed_rejects_bad_keys(bad: object) -> None:
    """A negative, non-integer or boolean key is a ValueError naming its position."""
    with pytest.raises(ValueError, match=r"key\[1\]"):
        child_seed(1, 0, bad)  # type: ignore[arg-type]


def test_confusion_counts_by_hand() -> None:
    """Cells are counted in (TN, FP, FN, TP) order."""
    y = np.array([0, 0, 0, 1, 1, 1, 1])
    yhat = np.array([0, 1, 1, 0, 1, 1, 1])
    assert resampling.confusion_counts(y, yhat).tolist() == [1, 2, 1, 3]


def test_bootstrap_counts_keep_group_size_and_mean(rng: np.random.Generator) -> None:
    """Every resample has the group's size, and cell means are n·p within 5 standard errors."""
    counts = np.array([50, 10, 5, 35])
    draws = resampling.bootstrap_counts(counts, n_resamples=4000, rng=rng)
    assert draws.shape == (4000, 4)
    assert np.all(draws.sum(axis=1) == 100)
    p = counts / 100
    se = np.sqrt(100 * p * (1 - p) / 4000)
    assert np.all(np.abs(draws.mean(axis=0) - counts) < 5 * se)


def test_bootstrap_counts_of_empty_group_are_zero(rng: np.random.Generator) -> None:
    """An empty group resamples to all-zero counts."""
    draws = resampling.bootstrap_counts(np.zeros(4, np.int64), n_resamples=5, rng=rng)
    assert draws.tolist() == [[0, 0, 0, 0]] * 5


def test_permute_counts_preserve_strata_and_outside_cells(rng: np.random.Generator) -> None:
    """Stratum totals and group stratum sizes are kept; cells outside every stratum are fixed."""
    d, a = np.array([5, 3, 4, 6]), np.array([10, 2, 7, 9])
    pd, pa = resampling.permute_counts(d, a, strata=((2, 3),), n_permutations=500, rng=rng)
    assert np.all(pd + pa == d + a)
    assert np.all(pd[:, 2] + pd[:, 3] == 10)
    assert np.all(pd[:, :2] == d[:2])
    assert len(np.unique(pd[:, 3])) > 3


def test_permute_counts_follow_hypergeometric(rng: np.random.Generator) -> None:
    """Disadvantaged TP counts in a two-cell stratum match the hypergeometric law (KS test)."""
    d, a = np.array([0, 0, 12, 8]), np.array([0, 0, 20, 30])
    pd, _ = resampling.permute_counts(d, a, strata=((2, 3),), n_permutations=3000, rng=rng)
    law = sps.hypergeom(M=70, n=38, N=20)
    expected = law.rvs(size=3000, random_state=np.random.default_rng(5))
    assert sps.ks_2samp(pd[:, 3], expected).pvalue > 1e-3
    assert abs(pd[:, 3].mean() - law.mean()) < 5 * law.std() / np.sqrt(3000)


def test_percentile_interval_drops_nan() -> None:
    """NaN resamples are ignored and the rest give numpy's linear quantiles."""
    values = np.array([np.nan, 1.0, 2.0, 3.0, 4.0, np.nan, 5.0])
    low, high = resampling.percentile_interval(values, confidence=0.5)
    assert (low, high) == (2.0, 4.0)
    assert np.isnan(resampling.percentile_interval(np.full(3, np.nan), confidence=0.9)[0])


@pytest.mark.parametrize("bad", [0.0, 1.0, 95, True])
def test_percentile_interval_rejects_bad_confidence(bad: object) -> None:
    """A confidence outside (0, 1) is a ValueError."""
    with pytest.raises(ValueError, match="confidence"):
        resampling.percentile_interval(np.ones(3), confidence=bad)  # type: ignore[arg-type]


def test_permutation_p_value_by_hand() -> None:
    """p = (1 + hits) / (1 + P) with hits counted on absolute values."""
    assert resampling.permutation_p_value(0.3, [0.1, -0.4, 0.29, 0.5]) == pytest.approx(3 / 5)


def test_permutation_p_value_counts_floating_point_ties() -> None:
    """A permuted value equal to the observed one up to rounding counts as a tie."""
    assert 0.1 + 0.2 != 0.3
    assert resampling.permutation_p_value(0.1 + 0.2, [0.3]) == 1.0
    assert resampling.permutation_p_value(0.3, [0.3 - 1e-6]) == 0.5


def test_permutation_p_value_is_never_zero_and_nan_aware() -> None:
    """No permuted value as extreme gives 1/(P+1); NaN observed gives NaN; NaN T* never counts."""
    assert resampling.permutation_p_value(0.9, np.zeros(99)) == pytest.approx(0.01)
    assert np.isnan(resampling.permutation_p_value(float("nan"), np.zeros(3)))
    assert resampling.permutation_p_value(0.5, [np.nan, 0.6]) == pytest.approx(2 / 3)


def test_benjamini_hochberg_hand_worked() -> None:
    """BH on (0.01, 0.04, 0.03, 0.005, NaN): m = 4, q = (0.02, 0.04, 0.04, 0.02, NaN)."""
    # sorted p: 0.005, 0.01, 0.03, 0.04 -> p·m/rank: 0.02, 0.02, 0.04, 0.04 (already monotone)
    q = resampling.benjamini_hochberg([0.01, 0.04, 0.03, 0.005, np.nan])
    np.testing.assert_allclose(q[:4], [0.02, 0.04, 0.04, 0.02])
    assert np.isnan(q[4])


def test_benjamini_hochberg_enforces_monotonicity_and_cap() -> None:
    """A larger raw p·m/rank earlier is pulled down to the later minimum; q never exceeds 1."""
    # sorted p: 0.02, 0.021, 0.9 (m = 3) -> 0.06, 0.0315, 0.9 -> running min from top: .0315
    np.testing.assert_allclose(resampling.benjamini_hochberg([0.9, 0.02, 0.021]),
                               [0.9, 0.0315, 0.0315])
    np.testing.assert_allclose(resampling.benjamini_hochberg([0.5, 0.9, 1.0]), [1.0, 1.0, 1.0])
    assert resampling.benjamini_hochberg([]).shape == (0,)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), max_size=30))
def test_benjamini_hochberg_properties(p: list[float]) -> None:
    """q >= p, q <= 1, NaN stays NaN, and q is monotone in p."""
    arr = np.array(p, dtype=float)
    q = resampling.benjamini_hochberg(arr)
    assert np.array_equal(np.isnan(q), np.isnan(arr))
    ok = ~np.isnan(arr)
    assert np.all(q[ok] >= arr[ok] - 1e-12) and np.all(q[ok] <= 1.0)
    order = np.argsort(arr[ok], kind="stable")
    assert np.all(np.diff(q[ok][order]) >= -1e-12)


def test_benjamini_hochberg_rejects_out_of_range() -> None:
    """A p-value outside [0, 1] is a ValueError."""
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        resampling.benjamini_hochberg([0.2, 1.5])


def test_delong_auc_matches_pairwise_definition(rng: np.random.Generator) -> None:
    """AUC equals sklearn's and the variance equals the O(mn) structural-component formula."""
    y = rng.integers(0, 2, 80)
    score = np.round(rng.normal(size=80) + y, 1)  # rounding creates ties
    auc, var = resampling.delong_auc(y, score)
    pos, neg = score[y == 1], score[y == 0]
    kernel = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = kernel.mean(axis=1), kernel.mean(axis=0)
    expected_var = v10.var(ddof=1) / pos.size + v01.var(ddof=1) / neg.size
    assert auc == pytest.approx(roc_auc_score(y, score))
    assert var == pytest.approx(expected_var)


def test_delong_auc_degenerate_classes() -> None:
    """One class gives NaN AUC; a single positive gives an AUC but NaN variance."""
    assert np.isnan(resampling.delong_auc(np.ones(4, int), np.arange(4.0))[0])
    auc, var = resampling.delong_auc(np.array([0, 0, 1]), np.array([0.1, 0.5, 0.3]))
    assert auc == 0.5 and np.isnan(var)


def test_as_binary_and_mask_validate() -> None:
    """Non-0/1 values, non-boolean masks and unequal lengths are ValueErrors naming the array."""
    with pytest.raises(ValueError, match=r"y_true\[2\]: expected 0 or 1, got 2"):
        checks.as_binary("y_true", [0, 1, 2])
    with pytest.raises(ValueError, match="disadvantaged: expected a 1-D boolean mask"):
        checks.as_mask("disadvantaged", np.array([0, 1]))
    with pytest.raises(ValueError, match="y_true=2, y_pred=3"):
        checks.check_lengths(y_true=np.zeros(2), y_pred=np.zeros(3))
    assert checks.as_binary("y", np.array([True, False])).tolist() == [1, 0]


# --- closed-form intervals ------------------------------------------------------------------

# Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10 (hybrid score)
NEWCOMBE_TABLE_II = [
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)),
    ((0, 10, 0, 10), (-0.2775, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0000)),
    ((10, 10, 0, 10), (0.6075, 1.0000)),
]


@pytest.mark.parametrize(("counts", "expected"), NEWCOMBE_TABLE_II)
def test_newcombe_interval_matches_published_table(
    counts: tuple[int, int, int, int], expected: tuple[float, float]
) -> None:
    """Method 10 reproduces Newcombe's published 95 % limits to four decimals."""
    low, high = resampling.newcombe_interval(*counts, confidence=0.95)
    assert (float(low), float(high)) == pytest.approx(expected, abs=6e-5)


def test_newcombe_interval_agrees_with_statsmodels(rng: np.random.Generator) -> None:
    """Vectorised limits equal statsmodels' 'newcomb' difference interval at 90 %."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    n1, n2 = rng.integers(5, 60, 20), rng.integers(5, 60, 20)
    x1, x2 = rng.integers(0, n1 + 1), rng.integers(0, n2 + 1)
    low, high = resampling.newcombe_interval(x1, n1, x2, n2, confidence=0.9)
    for i in range(20):
        ref = confint_proportions_2indep(int(x1[i]), int(n1[i]), int(x2[i]), int(n2[i]),
                                         method="newcomb", compare="diff", alpha=0.1)
        assert (low[i], high[i]) == pytest.approx(ref, abs=1e-10)


def test_wilson_interval_known_answers() -> None:
    """Wilson's interval: [0, z²/(n+z²)] at x = 0, and statsmodels' values elsewhere."""
    from statsmodels.stats.proportion import proportion_confint

    z = 1.959963984540054
    low, high = resampling.wilson_interval(np.array([0, 3, 10]), np.array([10, 10, 10]),
                                      confidence=0.95)
    assert (low[0], high[0]) == pytest.approx((0.0, z * z / (10 + z * z)))
    assert (low[1], high[1]) == pytest.approx(proportion_confint(3, 10, method="wilson"))
    assert (low[2], high[2]) == pytest.approx((10 / (10 + z * z), 1.0))
    assert np.isnan(resampling.wilson_interval(0, 0, confidence=0.95)[0])


def test_katz_ratio_interval_by_hand() -> None:
    """Katz: 10/50 over 20/50 is 0.5·exp(±z·sqrt(1/10 − 1/50 + 1/20 − 1/50))."""
    low, high = resampling.katz_ratio_interval(10, 50, 20, 50, confidence=0.95)
    half = 1.959963984540054 * np.sqrt(0.11)
    assert (float(low), float(high)) == pytest.approx((0.5 * np.exp(-half), 0.5 * np.exp(half)))


def test_katz_ratio_interval_zero_counts() -> None:
    """x1 = 0 gives lower 0 and the x1 = 1/2 upper limit; x2 = 0 gives NaN."""
    low, high = resampling.katz_ratio_interval(0, 40, 10, 50, confidence=0.95)
    se = np.sqrt(1 / 0.5 - 1 / 40 + 1 / 10 - 1 / 50)
    expected = (0.5 / 40) / (10 / 50) * np.exp(1.959963984540054 * se)
    assert float(low) == 0.0 and float(high) == pytest.approx(expected)
    assert np.isnan(resampling.katz_ratio_interval(3, 40, 0, 50, confidence=0.95)[0])


def test_mover_interval_two_cells_is_newcombe(rng: np.random.Generator) -> None:
    """With weights (1, −1) the MOVER interval is Newcombe's; weights (−1, 1) mirror it."""
    x, n = np.array([7, 19]), np.array([23, 31])
    low, high = resampling.mover_interval(x, n, (1.0, -1.0), confidence=0.95)
    assert (low, high) == pytest.approx(
        resampling.newcombe_interval(7, 23, 19, 31, confidence=0.95))
    mlow, mhigh = resampling.mover_interval(x, n, (-1.0, 1.0), confidence=0.95)
    assert (mlow, mhigh) == pytest.approx((-high, -low))


def test_z_quantile_is_two_sided() -> None:
    """z at 95 % is 1.959964 and at 90 % 1.644854 (the two-sided normal quantiles)."""
    assert resampling.z_quantile(0.95) == pytest.approx(1.959963984540054)
    assert resampling.z_quantile(0.90) == pytest.approx(1.6448536269514722)
