"""The grid's vocabulary: its strategies, model families, the cells they make and its metrics.

Closed sets as enums, in the order results are reported; a cell's position in the grid
(:func:`position`) keys its seed streams (:mod:`faircode.core.seeds`).  The strategies' code
names (``S0`` ... ``S4``) have one table, :data:`STRATEGY_CODES`, and so do their titles for a
reader (:data:`STRATEGY_TITLES`) and the families' short names (:data:`FAMILY_CODES`).
"""

from __future__ import annotations

import itertools
from enum import StrEnum

__all__ = [
    "DECISION_METRICS",
    "FAIRNESS_METRICS",
    "FAMILY_CODES",
    "NOT_APPLICABLE",
    "STRATEGY_CODES",
    "STRATEGY_TITLES",
    "ModelFamily",
    "Strategy",
    "grid_cells",
    "position",
    "strategy_code",
]


class Strategy(StrEnum):
    """The five strategies, in the order results are reported."""

    BASELINE = "baseline"
    UNAWARENESS = "unawareness"
    UNAWARENESS_PROXY_REMOVAL = "unawareness_proxy_removal"
    IN_PROCESSING = "in_processing"
    POST_PROCESSING = "post_processing"


class ModelFamily(StrEnum):
    """The three model families of the grid, in the order results are reported."""

    LOGISTIC_REGRESSION = "logistic_regression"
    RANDOM_FOREST = "random_forest"
    GRADIENT_BOOSTING = "gradient_boosting"


STRATEGY_CODES: dict[Strategy, str] = {s: f"S{i}" for i, s in enumerate(Strategy)}
"""``S0`` ... ``S4`` by strategy: the one table of the strategies' short names."""

STRATEGY_TITLES: dict[str, str] = {
    "S0": "baseline",
    "S1": "unawareness",
    "S2": "unawareness + proxy removal",
    "S3": "ExponentiatedGradient",
    "S4": "ThresholdOptimizer",
}
"""What each code means to a reader (every legend: the report, the DVC plots, the README)."""

FAMILY_CODES: dict[str, str] = {
    ModelFamily.LOGISTIC_REGRESSION: "LR",
    ModelFamily.RANDOM_FOREST: "RF",
    ModelFamily.GRADIENT_BOOSTING: "GB",
}
"""``LR``, ``RF``, ``GB``: the families' short names (figure legends, DVC metric keys)."""

FAIRNESS_METRICS: tuple[str, ...] = (
    "demographic_parity_diff",
    "disparate_impact_ratio",
    "equal_opportunity_diff",
    "equalized_odds_diff",
    "predictive_parity_diff",
    "accuracy_equality_diff",
    "tpr_gap",
    "fpr_gap",
)
"""The fairness metrics in result order (:mod:`faircode.stats.metrics` defines them; metric
``k`` draws from ``child_seed(seed, k)``)."""

DECISION_METRICS: tuple[str, ...] = ("demographic_parity_diff", "disparate_impact_ratio")
"""The fairness metrics of decisions alone: all a system whose decision *is* the recorded outcome
(people's decisions, manifest ``system.decision: outcome``) can be scored on.  The others compare
the decision with a ground truth it does not have."""

NOT_APPLICABLE = "not_applicable:decision_is_outcome"
"""The note of every number that needs a ground truth on such a system (an error rate, an
accuracy): the value is NaN by design, never 0 and never an error."""


def strategy_code(strategy: str) -> str:
    """``S0``..``S4`` for a grid strategy, else the name itself (a deployed system's row set)."""
    try:
        return STRATEGY_CODES[Strategy(strategy)]
    except ValueError:
        return strategy


def grid_cells() -> list[tuple[Strategy, ModelFamily]]:
    """The 15 strategy x model cells in grid (report and seed-key) order."""
    return list(itertools.product(Strategy, ModelFamily))


def position(strategy: Strategy, family: ModelFamily) -> tuple[int, int]:
    """A cell's (strategy, model) indices in the grid: the seed key of its streams."""
    return list(Strategy).index(strategy), list(ModelFamily).index(family)
