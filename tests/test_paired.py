"""Tests of the paired effects engine (faircode.stats.paired and its private helpers)."""

from __future__ import annotations

import numpy as np
import pytest
from reference import (
    reference_effect,
    reference_paired_bootstrap,
    reference_paired_cluster_bootstrap,
    reference_swap,
)
from scipy import stats as sps

from faircode.core.seeds import child_seed
from faircode.stats import clusters, metrics, paired, resampling
from faircode.stats._paired_counts import bootstrap_joint, joint_unit_counts
from faircode.stats.paired import EFFECT_METRICS, EffectResult, PairedDraws

FAIRNESS = metrics.FAIRNESS_METRICS


def _audit(rng: np.random.Generator, n: int = 300) -> tuple[np.ndarray, ...]:
    """Labels, a group mask and two coupled decision vectors (A changes a fifth of B's)."""
    y = (rng.random(n) < 0.45).astype(np.int64)
    dis = rng.random(n) < 0.35
    b = (rng.random(n) < np.where(dis, 0.3, 0.5) + 0.2 * y).astype(np.int64)
    a = np.where(rng.random(n) < 0.8, b, (rng.random(n) < 0.45).astype(np.int64))
    return y, a, b, dis


def _same(left: tuple[EffectResult, ...], right: tuple[EffectResult, ...]) -> bool:
    """Field-by-field equality of two result tuples, NaN equal to NaN."""
    if len(left) != len(right):
        return False
    for x, z in zip(left, right, strict=True):
        for field in EffectResult.__slots__:
            u, v = getattr(x, field), getattr(z, field)
            if isinstance(u, float):
                if not np.array_equal(np.array(u), np.array(v), equal_nan=True):
                    return False
            elif u != v:
                return False
    return True


def test_joint_counts_match_a_hand_count() -> None:
    """Each row lands in cell 4y + 2ŷ_A + ŷ_B of its group (disadvantaged first)."""
    y = np.array([1, 0, 1, 0, 1])
    a = np.array([1, 1, 0, 0, 1])
    b = np.array([0, 1, 0, 1, 1])
    dis = np.array([True, True, False, False, False])
    expected = np.zeros((2, 8), dtype=np.int64)
    expected[0, 6] = expected[0, 3] = 1  # (1, 1, 0) and (0, 1, 1)
    expected[1, 4] = expected[1, 1] = expected[1, 7] = 1  # (1, 0, 0), (0, 0, 1), (1, 1, 1)
    assert np.array_equal(paired.joint_counts(y, a, b, dis), expected)


def test_marginals_are_each_strategys_confusion_counts(rng: np.random.Generator) -> None:
    """Summing the joint table over one strategy gives the other's (TN, FP, FN, TP) per group."""
    y, a, b, dis = _audit(rng)
    counts_a, counts_b = paired.marginal_counts(paired.joint_counts(y, a, b, dis))
    for g, rows in enumerate((dis, ~dis)):
        assert np.array_equal(counts_a[g], resampling.confusion_counts(y[rows], a[rows]))
        assert np.array_equal(counts_b[g], resampling.confusion_counts(y[rows], b[rows]))


def test_swap_counts_exchange_the_strategies(rng: np.random.Generator) -> None:
    """The swapped table is the table of (y, ŷ_B, ŷ_A)."""
    y, a, b, dis = _audit(rng)
    assert np.array_equal(paired.swap_counts(paired.joint_counts(y, a, b, dis)),
                          paired.joint_counts(y, b, a, dis))


