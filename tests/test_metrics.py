"""Tests of the fairness, performance and intersectional metrics (faircode.stats.metrics)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import (
    reference_bootstrap,
    reference_interval,
    reference_metric,
    reference_p_value,
    reference_permutation,
    reference_statistic,
)
from scipy import stats as sps
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

from faircode.core.metrics import metric_info
from faircode.stats import metrics
from faircode.stats.metrics import FAIRNESS_METRICS, fairness_metrics

NAN = float("nan")


def rows(d: tuple[int, ...], a: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Build (y, ŷ, disadvantaged) rows from (TN, FP, FN, TP) counts of each group."""
    cells = ((0, 0), (0, 1), (1, 0), (1, 1))
    y, yhat, dis = [], [], []
    for counts, flag in ((d, True), (a, False)):
        for (yy, hh), k in zip(cells, counts, strict=True):
            y += [yy] * k
            yhat += [hh] * k
            dis += [flag] * k
    return np.array(y), np.array(yhat), np.array(dis, dtype=bool)


# D: TN=2 FP=1 FN=1 TP=2 -> rate 3/6, TPR 2/3, FPR 1/3, precision 2/3, accuracy 4/6
# A: TN=3 FP=1 FN=2 TP=2 -> rate 3/8, TPR 2/4, FPR 1/4, precision 2/3, accuracy 5/8
TABLE = rows((2, 1, 1, 2), (3, 1, 2, 2))
HAND = {
    "demographic_parity_diff": 1 / 2 - 3 / 8,
    "disparate_impact_ratio": (1 / 2) / (3 / 8),
    "equal_opportunity_diff": 2 / 3 - 1 / 2,
    "equalized_odds_diff": 2 / 3 - 1 / 2,  # max(|TPR gap| 1/6, |FPR gap| 1/12)
    "predictive_parity_diff": 0.0,
    "accuracy_equality_diff": 4 / 6 - 5 / 8,
    "tpr_gap": 2 / 3 - 1 / 2,
    "fpr_gap": 1 / 3 - 1 / 4,
}


def by_name(results: tuple[metrics.MetricResult, ...]) -> dict[str, metrics.MetricResult]:
    """Index results by metric name."""
    return {r.metric: r for r in results}


def test_results_come_in_declared_order() -> None:
    """One result per FAIRNESS_METRICS entry, in that order."""
    results = fairness_metrics(*TABLE, n_permutations=50, seed=1)
    assert tuple(r.metric for r in results) == FAIRNESS_METRICS


@pytest.mark.parametrize("metric", FAIRNESS_METRICS)
def test_hand_computed_values(metric: str) -> None:
    """Each metric's value on the small table equals the hand computation."""
    result = by_name(fairness_metrics(*TABLE, n_permutations=50, seed=1))[metric]
    assert result.value == pytest.approx(HAND[metric])


def test_demographic_parity_p_value_is_the_exact_permutation_p() -> None:
    """With independent rows the p-value is the exact two-sided hypergeometric p-value."""
    # D: 7 of 10 favourable, A: 3 of 12; pooled 10 of 22.  |x/10 - (10-x)/12| >= 54/120
    # <=> |22x - 100| >= 54 <=> x >= 7 or x <= 2
    law = sps.hypergeom(M=22, n=10, N=10)
    exact = float(law.cdf(2) + law.sf(6))
    p = by_name(
        fairness_metrics(*rows((3, 0, 0, 7), (9, 0, 0, 3)), n_permutations=4000, seed=3)
    )["demographic_parity_diff"].p_value
    assert p == pytest.approx(exact, rel=1e-12)


def test_orientation_by_the_favourable_label() -> None:
    """With favourable = 0 every metric counts the 0 decisions: the gaps are those of 1 − y."""
    y, yhat, dis = TABLE
    y_f, yhat_f = metrics.orient(y, yhat, favourable=0)
    assert np.array_equal(y_f, 1 - y) and np.array_equal(yhat_f, 1 - yhat)
    r = by_name(fairness_metrics(y_f, yhat_f, dis, n_permutations=20, seed=1))
    # favourable-decision rates: D 3/6, A 5/8; among y_f = 1 (raw y = 0): D 2/3, A 3/4
    assert r["demographic_parity_diff"].value == pytest.approx(3 / 6 - 5 / 8)
    assert r["disparate_impact_ratio"].value == pytest.approx((3 / 6) / (5 / 8))
    assert r["equal_opportunity_diff"].value == pytest.approx(2 / 3 - 3 / 4)
    assert r["fpr_gap"].value == pytest.approx(1 / 3 - 1 / 2)
    same = metrics.orient(y, yhat, favourable=1)
    assert np.array_equal(same[0], y) and np.array_equal(same[1], yhat)
    with pytest.raises(ValueError, match="favourable: expected 0 or 1"):
        metrics.orient(y, yhat, favourable=2)


