"""Tests of faircode.stats.effect_verdicts: the paired effects' verdict vocabulary."""

from __future__ import annotations

import numpy as np

from faircode.stats.effect_verdicts import EffectVerdict, effect_verdicts


def test_each_verdict_from_a_hand_made_row() -> None:
    """Below 0 and significant: reduced; above: increased; equivalent: no_change; neither:
    inconclusive; not informative or no interval: uninformative."""
    low = [-0.2, 0.01, -0.02, -0.3, -0.2, np.nan]
    high = [-0.01, 0.2, 0.02, 0.1, -0.01, np.nan]
    got = effect_verdicts(low, high, significant=[True, True, False, False, True, False],
                          equivalent=[False, False, True, False, False, False],
                          informative=[True, True, True, True, False, True])
    assert list(got) == ["reduced", "increased", "no_change", "inconclusive", "uninformative",
                         "uninformative"]


def test_a_shown_change_wins_over_equivalence() -> None:
    """A small, real change (significant and inside the margin) is reduced, not no_change."""
    got = effect_verdicts([-0.02], [-0.005], significant=[True], equivalent=[True],
                          informative=[True])
    assert list(got) == [EffectVerdict.REDUCED.value]


def test_significance_without_an_interval_excluding_zero_is_not_a_change() -> None:
    """A significant flag with an interval containing 0 never gives reduced or increased."""
    got = effect_verdicts([-0.1], [0.1], significant=[True], equivalent=[False],
                          informative=[True])
    assert list(got) == ["inconclusive"]
