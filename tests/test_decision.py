"""Tests of decision rules and cutoffs, the degenerate rule and operating-point metrics."""

from __future__ import annotations

import numpy as np
import pytest

from faircode.audit.decision import Cutoff, DecisionRule, decide, decision_cutoff, resolve_rule
from faircode.core.errors import ConfigError
from faircode.stats.operating import OPERATING_POINT_METRICS, is_degenerate, operating_point_metrics

BOUNDS = {"min_selection_rate": 0.01, "max_selection_rate": 0.99,
          "balanced_accuracy_margin": 0.02}


# ------------------------------------------------------------------------------ rules


def test_threshold_rule_flags_strictly_above_the_threshold() -> None:
    """threshold: ŷ = 1 iff score > threshold; the training rows are not consulted."""
    cutoff, y = decide(DecisionRule("threshold", threshold=0.5), train_scores=None,
                       train_labels=None, test_scores=[0.2, 0.5, 0.7])
    assert cutoff == Cutoff(0.5, inclusive=False)
    assert y.tolist() == [0, 0, 1] and y.dtype == np.int8


def test_base_rate_cutoff_is_the_training_label_rate() -> None:
    """base_rate: labels 1,0,0,0 give cutoff 0.25; a score equal to it is not flagged."""
    cutoff, y = decide(DecisionRule("base_rate"), train_scores=None, train_labels=[1, 0, 0, 0],
                       test_scores=[0.25, 0.26, 0.1])
    assert cutoff == Cutoff(0.25, inclusive=False)
    assert y.tolist() == [0, 1, 0]


def test_top_fraction_cutoff_is_the_kth_largest_training_score() -> None:
    """top_fraction 0.4 of 5 training scores: k = 2, cutoff 0.7, test scores >= 0.7 flagged."""
    cutoff, y = decide(DecisionRule("top_fraction", fraction=0.4),
                       train_scores=[0.9, 0.1, 0.5, 0.3, 0.7], train_labels=None,
                       test_scores=[0.7, 0.69, 0.95, 0.0])
    assert cutoff == Cutoff(0.7, inclusive=True)
    assert y.tolist() == [1, 0, 1, 0]


def test_top_fraction_flags_every_training_row_tied_at_the_cutoff() -> None:
    """With 0.6 three times at rank 2-4, the cutoff is 0.6 and 4 of 5 training rows are flagged."""
    train = np.array([0.8, 0.6, 0.6, 0.6, 0.2])
    cutoff = decision_cutoff(DecisionRule("top_fraction", fraction=0.4), train_scores=train,
                             train_labels=None)
    assert cutoff.value == 0.6
    assert cutoff.apply(train).tolist() == [1, 1, 1, 1, 0]
    assert cutoff.apply([0.6, 0.5999]).tolist() == [1, 0]


def test_top_fraction_reads_the_fraction_as_written() -> None:
    """0.1 of 30 rows is 3 rows (the binary float 0.1 times 30 would round up to 4)."""
    train = np.arange(30) / 30
    cutoff = decision_cutoff(DecisionRule("top_fraction", fraction=0.1), train_scores=train,
                             train_labels=None)
    assert cutoff.value == 27 / 30
    assert int(cutoff.apply(train).sum()) == 3


def test_top_fraction_flags_at_least_one_training_row() -> None:
    """A fraction below 1/n still flags the top row: k = ceil(0.01 · 5) = 1."""
    cutoff = decision_cutoff(DecisionRule("top_fraction", fraction=0.01),
                             train_scores=[0.3, 0.9, 0.1, 0.5, 0.2], train_labels=None)
    assert cutoff == Cutoff(0.9, inclusive=True)


def test_rule_needs_its_training_array() -> None:
    """top_fraction without training scores is a programming error, not a silent default."""
    with pytest.raises(ValueError, match="train_scores"):
        decision_cutoff(DecisionRule("top_fraction", fraction=0.2), train_scores=None,
                        train_labels=[0, 1])


def test_non_finite_scores_are_refused() -> None:
    """A NaN score has no place in a ranking and is an error."""
    with pytest.raises(ValueError, match="finite"):
        Cutoff(0.5, inclusive=False).apply([0.1, float("nan")])


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"rule": "median"}, "decision.rule: expected one of threshold, base_rate, top_fraction"),
        ({"rule": "top_fraction", "fraction": 1.0},
         "decision.fraction: expected a number in (0, 1)"),
        ({"rule": "top_fraction"}, "decision.fraction: expected a number in (0, 1), got None"),
        ({"rule": "threshold"}, "decision.threshold: expected a number in [0, 1], got None"),
        ({"rule": "base_rate", "fraction": 0.2}, "decision.fraction: expected nothing for rule"),
        ({"rule": "threshold", "threshold": True}, "got True (bool)"),
    ],
)
def test_invalid_rules_are_refused(kwargs: dict, fragment: str) -> None:
    """A rule record built in code validates like the manifest block."""
    with pytest.raises(ConfigError) as info:
        DecisionRule(**kwargs)
    assert fragment in str(info.value)