@pytest.mark.parametrize("metric", [m for m in FAIRNESS_METRICS if m != "equalized_odds_diff"])
def test_score_intervals_match_independent_formulas(metric: str) -> None:
    """Score-interval metrics use Newcombe's limits of their subset rates, DI Katz's limits."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    # D: TN=20 FP=9 FN=6 TP=14 ; A: TN=41 FP=12 FN=9 TP=30
    y, yhat, dis = rows((20, 9, 6, 14), (41, 12, 9, 30))
    r = by_name(fairness_metrics(y, yhat, dis, n_permutations=20, seed=1))[metric]
    x_n = {  # (successes, trials) of D then A over the metric's subset
        "demographic_parity_diff": (23, 49, 42, 92),
        "disparate_impact_ratio": (23, 49, 42, 92),
        "equal_opportunity_diff": (14, 20, 30, 39),
        "tpr_gap": (14, 20, 30, 39),
        "fpr_gap": (9, 29, 12, 53),
        "predictive_parity_diff": (14, 23, 30, 42),
        "accuracy_equality_diff": (34, 49, 71, 92),
    }[metric]
    is_ratio = metric == "disparate_impact_ratio"
    compare, method = ("ratio", "log") if is_ratio else ("diff", "newcomb")
    expected = confint_proportions_2indep(*x_n, method=method, compare=compare, alpha=0.05)
    assert (r.ci_low, r.ci_high) == pytest.approx(expected, rel=1e-9)
    assert r.ci_method == ("katz_log" if compare == "ratio" else "newcombe_hybrid_score")


def test_subset_sizes_and_small_sample_warning() -> None:
    """n_* count the metric's subset rows; tiny groups raise the small-sample warning."""
    r = by_name(fairness_metrics(*TABLE, n_permutations=20, seed=1))
    assert (
        r["equal_opportunity_diff"].n_disadvantaged,
        r["equal_opportunity_diff"].n_advantaged,
    ) == (3, 4)
    assert (
        r["predictive_parity_diff"].n_disadvantaged,
        r["predictive_parity_diff"].n_advantaged,
    ) == (3, 3)
    assert (
        r["demographic_parity_diff"].n_disadvantaged,
        r["demographic_parity_diff"].n_advantaged,
    ) == (6, 8)
    assert all(x.small_sample_warning for x in r.values())
    big = by_name(
        fairness_metrics(
            *rows((30, 30, 30, 30), (40, 30, 30, 30)), seed=1, n_permutations=20
        )
    )
    assert not any(x.small_sample_warning for x in big.values())
    # exactly 30 rows in every subset of both groups: no warning anywhere (the bound is "< 30")
    edge = by_name(
        fairness_metrics(
            *rows((15, 15, 15, 15), (15, 15, 15, 15)), seed=1, n_permutations=20
        )
    )
    assert not any(x.small_sample_warning for x in edge.values())
    # D has 29 rows with ŷ=1 (precision subset) but >= 30 in every other subset
    border = by_name(
        fairness_metrics(
            *rows((40, 14, 40, 15), (40, 30, 30, 30)), seed=1, n_permutations=20
        )
    )
    assert border["predictive_parity_diff"].small_sample_warning is True
    assert not any(border[m].small_sample_warning for m in FAIRNESS_METRICS[:4])
    # D has 29 rows with y=0: equalized odds warns, equal opportunity does not
    eo = by_name(
        fairness_metrics(
            *rows((15, 14, 40, 40), (40, 30, 30, 30)), seed=1, n_permutations=20
        )
    )
    assert eo["equalized_odds_diff"].small_sample_warning is True
    assert eo["equal_opportunity_diff"].small_sample_warning is False


def test_equalized_odds_is_the_larger_absolute_gap() -> None:
    """With a larger negative FPR gap the value is its magnitude and the note says fpr_gap."""
    # D: TPR 1/2, FPR 1/4; A: TPR 1/2, FPR 3/4 -> TPR gap 0, FPR gap -1/2
    r = by_name(
        fairness_metrics(
            *rows((3, 1, 1, 1), (1, 3, 1, 1)), n_permutations=20, seed=2
        )
    )["equalized_odds_diff"]
    assert r.value == pytest.approx(0.5)
    assert r.note == "fpr_gap"


def test_equalized_odds_tie_takes_tpr_gap() -> None:
    """When |TPR gap| equals |FPR gap| the value is that magnitude with note tpr_gap."""
    # D: TPR 1, FPR 0; A: TPR 1/2, FPR 1/2 -> TPR gap +1/2, FPR gap -1/2
    r = by_name(
        fairness_metrics(
            *rows((2, 0, 0, 2), (1, 1, 1, 1)), n_permutations=20, seed=2
        )
    )["equalized_odds_diff"]
    assert r.value == pytest.approx(0.5)
    assert r.note == "tpr_gap"


def test_equalized_odds_interval_and_p_value_agree_on_opposite_gaps(
    rng: np.random.Generator,
) -> None:
    """Opposite gaps of similar size: the interval is of the magnitude, so it excludes 0."""
    # D: TPR 0.55, FPR 0.25; A: TPR 0.45, FPR 0.35 -> gaps +0.10 and -0.10 on 2,000 rows each
    y, yhat, dis = rows((750, 250, 450, 550), (650, 350, 550, 450))
    r = by_name(fairness_metrics(y, yhat, dis, n_permutations=400, seed=7))
    eo = r["equalized_odds_diff"]
    assert eo.value == pytest.approx(0.1) and eo.ci_low > 0.0 and eo.p_value < 0.01
    assert eo.ci_low <= eo.value <= eo.ci_high
    assert r["tpr_gap"].value == pytest.approx(0.1) and r["tpr_gap"].ci_low > 0
    assert r["fpr_gap"].value == pytest.approx(-0.1) and r["fpr_gap"].ci_high < 0


