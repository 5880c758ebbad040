"""Tests for faircode.stats.power: minimum detectable gaps against hand formulas, statsmodels,
an independent scalar reference, the exact permutation power and a small simulation."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps
from statsmodels.stats.power import NormalIndPower

from faircode.core.seeds import child_seed
from faircode.stats import _power_solvers as solve
from faircode.stats.metrics import metric_values
from faircode.stats.power import (
    MIN_SIZE,
    NA_REASONS,
    POWER_METRICS,
    Detectable,
    detectable_gap,
    detectable_gaps,
    minimum_detectable_gap,
    powered,
)
from faircode.stats.resampling import permutation_p_value, permute_counts

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import power_reference as reference  # tests/power_reference.py: the frozen implementation
from power import exact_power  # bench/power.py

Z = 1.959963984540054 + 0.8416212335729143  # z_{1 - 0.05/2} + z_{0.8}


def dp_counts(n: int, k: int) -> np.ndarray:
    """Counts of a group of n rows with k favourable decisions (all y = 0)."""
    return np.array([n - k, k, 0, 0])


def dp_mde(n_d: int, n_a: int, k_a: int, **kwargs: object) -> tuple[float, str]:
    mde, note = minimum_detectable_gap("demographic_parity_diff", dp_counts(n_d, 0),
                                       dp_counts(n_a, k_a), alpha=0.05, **kwargs)
    return float(mde), str(note)


def test_mde_at_one_half_is_sin_h_over_two() -> None:
    """At base 0.5 both sides agree and the plain MDE is sin(h)/2 with h = (z_a + z_b)/√n_eff."""
    # 100 vs 100: n_eff = 50, h = 2.801585/7.071068 = 0.396204, sin(h)/2 = 0.192960 (the far
    # tail of the two-sided power, ignored here, moves it by 2e-7)
    mde, _ = dp_mde(100, 100, 50, continuity=False)
    assert mde == pytest.approx(0.192960, abs=1e-6)
    for n_d, n_a in ((50, 150), (300, 300), (1000, 4000)):
        h = Z / math.sqrt(1.0 / (1.0 / n_d + 1.0 / n_a))
        mde, _ = dp_mde(n_d, n_a, n_a // 2, continuity=False)
        assert mde == pytest.approx(math.sin(h) / 2.0, rel=1e-5)


@pytest.mark.parametrize("n_d", [15, 74, 400, 2500])
@pytest.mark.parametrize("ratio", [0.5, 1.0, 1.7, 6.0])
@pytest.mark.parametrize("base", [0.05, 0.2, 0.5, 0.75, 0.97])
def test_rate_mde_is_statsmodels_cohens_h_on_the_harder_side(
    n_d: int, ratio: float, base: float
) -> None:
    """The plain MDE is statsmodels' solved h mapped back to rates, the larger feasible side."""
    n_a = round(n_d * ratio)
    k_a = round(base * n_a)
    p_a = k_a / n_a
    h = NormalIndPower().solve_power(effect_size=None, nobs1=n_d, alpha=0.05, power=0.8,
                                     ratio=n_a / n_d)
    phi = math.asin(math.sqrt(p_a))
    sides = []
    if phi + h / 2 <= math.pi / 2:
        sides.append(math.sin(phi + h / 2) ** 2 - p_a)
    if phi - h / 2 >= 0:
        sides.append(p_a - math.sin(phi - h / 2) ** 2)
    mde, note = dp_mde(n_d, n_a, k_a, continuity=False, min_size=1)
    if not sides:
        assert note == "not_detectable"
    else:
        assert mde == pytest.approx(max(sides), rel=1e-4)


def test_continuity_correction_adds_half_the_inverse_sizes() -> None:
    """The default MDE is the plain one plus ½(1/n_d + 1/n_a)."""
    plain, _ = dp_mde(74, 126, 25, continuity=False)
    corrected, _ = dp_mde(74, 126, 25)
    assert corrected - plain == pytest.approx(0.5 * (1 / 74 + 1 / 126), abs=1e-12)


