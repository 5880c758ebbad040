"""Tests of faircode.stats.ranking: ties by brute force, FA*IR against the paper's tables and
enumeration, the vectorised resamples against the resampled rows themselves."""

from __future__ import annotations

import math

import numpy as np
import pytest
import ranking_reference as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from faircode.stats import ranking as rk
from faircode.stats.ranking import (
    adjusted_alpha,
    exposure_gap,
    fail_probability,
    fair_table,
    fair_test,
    local_shares,
    rank_views,
    ranking,
    report_points,
    row_exposure,
    share_band,
    top_shares,
)


@settings(max_examples=40)
@given(st.lists(st.integers(1, 3), min_size=2, max_size=6),
       st.lists(st.booleans(), min_size=6, max_size=6), st.booleans())
def test_ties_are_their_expectation_over_every_order(levels: list[int], flags: list[bool],
                                                     higher_first: bool) -> None:
    """Top-k shares and group exposures with ties: the mean over every order of the tie blocks
    (brute force)."""
    score = np.array(levels, dtype=float)
    protected = np.array(flags[:len(levels)])
    r = ranking(score, higher_first=higher_first)
    ks = np.arange(1, score.size + 1)
    expected = [ref.top_share(score, protected, int(k), higher_first=higher_first) for k in ks]
    assert top_shares(r, protected, ks) == pytest.approx(expected)
    if protected.any() and not protected.all():
        e = row_exposure(r)
        mine, other = ref.exposures(score, protected, higher_first=higher_first)
        assert (e[protected].mean(), e[~protected].mean()) == pytest.approx((mine, other))


def test_a_ranking_by_hand() -> None:
    """Scores 0.9, 0.2, 0.9, 0.5 best first: positions 1-2 tie, so each has the mean of
    1/log2(2) and 1/log2(3); top-2 share of rows 0 and 3 is 1/2."""
    r = ranking(np.array([0.9, 0.2, 0.9, 0.5]))
    assert r.order.tolist() == [0, 2, 3, 1] and r.ends.tolist() == [2, 3, 4]
    e = row_exposure(r)
    assert e[0] == e[2] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert e[3] == pytest.approx(1 / math.log2(4)) and e[1] == pytest.approx(1 / math.log2(5))
    assert top_shares(r, np.array([True, False, False, True]), [1, 2, 3]) == pytest.approx(
        [0.5, 0.5, 2 / 3])


def test_fair_table_is_the_papers() -> None:
    """The m-table of k = 20, p = 0.25, alpha = 0.1 (FA*IR's published example) and a scan of
    the binomial CDF."""
    assert fair_table(20, 0.25, 0.1).tolist() == [0] * 8 + [1] * 6 + [2] * 5 + [3]
    assert fair_table(40, 0.4, 0.05).tolist() == ref.fair_table(40, 0.4, 0.05)


@pytest.mark.parametrize(("k", "p", "alpha"), [(12, 0.3, 0.1), (10, 0.5, 0.2), (9, 0.2, 0.3)])
def test_fail_probability_against_enumeration(k: int, p: float, alpha: float) -> None:
    """The dynamic programme's failure probability equals every 0/1 sequence's, with every
    prefix tested and with every other one."""
    m = fair_table(k, p, alpha)
    assert fail_probability(m, p) == pytest.approx(ref.fail_probability(m.tolist(), p))
    tested = [j % 2 == 1 for j in range(k)]
    assert fail_probability(m, p, tested=tested) == pytest.approx(
        ref.fail_probability(m.tolist(), p, tested))


def test_adjusted_alpha_reaches_the_best_level_below_alpha() -> None:
    """The adjusted table fails a fair ranking with probability at most alpha, and no coarser
    search over alpha_c finds a higher one below alpha."""
    alpha_c, fail = adjusted_alpha(12, 0.3, 0.1)
    assert alpha_c < 0.1 and fail <= 0.1
    assert fail == pytest.approx(ref.fail_probability(fair_table(12, 0.3, alpha_c).tolist(), 0.3))
    assert fail >= ref.adjusted_alpha_scan(12, 0.3, 0.1) - 1e-12


def test_fair_test_finds_the_first_failing_prefix() -> None:
    """Protected rows only at the bottom: FA*IR fails at the first prefix whose table asks for
    one; spread evenly, it passes."""
    score = np.arange(40, 0, -1, dtype=float)
    bottom = np.r_[np.zeros(24, bool), np.ones(16, bool)]
    found = fair_test(score, bottom, k=30, higher_first=True, alpha=0.1)
    m = fair_table(30, 0.4, found.alpha_adjusted)
    assert not found.passes and found.first_fail == int(np.flatnonzero(m > 0)[0]) + 1
    assert (found.needed, found.observed) == (1, 0)
    spread = np.tile([True, False, False, True, False], 8)
    assert fair_test(score, spread, k=30, higher_first=True, alpha=0.1).passes


def test_fair_test_with_ties_tests_only_determined_prefixes() -> None:
    """A decile-like score: only the prefixes ending a tie block are tested."""
    score = np.repeat(np.arange(5, dtype=float), 8)
    found = fair_test(score, np.tile([True, False], 20), k=20, higher_first=False, alpha=0.05)
    assert found.tested == 2 and found.passes  # blocks end at 8 and 16 within the top 20


