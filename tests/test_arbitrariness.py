"""Tests of self-consistency, the abstaining ensemble and each group's share of arbitrary
decisions (faircode.stats.arbitrariness)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from faircode.stats.arbitrariness import arbitrary_shares, ensemble, self_consistency
from faircode.stats.resampling import wilson_interval

# four members, five test rows: unanimous 1, 3 of 4, 2 of 4, 1 of 4, unanimous 0
VOTES = np.array([[1, 1, 1, 1, 0],
                  [1, 1, 1, 0, 0],
                  [1, 1, 0, 0, 0],
                  [1, 0, 0, 0, 0]])


def _pairs_agreeing(column: np.ndarray) -> float:
    """The share of ordered pairs of distinct members deciding alike (the definition)."""
    pairs = list(itertools.permutations(range(len(column)), 2))
    return sum(column[i] == column[j] for i, j in pairs) / len(pairs)


def test_self_consistency_of_a_tiny_ensemble_is_the_hand_computed_one() -> None:
    """k of B = 4 members deciding 1: 1 − 2k(4 − k)/12 = 1, 1/2, 1/3, 1/2, 1."""
    assert self_consistency(VOTES) == pytest.approx([1.0, 0.5, 1 / 3, 0.5, 1.0])


def test_self_consistency_is_the_share_of_agreeing_pairs(rng: np.random.Generator) -> None:
    """On random votes of B = 7 members every row's value is its share of agreeing pairs."""
    votes = rng.integers(0, 2, size=(7, 40))
    expected = [_pairs_agreeing(votes[:, j]) for j in range(votes.shape[1])]
    assert self_consistency(votes) == pytest.approx(expected)


def test_the_ensemble_abstains_below_the_level_and_votes_elsewhere() -> None:
    """At level 0.8 the split rows abstain (a tie included); the unanimous rows are decided
    by their majority."""
    voted = ensemble(VOTES, level=0.8)
    assert voted.abstain.tolist() == [False, True, True, True, False]
    assert voted.decision[voted.kept].tolist() == [1, 0]
    assert voted.votes_for.tolist() == [4, 3, 2, 1, 0]
    four_of_five = np.array([[1], [1], [1], [1], [0]])  # 1 − 2·4·1/20 = 0.6
    assert ensemble(four_of_five, level=0.55).abstain.tolist() == [False]
    assert ensemble(four_of_five, level=0.6).abstain.tolist() == [False]
    assert ensemble(four_of_five, level=0.61).abstain.tolist() == [True]


def test_a_level_at_or_below_one_half_is_refused() -> None:
    """A tied vote has no majority, so the level must lie above 0.5."""
    with pytest.raises(ValueError, match=r"level: expected a number in \(0.5, 1\]"):
        ensemble(VOTES, level=0.5)
    with pytest.raises(ValueError, match="votes: expected"):
        self_consistency(np.array([[1, 0]]))


def test_shares_count_each_groups_arbitrary_rows_with_a_wilson_interval() -> None:
    """Without units each group's share is its count of rows below the level, its interval
    Wilson's on those counts."""
    sc = np.array([1.0, 0.5, 0.6, 0.9, 0.4, 1.0])
    mask = np.array([1, 1, 1, 0, 0, 0])
    d, a = arbitrary_shares(sc, mask, level=0.8)
    assert (d.n, d.arbitrary, d.share, a.n, a.arbitrary) == (3, 2, 2 / 3, 3, 1)
    low, high = wilson_interval(np.array([2.0]), np.array([3.0]), confidence=0.95)
    assert (d.ci_low, d.ci_high) == (float(low[0]), float(high[0]))
    assert d.design_effect == 1.0 and d.mean_self_consistency == pytest.approx(0.7)


def test_repeated_units_widen_the_share_interval() -> None:
    """Rows of a unit that are all arbitrary or all not make the share's interval wider than
    the rows' (design effect above 1)."""
    sc = np.repeat([0.5, 1.0, 0.5, 1.0, 1.0, 0.5, 1.0, 1.0], 3)
    mask = np.ones(sc.size, dtype=int)
    mask[:3] = 0
    units = np.repeat(np.arange(8), 3)
    rows, _ = arbitrary_shares(sc, mask, level=0.8)
    unit, _ = arbitrary_shares(sc, mask, level=0.8, units=units)
    assert unit.share == rows.share and unit.design_effect > 1.0
    assert unit.ci_high - unit.ci_low > rows.ci_high - rows.ci_low
