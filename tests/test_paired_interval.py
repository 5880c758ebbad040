"""Tests of the paired effect's interval family and the tests inverting it (_paired_interval)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faircode.stats import paired, resampling
from faircode.stats._paired_interval import PairedInterval, piece_share, pieces
from faircode.stats.paired import EFFECT_METRICS

DP = EFFECT_METRICS.index("demographic_parity_diff")
EODDS = EFFECT_METRICS.index("equalized_odds_diff")
ACC = EFFECT_METRICS.index("accuracy")


def _rows(joint: np.ndarray) -> tuple[np.ndarray, ...]:
    """Rows (y, ŷ_A, ŷ_B, disadvantaged) with the joint counts ``(2, 8)``."""
    cells = np.concatenate([np.repeat(np.arange(8) + 8 * g, joint[g]) for g in (0, 1)])
    return (cells >> 2) & 1, (cells >> 1) & 1, cells & 1, cells < 8


def _coupled(rng: np.random.Generator, n: int, rate_a: float, rate_b: float) -> np.ndarray:
    """``n`` rows of one group: labels at 0.5, A's and B's decisions coupled (cells 4y+2a+b)."""
    both = 0.7 * min(rate_a, rate_b) + 0.3 * rate_a * rate_b
    pair = np.array([1 - rate_a - rate_b + both, rate_b - both, rate_a - both, both])
    return rng.multinomial(n, np.concatenate([pair / 2, pair / 2]))


def _draws(joint: np.ndarray, seed: int = 0, n: int = 400) -> paired.PairedDraws:
    y, a, b, dis = _rows(joint)
    return paired.paired_draws(y, a, b, dis, seed=seed, n_resamples=n)


def _family(draws: paired.PairedDraws) -> PairedInterval:
    return PairedInterval(draws.draws_a, draws.draws_b, draws.estimate_a, draws.estimate_b,
                          n_units=draws.n_units)


def _scan(draws: paired.PairedDraws, holds: str, k: int, margin: float = 0.0) -> float:
    """Slow reference: bisect the level tail at which the old, independent interval code
    (:func:`faircode.stats.paired.box_interval`, numpy's quantiles, one level per call) first
    excludes 0 (``holds="excludes"``, level ``1 − a``) or lies inside ±margin (``"inside"``,
    level ``1 − 2a``), for an effect ``k`` that takes the box."""

    def ok(a: float) -> bool:
        level = 1 - a if holds == "excludes" else 1 - 2 * a
        low, high = paired.box_interval(draws.draws_a, draws.draws_b, confidence=level,
                                        n_units=draws.n_units)
        if holds == "excludes":
            return bool(low[k] > 0 or high[k] < 0)
        return bool(-margin < low[k] and high[k] < margin)

    lo, hi = 1e-4, 0.999 if holds == "excludes" else 0.4999
    assert not ok(lo) and ok(hi)
    for _ in range(30):
        mid = (lo * hi) ** 0.5
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


@settings(max_examples=30)
@given(st.lists(st.integers(0, 30), min_size=16, max_size=16),
       st.sampled_from([0.8, 0.9, 0.95, 0.99]), st.integers(0, 2**16))
def test_p_value_is_below_one_minus_confidence_exactly_when_the_interval_excludes_zero(
    cells: list[int], confidence: float, seed: int
) -> None:
    """On any paired table, p ≤ 1 − confidence iff the interval at that confidence excludes 0."""
    joint = np.array(cells, dtype=np.int64).reshape(2, 8)
    joint[:, 0] += 1  # both groups non-empty
    y, a, b, dis = _rows(joint)
    for r in paired.paired_effects(y, a, b, dis, seed=seed, n_resamples=60, n_permutations=10,
                                   confidence=confidence):
        if np.isnan(r.value):
            continue
        assert (r.p_value <= 1 - confidence) == r.excludes_zero, r
        assert 0 < r.p_value <= 1


def test_p_value_of_a_box_cell_is_the_slow_scan_of_the_box(rng: np.random.Generator) -> None:
    """A reaching parity (box): p equals, within the scan's grid, the smallest tail at which
    the box of the old, independent interval code excludes 0."""
    joint = np.stack([_coupled(rng, 300, 0.5, 0.42), _coupled(rng, 300, 0.5, 0.5)])
    draws = _draws(joint)
    family = _family(draws)
    assert not family.smooth[DP]
    p = family.p_value(confidence=0.95)[DP]
    assert p == pytest.approx(_scan(draws, "excludes", DP), rel=0.01)


def test_p_value_of_accuracy_is_the_percentile_inversion(rng: np.random.Generator) -> None:
    """Accuracy (always smooth): at p the expanded percentile interval of its Δ draws just
    reaches 0 (slightly wider levels include 0, slightly narrower exclude it)."""
    joint = np.stack([_coupled(rng, 200, 0.55, 0.5), _coupled(rng, 200, 0.6, 0.5)])
    draws = _draws(joint)
    p = float(_family(draws).p_value(confidence=0.95)[ACC])
    assert 0.001 < p < 0.9
    for a, excluded in ((p * 0.98, False), (p * 1.02, True)):
        level = paired.expanded_level(1 - a, draws.n_units)
        low, high = resampling.percentile_interval(draws.delta[ACC], confidence=level)
        assert (low > 0 or high < 0) == excluded


def test_equivalence_p_value_is_the_slow_scan_of_interval_inclusion(
    rng: np.random.Generator
) -> None:
    """A box cell's equivalence p is the smallest a whose 1 − 2a box lies inside ±0.08."""
    joint = np.stack([_coupled(rng, 400, 0.5, 0.48), _coupled(rng, 400, 0.5, 0.5)])
    draws = _draws(joint)
    family = _family(draws)
    assert not family.smooth[DP]
    p = family.equivalence_p_value(margin=0.08)[DP]
    assert p == pytest.approx(_scan(draws, "inside", DP, 0.08), rel=0.01)


def test_equivalence_needs_the_interval_inside_the_margin(rng: np.random.Generator) -> None:
    """A zero margin can never be met (p = 1); an infinite one always (p = 1 / (B + 1))."""
    joint = np.stack([_coupled(rng, 200, 0.5, 0.4), _coupled(rng, 200, 0.5, 0.5)])
    family = _family(_draws(joint, n=199))
    assert np.all(family.equivalence_p_value(margin=0.0) == 1.0)
    assert np.allclose(family.equivalence_p_value(margin=np.inf), 1 / 200)


def test_pieces_name_the_sign_and_the_larger_gap() -> None:
    """DP −0.1 → piece 0, +0.1 → 1, 0 → kink (−1); equalized odds (TPR −0.1, FPR +0.3) → the
    FPR gap, positive (3); tied gaps → kink; accuracy → 0."""
    comps = np.full((3, len(EFFECT_METRICS), 2), np.nan)
    comps[:, DP, 0] = (-0.1, 0.1, 0.0)
    comps[:, EODDS] = ((-0.1, 0.3), (0.2, -0.2), (-0.3, 0.1))
    comps[:, ACC, 0] = 0.8
    got = pieces(comps)
    assert got[:, DP].tolist() == [0, 1, -1]
    assert got[:, EODDS].tolist() == [3, -1, 0]
    assert got[:, ACC].tolist() == [0, 0, 0]


def test_piece_share_counts_draws_on_both_estimates_pieces() -> None:
    """Of four draws of DP, one has A's sign flipped and one B's: share 2/4; a kink → 0."""
    m = len(EFFECT_METRICS)
    est_a, est_b = np.full((m, 2), np.nan), np.full((m, 2), np.nan)
    est_a[DP, 0], est_b[DP, 0] = -0.05, -0.2
    draws_a, draws_b = np.full((m, 2, 4), np.nan), np.full((m, 2, 4), np.nan)
    draws_a[DP, 0] = (-0.04, 0.01, -0.06, -0.02)
    draws_b[DP, 0] = (-0.2, -0.21, 0.05, -0.19)
    assert piece_share(est_a, est_b, draws_a, draws_b)[DP] == 0.5
    est_a[DP, 0] = 0.0
    assert piece_share(est_a, est_b, draws_a, draws_b)[DP] == 0.0


def test_cells_far_from_parity_take_the_percentile_interval_near_it_the_box(
    rng: np.random.Generator
) -> None:
    """Both gaps far from parity: smooth, the expanded percentile interval of the Δ draws;
    A at parity: the box (ci_method says which)."""
    far = np.stack([_coupled(rng, 800, 0.3, 0.2), _coupled(rng, 800, 0.6, 0.6)])
    near = np.stack([_coupled(rng, 800, 0.5, 0.4), _coupled(rng, 800, 0.5, 0.5)])
    draws = _draws(far)
    low, high = draws.interval(confidence=0.95)
    level = paired.expanded_level(0.95, draws.n_units)
    assert (low[DP], high[DP]) == pytest.approx(
        resampling.percentile_interval(draws.delta[DP], confidence=level), abs=1e-12)
    y, a, b, dis = _rows(far)
    assert paired.paired_effects(y, a, b, dis, seed=0, n_resamples=400, n_permutations=10
                                 )[DP].ci_method == "paired_expanded_percentile"
    y, a, b, dis = _rows(near)
    assert paired.paired_effects(y, a, b, dis, seed=0, n_resamples=400, n_permutations=10
                                 )[DP].ci_method == "paired_signed_box"


def _exact(n: int, rate_a: float, rate_b: float) -> np.ndarray:
    """The expected counts (rounded) of :func:`_coupled`: no sampling luck."""
    both = 0.7 * min(rate_a, rate_b) + 0.3 * rate_a * rate_b
    pair = np.array([1 - rate_a - rate_b + both, rate_b - both, rate_a - both, both])
    return np.rint(n * np.concatenate([pair / 2, pair / 2])).astype(np.int64)


def test_a_nearly_mirrored_gap_is_not_exchangeable_yet_no_change_is_shown() -> None:
    """A's gap +0.12 where B's is −0.08 (Δ = +0.04 on 1,500 rows per group): the swap test
    rejects exchangeability at 0.05, the test of Δ = 0 does not, and the interval contains 0."""
    joint = np.stack([_exact(1500, 0.62, 0.42), _exact(1500, 0.5, 0.5)])
    y, a, b, dis = _rows(joint)
    dp = paired.paired_effects(y, a, b, dis, seed=3, n_resamples=500, n_permutations=500)[DP]
    assert dp.value == pytest.approx(0.04, abs=0.002)
    assert dp.swap_p_value < 0.05 and dp.p_value > 0.05 and not dp.excludes_zero


def _every_cell_bounds(family: PairedInterval, level: np.ndarray) -> tuple[np.ndarray, ...]:
    """Reference: the smooth interval and the box computed over every cell, then chosen."""
    from faircode.stats._paired_box import box_range
    from faircode.stats._paired_counts import effect_shape
    from faircode.stats._paired_interval import expanded_levels

    lv = np.broadcast_to(level, family.smooth.shape)
    smooth_lo, smooth_hi = family.delta.bounds(expanded_levels(lv, family.n_units))
    nuisance = 1.0 - (1.0 - lv) * family.nuisance_ratio
    s_lo, s_hi = family.sums.bounds(expanded_levels(nuisance, family.n_units)[..., None])
    d_lo, d_hi = family.diffs.bounds(expanded_levels(lv, family.n_units)[..., None])
    box = np.stack([s_lo, s_hi, d_lo, d_hi], axis=-1)
    low, high = smooth_lo.copy(), smooth_hi.copy()
    for k, metric in enumerate(EFFECT_METRICS):
        if effect_shape(metric) != "linear":
            low[..., k], high[..., k] = box_range(effect_shape(metric), box[..., k, :, :])
    return (np.where(family.smooth, smooth_lo, low) + 0.0,
            np.where(family.smooth, smooth_hi, high) + 0.0)


@pytest.mark.parametrize("units", [None, "each", "scalar"])
def test_the_box_of_the_cells_that_take_it_is_the_box_of_every_cell(
        rng: np.random.Generator, units: str | None) -> None:
    """bounds() computes the box only where a cell takes it: bit for bit the numbers of the
    box over every cell, at per-cell levels, with NaN draws, near and far from parity."""
    comparisons = []
    for i in range(6):  # near parity (box cells), far from it (smooth), one group tiny (NaN)
        gap = (0.0, 0.02, 0.3)[i % 3]
        size = 3 if i == 5 else 300
        joint = np.stack([_coupled(rng, size, 0.4 + gap, 0.4), _coupled(rng, 300, 0.4, 0.41)])
        comparisons.append(_draws(joint, seed=i, n=200))
    a, b = (np.stack([getattr(d, f"draws_{x}") for d in comparisons]) for x in "ab")
    ea, eb = (np.stack([getattr(d, f"estimate_{x}") for d in comparisons]) for x in "ab")
    n_units = {None: None, "each": np.array([d.n_units for d in comparisons]),
               "scalar": 250}[units]
    for box_only in (False, True):
        family = PairedInterval(a, b, ea, eb, n_units=n_units, box_only=box_only)
        assert family.smooth.any() or box_only
        assert (~family.smooth).any()
        for level in (np.full(family.smooth.shape, 0.95), rng.uniform(0, 0.999,
                                                                      family.smooth.shape)):
            got, wanted = family.bounds(level), _every_cell_bounds(family, level)
            for x, y in zip(got, wanted, strict=True):
                np.testing.assert_array_equal(x, y)
                assert x.tobytes() == y.tobytes()  # -0.0 and NaN payloads alike