def test_effects_are_differences_of_the_fairness_metrics_gaps(rng: np.random.Generator) -> None:
    """Δ = |gap_A − parity| − |gap_B − parity| with each gap exactly fairness_metrics' value."""
    y, a, b, dis = _audit(rng)
    effects = {r.metric: r for r in paired.paired_effects(y, a, b, dis, seed=1, n_resamples=50,
                                                          n_permutations=50)}
    own_a = {r.metric: r.value for r in metrics.fairness_metrics(y, a, dis, seed=1,
                                                                 n_permutations=10)}
    own_b = {r.metric: r.value for r in metrics.fairness_metrics(y, b, dis, seed=1,
                                                                 n_permutations=10)}
    for metric in FAIRNESS:
        parity = 1.0 if metric == "disparate_impact_ratio" else 0.0
        assert effects[metric].gap_a == own_a[metric]
        assert effects[metric].gap_b == own_b[metric]
        assert effects[metric].value == abs(own_a[metric] - parity) - abs(own_b[metric] - parity)


def test_accuracy_effects_match_the_row_definition(rng: np.random.Generator) -> None:
    """Δ accuracy and Δ balanced accuracy equal the row-level reference over all rows."""
    y, a, b, dis = _audit(rng)
    effects = {r.metric: r for r in paired.paired_effects(y, a, b, dis, seed=1, n_resamples=50,
                                                          n_permutations=50)}
    for metric in ("accuracy", "balanced_accuracy"):
        assert effects[metric].value == pytest.approx(reference_effect(metric, y, a, b, dis),
                                                      abs=1e-12)
    assert effects["accuracy"].gap_a == pytest.approx(float(np.mean(a == y)), abs=1e-12)


def test_a_strategy_paired_with_itself_has_no_effect(rng: np.random.Generator) -> None:
    """Self-pairing: Δ = 0, a zero-width interval at 0 and p = 1 for every effect."""
    y, a, _, dis = _audit(rng)
    for r in paired.paired_effects(y, a, a, dis, seed=2, n_resamples=200, n_permutations=200):
        assert (r.value, r.ci_low, r.ci_high, r.p_value, r.swap_p_value) == (
            0.0, 0.0, 0.0, 1.0, 1.0), r.metric


def test_one_row_per_unit_is_the_row_path_bit_for_bit(rng: np.random.Generator) -> None:
    """Unique unit ids give exactly the results of no units (and design effect 1)."""
    y, a, b, dis = _audit(rng)
    kwargs = {"seed": 3, "n_resamples": 100, "n_permutations": 100}
    rows = paired.paired_effects(y, a, b, dis, **kwargs)
    units = paired.paired_effects(y, a, b, dis, units=rng.permutation(y.size) + 7, **kwargs)
    assert _same(rows, units)
    assert all(r.design_effect == 1.0 for r in rows)


def test_unit_draws_of_single_row_units_are_the_row_draws(rng: np.random.Generator) -> None:
    """The unit bootstrap and swap of one-row units make the row path's draws and rng calls."""
    y, a, b, dis = _audit(rng)
    joint = paired.joint_counts(y, a, b, dis)
    types = clusters.unit_types(joint_unit_counts(y, a, b, dis, np.arange(y.size)))
    for draw in (lambda t, r: bootstrap_joint(joint, t, 64, r),
                 lambda t, r: paired.swap_draws(joint, n_permutations=64, rng=r, types=t)):
        assert np.array_equal(draw(None, np.random.default_rng(5)),
                              draw(types, np.random.default_rng(5)))


def test_count_bootstrap_agrees_with_the_row_reference(rng: np.random.Generator) -> None:
    """Paired count-level draws and the row-index reference agree (KS, mean and SD)."""
    y, a, b, dis = _audit(rng, 120)
    draws = paired.paired_draws(y, a, b, dis, seed=4, n_resamples=2000).delta
    for metric in ("demographic_parity_diff", "equalized_odds_diff", "accuracy"):
        k = EFFECT_METRICS.index(metric)
        ref = reference_paired_bootstrap(metric, y, a, b, dis, n_resamples=2000,
                                         rng=np.random.default_rng(child_seed(9, k)))
        fast = draws[k][np.isfinite(draws[k])]
        assert sps.ks_2samp(fast, ref[np.isfinite(ref)]).pvalue > 0.001, metric
        assert fast.mean() == pytest.approx(np.nanmean(ref), abs=4 * fast.std() / np.sqrt(1000))
        assert fast.std() == pytest.approx(np.nanstd(ref), rel=0.1)