def test_same_null_metrics_report_their_twins_p_value(rng: np.random.Generator) -> None:
    """DI reports demographic parity's p-value and tpr_gap equal opportunity's."""
    y, yhat, dis = rng.integers(0, 2, 300), rng.integers(0, 2, 300), rng.random(300) < 0.4
    r = by_name(fairness_metrics(y, yhat, dis, n_permutations=300, seed=4))
    assert r["disparate_impact_ratio"].p_value == r["demographic_parity_diff"].p_value
    assert r["tpr_gap"].p_value == r["equal_opportunity_diff"].p_value
    assert r["fpr_gap"].p_value != r["equal_opportunity_diff"].p_value


def test_insufficient_data_when_a_group_subset_is_empty() -> None:
    """No y=1 rows in D: EO and equalized odds are NaN with no CI, no p-value and the note."""
    r = by_name(
        fairness_metrics(
            *rows((3, 2, 0, 0), (3, 1, 2, 2)), n_permutations=20, seed=3
        )
    )
    for name in ("equal_opportunity_diff", "equalized_odds_diff"):
        assert math.isnan(r[name].value) and math.isnan(r[name].p_value)
        assert math.isnan(r[name].ci_low) and math.isnan(r[name].ci_high)
        assert r[name].note == "insufficient_data"
    assert r["demographic_parity_diff"].value == pytest.approx(2 / 5 - 3 / 8)


def test_empty_group_gives_insufficient_data_everywhere() -> None:
    """With no disadvantaged rows every metric is insufficient_data."""
    results = fairness_metrics(*rows((0, 0, 0, 0), (3, 1, 2, 2)), seed=3)
    assert all(r.note == "insufficient_data" and math.isnan(r.p_value) for r in results)
    assert all(r.n_disadvantaged == 0 for r in results)


def test_disparate_impact_undefined_when_advantaged_rate_is_zero() -> None:
    """A zero advantaged positive rate gives DI NaN, NaN p-value and a note; no epsilon."""
    r = by_name(
        fairness_metrics(
            *rows((2, 1, 1, 2), (3, 0, 2, 0)), n_permutations=20, seed=4
        )
    )
    di = r["disparate_impact_ratio"]
    assert math.isnan(di.value) and math.isnan(di.p_value) and math.isnan(di.ci_low)
    assert di.note == "undefined_advantaged_rate_zero"
    assert r["demographic_parity_diff"].value == pytest.approx(0.5)


def test_strong_effect_has_its_exact_p_value_without_a_floor() -> None:
    """A gap no relabelling but its mirror reaches gets p = 2 / C(400, 200), not 1/(P+1)."""
    r = by_name(
        fairness_metrics(
            *rows((0, 100, 0, 100), (100, 0, 100, 0)), n_permutations=99, seed=5
        )
    )["demographic_parity_diff"]
    assert r.value == 1.0 and r.p_value == pytest.approx(2 / math.comb(400, 200), rel=1e-9)


def test_row_level_results_do_not_depend_on_the_seed(rng: np.random.Generator) -> None:
    """Without repeated units every fairness number is exact or closed-form: any seed, any
    number of permutations gives the same results."""
    y, yhat, dis = rng.integers(0, 2, 300), rng.integers(0, 2, 300), rng.random(300) < 0.4
    first = fairness_metrics(y, yhat, dis, n_permutations=200, seed=9)
    again = fairness_metrics(
        y, yhat, dis, n_permutations=200, seed=np.random.SeedSequence(9)
    )
    other = fairness_metrics(y, yhat, dis, n_permutations=50, seed=10)
    assert first == again == other


@pytest.mark.parametrize("metric", [m for m in FAIRNESS_METRICS if m not in metrics.SAME_NULL])
def test_metric_k_permutes_with_spawn_key_k_1(metric: str, rng: np.random.Generator) -> None:
    """The Monte-Carlo row permutation of a metric of seed key k (its own, never its position;
    :func:`permutation_distribution`, the diagnostic beside the exact p) draws from
    SeedSequence(seed, spawn_key=(k, 1)) hypergeometric draws."""
    y, yhat, dis = rng.integers(0, 2, 200), rng.integers(0, 2, 200), rng.random(200) < 0.5
    k = metric_info(metric).key
    d = np.bincount(2 * y[dis] + yhat[dis], minlength=4)
    a = np.bincount(2 * y[~dis] + yhat[~dis], minlength=4)
    strata = {  # the documented strata, in the documented order
        "demographic_parity_diff": [(0, 1, 2, 3)],
        "equal_opportunity_diff": [(2, 3)],
        "equalized_odds_diff": [(2, 3), (0, 1)],
        "predictive_parity_diff": [(1, 3)],
        "accuracy_equality_diff": [(0, 1, 2, 3)],
        "fpr_gap": [(0, 1)],
    }[metric]
    draw = np.random.default_rng(np.random.SeedSequence(2024, spawn_key=(k, 1)))
    pd_, pa_ = np.tile(d, (300, 1)), np.tile(a, (300, 1))
    for stratum in strata:
        cells = list(stratum)
        pooled = d[cells] + a[cells]
        got = draw.multivariate_hypergeometric(pooled, int(d[cells].sum()), size=300)
        pd_[:, cells], pa_[:, cells] = got, pooled - got
    stat = np.abs(metrics.metric_values(metric, pd_, pa_))
    observed = abs(float(metrics.metric_values(metric, d, a)))
    expected = (1 + np.sum(stat >= observed * (1 - 1e-9))) / 301
    got_observed, got_permuted = metrics.permutation_distribution(
        metric, y, yhat, dis, n_permutations=300, seed=2024)
    assert metrics.resampling.permutation_p_value(got_observed, got_permuted) == \
        pytest.approx(expected)