def test_each_metric_uses_its_own_denominator() -> None:
    """TPR uses the y = 1 rows, FPR the y = 0 rows, precision the ŷ = 1 rows, DP all rows."""
    d = np.array([40, 10, 20, 30])  # y=0: 50, y=1: 50, ŷ=1: 40, all 100
    a = np.array([100, 20, 30, 50])  # y=0: 120 (fpr 1/6), y=1: 80 (tpr 5/8), ŷ=1: 70, all 200
    expected = {
        "demographic_parity_diff": (100, 200, 70 / 200),
        "tpr_gap": (50, 80, 50 / 80),
        "equal_opportunity_diff": (50, 80, 50 / 80),
        "fpr_gap": (50, 120, 20 / 120),
        "predictive_parity_diff": (40, 70, 50 / 70),
        "accuracy_equality_diff": (100, 200, 150 / 200),
    }
    for metric, (n_d, n_a, p_a) in expected.items():
        h = Z / math.sqrt(1.0 / (1.0 / n_d + 1.0 / n_a))
        phi = math.asin(math.sqrt(p_a))
        sides = [s for s in (math.sin(phi + h / 2) ** 2 - p_a if phi + h / 2 <= math.pi / 2
                             else None,
                             p_a - math.sin(phi - h / 2) ** 2 if phi >= h / 2 else None)
                 if s is not None]
        mde, _ = minimum_detectable_gap(metric, d, a, alpha=0.05, continuity=False)
        assert float(mde) == pytest.approx(max(sides), rel=1e-4), metric


def test_vectorised_equals_one_at_a_time() -> None:
    """A stack of comparisons gives the same MDEs (bit for bit) and notes as one call each."""
    rng = np.random.default_rng(3)
    d = rng.integers(0, 60, size=(8, 4))
    a = rng.integers(0, 60, size=(8, 4))
    d[3] = 0
    for metric in POWER_METRICS:
        mde, note = minimum_detectable_gap(metric, d, a, alpha=0.05)
        for i in range(len(d)):
            one, why = minimum_detectable_gap(metric, d[i], a[i], alpha=0.05)
            assert str(why) == note[i]
            np.testing.assert_array_equal(one, mde[i])


def test_empty_group_is_na() -> None:
    """An empty denominator gives NaN with reason empty_group for every metric."""
    for metric in POWER_METRICS:
        mde, note = minimum_detectable_gap(metric, np.zeros(4, dtype=int),
                                           np.array([50, 50, 50, 50]), alpha=0.05)
        assert np.isnan(mde) and note == "empty_group", metric
    # no favourable decision among 60 rows: precision has no denominator, the others do
    _, note = minimum_detectable_gap("predictive_parity_diff", np.array([30, 0, 30, 0]),
                                     np.array([50, 50, 50, 50]), alpha=0.05)
    assert note == "empty_group"


def test_small_group_is_below_min_size() -> None:
    """A denominator below min_size is n/a; at min_size it is reported."""
    assert dp_mde(MIN_SIZE - 1, 500, 100)[1] == "below_min_size"
    assert dp_mde(MIN_SIZE, 500, 100)[1] == ""


def test_rate_zero_or_one_keeps_the_only_side() -> None:
    """At base rate 0 (or 1) only the inward side exists: MDE = sin²(h/2) + correction."""
    n = 200
    h = Z / math.sqrt(n / 2)
    for k_a in (0, n):
        mde, note = dp_mde(n, n, k_a, continuity=False)
        assert note == "" and mde == pytest.approx(math.sin(h / 2) ** 2, rel=1e-5)


def test_tiny_groups_are_not_detectable() -> None:
    """When the needed h leaves [0, 1] on both sides the MDE is n/a (not_detectable)."""
    assert dp_mde(3, 3, 1, min_size=1) == (pytest.approx(float("nan"), nan_ok=True),
                                          "not_detectable")


def test_disparate_impact_is_the_log_of_the_detectable_rates() -> None:
    """The DI MDE is the larger log ratio of the DP side rates to the advantaged rate."""
    n, k_a = 400, 200
    h = Z / math.sqrt(n / 2)
    cc = 0.5 * (2 / n)
    up = math.sin(math.pi / 4 + h / 2) ** 2 + cc
    down = math.sin(math.pi / 4 - h / 2) ** 2 - cc
    mde, note = minimum_detectable_gap("disparate_impact_ratio", dp_counts(n, 10),
                                       dp_counts(n, k_a), alpha=0.05)
    assert note == "" and float(mde) == pytest.approx(
        max(math.log(up / 0.5), math.log(0.5 / down)), rel=1e-5)