def test_unit_bootstrap_agrees_with_the_cluster_reference(rng: np.random.Generator) -> None:
    """With units of 1-4 rows the unit draws agree with resampling whole units' rows."""
    y, a, b, dis = _audit(rng, 200)
    unit = np.repeat(np.arange(80), rng.integers(1, 5, 80))[:200]
    unit = np.concatenate([unit, np.arange(200 - unit.size) + 1000])
    dis = dis[unit % 200]  # the attribute is constant within a unit
    draws = paired.paired_draws(y, a, b, dis, seed=6, units=unit, n_resamples=1500).delta
    k = EFFECT_METRICS.index("demographic_parity_diff")
    ref = reference_paired_cluster_bootstrap("demographic_parity_diff", y, a, b, dis, unit,
                                             n_resamples=1500, rng=np.random.default_rng(11))
    assert sps.ks_2samp(draws[k], ref).pvalue > 0.001
    assert draws[k].std() == pytest.approx(ref.std(), rel=0.1)


@pytest.mark.parametrize("rows_per_unit", [1, 2])
def test_swap_test_agrees_with_the_row_reference(
    rows_per_unit: int, rng: np.random.Generator
) -> None:
    """Swapped effects at count level and from per-unit coin flips agree (KS, mean and SD)."""
    y, a, b, dis = _audit(rng, 150)
    unit = np.arange(150) // rows_per_unit
    dis = dis[unit * rows_per_unit]  # the attribute is constant within a unit
    joint = paired.joint_counts(y, a, b, dis)
    types = None if rows_per_unit == 1 else clusters.unit_types(
        joint_unit_counts(y, a, b, dis, unit))
    swapped = paired.swap_draws(joint, n_permutations=2000, rng=np.random.default_rng(1),
                                types=types)
    counts_a, counts_b = paired.marginal_counts(swapped)
    k = EFFECT_METRICS.index("equal_opportunity_diff")
    fast = (paired.distance(paired.components(counts_a))
            - paired.distance(paired.components(counts_b)))[:, k]
    ref = reference_swap("equal_opportunity_diff", y, a, b, dis, unit, n_permutations=2000,
                         rng=np.random.default_rng(2))
    assert sps.ks_2samp(fast, ref).pvalue > 0.001
    assert fast.mean() == pytest.approx(ref.mean(), abs=4 * ref.std() / np.sqrt(1000))
    assert fast.std() == pytest.approx(ref.std(), rel=0.1)


def test_swap_p_value_with_one_discordant_row_is_one() -> None:
    """One row where A and B differ: swapping it only flips Δ's sign, so p = 1 (hand count)."""
    y = np.array([1, 0, 1, 0, 1, 0])
    b = np.array([1, 0, 0, 0, 1, 1])
    a = b.copy()
    a[2] = 1
    dis = np.array([True, True, True, False, False, False])
    acc = paired.paired_effects(y, a, b, dis, seed=0, n_resamples=20, n_permutations=99)[-2]
    assert acc.value == pytest.approx(1 / 6) and acc.swap_p_value == 1.0


def test_swap_test_rejects_a_large_change(rng: np.random.Generator) -> None:
    """A that decides every disadvantaged row favourably moves parity: p is the smallest."""
    y, _, b, dis = _audit(rng, 400)
    a = np.where(dis, 1, b)
    dp = paired.paired_effects(y, a, b, dis, seed=0, n_resamples=20, n_permutations=199)[0]
    assert dp.swap_p_value == pytest.approx(1 / 200)


def test_box_range_clips_at_the_kink() -> None:
    """s in [0.08, 0.12], d in [-0.15, -0.05]: Δ = clip(d, -s, s) spans [-0.12, -0.05]."""
    box = np.array([[0.08, 0.12, -0.15, -0.05], [np.nan] * 4])
    low, high = paired.box_range("abs", box)
    assert (float(low), float(high)) == pytest.approx((-0.12, -0.05))


