"""Tests of the set of equally accurate models and the test of a less discriminatory
alternative (faircode.stats.multiplicity); its size and power at 2,000 audits are
bench/multiplicity_size.py's."""

from __future__ import annotations

import numpy as np
import pytest

from faircode.core.config import DegenerateConfig
from faircode.core.seeds import child_seed
from faircode.stats.multiplicity import (
    alternative_shown,
    alternative_test,
    held_out_split,
    model_scores,
    within_tolerance,
)

DEGENERATE = DegenerateConfig()


def test_model_scores_are_the_hand_computed_accuracy_and_gap() -> None:
    """Two models on six rows (three disadvantaged): accuracy, parity gap, selection rate."""
    y = np.array([1, 0, 1, 1, 0, 0])
    mask = np.array([1, 1, 1, 0, 0, 0])
    decisions = np.array([[1, 0, 0, 1, 1, 0],    # 4 of 6 right; D 1/3, A 2/3
                          [1, 1, 1, 0, 0, 0]])   # 4 of 6 right; D 1, A 0
    scores = model_scores(decisions, y, mask, degenerate=DEGENERATE)
    assert scores.accuracy == pytest.approx([4 / 6, 4 / 6])
    assert scores.gap == pytest.approx([1 / 3 - 2 / 3, 1.0])
    assert scores.selection_rate == pytest.approx([0.5, 0.5])
    assert scores.informative.tolist() == [True, True]


def test_the_set_keeps_informative_models_within_the_tolerance_of_the_best() -> None:
    """A degenerate model (it decides everyone alike) is no member, however accurate."""
    y = np.array([1, 1, 1, 1, 1, 1, 1, 0, 0, 0])
    mask = np.array([1, 0] * 5)
    decisions = np.array([[1] * 10,                         # degenerate: selection rate 1
                          [1, 1, 1, 1, 1, 1, 0, 0, 0, 0],   # 0.9
                          [1, 1, 1, 1, 1, 0, 0, 0, 0, 0],   # 0.8
                          [0, 1, 1, 1, 1, 1, 1, 0, 0, 0]])  # 0.9
    scores = model_scores(decisions, y, mask, degenerate=DEGENERATE)
    assert scores.informative.tolist() == [False, True, True, True]
    assert within_tolerance(scores, tolerance=0.05).tolist() == [False, True, False, True]
    assert within_tolerance(scores, tolerance=0.1).tolist() == [False, True, True, True]


def test_the_half_split_is_seeded_disjoint_stratified_and_keeps_units_whole(
        rng: np.random.Generator) -> None:
    """Two calls with one seed give one split; the halves cover the rows once, each label is
    halved, and every unit's rows fall in one half."""
    y = rng.integers(0, 2, 401)
    select, held = held_out_split(y, seed=7)
    again = held_out_split(y, seed=7)
    assert np.array_equal(select, again[0]) and np.array_equal(held, again[1])
    assert sorted([*select, *held]) == list(range(401))
    for label in (0, 1):
        assert abs(int((y[select] == label).sum()) - int((y[held] == label).sum())) <= 1
    units = rng.integers(0, 60, 401)
    select, held = held_out_split(y, seed=7, units=units)
    assert not set(units[select]) & set(units[held])


def test_no_alternative_when_the_most_accurate_model_is_the_closest_to_parity() -> None:
    """The incumbent is its own alternative: no test, and the note says why."""
    y = np.array([1, 0] * 50)
    mask = np.array([1, 1, 0, 0] * 25)
    fair = y.copy()
    worse = np.where(np.arange(100) % 10 == 0, 1 - y, y)
    select, held = held_out_split(y, seed=1)
    result = alternative_test(np.stack([fair, worse]), y, mask, select=select, held_out=held,
                              tolerance=0.5, margin=0.05, degenerate=DEGENERATE, seed=1,
                              n_resamples=50, n_permutations=10)
    assert result.incumbent == 0 and result.alternative == -1 and result.gap_effect is None
    assert result.note == "the most accurate model is the set's closest to parity"


def test_the_claim_needs_both_the_gap_shown_smaller_and_equal_accuracy() -> None:
    """An intersection-union rule: a reduced gap alone, or equivalent accuracy alone, is no
    alternative shown; NaN is not shown."""
    shown = alternative_shown([0.01, 0.01, 0.2, 0.01, np.nan], [-0.02, 0.03, -0.02, -0.02, -1],
                              [0.01, 0.01, 0.01, 0.2, 0.01], alpha=0.05)
    assert shown.tolist() == [True, False, False, False, False]


def _audit(seed: np.random.SeedSequence, *, n: int, fair: int) -> tuple[np.ndarray, ...]:
    """bench/multiplicity_size.py's audit at 10 models: the unfair ones err on 20 % of each
    group, towards a parity gap of -0.10; the first ``fair`` at parity err on 21 % (within the
    tolerance, so the most accurate model is usually an unfair one)."""
    rng = np.random.default_rng(seed)
    group, y, shared = rng.random(n) < 0.5, rng.random(n) < 0.5, rng.random(n)
    decisions = np.empty((10, n), dtype=np.int8)
    for m in range(10):
        delta, error = (0.0, 0.21) if m < fair else (0.05, 0.2)
        flip = (shared < np.where(group == y, error + delta, error - delta)) ^ (
            rng.random(n) < 0.01)
        decisions[m] = np.where(flip, ~y, y)
    return y.astype(np.int8), group.astype(np.int8), decisions


def _rejections(*, fair: int, audits: int) -> float:
    shown = 0
    for a in range(audits):
        y, group, decisions = _audit(child_seed(0, fair, a), n=4000, fair=fair)
        select, held = held_out_split(y, seed=child_seed(0, fair, a, 1))
        result = alternative_test(decisions, y, group, select=select, held_out=held,
                                  tolerance=0.03, margin=0.05, degenerate=DEGENERATE,
                                  seed=child_seed(0, fair, a, 2), n_resamples=200,
                                  n_permutations=1)
        if result.gap_effect is not None and result.accuracy_effect is not None:
            shown += bool(alternative_shown(result.gap_effect.p_value, result.gap_effect.ci_high,
                                            result.accuracy_effect.equivalence_p_value,
                                            alpha=0.05))
    return shown / audits


def test_no_alternative_is_shown_where_every_equally_accurate_model_has_the_same_gap() -> None:
    """Type-I error on 80 simulated audits where no fairer model exists (the least-gap model
    of the selection half is the winner's curse, not a fairer model): at most 4 shown."""
    assert _rejections(fair=0, audits=80) <= 0.05


def test_an_equally_accurate_model_at_parity_is_shown() -> None:
    """Power where one of ten models within the tolerance has no gap (the others -0.10), 4,000
    test rows, tolerance 0.03: most of 30 audits show it."""
    assert _rejections(fair=1, audits=30) >= 0.5
