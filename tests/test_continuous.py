"""Tests of the regression gaps' statistics (:mod:`faircode.stats.continuous`,
:mod:`faircode.stats.continuous_strata`, :mod:`faircode.stats.continuous_ks`): hand-computed
values, an independent slow reference (``tests/continuous_reference.py``), seeds by name, the
cluster design, and a cheap version of ``bench/continuous_inference.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import continuous_reference as ref
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from faircode.core.metrics import metric_info, metrics_of
from faircode.stats.continuous import group_gaps, weighted_quantile
from faircode.stats.continuous_strata import strata_mean_gap

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import continuous_inference as bench

FAST = {"n_resamples": 400, "n_permutations": 400}


def _by_metric(result) -> dict[str, object]:  # type: ignore[no-untyped-def]
    return {g.metric: g for g in result.gaps}


@given(st.lists(st.integers(-5, 5), min_size=1, max_size=30),
       st.lists(st.integers(0, 3), min_size=30, max_size=30),
       st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]))
def test_weighted_quantile_is_numpys_quantile_of_the_repeated_sample(
        raw: list[int], counts: list[int], level: float) -> None:
    """Integer weights are repetitions: the weighted quantile is np.quantile of the sample with
    every row repeated as often as it weighs (ties included)."""
    values = np.sort(np.asarray(raw, dtype=float))
    weights = np.asarray(counts[: values.size], dtype=float)
    if weights.sum() == 0:
        weights[0] = 1.0
    got = weighted_quantile(values, np.cumsum(weights)[None, :], level)[0]
    assert got == pytest.approx(np.quantile(np.repeat(values, weights.astype(int)), level))


def test_hand_computed_gaps() -> None:
    """Five rows, two disadvantaged: every metric as computed by hand."""
    x = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    d = np.array([True, True, False, False, False])
    truth = np.array([1.0, 3.0, 3.0, 5.0, 10.0])
    got = {g.metric: g.value for g in group_gaps(x, d, truth=truth, n_resamples=20,
                                                 n_permutations=20, seed=1).gaps}
    assert got["mean_difference"] == pytest.approx(1.5 - 17 / 3)
    assert got["mean_ratio"] == pytest.approx(1.5 / (17 / 3))
    assert got["q10_gap"] == pytest.approx(1.1 - 3.2)
    assert got["q50_gap"] == pytest.approx(1.5 - 4.0)
    assert got["q90_gap"] == pytest.approx(1.9 - 8.8)
    assert got["ks_distance"] == pytest.approx(1.0)
    assert got["mae_gap"] == pytest.approx(0.5 - 1 / 3)
    assert got["bounded_group_loss"] == pytest.approx(0.5)
    assert got["residual_gap"] == pytest.approx(0.5 - 1 / 3)


def test_values_match_the_reference_with_ties(rng: np.random.Generator) -> None:
    """Rounded data (many ties): every value equals the reference's definition (KS: scipy's)."""
    x = np.round(rng.lognormal(2.0, 0.5, 300), 1)
    truth = np.round(x + rng.normal(0, 1, 300), 1)
    d = rng.random(300) < 0.4
    got = {g.metric: g.value for g in group_gaps(x, d, truth=truth, n_resamples=10,
                                                 n_permutations=10, seed=2).gaps}
    expected = ref.values(x, d, truth)
    assert got.keys() == expected.keys()
    for metric, value in expected.items():
        assert got[metric] == pytest.approx(value, abs=1e-12), metric


def test_log_scale_ratio_is_the_exp_of_the_mean_gap(rng: np.random.Generator) -> None:
    """On a log scale the mean ratio is exp(mean gap): the ratio of geometric means."""
    x = rng.normal(2.0, 0.5, 200)
    d = rng.random(200) < 0.5
    got = _by_metric(group_gaps(x, d, log_scale=True, n_resamples=50, n_permutations=50,
                                seed=3))
    assert got["mean_ratio"].value == pytest.approx(np.exp(x[d].mean() - x[~d].mean()))


@pytest.mark.parametrize("metric", ["mean_difference", "q50_gap", "ks_distance"])
def test_p_values_and_intervals_agree_with_the_slow_reference(
        rng: np.random.Generator, metric: str) -> None:
    """Same data, independent draws: p-values within Monte Carlo error, percentile intervals
    within a tenth of their width (KS: its bounds hold the reference's percentile interval's
    centre)."""
    x = rng.lognormal(2.0, 0.5, 160)
    d = np.arange(160) < 60
    x[d] *= 0.85
    fast = _by_metric(group_gaps(x, d, n_resamples=1000, n_permutations=1000, seed=4))[metric]
    p = ref.permutation_p(x, d, metric, permutations=1000, rng=rng)
    assert abs(fast.p_value - p) <= 4 * np.sqrt(p * (1 - p) / 1000) + 0.004
    low, high = ref.bootstrap_interval(x, d, metric, resamples=1000, rng=rng)
    if metric == "ks_distance":
        assert fast.ci_low <= fast.value <= fast.ci_high
        assert fast.ci_low >= 0.0
    else:
        width = high - low
        assert fast.ci_low == pytest.approx(low, abs=0.1 * width)
        assert fast.ci_high == pytest.approx(high, abs=0.1 * width)


def test_the_cluster_design_agrees_with_the_slow_reference(rng: np.random.Generator) -> None:
    """Units of several rows, the attribute constant within each: unit permutation and unit
    bootstrap as the reference draws them."""
    unit = np.repeat(np.arange(40), rng.integers(1, 6, 40))
    d_unit = rng.random(40) < 0.45
    x = 3.0 - 0.3 * d_unit[unit] + rng.normal(0, 0.4, 40)[unit] + rng.normal(0, 0.3, unit.size)
    d = d_unit[unit]
    fast = _by_metric(group_gaps(x, d, units=unit, n_resamples=600, n_permutations=600,
                                 seed=5))["mean_difference"]
    p = ref.permutation_p(x, d, "mean_difference", permutations=600, rng=rng, units=unit)
    assert abs(fast.p_value - p) <= 4 * np.sqrt(p * (1 - p) / 600) + 0.005
    low, high = ref.bootstrap_interval(x, d, "mean_difference", resamples=600, rng=rng,
                                       units=unit)
    assert fast.ci_low == pytest.approx(low, abs=0.12 * (high - low))
    assert fast.ci_high == pytest.approx(high, abs=0.12 * (high - low))
    assert fast.ci_method == "cluster_percentile_bootstrap"
    assert fast.design_effect > 1.0  # a unit effect: wider than the row bootstrap


def test_one_row_per_unit_is_the_row_design(rng: np.random.Generator) -> None:
    """Units that never repeat change no number: the row-level path, bit for bit."""
    x = rng.normal(size=120)
    d = rng.random(120) < 0.5
    rows = group_gaps(x, d, **FAST, seed=6)
    units = group_gaps(x, d, units=np.arange(120)[::-1], **FAST, seed=6)
    assert repr(rows) == repr(units)  # NaN fields (the ratio of negative means) included


def test_a_unit_split_by_the_attribute_is_noted(rng: np.random.Generator) -> None:
    """A unit with rows in both groups is exchanged as two parts, and the note says how many."""
    unit = np.repeat(np.arange(30), 3)
    d = rng.random(90) < 0.5
    result = group_gaps(rng.normal(size=90), d, units=unit, n_resamples=50, n_permutations=50,
                        seed=7)
    mixed = int(sum(d[unit == u].any() and (~d[unit == u]).any() for u in range(30)))
    assert result.note == f"attribute_varies_within_units:{mixed}"


def test_seeds_are_keyed_by_metric_name(rng: np.random.Generator) -> None:
    """The outcome's metrics draw the same streams whether or not a model's error metrics are
    computed beside them: adding metrics changes no other number."""
    y = rng.normal(size=150)
    pred = y + rng.normal(size=150)
    d = rng.random(150) < 0.4
    alone = _by_metric(group_gaps(pred, d, **FAST, seed=8))
    both = _by_metric(group_gaps(pred, d, truth=y, **FAST, seed=8))
    for metric, gap in alone.items():
        assert repr(both[metric]) == repr(gap)


def test_a_twin_reports_its_nulls_p_value(rng: np.random.Generator) -> None:
    """The mean ratio's test is the mean gap's, the worst group's error's the error gap's."""
    y = rng.lognormal(2, 0.4, 150)
    got = _by_metric(group_gaps(y + rng.normal(size=150), rng.random(150) < 0.4, truth=y,
                                **FAST, seed=9))
    for metric in metrics_of("regression"):
        twin = metric_info(metric).same_null
        if twin is not None:
            assert got[metric].p_value == got[twin.value].p_value