def test_disparate_impact_na_reasons() -> None:
    """DI is n/a with a zero advantaged rate, and when even p_d = 0 is not detected."""
    _, zero = minimum_detectable_gap("disparate_impact_ratio", dp_counts(100, 5),
                                     dp_counts(100, 0), alpha=0.05)
    assert zero == "undefined_advantaged_rate_zero"
    _, rare = minimum_detectable_gap("disparate_impact_ratio", dp_counts(50, 1),
                                     dp_counts(50, 2), alpha=0.05)
    assert rare == "not_detectable"


def reference_eodds(tpr: tuple[int, int, float], fpr: tuple[int, int, float]) -> float:
    """Scalar brentq reference of the equalized-odds MDE definition (continuity-corrected)."""

    def null_sd(p: float, n_d: int, n_a: int) -> float:
        return math.sqrt(p * (1 - p) * (1 / n_d + 1 / n_a))

    def inside(c: float, sd: float) -> float:
        return 2 * sps.norm.cdf(c / sd) - 1 if sd > 0 else 1.0

    worst = 0.0
    for own, other in ((tpr, fpr), (fpr, tpr)):
        n_d, n_a, p_a = own
        sd_other = null_sd(other[2], other[0], other[1])

        def power(delta: float, sign: float, n_d: int = n_d, n_a: int = n_a,
                  p_a: float = p_a, sd_other: float = sd_other) -> float:
            p_d = p_a + sign * delta
            sd_own = null_sd((n_d * p_d + n_a * p_a) / (n_d + n_a), n_d, n_a)
            crit = optimize.brentq(lambda c: inside(c, sd_own) * inside(c, sd_other) - 0.95,
                                   1e-12, 2.0, xtol=1e-14)
            sd1 = math.sqrt(p_d * (1 - p_d) / n_d + p_a * (1 - p_a) / n_a)
            keep = sps.norm.cdf((crit - delta) / sd1) - sps.norm.cdf((-crit - delta) / sd1)
            return 1 - keep * inside(crit, sd_other)

        sides = []
        for sign, room in ((1.0, 1 - p_a), (-1.0, p_a)):
            if room > 0 and power(room, sign) >= 0.8:
                delta = optimize.brentq(lambda x, s=sign: power(x, s) - 0.8, 1e-9, room,
                                        xtol=1e-14) + 0.5 * (1 / n_d + 1 / n_a)
                if delta <= room:
                    sides.append(delta)
        if not sides:
            return float("nan")
        worst = max(worst, max(sides))
    return worst


@pytest.mark.parametrize(("y1", "y0"), [((60, 90), (40, 70)), ((37, 63), (32, 68)),
                                          ((500, 300), (900, 1500))])
@pytest.mark.parametrize(("t", "f"), [(0.7, 0.3), (0.9, 0.1), (0.5, 0.5)])
def test_equalized_odds_matches_the_scalar_reference(
    y1: tuple[int, int], y0: tuple[int, int], t: float, f: float
) -> None:
    """The vectorised equalized-odds MDE equals an independent brentq implementation."""
    tp, fp = round(t * y1[1]), round(f * y0[1])
    a = np.array([y0[1] - fp, fp, y1[1] - tp, tp])
    d = np.array([y0[0], 0, y1[0], 0])
    mde, _ = minimum_detectable_gap("equalized_odds_diff", d, a, alpha=0.05)
    expected = reference_eodds((y1[0], y1[1], tp / y1[1]), (y0[0], y0[1], fp / y0[1]))
    assert float(mde) == pytest.approx(expected, rel=1e-6)


def test_equalized_odds_mde_exceeds_each_component_alone() -> None:
    """The max test's worst case needs a larger gap than either component tested alone."""
    d, a = np.array([50, 10, 40, 40]), np.array([120, 30, 30, 90])
    eodds, _ = minimum_detectable_gap("equalized_odds_diff", d, a, alpha=0.05)
    tpr, _ = minimum_detectable_gap("tpr_gap", d, a, alpha=0.05)
    fpr, _ = minimum_detectable_gap("fpr_gap", d, a, alpha=0.05)
    assert float(eodds) > max(float(tpr), float(fpr))