def test_bootstrap_distribution_uses_spawn_key_k_0(rng: np.random.Generator) -> None:
    """Equalized odds' bootstrap resamples are multinomials drawn from spawn_key (3, 0), D first."""
    y, yhat, dis = rng.integers(0, 2, 200), rng.integers(0, 2, 200), rng.random(200) < 0.5
    d = np.bincount(2 * y[dis] + yhat[dis], minlength=4)
    a = np.bincount(2 * y[~dis] + yhat[~dis], minlength=4)
    draw = np.random.default_rng(np.random.SeedSequence(77, spawn_key=(3, 0)))
    bd = draw.multinomial(d.sum(), d / d.sum(), size=500)
    ba = draw.multinomial(a.sum(), a / a.sum(), size=500)

    def tpr(c: np.ndarray) -> np.ndarray:
        return c[:, 3] / (c[:, 2] + c[:, 3])

    def fpr(c: np.ndarray) -> np.ndarray:
        return c[:, 1] / (c[:, 0] + c[:, 1])

    expected = np.maximum(np.abs(tpr(bd) - tpr(ba)), np.abs(fpr(bd) - fpr(ba)))
    got = metrics.bootstrap_distribution("equalized_odds_diff", y, yhat, dis, n_resamples=500,
                                         seed=77)
    np.testing.assert_allclose(got, expected)