def test_without_a_declared_rule_the_global_threshold_applies() -> None:
    """No manifest block: threshold at the config's decision_threshold; a block wins."""
    assert resolve_rule(None, default_threshold=0.5) == DecisionRule("threshold", threshold=0.5)
    declared = DecisionRule("base_rate")
    assert resolve_rule(declared, default_threshold=0.3) is declared
    assert not declared.default_objective
    assert DecisionRule("threshold", threshold=0.2).default_objective


# ------------------------------------------------------------------------------ degenerate


@pytest.mark.parametrize(
    ("selection_rate", "balanced_accuracy", "expected"),
    [
        (0.0, float("nan"), True),  # flags nobody: balanced accuracy undefined or 0.5
        (0.004, 0.70, True),  # healthcare at 0.5: a sliver flagged
        (0.995, 0.70, True),  # flags nearly everyone
        (0.30, 0.51, True),  # flags some, but no better than chance
        (0.30, 0.5 + 0.015625, True),  # inside the margin
        (0.30, 0.5 - 0.015625, True),  # worse than chance by less than the margin
        (0.30, 0.59, False),  # healthcare at the base rate (LR)
        (0.01, 0.60, False),  # exactly at the lower bound is allowed
        (0.99, 0.60, False),  # exactly at the upper bound is allowed
    ],
)
def test_degenerate_rule_on_hand_made_cells(
    selection_rate: float, balanced_accuracy: float, expected: bool
) -> None:
    """A cell is degenerate below 1 %, above 99 % or within 0.02 of chance balanced accuracy."""
    assert is_degenerate(selection_rate=selection_rate, balanced_accuracy=balanced_accuracy,
                         **BOUNDS) is expected


def test_degenerate_margin_is_inclusive() -> None:
    """A balanced accuracy exactly ``margin`` from 0.5 is degenerate (within means <=)."""
    assert is_degenerate(selection_rate=0.3, balanced_accuracy=0.5 + 0.0625,
                         min_selection_rate=0.01, max_selection_rate=0.99,
                         balanced_accuracy_margin=0.0625)


# ------------------------------------------------------------------------------ metrics


def test_operating_point_metrics_match_hand_computed_values() -> None:
    """10 rows: 3 flagged, TPR 2/4, TNR 5/6, majority class 0 of 6 rows; per-group rates."""
    y_true = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    y_pred = np.array([1, 1, 0, 0, 1, 0, 0, 0, 0, 0])
    group = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0], dtype=bool)
    points = operating_point_metrics(y_true, y_pred, {"grp": group}, n_resamples=200,
                                     confidence=0.95, seed=1)
    by_name = {(p.protected_attribute, p.metric): p for p in points}
    assert [p.metric for p in points[:3]] == list(OPERATING_POINT_METRICS)
    assert by_name[("", "selection_rate")].value == pytest.approx(0.3)
    assert by_name[("", "balanced_accuracy")].value == pytest.approx((2 / 4 + 5 / 6) / 2)
    assert by_name[("", "majority_baseline_accuracy")].value == pytest.approx(0.6)
    assert by_name[("grp", "selection_rate_disadvantaged")].value == pytest.approx(3 / 5)
    assert by_name[("grp", "selection_rate_advantaged")].value == pytest.approx(0.0)
    assert by_name[("grp", "selection_rate_advantaged")].n == 5
    for p in points[:3]:
        assert p.ci_low <= p.value <= p.ci_high and p.n == 10


def test_selection_rate_interval_agrees_with_a_row_level_bootstrap(
    rng: np.random.Generator,
) -> None:
    """The count-level CI of the selection rate matches resampling rows (independent reference)."""
    y_true = rng.integers(0, 2, 400)
    y_pred = (rng.random(400) < 0.3).astype(int)
    point = operating_point_metrics(y_true, y_pred, {}, n_resamples=4000, confidence=0.95,
                                    seed=7)[0]
    rows = rng.integers(0, 400, size=(4000, 400))
    reference = np.percentile(y_pred[rows].mean(axis=1), [2.5, 97.5])
    assert point.ci_low == pytest.approx(reference[0], abs=0.01)
    assert point.ci_high == pytest.approx(reference[1], abs=0.01)