def test_box_range_keeps_d_when_both_gaps_keep_their_sign() -> None:
    """Both gaps clearly negative (s < 0, |d| < |s|): Δ = -d, the box is [-d_hi, -d_lo]."""
    low, high = paired.box_range("abs", np.array([[-0.5, -0.3, -0.04, 0.02], [np.nan] * 4]))
    assert (float(low), float(high)) == pytest.approx((-0.02, 0.04))


@pytest.mark.parametrize("shape", ["abs", "max_abs", "linear"])
def test_box_range_is_the_exact_range_over_the_box(shape: str, rng: np.random.Generator) -> None:
    """The range equals the extremes of Δ on a fine grid of the box (within grid spacing)."""
    for _ in range(15):
        centre = rng.uniform(-0.2, 0.2, size=(2, 2))
        half = rng.uniform(0.0, 0.15, size=(2, 2))
        box = np.stack([centre - half, centre + half], -1).reshape(2, 4)  # s_lo, s_hi, d_lo, d_hi
        low, high = paired.box_range(shape, box)
        steps = 9 if shape == "max_abs" else 201
        axes = [np.linspace(box[c, 2 * j], box[c, 2 * j + 1], steps)
                for c in (0, 1) for j in (0, 1)]
        s_t, d_t, s_f, d_f = np.meshgrid(*axes, indexing="ij", sparse=True)
        t_a, t_b, f_a, f_b = (s_t + d_t) / 2, (s_t - d_t) / 2, (s_f + d_f) / 2, (s_f - d_f) / 2
        if shape == "abs":
            grid = np.abs(t_a) - np.abs(t_b) + 0 * s_f
        elif shape == "linear":
            grid = t_a - t_b + 0 * s_f
        else:
            grid = np.maximum(np.abs(t_a), np.abs(f_a)) - np.maximum(np.abs(t_b), np.abs(f_b))
        spacing = 2 * float(half.max()) / (steps - 1) * 2
        assert grid.min() >= low - 1e-12 and grid.max() <= high + 1e-12
        assert grid.min() <= low + spacing and grid.max() >= high - spacing


def test_expanded_level_matches_the_hand_value() -> None:
    """n = 40 at 95 %: sqrt(40/39) · t_39 = 1.01274 · 2.02269 = 2.0485, level 0.9595."""
    assert paired.expanded_level(0.95, 40) == pytest.approx(0.95949, abs=1e-5)
    assert paired.expanded_level(0.95, None) == 0.95 == paired.expanded_level(0.95, 1)


def test_linear_effects_take_the_expanded_percentile_interval(rng: np.random.Generator) -> None:
    """Accuracy's interval is the percentile interval of its Δ draws at the expanded level."""
    y, a, b, dis = _audit(rng)
    draws = paired.paired_draws(y, a, b, dis, seed=8, n_resamples=500)
    low, high = draws.interval(confidence=0.9)
    k = EFFECT_METRICS.index("accuracy")
    level = paired.expanded_level(0.9, draws.n_units)
    expected = resampling.percentile_interval(draws.delta[k], confidence=level)
    assert (low[k], high[k]) == pytest.approx(expected, abs=1e-12)
    assert draws.n_units == int(min(dis.sum(), (~dis).sum()))


def test_paired_draws_are_the_draws_behind_paired_effects(rng: np.random.Generator) -> None:
    """paired_draws' interval is paired_effects' interval for the same seed."""
    y, a, b, dis = _audit(rng)
    draws = paired.paired_draws(y, a, b, dis, seed=12, n_resamples=300)
    low, high = draws.interval(confidence=0.95)
    results = paired.paired_effects(y, a, b, dis, seed=12, n_resamples=300, n_permutations=30)
    assert np.allclose([r.ci_low for r in results], low, equal_nan=True, rtol=0, atol=0)
    assert np.allclose([r.ci_high for r in results], high, equal_nan=True, rtol=0, atol=0)
    assert draws.delta.shape == (len(EFFECT_METRICS), 300)