def test_powered_compares_the_absolute_gap() -> None:
    """powered is |gap| >= MDE (|log ratio| for DI) and False for NaN."""
    assert powered("demographic_parity_diff", [-0.2, 0.05, np.nan, 0.3],
                   [0.1, 0.1, 0.1, np.nan]).tolist() == [True, False, False, False]
    assert powered("disparate_impact_ratio", [0.5, 1.2], [0.6, 0.6]).tolist() == [True, False]


def test_detectable_gap_bundles_one_comparison() -> None:
    """detectable_gap returns the MDE, the powered flag and the note of one comparison."""
    result = detectable_gap("demographic_parity_diff", dp_counts(200, 100), dp_counts(200, 60),
                            value=0.2, alpha=0.05)
    mde, _ = dp_mde(200, 200, 60)
    assert result == Detectable(mde, True, "")
    empty = detectable_gap("demographic_parity_diff", dp_counts(0, 0), dp_counts(200, 60),
                           value=float("nan"), alpha=0.05)
    assert np.isnan(empty.mde) and not empty.powered and empty.note == "empty_group"


def test_detectable_rejects_inconsistent_records() -> None:
    """A finite MDE with a reason, or powered without an MDE, is refused."""
    with pytest.raises(ValueError, match="NaN exactly when"):
        Detectable(0.1, False, "empty_group")
    with pytest.raises(ValueError, match="powered must be False"):
        Detectable(float("nan"), True, "not_detectable")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"metric": "dp"}, "metric: expected one of demographic_parity_diff"),
     ({"alpha": 1.0}, "alpha: expected a float in (0, 1), got 1.0 (float)"),
     ({"power": True}, "power: expected a float in (0, 1), got True (bool)"),
     ({"counts_d": np.array([1, 2, 3])}, "counts_d: expected counts of shape (..., 4)"),
     ({"counts_a": np.array([1, -2, 3, 4])}, "counts_a: expected non-negative integer counts"),
     ({"min_size": 0}, "min_size: expected a positive int, got 0 (int)")],
)
def test_bad_input_is_named(kwargs: dict, fragment: str) -> None:
    """Every invalid argument is refused with its name and what arrived."""
    call = {"metric": "demographic_parity_diff", "counts_d": dp_counts(50, 5),
            "counts_a": dp_counts(50, 10), "alpha": 0.05} | kwargs
    metric = call.pop("metric")
    with pytest.raises(ValueError) as info:
        minimum_detectable_gap(metric, call.pop("counts_d"), call.pop("counts_a"), **call)
    assert fragment in str(info.value)


def harder_rate(base: float, mde: float) -> float:
    return min((p for p in (base + mde, base - mde) if 0 <= p <= 1),
               key=lambda p: abs(math.asin(math.sqrt(p)) - math.asin(math.sqrt(base))))


@pytest.mark.parametrize(("n_d", "n_a", "k_a"), [(69, 131, 92), (300, 300, 90)])
def test_exact_permutation_power_at_the_mde_is_near_target(n_d: int, n_a: int, k_a: int) -> None:
    """At the MDE the permutation test's exact (P → ∞) power is 0.8 within 0.03."""
    mde, _ = dp_mde(n_d, n_a, k_a)
    p_d = harder_rate(k_a / n_a, mde)
    assert exact_power(n_d, n_a, p_d, k_a / n_a, alpha=0.05) == pytest.approx(0.8, abs=0.03)


def test_simulated_engine_power_matches_the_mde() -> None:
    """Simulated audits at the MDE are detected by the engine's test in 80 % ± 3 s.e."""
    n_d, n_a, k_a, audits = 69, 131, 92, 400
    mde, _ = dp_mde(n_d, n_a, k_a)
    p_a = k_a / n_a
    p_d = harder_rate(p_a, mde)
    seed = np.random.SeedSequence(20261129)
    hits = 0
    for i in range(audits):
        rng = np.random.default_rng(child_seed(seed, i))
        d = dp_counts(n_d, int(rng.binomial(n_d, p_d)))
        a = dp_counts(n_a, int(rng.binomial(n_a, p_a)))
        perm_d, perm_a = permute_counts(d, a, strata=((0, 1, 2, 3),), n_permutations=200, rng=rng)
        observed = abs(float(metric_values("demographic_parity_diff", d, a)))
        permuted = np.abs(metric_values("demographic_parity_diff", perm_d, perm_a))
        hits += permutation_p_value(observed, permuted) < 0.05
    se = math.sqrt(0.8 * 0.2 / audits)
    assert abs(hits / audits - 0.8) < 3 * se