def test_the_detectable_gap_is_na_for_a_level_and_for_tiny_groups(
        rng: np.random.Generator) -> None:
    """The worst group's error is a level (no detectable gap); 10 rows per group is below the
    minimum size."""
    y = rng.normal(size=60)
    got = _by_metric(group_gaps(y + rng.normal(size=60), np.arange(60) < 30, truth=y, **FAST,
                                seed=10))
    assert np.isnan(got["bounded_group_loss"].mde)
    assert got["bounded_group_loss"].mde_note == "level"
    assert got["mean_difference"].mde > 0
    small = _by_metric(group_gaps(y[:20], np.arange(20) < 10, **FAST, seed=10))
    assert small["mean_difference"].mde_note == "below_min_size"


def test_group_summaries_hold_the_groups_statistics(rng: np.random.Generator) -> None:
    """Each group's size, mean, quantiles and their intervals."""
    x = rng.normal(size=200)
    d = np.arange(200) < 80
    result = group_gaps(x, d, n_resamples=300, n_permutations=10, seed=11)
    mean, low, high = result.disadvantaged.statistics["mean"]
    assert result.disadvantaged.n == 80 and result.advantaged.n == 120
    assert mean == pytest.approx(x[:80].mean()) and low < mean < high
    assert result.advantaged.statistics["q90"][0] == pytest.approx(np.quantile(x[80:], 0.9))
    assert result.disadvantaged.sd == pytest.approx(x[:80].std(ddof=1))