def test_results_depend_only_on_the_seed(rng: np.random.Generator) -> None:
    """The same seed gives identical results; another seed other draws."""
    y, a, b, dis = _audit(rng)
    kwargs = {"n_resamples": 100, "n_permutations": 100}
    first = paired.paired_effects(y, a, b, dis, seed=5, **kwargs)
    assert _same(first, paired.paired_effects(y, a, b, dis, seed=5, **kwargs))
    assert not _same(first, paired.paired_effects(y, a, b, dis, seed=6, **kwargs))


def test_undefined_effects_say_why() -> None:
    """No favourable label in a group: TPR effects are NaN, insufficient_data, no p-value."""
    y = np.array([0, 0, 0, 1, 0, 1])
    a = np.array([1, 0, 1, 1, 0, 0])
    b = np.array([0, 0, 1, 1, 1, 0])
    dis = np.array([True, True, True, False, False, False])
    by = {r.metric: r for r in paired.paired_effects(y, a, b, dis, seed=0, n_resamples=20,
                                                     n_permutations=20)}
    eo = by["equal_opportunity_diff"]
    assert np.isnan(eo.value) and np.isnan(eo.p_value) and np.isnan(eo.swap_p_value)
    assert eo.note == "insufficient_data"
    assert np.isfinite(by["demographic_parity_diff"].value)


def test_disparate_impact_with_no_advantaged_favourable_decision_is_undefined() -> None:
    """B decides nobody favourably in the advantaged group: its ratio, so the effect, is NaN."""
    y = np.array([1, 0, 1, 0])
    a = np.array([1, 0, 1, 1])
    b = np.array([1, 1, 0, 0])
    dis = np.array([True, True, False, False])
    di = paired.paired_effects(y, a, b, dis, seed=0, n_resamples=20, n_permutations=20)[1]
    assert np.isnan(di.value) and di.note == "undefined_advantaged_rate_zero"


def test_duplicated_rows_as_units_double_the_variance(rng: np.random.Generator) -> None:
    """Every row twice, as one unit of two identical rows: design effect ≈ 2."""
    y, a, b, dis = _audit(rng, 400)
    twice = np.repeat(np.arange(400), 2)
    acc = paired.paired_effects(y[twice], a[twice], b[twice], dis[twice], units=twice, seed=1,
                                n_resamples=2000, n_permutations=50)[-2]
    assert acc.design_effect == pytest.approx(2.0, rel=0.2)
    assert acc.n_units == 400


def test_combining_one_replicate_changes_nothing(rng: np.random.Generator) -> None:
    """K = 1: the combined interval and mean are the replicate's own."""
    y, a, b, dis = _audit(rng)
    draws = paired.paired_draws(y, a, b, dis, seed=3, n_resamples=300)
    combined = paired.combine_replicates([draws], confidence=0.95)
    low, high = draws.interval(confidence=0.95)
    for k, c in enumerate(combined):
        assert np.array_equal([c.ci_low, c.ci_high, c.mean], [low[k], high[k], draws.value[k]],
                              equal_nan=True)
        assert c.replicates == 1 and np.isnan(c.sd_between)


def test_combining_replicates_pools_their_draws(rng: np.random.Generator) -> None:
    """K = 3: accuracy's interval is the percentile of the pooled draws; mean, SD, sign flips."""
    draws = []
    for k in range(3):
        y, a, b, dis = _audit(rng)
        draws.append(paired.paired_draws(y, a, b, dis, seed=k, n_resamples=200))
    combined = paired.combine_replicates(draws, confidence=0.95)
    k = EFFECT_METRICS.index("accuracy")
    pooled = np.concatenate([d.delta[k] for d in draws])
    level = paired.expanded_level(0.95, min(d.n_units for d in draws))
    assert (combined[k].ci_low, combined[k].ci_high) == pytest.approx(
        resampling.percentile_interval(pooled, confidence=level), abs=1e-12)
    values = np.array([d.value[k] for d in draws])
    assert combined[k].mean == pytest.approx(values.mean())
    assert combined[k].sd_between == pytest.approx(values.std(ddof=1))
    assert combined[k].sign_flips == bool((values > 0).any() and (values < 0).any())