@pytest.mark.parametrize(
    ("d", "a", "straddles"),
    [((20, 9, 6, 14), (41, 12, 9, 30), True), ((750, 250, 450, 550), (650, 350, 550, 450), False)],
)
def test_equalized_odds_interval_is_max_of_absolute_gap_intervals(
    d: tuple[int, ...], a: tuple[int, ...], straddles: bool
) -> None:
    """The interval of max(|TPR gap|, |FPR gap|) combines the two gaps' Newcombe intervals."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    def abs_interval(low: float, high: float) -> tuple[float, float]:
        inner = 0.0 if low <= 0.0 <= high else min(abs(low), abs(high))
        return inner, max(abs(low), abs(high))

    tpr = confint_proportions_2indep(d[3], d[2] + d[3], a[3], a[2] + a[3], method="newcomb")
    fpr = confint_proportions_2indep(d[1], d[0] + d[1], a[1], a[0] + a[1], method="newcomb")
    (lt, ut), (lf, uf) = abs_interval(*tpr), abs_interval(*fpr)
    r = by_name(fairness_metrics(*rows(d, a), n_permutations=20, seed=1))["equalized_odds_diff"]
    assert (r.ci_low, r.ci_high) == pytest.approx((max(lt, lf), max(ut, uf)))
    assert (r.ci_low == 0.0) is straddles and r.ci_method == "newcombe_max_abs"


def test_row_order_does_not_matter(rng: np.random.Generator) -> None:
    """Results depend only on the confusion counts, so shuffling rows changes nothing."""
    y, yhat, dis = rng.integers(0, 2, 150), rng.integers(0, 2, 150), rng.random(150) < 0.3
    order = rng.permutation(150)
    assert fairness_metrics(
        y, yhat, dis, n_permutations=100, seed=1
    ) == fairness_metrics(
        y[order], yhat[order], dis[order], n_permutations=100, seed=1
    )


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([0, 1], [0, 1, 1], np.array([True, False])), "lengths differ"),
        (([0, 2], [0, 1], np.array([True, False])), r"y_true\[1\]"),
        (([0, 1], [0, 1], np.array([1, 0])), "boolean mask"),
    ],
)
def test_invalid_inputs_raise(args: tuple[object, ...], match: str) -> None:
    """Unequal lengths, non-binary labels and non-boolean masks are clear ValueErrors."""
    with pytest.raises(ValueError, match=match):
        fairness_metrics(*args, seed=0)  # type: ignore[arg-type]


def synthetic(
    rng: np.random.Generator, n_d: int, n_a: int, flip_d0: float, flip_d1: float
) -> tuple[np.ndarray, ...]:
    """Labels with a group gap in base rate; D's flip rates differ by class, A's are 0.22."""
    dis = np.r_[np.ones(n_d, bool), np.zeros(n_a, bool)]
    y = (rng.random(n_d + n_a) < np.where(dis, 0.35, 0.45)).astype(int)
    flip_rate = np.where(dis, np.where(y == 1, flip_d1, flip_d0), 0.22)
    flip = rng.random(n_d + n_a) < flip_rate
    return y, np.where(flip, 1 - y, y), dis


# (n_d, n_a, D's flip rate for y=0, for y=1): moderate gaps so p-values are mid-range
CASES = {
    "balanced": (150, 180, 0.3, 0.3),
    "unequal": (60, 400, 0.3, 0.3),
    "tiny": (9, 120, 0.3, 0.3),
    "fpr_driven": (200, 200, 0.32, 0.22),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_engine_agrees_with_row_level_reference(case: str) -> None:
    """Bootstrap distributions (KS), CI endpoints and p-values agree with row resampling."""
    y, yhat, dis = synthetic(np.random.default_rng(sorted(CASES).index(case)), *CASES[case])
    b = 2500
    for k, metric in enumerate(FAIRNESS_METRICS):
        ref_rng = np.random.default_rng([k, 99])
        fast = metrics.bootstrap_distribution(metric, y, yhat, dis, n_resamples=b, seed=k + 1)
        slow = reference_bootstrap(metric, y, yhat, dis, n_resamples=b, rng=ref_rng)
        fast, slow = fast[np.isfinite(fast)], slow[np.isfinite(slow)]
        # undefined-resample fractions agree within 5 binomial standard errors (plus one count)
        assert abs(fast.size - slow.size) <= 5 * math.sqrt(2 * b * 0.25) + 1
        assert sps.ks_2samp(fast, slow).pvalue > 1e-3, metric
        # each CI endpoint sits where expected in the other sample's CDF: F_ref(e) vs q
        for q in (0.025, 0.975):
            endpoint = np.quantile(fast, q)
            below, at_or_below = np.mean(slow < endpoint), np.mean(slow <= endpoint)
            tol = 5 * math.sqrt(q * (1 - q) * (1 / fast.size + 1 / slow.size))
            assert below - tol <= q <= at_or_below + tol, (metric, q)
        observed, permuted = metrics.permutation_distribution(
            metric, y, yhat, dis, n_permutations=b, seed=k + 1
        )
        assert observed == pytest.approx(reference_statistic(metric, y, yhat, dis))
        p_fast = metrics.resampling.permutation_p_value(observed, permuted)
        p_slow = reference_p_value(
            observed, reference_permutation(metric, y, yhat, dis, n_permutations=b, rng=ref_rng)
        )
        pooled = (p_fast + p_slow) / 2
        assert abs(p_fast - p_slow) <= 5 * math.sqrt(2 * pooled * (1 - pooled) / b) + 2 / b, metric


def test_engine_and_reference_agree_on_empty_group() -> None:
    """With an empty group both implementations give NaN and no interval."""
    y, yhat, dis = rows((0, 0, 0, 0), (5, 2, 3, 4))
    for metric in FAIRNESS_METRICS:
        assert math.isnan(reference_metric(metric, y, yhat, dis))
        assert math.isnan(
            reference_interval(
                reference_bootstrap(
                    metric, y, yhat, dis, n_resamples=5, rng=np.random.default_rng(0)
                ),
                0.95,
            )[0]
        )
    assert all(math.isnan(r.ci_low) for r in fairness_metrics(y, yhat, dis, seed=0))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.booleans()), max_size=60))
def test_metric_bounds_and_p_values(table: list[tuple[int, int, bool]]) -> None:
    """Values match the reference; score intervals contain the value and stay within bounds."""
    y = np.array([t[0] for t in table], dtype=int)
    yhat = np.array([t[1] for t in table], dtype=int)
    dis = np.array([t[2] for t in table], dtype=bool)
    for r in fairness_metrics(y, yhat, dis, n_permutations=30, seed=0):
        if math.isnan(r.value):
            assert math.isnan(r.p_value) and r.note
            continue
        assert r.ci_low <= r.value + 1e-12 and r.value - 1e-12 <= r.ci_high  # bracket the value
        if r.metric == "disparate_impact_ratio":
            assert r.ci_low >= 0.0
        elif r.metric == "equalized_odds_diff":
            assert 0.0 <= r.ci_low and r.ci_high <= 1.0
        else:
            assert -1.0 - 1e-12 <= r.ci_low and r.ci_high <= 1.0 + 1e-12
        assert r.value == pytest.approx(reference_metric(r.metric, y, yhat, dis))


def test_performance_values_match_sklearn(rng: np.random.Generator) -> None:
    """Accuracy, AUC and F1 equal sklearn's, each with an interval around it."""
    y = rng.integers(0, 2, 400)
    score = rng.normal(size=400) + y
    yhat = (score > 0.5).astype(int)
    acc, auc, f1 = metrics.performance_metrics(y, yhat, score, n_resamples=500, seed=1)
    assert (acc.metric, auc.metric, f1.metric) == ("accuracy", "auc", "f1")
    assert acc.value == pytest.approx(accuracy_score(y, yhat))
    assert auc.value == pytest.approx(roc_auc_score(y, score))
    assert f1.value == pytest.approx(f1_score(y, yhat))
    for r in (acc, auc, f1):
        assert r.ci_low < r.value < r.ci_high and r.n == 400 and r.note == ""


@pytest.mark.parametrize(("confidence", "z"), [(0.95, 1.959963984540054),
                                               (0.80, 1.2815515655446004)])
def test_auc_interval_is_two_sided_normal(
    confidence: float, z: float, rng: np.random.Generator
) -> None:
    """AUC ± z·se with z the two-sided quantile and se from the O(mn) DeLong definition."""
    y = rng.integers(0, 2, 120)
    score = rng.normal(size=120) + 0.3 * y
    _, auc, _ = metrics.performance_metrics(y, (score > 0).astype(int), score, seed=1,
                                            n_resamples=20, confidence=confidence)
    pos, neg = score[y == 1], score[y == 0]
    kernel = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    se = math.sqrt(kernel.mean(1).var(ddof=1) / pos.size + kernel.mean(0).var(ddof=1) / neg.size)
    assert (auc.ci_low, auc.ci_high) == pytest.approx((auc.value - z * se, auc.value + z * se))


def test_performance_notes_without_scores_or_positives() -> None:
    """No scores gives AUC note no_scores; no positives anywhere makes F1 undefined."""
    y, yhat = np.zeros(10, int), np.zeros(10, int)
    acc, auc, f1 = metrics.performance_metrics(y, yhat, None, n_resamples=20, seed=1)
    assert acc.value == 1.0 and auc.note == "no_scores" and math.isnan(auc.value)
    assert f1.note == "undefined_no_positives" and math.isnan(f1.value)
    _, single, _ = metrics.performance_metrics(y, yhat, np.arange(10.0), seed=1)
    assert single.note == "single_class"