def test_bad_input_is_one_line() -> None:
    """Non-finite values or an empty group are refused with one line naming them."""
    with pytest.raises(ValueError, match="values: expected a 1-D array of finite numbers"):
        group_gaps([1.0, np.nan], [True, False], seed=1)
    with pytest.raises(ValueError, match="expected rows in both groups"):
        group_gaps([1.0, 2.0], [True, True], seed=1)


def test_the_gap_within_strata_against_the_reference(rng: np.random.Generator) -> None:
    """The pooled within-strata gap equals the stratum-by-stratum definition; its permutation
    p-value the reference's within Monte Carlo error; one stratum is the raw gap."""
    level = rng.integers(0, 4, 400)
    d = rng.random(400) < 0.2 + 0.15 * level
    x = 1.0 + 0.5 * level - 0.15 * d + rng.normal(0, 0.5, 400)
    gap = strata_mean_gap(x, d, level, n_resamples=500, n_permutations=500, seed=12)
    assert gap.value == pytest.approx(ref.strata_gap(x, d, level))
    assert gap.raw_gap == pytest.approx(x[d].mean() - x[~d].mean())
    p = ref.strata_permutation_p(x, d, level, permutations=500, rng=rng)
    assert abs(gap.p_value - p) <= 4 * np.sqrt(p * (1 - p) / 500) + 0.006
    assert gap.ci_low < gap.value < gap.ci_high
    one = strata_mean_gap(x, d, np.zeros(400, dtype=np.int64), n_resamples=50,
                          n_permutations=50, seed=12)
    assert one.value == pytest.approx(one.raw_gap)


def test_a_stratum_with_one_group_is_counted_not_compared() -> None:
    """A stratum without both groups carries no comparison and the note says so."""
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    d = np.array([True, False, True, False, True, True])
    gap = strata_mean_gap(x, d, np.array([0, 0, 1, 1, 2, 2]), n_resamples=20,
                          n_permutations=20, seed=13)
    assert (gap.strata, gap.strata_compared) == (3, 2)
    assert gap.note == "strata_without_both_groups:1"
    assert gap.value == pytest.approx(-1.0)


@pytest.mark.parametrize("setting", sorted(bench.SETTINGS))
def test_cheap_size_and_coverage(setting: str) -> None:
    """A cheap twin of bench/continuous_inference.py: 150 nulls reject at about 5 %, and 40
    intervals mostly hold the truth."""
    draw = bench.SETTINGS[setting]
    rejected, covered, checked = {}, 0, 0
    for r in range(150):
        seed = np.random.SeedSequence(bench.MASTER, spawn_key=(9, r))
        for metric, (p, _, _) in bench.results(draw(np.random.default_rng(seed), False),
                                               resamples=2, permutations=99, seed=r).items():
            rejected[metric] = rejected.get(metric, 0) + int(p <= 0.05)
    for metric, count in rejected.items():
        assert count / 150 <= 0.12, (metric, count)
    for r in range(40):
        data = draw(np.random.default_rng(np.random.SeedSequence(bench.MASTER, spawn_key=(8, r))),
                    True)
        for metric, (_, low, high) in bench.results(data, resamples=200, permutations=5,
                                                    seed=r).items():
            if data.true and metric in data.true:
                checked += 1
                covered += int(low <= data.true[metric] <= high)
    assert covered / checked >= 0.85