def test_combining_replicates_of_different_sizes_is_refused(rng: np.random.Generator) -> None:
    """Replicates with different numbers of draws cannot be pooled with equal weight."""
    y, a, b, dis = _audit(rng)
    first = paired.paired_draws(y, a, b, dis, seed=0, n_resamples=100)
    second = paired.paired_draws(y, a, b, dis, seed=0, n_resamples=50)
    with pytest.raises(ValueError, match="same number of draws"):
        paired.combine_replicates([first, second], confidence=0.95)


def test_paired_draws_are_read_only(rng: np.random.Generator) -> None:
    """A PairedDraws record's arrays cannot be written to."""
    y, a, b, dis = _audit(rng)
    draws = paired.paired_draws(y, a, b, dis, seed=0, n_resamples=10)
    with pytest.raises(ValueError, match="read-only"):
        draws.draws_a[0, 0, 0] = 1.0


def test_effect_result_rejects_an_unknown_metric() -> None:
    """The record validates its metric name."""
    with pytest.raises(ValueError, match="metric: expected one of"):
        EffectResult("parity", 0.0, 0.0, 0.0, "paired_signed_box", 1.0, 1.0, 1.0, 0.0, 0.0, 1, 1,
                     2, 1.0, "")


def test_combined_effect_rejects_more_defined_replicates_than_replicates() -> None:
    """n_defined counts replicates, so it cannot exceed them."""
    with pytest.raises(ValueError, match="n_defined: expected at most 2"):
        paired.CombinedEffect("accuracy", 0.0, 0.0, 0.0, 0.0, "paired_expanded_percentile", 2, 3,
                              False)


def test_paired_draws_reject_a_wrong_shape() -> None:
    """Draws must be (metrics, 2, B)."""
    m = len(EFFECT_METRICS)
    with pytest.raises(ValueError, match="draws: expected"):
        PairedDraws(np.zeros((m, 2)), np.zeros((m, 2)), np.zeros((m, 3)), np.zeros((m, 3)), 1)


def test_mismatched_lengths_are_rejected() -> None:
    """The two decision vectors must have the rows of the labels."""
    with pytest.raises(ValueError, match="array lengths differ"):
        paired.paired_effects([0, 1], [0, 1], [0, 1, 1], [True, False], seed=0)


def _coupled_cells(rate_a: float, rate_b: float) -> np.ndarray:
    """Probabilities of (ŷ_A, ŷ_B) in cell order 2·a + b, coupled as in bench/paired_coverage."""
    both = 0.7 * min(rate_a, rate_b) + 0.3 * rate_a * rate_b
    return np.array([1 - rate_a - rate_b + both, rate_b - both, rate_a - both, both])


@pytest.mark.slow
def test_box_covers_where_the_percentile_interval_fails_at_parity() -> None:
    """Smoke of bench/paired_coverage.py: 200 audits of 400 rows per group, A reaches parity."""
    rng = np.random.default_rng(0)
    n = 400
    dis = np.arange(2 * n) < n
    cells = {True: _coupled_cells(0.5, 0.4), False: _coupled_cells(0.5, 0.5)}  # Δ = 0 - 0.1
    hit_box = hit_pct = 0
    for audit in range(200):
        index = np.concatenate([rng.choice(4, size=n, p=cells[True]),
                                rng.choice(4, size=n, p=cells[False])])
        y = (rng.random(2 * n) < 0.5).astype(np.int64)
        draws = paired.paired_draws(y, index >> 1, index & 1, dis, seed=audit, n_resamples=500)
        low, high = draws.interval(confidence=0.95)
        p_low, p_high = resampling.percentile_interval(draws.delta[0], confidence=0.95)
        hit_box += low[0] <= -0.1 <= high[0]
        hit_pct += p_low <= -0.1 <= p_high
    assert hit_box / 200 >= 0.93 and hit_pct < hit_box