def intersection_rows(cells: dict[str, tuple[int, int]]) -> tuple[np.ndarray, ...]:
    """Build (ŷ, a, b) from {cell: (rows, positives)} with cells dd, da, ad, aa."""
    flags = {"dd": (True, True), "da": (True, False), "ad": (False, True), "aa": (False, False)}
    yhat, a, b = [], [], []
    for cell, (n, pos) in cells.items():
        yhat += [1] * pos + [0] * (n - pos)
        a += [flags[cell][0]] * n
        b += [flags[cell][1]] * n
    return np.array(yhat), np.array(a, bool), np.array(b, bool)


def test_intersectional_gap_hand_table() -> None:
    """Cell rates, the DD-vs-AA gap, the marginal gaps and the interaction match by hand."""
    # dd 8/10, da 3/10, ad 3/10, aa 2/10; gap_a = 11/20 - 5/20 = 0.3; same for b; gap 0.6
    yhat, a, b = intersection_rows({"dd": (10, 8), "da": (10, 3), "ad": (10, 3), "aa": (10, 2)})
    r = metrics.intersectional_gap(yhat, a, b, n_permutations=300, seed=1)
    assert (r.n_dd, r.n_da, r.n_ad, r.n_aa) == (10, 10, 10, 10)
    assert (r.rate_dd, r.rate_da, r.rate_ad, r.rate_aa) == pytest.approx((0.8, 0.3, 0.3, 0.2))
    assert r.gap == pytest.approx(0.6)
    assert (r.gap_a, r.gap_b) == pytest.approx((0.3, 0.3))
    assert r.interaction == pytest.approx(0.8 - 0.3 - 0.3 + 0.2)
    assert r.note == ""
    # permutation among the 20 DD+AA rows with 10 positives: exact two-sided Fisher-type p-value
    law = sps.hypergeom(M=20, n=10, N=10)
    exact = law.cdf(2) + law.sf(7)  # |x/10 - (10-x)/10| >= 0.6  <=>  x <= 2 or x >= 8
    assert abs(r.p_value - exact) < 5 * math.sqrt(exact * (1 - exact) / 300) + 2 / 300


def test_intersectional_gap_interval_is_newcombe() -> None:
    """The DD-vs-AA interval is Newcombe's for 8/10 − 2/10 (statsmodels' 'newcomb')."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    yhat, a, b = intersection_rows({"dd": (10, 8), "da": (10, 3), "ad": (10, 3), "aa": (10, 2)})
    r = metrics.intersectional_gap(yhat, a, b, n_permutations=20, seed=1)
    expected = confint_proportions_2indep(8, 10, 2, 10, method="newcomb", compare="diff")
    assert (r.ci_low, r.ci_high) == pytest.approx(expected)


def test_interaction_interval_is_mover_wilson() -> None:
    """The interaction's limits combine the four Wilson intervals by the MOVER formula."""
    from statsmodels.stats.proportion import proportion_confint

    x, n = (8, 3, 3, 2), (10, 12, 14, 16)
    wilson = [proportion_confint(xi, ni, alpha=0.05, method="wilson") for xi, ni in zip(x, n,
                                                                                         strict=True)]
    p = [xi / ni for xi, ni in zip(x, n, strict=True)]
    est = p[0] - p[1] - p[2] + p[3]
    # positive weight: lower limit from the cell's lower bound; negative weight: from its upper
    low = est - math.sqrt((p[0] - wilson[0][0]) ** 2 + (wilson[1][1] - p[1]) ** 2
                          + (wilson[2][1] - p[2]) ** 2 + (p[3] - wilson[3][0]) ** 2)
    high = est + math.sqrt((wilson[0][1] - p[0]) ** 2 + (p[1] - wilson[1][0]) ** 2
                           + (p[2] - wilson[2][0]) ** 2 + (wilson[3][1] - p[3]) ** 2)
    value, ci_low, ci_high, _ = metrics.interaction_test(x, n, n_simulations=10,
                                                          confidence=0.95, seed=0)
    assert value == pytest.approx(est)
    assert (ci_low, ci_high) == pytest.approx((low, high))


def test_interaction_test_holds_its_level_under_additive_effects() -> None:
    """With two strong additive main effects and no interaction, p < 0.05 in about 5 % of audits."""
    rng = np.random.default_rng(11)
    rates, n = np.array([0.60, 0.40, 0.30, 0.10]), np.array([40, 60, 80, 200])  # interaction 0
    p = [metrics.interaction_test(rng.binomial(n, rates), n, n_simulations=199, confidence=0.95,
                                  seed=i)[3] for i in range(300)]
    rejected = float(np.mean(np.array(p) < 0.05))
    assert 0.015 <= rejected <= 0.095  # 5 % ± 3.5 binomial s.e. at 300 audits


def test_interaction_test_detects_a_real_interaction() -> None:
    """An interaction of 0.4 on 100-row cells gets the minimal p and an interval excluding 0."""
    yhat, a, b = intersection_rows({"dd": (100, 80), "da": (100, 30), "ad": (100, 30),
                                    "aa": (100, 20)})
    r = metrics.intersectional_gap(yhat, a, b, n_permutations=199, seed=2)
    assert r.interaction == pytest.approx(0.4)
    assert r.interaction_p_value == pytest.approx(1 / 200) and r.interaction_ci_low > 0.2