def test_resamples_match_the_resampled_rows(rng: np.random.Generator) -> None:
    """One chunk of resamples, vectorised: each resample's shares, and its exposure ratio with
    every copy in the group at its row's local share, equal those of its rows re-ranked one by
    one (ties among copies and among rows)."""
    score = rng.integers(0, 6, 30).astype(float)
    protected = rng.random(30) < 0.4
    r = ranking(score, higher_first=False)
    points = np.array([5, 11, 17, 30])
    counts = rk._weights(7, 0, 30, 6)
    smooth = local_shares(r, protected)  # by position
    chance = np.empty(30)
    chance[r.order] = smooth
    draws = rk._Draws(r, protected[None].astype(np.int32), points, smooth[None])
    draws.add(counts)
    for b in range(6):
        shares, ratio = ref.resampled(score, protected, counts[b], points, higher_first=False,
                                      chance=chance)
        assert draws.shares[0][0, b] == pytest.approx(shares, rel=1e-5)
        assert draws.ratios[0][b, 0] == pytest.approx(np.log(ratio))


def test_local_shares_by_hand() -> None:
    """Each position's share among the 25 positions either side (fewer at the ends); a tie
    block of 51 or more rows: its own share."""
    protected = np.r_[np.ones(10, bool), np.zeros(90, bool)]
    r = ranking(np.arange(100, 0, -1, dtype=float))
    shares = local_shares(r, protected)
    assert shares[0] == pytest.approx(10 / 26) and shares[50] == pytest.approx(0.0)
    assert shares[30] == pytest.approx(5 / 51) and shares[20] == pytest.approx(10 / 46)
    tied = ranking(np.r_[np.full(60, 2.0), np.ones(40)])
    flags = np.r_[np.ones(15, bool), np.zeros(85, bool)]
    assert local_shares(tied, flags)[:60] == pytest.approx(np.full(60, 15 / 60))


def test_exposure_interval_is_the_label_draws_spread(rng: np.random.Generator) -> None:
    """Given the ranked scores, the interval's half-width is z times the spread of log T when
    each row's group is drawn at its local share (delta method against 4,000 draws), plus the
    smoothed ratio's bootstrap variance (small)."""
    score = rng.normal(size=400)
    group = rng.random(400) < 0.4
    found = exposure_gap(score - 0.5 * group, group, higher_first=True, confidence=0.95,
                         n_resamples=200, n_permutations=20, seed=3)
    r = ranking(score - 0.5 * group)
    v = row_exposure(r)[r.order]
    chance = local_shares(r, group)
    labels = rng.random((4000, 400)) < chance
    drawn = np.log((labels @ v / labels.sum(1)) / ((~labels) @ v / (~labels).sum(1)))
    half = np.log(found.ci_high / found.ratio)
    assert half == pytest.approx(1.959964 * drawn.std(), rel=0.1)
    assert np.log(found.ratio / found.ci_low) == pytest.approx(half)


def test_exposure_gap_on_a_fair_and_a_biased_ranking(rng: np.random.Generator) -> None:
    """A ranking unrelated to the group: ratio near 1, interval holding it, large p; the group
    pushed down: ratio below 1, small p, interval below 1."""
    score = rng.normal(size=600)
    group = rng.random(600) < 0.5
    fair = exposure_gap(score, group, higher_first=True, confidence=0.95, n_resamples=400,
                        n_permutations=400, seed=1)
    assert fair.ci_low < 1 < fair.ci_high and fair.p_value > 0.05
    biased = exposure_gap(score - 1.0 * group, group, higher_first=True, confidence=0.95,
                          n_resamples=400, n_permutations=400, seed=1)
    assert biased.ratio < 1 and biased.ci_high < 1 and biased.p_value < 0.01


def test_share_band_holds_the_estimate_and_widens_at_small_k(rng: np.random.Generator) -> None:
    """The band contains every reported share, is wider at the top than at the bottom, and is
    not calibrated below k_min."""
    score = rng.normal(size=500)
    group = rng.random(500) < 0.3
    band = share_band(score, group, higher_first=True, confidence=0.95, n_resamples=300,
                      seed=2, k_min=20)
    assert (band.band_low <= band.share).all() and (band.share <= band.band_high).all()
    assert band.critical > 1.96  # simultaneous: wider than one point's interval
    width = band.band_high - band.band_low
    assert width[0] > width[-1]
    small = share_band(score, group, higher_first=True, confidence=0.95, n_resamples=50, seed=2,
                       k_min=100)
    assert math.isnan(small.band_low[0]) and small.k[0] == 25


def test_views_do_not_depend_on_the_other_rankings(rng: np.random.Generator) -> None:
    """A ranking's numbers are the same alone and beside others (shared draws by chunk)."""
    scores = [rng.normal(size=200) for _ in range(3)]
    masks = [rng.random(200) < 0.5, rng.random(200) < 0.3]
    kwargs = {"higher_first": True, "confidence": 0.95, "alpha": 0.05, "n_resamples": 300,
              "n_permutations": 300, "seed": 4, "k_min": 20}
    together = rank_views(scores, masks, fair_k=[50, 50, 50], **kwargs)
    alone = rank_views(scores[1:2], masks, fair_k=[50], **kwargs)
    mine, same = together[1][1], alone[0][1]
    assert mine.exposure == same.exposure and mine.fair == same.fair
    np.testing.assert_array_equal(mine.shares.band_low, same.shares.band_low)


def test_report_points_are_cuts_of_a_decile_score() -> None:
    """Ten score levels: the reported k are each level's cut; a continuous score: every 5 %."""
    deciles = ranking(np.repeat(np.arange(1, 11), 3).astype(float), higher_first=False)
    assert report_points(deciles).tolist() == list(range(3, 31, 3))
    assert report_points(ranking(np.arange(100.0))).tolist() == list(range(5, 101, 5))
