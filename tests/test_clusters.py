"""Tests of the cluster (unit-level) resampling primitives (faircode.stats.clusters)."""

from __future__ import annotations

import numpy as np
import pytest
from reference import reference_cluster_bootstrap
from scipy import stats as sps

from faircode.stats import clusters, resampling


def _dp(counts: np.ndarray) -> np.ndarray:
    """Demographic-parity gap from (..., 2, 4) counts, written from its definition."""
    rate = (counts[..., 1] + counts[..., 3]) / counts.sum(axis=-1)
    return rate[..., 0] - rate[..., 1]


def _clustered_rows(rng: np.random.Generator, n_units: int) -> tuple[np.ndarray, ...]:
    """Units of 1-4 rows sharing a random effect; a tenth of units change group mid-way."""
    sizes = rng.integers(1, 5, size=n_units)
    unit = np.repeat(np.arange(n_units), sizes)
    effect = rng.normal(0.0, 1.5, size=n_units)[unit]
    dis = np.repeat(rng.random(n_units) < 0.4, sizes)
    switch = np.repeat(rng.random(n_units) < 0.1, sizes) & (rng.random(unit.size) < 0.5)
    dis = dis ^ switch
    yhat = (rng.random(unit.size) < 1 / (1 + np.exp(-(effect + 0.5 * dis)))).astype(np.int64)
    y = (rng.random(unit.size) < 0.4).astype(np.int64)
    return y, yhat, dis, unit


def test_unit_counts_match_a_hand_count() -> None:
    """Each unit's rows land in its own (group, cell) slots; group -1 rows are left out."""
    y = np.array([1, 0, 1, 1, 0])
    yhat = np.array([1, 0, 0, 1, 1])
    group = np.array([0, 0, 1, -1, 1])
    unit = np.array([7, 7, 7, 3, 3])
    counts = clusters.unit_counts(y, yhat, group, unit, n_groups=2)
    expected = np.zeros((2, 2, 4), dtype=np.int64)
    expected[1, 0, 3], expected[1, 0, 0], expected[1, 1, 2] = 1, 1, 1  # unit 7 (sorted second)
    expected[0, 1, 1] = 1  # unit 3: its group -1 row is left out
    assert np.array_equal(counts, expected)


def test_unit_types_collapse_identical_units_with_multiplicity() -> None:
    """Three units, two identical: two types, multiplicities 2 and 1, patterns as bitmasks."""
    a = [[0, 0, 0, 2], [0, 0, 0, 0]]
    b = [[1, 0, 0, 0], [0, 1, 0, 0]]
    types = clusters.unit_types(np.array([a, b, a, [[0] * 4, [0] * 4]]))
    assert types.n_units == 3 and types.mixed_units() == 1
    order = np.argsort(types.multiplicity)
    assert types.multiplicity[order].tolist() == [1, 2]
    assert types.counts[order].tolist() == [b, a]
    assert types.pattern[order].tolist() == [3, 1]
    assert types.pooled().tolist() == [[1, 0, 0, 4], [0, 1, 0, 0]]