def test_interaction_is_zero_for_additive_rates() -> None:
    """Rates that add up (0.2 + 0.1 + 0.3) give interaction 0 and p = 1 even with a big DD gap."""
    yhat, a, b = intersection_rows({"dd": (50, 30), "da": (50, 15), "ad": (50, 20),
                                    "aa": (50, 5)})
    r = metrics.intersectional_gap(yhat, a, b, n_permutations=99, seed=3)
    assert r.interaction == pytest.approx(0.0, abs=1e-12) and r.interaction_p_value == 1.0
    assert r.gap == pytest.approx(0.5) and r.p_value < 0.05


def test_intersectional_empty_cell() -> None:
    """An empty cell gives NaN gap, interaction, CIs and p-values and a note saying so."""
    yhat, a, b = intersection_rows({"dd": (0, 0), "da": (10, 3), "ad": (10, 3), "aa": (10, 2)})
    r = metrics.intersectional_gap(yhat, a, b, seed=1)
    assert r.note == "empty_intersectional_cell" and r.n_dd == 0
    assert math.isnan(r.gap) and math.isnan(r.p_value) and math.isnan(r.ci_low)
    assert math.isnan(r.interaction) and math.isnan(r.interaction_p_value)
    assert math.isnan(r.rate_dd) and r.rate_aa == pytest.approx(0.2)
    assert r.gap_a == pytest.approx(3 / 10 - 5 / 20)


# --- the audit's Benjamini-Hochberg family ---------------------------------------------------


def test_audit_q_values_pool_tables_and_count_each_null_once() -> None:
    """One BH over {DP, EO, gap, interaction}; DI shares DP's q (not a separate test)."""
    import pandas as pd

    fairness = pd.DataFrame({
        "strategy": ["S0"] * 3, "model": ["lr"] * 3, "protected_attribute": ["race"] * 3,
        "metric": ["demographic_parity_diff", "disparate_impact_ratio", "equal_opportunity_diff"],
        "p_value": [0.01, 0.01, 0.04],
    })
    inter = pd.DataFrame({"strategy": ["S0"], "model": ["lr"], "p_value": [0.03],
                          "interaction_p_value": [0.5]})
    f, i = metrics.audit_q_values(fairness, inter, alpha=0.05)
    # family (0.01, 0.04, 0.03, 0.5), m = 4: p·m/rank = 0.04, 0.06, 0.0533, 0.5 -> step-up min
    np.testing.assert_allclose(f["q_value"], [0.04, 0.04, 0.16 / 3])
    np.testing.assert_allclose(i["q_value"], [0.16 / 3])
    np.testing.assert_allclose(i["interaction_q_value"], [0.5])
    assert f["significant"].tolist() == [True, True, False]
    assert i["significant"].tolist() == [False] and i["interaction_significant"].tolist() == [False]
    assert "q_value" not in fairness  # the inputs are not modified