# ------------------------------------------------------------------ batched and fast (issue 22)


def random_counts(rng: np.random.Generator, k: int) -> np.ndarray:
    """k count vectors of mixed sizes (5 to 200,000 rows), skews and zero cells."""
    scale = rng.choice([5, 25, 60, 300, 3000, 200_000], size=(k, 1))
    raw = rng.uniform(0, 1, (k, 4)) ** rng.choice([0.3, 1.0, 4.0], size=(k, 4))
    counts = (raw * scale).astype(np.int64)
    counts[rng.uniform(size=(k, 4)) < 0.08] = 0
    return counts


def assert_same_as_reference(metric: str, d: np.ndarray, a: np.ndarray, **options: object) -> None:
    """The batched MDEs equal the frozen code called one row at a time, bit for bit."""
    mde, note = minimum_detectable_gap(metric, d, a, **options)  # type: ignore[arg-type]
    for i in range(len(d)):
        want, why = reference.minimum_detectable_gap(metric, d[i], a[i], **options)
        assert str(why) == note[i], (metric, d[i], a[i])
        assert np.array_equal(np.float64(want).view(np.int64), mde[i].view(np.int64)), \
            (metric, d[i], a[i], float(want), mde[i])


@pytest.mark.parametrize("metric", POWER_METRICS)
def test_matches_the_frozen_reference_bit_for_bit(metric: str, rng: np.random.Generator) -> None:
    """On random counts the fast MDE equals the pre-rewrite implementation to the last bit."""
    k = 6 if metric == "equalized_odds_diff" else 16
    assert_same_as_reference(metric, random_counts(rng, k), random_counts(rng, k), alpha=0.05)


@pytest.mark.slow
@pytest.mark.parametrize("options", [{"alpha": 0.05}, {"alpha": 0.01, "power": 0.9,
                                                          "continuity": False},
                                     {"alpha": 0.1, "power": 0.5, "min_size": 1}])
@pytest.mark.parametrize("metric", POWER_METRICS)
def test_matches_the_frozen_reference_on_many_counts(
    metric: str, options: dict, rng: np.random.Generator
) -> None:
    """The same on 150 comparisons per metric (50 for equalized odds) and three settings."""
    k = 50 if metric == "equalized_odds_diff" else 150
    assert_same_as_reference(metric, random_counts(rng, k), random_counts(rng, k), **options)


def test_batched_equals_one_at_a_time_for_mixed_metrics(rng: np.random.Generator) -> None:
    """detectable_gaps on shuffled mixed metrics equals detectable_gap row by row, exactly."""
    metrics = list(POWER_METRICS) * 3
    rng.shuffle(metrics)
    d, a = random_counts(rng, len(metrics)), random_counts(rng, len(metrics))
    values = rng.uniform(-0.4, 0.4, len(metrics))
    values[[i for i, m in enumerate(metrics) if m == "disparate_impact_ratio"]] = 0.6
    mde, reached, note = detectable_gaps(metrics, d, a, values=values, alpha=0.05)
    assert mde.shape == reached.shape == note.shape == (len(metrics),)
    for i, metric in enumerate(metrics):
        one = detectable_gap(metric, d[i], a[i], value=values[i], alpha=0.05)
        assert np.array_equal(np.float64(one.mde).view(np.int64), mde[i].view(np.int64)), metric
        assert (one.powered, one.note) == (bool(reached[i]), str(note[i])), metric