def test_cluster_bootstrap_of_single_row_units_is_the_row_bootstrap_bit_for_bit() -> None:
    """With one row per unit the draw equals bootstrap_counts on each group, same rng calls."""
    counts_d, counts_a = np.array([5, 3, 2, 9]), np.array([7, 0, 4, 6])
    rows = [(g, c) for g, counts in enumerate((counts_d, counts_a))
            for c in range(4) for _ in range(counts[c])]
    group = np.array([g for g, _ in rows])
    cell = np.array([c for _, c in rows])
    per_unit = clusters.unit_counts(cell // 2, cell % 2, group, np.arange(len(rows)), n_groups=2)
    types = clusters.unit_types(per_unit)
    got = clusters.cluster_bootstrap_counts(
        types, n_resamples=300, rng=np.random.default_rng(5)
    )
    rng = np.random.default_rng(5)
    boot_d = resampling.bootstrap_counts(counts_d, n_resamples=300, rng=rng)
    boot_a = resampling.bootstrap_counts(counts_a, n_resamples=300, rng=rng)
    assert np.array_equal(got[:, 0], boot_d) and np.array_equal(got[:, 1], boot_a)


def test_cluster_bootstrap_draws_whole_units_with_the_hand_computed_law() -> None:
    """Two group-0 units (2 TP rows; 1 TN row): resamples are AA, AB, BB w.p. 1/4, 1/2, 1/4."""
    types = clusters.unit_types(np.array([[[0, 0, 0, 2]], [[1, 0, 0, 0]]]))
    draws = clusters.cluster_bootstrap_counts(
        types, n_resamples=20000, rng=np.random.default_rng(1)
    )[:, 0]
    outcomes = {(0, 0, 0, 4): 0.25, (1, 0, 0, 2): 0.5, (2, 0, 0, 0): 0.25}
    seen = {tuple(int(v) for v in row) for row in draws}
    assert seen == set(outcomes)
    for outcome, p in outcomes.items():
        freq = float(np.mean((draws == np.array(outcome)).all(axis=1)))
        assert abs(freq - p) < 4 * np.sqrt(p * (1 - p) / 20000)


def test_cluster_bootstrap_keeps_each_pattern_stratum_size() -> None:
    """Every resample draws exactly as many units per group pattern as were observed."""
    only_d, only_a = [[0, 0, 0, 2], [0] * 4], [[0] * 4, [3, 0, 0, 0]]
    mixed = [[1, 0, 0, 0], [0, 1, 0, 0]]
    types = clusters.unit_types(np.array([only_d] * 3 + [only_a] * 2 + [mixed] * 4))
    draws = clusters.cluster_bootstrap_counts(types, n_resamples=50, rng=np.random.default_rng(2))
    assert np.array_equal(draws.sum(axis=(1, 2)), np.full(50, 3 * 2 + 2 * 3 + 4 * 2))
    assert np.array_equal(draws[:, 1, 1], np.full(50, 4))  # only mixed units have FP in group 1


def test_cluster_bootstrap_agrees_in_distribution_with_the_row_level_reference(
    rng: np.random.Generator,
) -> None:
    """The count-level cluster bootstrap of the parity gap matches resampling units of rows."""
    y, yhat, dis, unit = _clustered_rows(rng, 150)
    types = clusters.unit_types(
        clusters.unit_counts(y, yhat, (~dis).astype(np.int64), unit, n_groups=2)
    )
    fast = _dp(clusters.cluster_bootstrap_counts(types, n_resamples=4000, rng=rng))
    slow = reference_cluster_bootstrap(
        "demographic_parity_diff", y, yhat, dis, unit, n_resamples=2000, rng=rng
    )
    assert sps.ks_2samp(fast, slow).pvalue > 0.001
    se = slow.std()
    for q in (0.025, 0.5, 0.975):
        assert abs(np.quantile(fast, q) - np.quantile(slow, q)) < 0.3 * se  # ~4 MC s.e.
    assert abs(fast.var() / slow.var() - 1) < 0.15


def test_cluster_bootstrap_is_wider_than_the_row_bootstrap_on_correlated_units(
    rng: np.random.Generator,
) -> None:
    """Units sharing a strong random effect give a design effect well above 1."""
    y, yhat, dis, unit = _clustered_rows(rng, 400)
    dis = np.repeat(np.arange(400) % 2 == 0, np.bincount(unit))  # constant within units
    group = (~dis).astype(np.int64)
    types = clusters.unit_types(clusters.unit_counts(y, yhat, group, unit, n_groups=2))
    cluster = _dp(clusters.cluster_bootstrap_counts(types, n_resamples=2000, rng=rng))
    pooled = types.pooled()
    row = _dp(np.stack([resampling.bootstrap_counts(pooled[g], n_resamples=2000, rng=rng)
                        for g in (0, 1)], axis=1))
    assert clusters.design_effect(cluster, row) > 1.5


def test_cluster_permutation_of_single_row_units_is_permute_counts_bit_for_bit() -> None:
    """With one row per unit the permutation equals permute_counts, stratum by stratum."""
    counts_d, counts_a = np.array([5, 3, 2, 9]), np.array([7, 1, 4, 6])
    rows = [(g, c) for g, counts in enumerate((counts_d, counts_a))
            for c in range(4) for _ in range(counts[c])]
    group = np.array([g for g, _ in rows])
    cell = np.array([c for _, c in rows])
    types = clusters.unit_types(
        clusters.unit_counts(cell // 2, cell % 2, group, np.arange(len(rows)), n_groups=2)
    )
    strata = ((2, 3), (0, 1))
    got = clusters.cluster_permute_counts(
        types, strata=strata, n_permutations=200, rng=np.random.default_rng(9)
    )
    want = resampling.permute_counts(
        counts_d, counts_a, strata=strata, n_permutations=200, rng=np.random.default_rng(9)
    )
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_cluster_permutation_exchanges_whole_units() -> None:
    """One group-0 unit among three: group 0 gets one whole unit, each w.p. 1/3."""
    two_tp, two_tn = [[0, 0, 0, 2], [0] * 4], [[0] * 4, [2, 0, 0, 0]]
    tp_a = [[0] * 4, [0, 0, 0, 2]]
    types = clusters.unit_types(np.array([two_tp, two_tn, tp_a]))
    perm_d, perm_a = clusters.cluster_permute_counts(
        types, strata=((0, 1, 2, 3),), n_permutations=9000, rng=np.random.default_rng(4)
    )
    assert {tuple(int(v) for v in r) for r in perm_d} == {(0, 0, 0, 2), (2, 0, 0, 0)}
    assert abs(float(np.mean(perm_d[:, 0] == 2)) - 1 / 3) < 4 * np.sqrt(2 / 9 / 9000)
    assert np.array_equal(perm_d + perm_a, np.tile([2, 0, 0, 4], (9000, 1)))
    assert clusters.cluster_permutation_note(types) == ""


def test_cluster_permutation_splits_mixed_units_and_says_so() -> None:
    """A unit with rows in both groups is exchanged as two parts, and the note counts it."""
    mixed = [[0, 0, 0, 1], [1, 0, 0, 0]]
    types = clusters.unit_types(np.array([mixed, [[0] * 4, [0, 0, 0, 3]]]))
    perm_d, _ = clusters.cluster_permute_counts(
        types, strata=((0, 1, 2, 3),), n_permutations=3000, rng=np.random.default_rng(3)
    )
    # parts: d-part (TP 1), a-part (TN 1), a-unit (TP 3); group 0 receives one of the three
    assert {tuple(int(v) for v in r) for r in perm_d} == {
        (0, 0, 0, 1), (1, 0, 0, 0), (0, 0, 0, 3)
    }
    assert clusters.cluster_permutation_note(types) == "attribute_varies_within_units:1"


def test_cluster_permutation_leaves_cells_outside_every_stratum_fixed() -> None:
    """Cells outside the strata keep their observed counts in every permutation."""
    types = clusters.unit_types(np.array([[[1, 1, 0, 2], [0] * 4], [[0] * 4, [2, 0, 1, 1]]]))
    perm_d, perm_a = clusters.cluster_permute_counts(
        types, strata=((2, 3),), n_permutations=50, rng=np.random.default_rng(0)
    )
    assert np.array_equal(perm_d[:, :2], np.tile([1, 1], (50, 1)))
    assert np.array_equal(perm_a[:, :2], np.tile([2, 0], (50, 1)))


def test_design_effect_is_the_variance_ratio_of_finite_resamples() -> None:
    """var([0, 2, nan]) / var([0, 1]) = 4; degenerate inputs give NaN."""
    assert clusters.design_effect([0.0, 2.0, np.nan], [0.0, 1.0]) == pytest.approx(4.0)
    assert np.isnan(clusters.design_effect([0.0, 2.0], [1.0, 1.0]))
    assert np.isnan(clusters.design_effect([0.0], [0.0, 1.0]))


def test_unit_types_pack_rows_exactly_as_unique_sorts_them(rng: np.random.Generator) -> None:
    """The packed-key unique gives np.unique(axis=0)'s rows, order and counts, also for wide rows
    (which fall back) and for any number of cells per group."""
    for cells, high in ((4, 3), (8, 5), (16, 3), (16, 10_000)):
        counts = rng.integers(0, high, size=(500, 2, cells)) * (rng.random((500, 2, cells)) < 0.3)
        counts[:50] = counts[50:100]  # repeated units
        flat = counts.reshape(500, -1)
        flat = flat[flat.sum(axis=1) > 0]
        distinct, multiplicity = np.unique(flat, axis=0, return_counts=True)
        types = clusters.unit_types(counts)
        assert np.array_equal(types.counts.reshape(len(distinct), -1), distinct)
        assert np.array_equal(types.multiplicity, multiplicity)


def test_blocked_draws_are_one_call_s_draws_for_every_law_the_unit_resampling_uses() -> None:
    """Blocks of ``size=k`` in order consume a generator as one ``size=n`` call does."""
    colors, sizes = np.array([5, 300, 2, 70000, 1, 9000]), np.array([3, 0, 17, 250])
    laws = (lambda rng, k: rng.multinomial(70, colors / colors.sum(), size=k),
            lambda rng, k: rng.multivariate_hypergeometric(colors, 26000, size=k),
            lambda rng, k: rng.binomial(sizes, 0.5, size=(k, sizes.size)))
    for draw in laws:
        whole = draw(np.random.default_rng(11), 50)
        rng = np.random.default_rng(11)
        assert np.array_equal(whole, np.concatenate([draw(rng, k) for k in (7, 1, 30, 12)]))
    assert resampling.draw_blocks(10, resampling.DRAW_CELLS // 4) == [4, 4, 2]
    assert resampling.draw_blocks(3, 10 * resampling.DRAW_CELLS) == [1, 1, 1]


def test_unit_resampling_in_blocks_is_the_same_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bootstrap, permutation and paired swap of many unit types: the same arrays whether the
    draws are held whole or one resample at a time (a log's types outgrow memory otherwise)."""
    from faircode.stats import _paired_counts

    rng = np.random.default_rng(3)
    y, yhat, dis, unit = _clustered_rows(rng, 3000)
    types = clusters.unit_types(clusters.unit_counts(y, yhat, (~dis).astype(np.int64), unit,
                                                     n_groups=2))
    joint = rng.integers(0, 3, size=(2000, 2, 8)) * (rng.random((2000, 2, 1)) < 0.6)
    paired = clusters.unit_types(joint)

    def draws() -> list[np.ndarray]:
        out = [clusters.cluster_bootstrap_counts(types, n_resamples=40,
                                                 rng=np.random.default_rng(5))]
        out += clusters.cluster_permute_counts(types, strata=((0, 1, 2, 3), (2, 3)),
                                               n_permutations=40, rng=np.random.default_rng(6))
        out.append(_paired_counts.swap_draws(joint.sum(axis=0), n_permutations=40,
                                             rng=np.random.default_rng(7), types=paired))
        return out

    whole = draws()
    assert types.counts.shape[0] > 100 and paired.counts.shape[0] > 1000
    monkeypatch.setattr(resampling, "DRAW_CELLS", 1)
    for a, b in zip(whole, draws(), strict=True):
        assert np.array_equal(a, b)