def test_audit_q_values_twin_is_matched_within_its_cell_and_attribute() -> None:
    """DI takes the DP q-value of its own strategy, model and attribute."""
    import pandas as pd

    fairness = pd.DataFrame({
        "strategy": ["S0", "S0", "S1", "S1"], "model": ["lr"] * 4,
        "protected_attribute": ["race"] * 4,
        "metric": ["demographic_parity_diff", "disparate_impact_ratio"] * 2,
        "p_value": [0.001, 0.001, 0.9, 0.9],
    })
    empty = pd.DataFrame({"p_value": [], "interaction_p_value": []})
    f, _ = metrics.audit_q_values(fairness, empty, alpha=0.05)
    np.testing.assert_allclose(f["q_value"], [0.002, 0.002, 0.9, 0.9])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"y_pred": np.array([0, 2, 1])}, r"^y_pred\[1\]: expected 0 or 1, got 2"),
        ({"disadvantaged_a": np.array([1, 0, 1])}, "^disadvantaged_a: expected a 1-D boolean"),
        ({"disadvantaged_b": np.array([1, 0, 1])}, "^disadvantaged_b: expected a 1-D boolean"),
        ({"y_pred": np.array([0, 1])}, "^array lengths differ: .*y_pred=2"),
        ({"n_permutations": 0}, "^n_permutations: expected a positive int, got 0"),
        ({"confidence": 1.5}, "^confidence: expected a float in"),
    ],
)
def test_intersectional_gap_rejects_bad_input(kwargs: dict[str, object], match: str) -> None:
    """Each bad argument is a ValueError naming that argument."""
    args: dict[str, object] = {
        "y_pred": np.array([0, 1, 1]), "disadvantaged_a": np.array([True, False, True]),
        "disadvantaged_b": np.array([True, True, False]), "seed": 0,
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        metrics.intersectional_gap(**args)  # type: ignore[arg-type]


# ------------------------------------------------------------------ repeated units (units=)


def _doubled(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """n independent rows, each written twice as one unit of two identical rows."""
    y = rng.integers(0, 2, n)
    yhat = rng.integers(0, 2, n)
    dis = rng.random(n) < 0.4
    return y, yhat, dis, np.repeat(y, 2), np.repeat(yhat, 2), np.repeat(dis, 2), np.repeat(
        np.arange(n), 2)


def test_units_exchange_whole_people_in_the_permutation_test() -> None:
    """Four people of two identical rows (D: both favourable, A: neither): p = 1/3, rows 2/70."""
    yhat = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    y = np.ones(8, dtype=np.int64)
    dis = np.array([True] * 4 + [False] * 4)
    unit = np.repeat(np.arange(4), 2)
    clustered = fairness_metrics(y, yhat, dis, n_permutations=20000, seed=3, units=unit,
                                 n_resamples=50)[0]
    rows = fairness_metrics(y, yhat, dis, n_permutations=20000, seed=3)[0]
    # units: D receives 2 of 4 people, |gap| = 1 in 2 of C(4, 2) = 6 ways; rows: 2 of C(8, 4) = 70
    assert clustered.p_value == pytest.approx(1 / 3, abs=0.015)
    assert rows.p_value == pytest.approx(2 / 70, abs=0.006)


def test_units_of_two_identical_rows_give_design_effect_two_and_the_single_row_interval(
    rng: np.random.Generator,
) -> None:
    """Doubling every row inside its unit: design effect ~2 and ~the undoubled interval."""
    y, yhat, dis, y2, yhat2, dis2, unit = _doubled(rng, 400)
    single = fairness_metrics(y, yhat, dis, n_permutations=50, seed=1)
    doubled = fairness_metrics(y2, yhat2, dis2, n_permutations=50, seed=1, units=unit,
                               n_resamples=4000)
    for one, two in zip(single, doubled, strict=True):
        assert two.value == pytest.approx(one.value, abs=1e-12)
        if one.metric != "equalized_odds_diff":  # a max of |gaps|: no variance scaling
            assert two.design_effect == pytest.approx(2.0, rel=0.15), one.metric
        # Newcombe at counts / deff ~ counts / 2 = the undoubled interval
        assert two.ci_low == pytest.approx(one.ci_low, abs=0.02), one.metric
        assert two.ci_high == pytest.approx(one.ci_high, abs=0.02), one.metric


def test_one_row_per_unit_is_bit_identical_to_no_units(rng: np.random.Generator) -> None:
    """Units that never repeat take the row path: same results, design effect 1."""
    y, yhat, dis = rng.integers(0, 2, 300), rng.integers(0, 2, 300), rng.random(300) < 0.3
    unit = rng.permutation(300) + 1000
    assert fairness_metrics(y, yhat, dis, n_permutations=99, seed=4, units=unit) == \
        fairness_metrics(y, yhat, dis, n_permutations=99, seed=4)
    assert {r.design_effect for r in fairness_metrics(y, yhat, dis, seed=4, units=unit)} == {1.0}
    score = rng.random(300)
    assert metrics.performance_metrics(y, yhat, score, n_resamples=99, seed=4, units=unit) == \
        metrics.performance_metrics(y, yhat, score, n_resamples=99, seed=4)
    b = rng.random(300) < 0.5
    assert metrics.intersectional_gap(yhat, dis, b, n_permutations=99, seed=4, units=unit) == \
        metrics.intersectional_gap(yhat, dis, b, n_permutations=99, seed=4)


def test_units_whose_attribute_varies_are_noted() -> None:
    """A person with rows in both groups is split for the permutation and counted in the note."""
    y = np.array([1, 0, 1, 0, 1, 0])
    yhat = np.array([1, 1, 0, 0, 1, 0])
    dis = np.array([True, False, True, True, False, False])
    unit = np.array([0, 0, 1, 1, 2, 2])  # person 0 is disadvantaged in one row only
    results = fairness_metrics(y, yhat, dis, n_permutations=20, seed=0, units=unit,
                               n_resamples=20)
    dp = results[FAIRNESS_METRICS.index("demographic_parity_diff")]
    assert dp.note == "attribute_varies_within_units:1"


def test_performance_bootstrap_resamples_units(rng: np.random.Generator) -> None:
    """Doubled rows as units: the accuracy interval is ~sqrt(2) wider than the row interval."""
    *_, y2, yhat2, _, unit = _doubled(rng, 500)
    rows = metrics.performance_metrics(y2, yhat2, None, n_resamples=4000, seed=2)[0]
    units = metrics.performance_metrics(y2, yhat2, None, n_resamples=4000, seed=2, units=unit)[0]
    ratio = (units.ci_high - units.ci_low) / (rows.ci_high - rows.ci_low)
    assert ratio == pytest.approx(math.sqrt(2), rel=0.1)


def test_intersectional_gap_with_doubled_units_has_design_effect_two(
    rng: np.random.Generator,
) -> None:
    """Doubling rows inside units: gap design effect ~2 and ~the undoubled gap interval."""
    yhat = rng.integers(0, 2, 600)
    a, b = rng.random(600) < 0.5, rng.random(600) < 0.5
    single = metrics.intersectional_gap(yhat, a, b, n_permutations=50, seed=5)
    doubled = metrics.intersectional_gap(
        np.repeat(yhat, 2), np.repeat(a, 2), np.repeat(b, 2), n_permutations=50, seed=5,
        units=np.repeat(np.arange(600), 2), n_resamples=4000,
    )
    assert doubled.gap == pytest.approx(single.gap, abs=1e-12)
    assert doubled.design_effect == pytest.approx(2.0, rel=0.15)
    assert (doubled.ci_low, doubled.ci_high) == pytest.approx((single.ci_low, single.ci_high),
                                                              abs=0.02)
    assert (doubled.interaction_ci_low, doubled.interaction_ci_high) == pytest.approx(
        (single.interaction_ci_low, single.interaction_ci_high), abs=0.03)
    assert doubled.interaction == single.interaction