def test_batched_reports_every_na_reason_in_one_call() -> None:
    """One batch carries each n/a reason on its own row and a finite MDE on the others."""
    full = np.array([100, 100, 100, 100])
    metrics = ["fpr_gap", "tpr_gap", "disparate_impact_ratio", "demographic_parity_diff",
               "equalized_odds_diff", "equalized_odds_diff"]
    d = np.array([[0, 0, 30, 30], [40, 40, 5, 5], dp_counts(100, 5), dp_counts(3, 1),
                  full, [60, 0, 10, 0]])
    a = np.array([full, full, dp_counts(100, 0), dp_counts(3, 1), full, full])
    mde, reached, note = detectable_gaps(metrics, d, a, values=np.full(6, 0.5), alpha=0.05)
    assert note.tolist() == ["empty_group", "below_min_size", "undefined_advantaged_rate_zero",
                             "below_min_size", "", "below_min_size"]
    assert set(note.tolist()) - {""} <= set(NA_REASONS)
    assert np.isnan(mde[note != ""]).all() and not reached[note != ""].any()
    assert np.isfinite(mde[4]) and reached[4] == (0.5 >= mde[4])


def test_batched_empty_input_gives_empty_arrays() -> None:
    """No comparisons give three empty arrays."""
    mde, reached, note = detectable_gaps([], np.zeros((0, 4), dtype=int),
                                         np.zeros((0, 4), dtype=int), values=[], alpha=0.05)
    assert mde.shape == reached.shape == note.shape == (0,)


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"metrics": ["dp"]}, "metric: expected one of demographic_parity_diff"),
    ({"counts_d": np.zeros((2, 4), dtype=int)},
     "counts_d: expected shape (1, 4) (one row per metric), got shape (2, 4)"),
    ({"values": [0.1, 0.2]}, "values: expected shape (1,) (one row per metric), got shape (2,)"),
    ({"alpha": 0.0}, "alpha: expected a float in (0, 1), got 0.0 (float)"),
])
def test_batched_bad_input_is_named(kwargs: dict, fragment: str) -> None:
    """A wrong metric, shape or level is refused with its name and what arrived."""
    call = {"metrics": ["tpr_gap"], "counts_d": dp_counts(50, 5)[None],
            "counts_a": dp_counts(50, 10)[None], "values": [0.1], "alpha": 0.05} | kwargs
    with pytest.raises(ValueError) as info:
        detectable_gaps(call.pop("metrics"), call.pop("counts_d"), call.pop("counts_a"), **call)
    assert fragment in str(info.value)


def test_newton_early_exit_returns_the_twelfth_step(rng: np.random.Generator) -> None:
    """max_critical's early exit (fixed points, 2-cycles) gives what 12 plain steps give."""
    sd_1, sd_2 = rng.uniform(0.001, 0.2, 3000), rng.uniform(0.001, 0.2, 3000)
    sd_2[:50] = 0.0
    for lo, hi in ((0, 1), (1, 3), (50, 54), (0, 3000)):  # single elements and batches
        got = solve.max_critical(sd_1[lo:hi], sd_2[lo:hi], 0.05)
        c = float(sps.norm.ppf(0.5 + math.sqrt(0.95) / 2)) * np.fmax(sd_1[lo:hi], sd_2[lo:hi])
        for _ in range(solve.NEWTON):  # the plain iteration, inside() and its derivative
            f_1, f_2 = solve.inside(c, sd_1[lo:hi]), solve.inside(c, sd_2[lo:hi])
            with np.errstate(divide="ignore", invalid="ignore"):
                dens = [np.where(s > 0, 2.0 * np.exp(-0.5 * solve.square(c / s))
                                 / (np.sqrt(2 * np.pi) * s), 0.0)
                        for s in (sd_2[lo:hi], sd_1[lo:hi])]
                slope = f_1 * dens[0] + f_2 * dens[1]
                step = np.where(slope > 0, (f_1 * f_2 - 0.95) / slope, 0.0)
            c = np.fmax(c - step, 0.0)
        assert np.array_equal(got.view(np.int64), c.view(np.int64))


def test_square_is_numpys_scalar_square(rng: np.random.Generator) -> None:
    """solve.square equals numpy's float64-scalar x**2 (libm pow), which x * x does not always."""
    x = rng.uniform(0, 3, 20_000)
    scalar = np.array([np.float64(v) ** 2 for v in x])
    assert np.array_equal(solve.square(x), scalar)
    assert not np.array_equal(x * x, scalar)  # the reason square() exists
