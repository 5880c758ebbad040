"""The four result tables of one audit, assembled from its scored cells (:func:`assemble`).

:class:`AuditResults` holds ``fairness``, ``performance``, ``intersectional`` and
``counterfactual`` with exactly their published columns; the q-values of the audit's one
Benjamini-Hochberg family (:func:`faircode.stats.metrics.audit_q_values`: each fairness null
once, every DD-vs-AA gap and interaction) are filled in here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from faircode.audit.decision import DecisionRule
from faircode.evaluate.detail import GAP_COLUMNS
from faircode.evaluate.score import CellResult, Rows
from faircode.evaluate.stratified import STRATIFIED_COLUMNS, STRATUM_RATE_COLUMNS
from faircode.stats.calibration import CALIBRATION_COLUMNS
from faircode.stats.groups import GROUP_COLUMNS
from faircode.stats.metrics import FAIRNESS_COLUMNS, INTERSECTIONAL_COLUMNS, audit_q_values
from faircode.stats.resampling import benjamini_hochberg

__all__ = ["CALIBRATION_TABLE_COLUMNS", "COUNTERFACTUAL_COLUMNS", "GROUPS_COLUMNS",
           "PERFORMANCE_COLUMNS", "AuditResults", "assemble"]


@dataclass(slots=True)
class AuditResults:
    """The four result tables of one audit, the per-cell records and the rule behind them.

    A plain (not frozen) container: its tables are DataFrames.  ``rule`` is the operating point the
    evaluate step resolved once (:func:`faircode.audit.decision.resolve_rule`);
    ``stability``/``replicates`` the training-replicate tables
    (:mod:`faircode.evaluate.stability`), None without replicates (``run.seeds`` 1).  ``groups``,
    ``calibration`` and ``calibration_gap`` are the tables of :mod:`faircode.evaluate.detail`;
    ``deployed`` the audit's deployed system on every row (:mod:`faircode.evaluate.deployed`), None
    without one; ``effects`` the paired effects (:mod:`faircode.evaluate.effects`),
    ``effects_stability`` their combination over the replicates and ``effect_replicates`` every
    replicate's effects (None with one); ``seconds`` where
    the evaluate step's time went (``run.json``).
    """

    fairness: pd.DataFrame
    performance: pd.DataFrame
    intersectional: pd.DataFrame
    counterfactual: pd.DataFrame
    cells: tuple[CellResult, ...]
    rule: DecisionRule | None
    groups: pd.DataFrame = field(default_factory=lambda: _empty(GROUPS_COLUMNS))
    calibration: pd.DataFrame = field(default_factory=lambda: _empty(CALIBRATION_TABLE_COLUMNS))
    calibration_gap: pd.DataFrame = field(default_factory=lambda: _empty(GAP_COLUMNS))
    deployed: AuditResults | None = None
    stability: pd.DataFrame | None = None
    replicates: pd.DataFrame | None = None
    effects: pd.DataFrame | None = None
    effects_stability: pd.DataFrame | None = None
    effect_replicates: pd.DataFrame | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    curves: pd.DataFrame | None = None
    """The operating-point curves (:mod:`faircode.evaluate.curves`); None when not asked for."""
    stratified: pd.DataFrame = field(default_factory=lambda: _empty(STRATIFIED_COLUMNS))
    """The gaps conditional on declared strata (:mod:`faircode.evaluate.stratified`); empty
    without."""
    stratum_rates: pd.DataFrame = field(default_factory=lambda: _empty(STRATUM_RATE_COLUMNS))
    """Each declared stratum's levels: the groups' counts and rates; empty without strata."""
    frontier: pd.DataFrame | None = None
    """Every strategy's point and S5's tolerance curve (:mod:`faircode.evaluate.frontier`);
    None without a tolerance curve."""
    matched: pd.DataFrame | None = None
    """The matched-violation comparisons (:mod:`faircode.evaluate.matched`); None likewise."""
    self_consistency: pd.DataFrame | None = None
    """Each group's share of arbitrary decisions (:mod:`faircode.evaluate.arbitrariness`); None
    without the bag stage's members, as the three tables below."""
    arbitrariness: pd.DataFrame | None = None
    """The abstaining ensembles' gaps beside the single models'."""
    multiplicity: pd.DataFrame | None = None
    """The set of equally accurate models and the test of a less discriminatory alternative."""
    multiplicity_models: pd.DataFrame | None = None
    """Every model of the set with its accuracy and gap."""
    ranking: pd.DataFrame | None = None
    """The ranking view's exposure and FA*IR table (:mod:`faircode.evaluate.ranking`); None
    without a scored row set."""
    ranking_topk: pd.DataFrame | None = None
    """The ranking view's top-k shares with their simultaneous band; None likewise."""


PERFORMANCE_COLUMNS = ("audit", "strategy", "model", "protected_attribute", "metric",
                       "value", "ci_low", "ci_high", "n", "note")


GROUPS_COLUMNS: tuple[str, ...] = ("audit", "strategy", "model", "positive", *GROUP_COLUMNS)
"""``groups.csv``: ``positive`` says what its rates count (``label 1 = two_year_recid true
(unfavourable)``; :meth:`faircode.audit.manifest.Target.positive`)."""
CALIBRATION_TABLE_COLUMNS: tuple[str, ...] = ("audit", "strategy", "model", *CALIBRATION_COLUMNS)

COUNTERFACTUAL_COLUMNS = (
    "audit", "strategy", "model", "axis", "kind", "columns", "flip_rate", "ci_low", "ci_high",
    "to_favourable", "to_unfavourable", "n_changed", "n_unchanged", "n_flipped",
    "design_effect", "note",
)


def assemble(
    audit: str, results: Sequence[CellResult], *, rule: DecisionRule | None, alpha: float
) -> AuditResults:
    """The tables of ``results`` (grid order), with the audit's BH q-values at ``alpha``.

    The fairness and intersectional tests form the audit's one family; the calibration gaps
    their own (a different question, so adding a score to an audit moves no fairness q-value),
    and the gaps within strata theirs.
    """
    fairness = _frame(audit, [r.fairness for r in results], FAIRNESS_COLUMNS)
    intersectional = _frame(audit, [r.intersectional for r in results], INTERSECTIONAL_COLUMNS)
    # One BH family per audit: each fairness null once, every DD-vs-AA gap and interaction.
    fairness, intersectional = audit_q_values(fairness, intersectional, alpha=alpha)
    gaps = _frame(audit, [r.calibration_gap for r in results], GAP_COLUMNS)
    gaps["q_value"] = benjamini_hochberg(gaps["p_value"].to_numpy(dtype=float))
    gaps["significant"] = np.nan_to_num(gaps["q_value"].to_numpy(dtype=float), nan=1.0) < alpha
    strata = _frame(audit, [r.stratified for r in results], STRATIFIED_COLUMNS)
    strata["q_value"] = benjamini_hochberg(strata["p_value"].to_numpy(dtype=float))
    strata["significant"] = np.nan_to_num(strata["q_value"].to_numpy(dtype=float),
                                          nan=1.0) < alpha
    return AuditResults(
        fairness=fairness,
        performance=_frame(audit, [r.performance for r in results], PERFORMANCE_COLUMNS),
        intersectional=intersectional,
        counterfactual=_frame(audit, [r.counterfactual for r in results],
                              COUNTERFACTUAL_COLUMNS),
        cells=tuple(results), rule=rule,
        groups=_frame(audit, [r.groups for r in results], GROUPS_COLUMNS),
        calibration=_frame(audit, [r.calibration for r in results], CALIBRATION_TABLE_COLUMNS),
        calibration_gap=gaps, stratified=strata,
        stratum_rates=_frame(audit, [r.stratum_rates for r in results], STRATUM_RATE_COLUMNS),
    )


def _empty(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame(columns=list(columns))


def _frame(audit: str, parts: Sequence[Rows], columns: tuple[str, ...]) -> pd.DataFrame:
    """Rows as a frame with exactly ``columns`` (q_value/significant filled in later)."""
    rows = [row for part in parts for row in part.records()]
    frame = pd.DataFrame(rows, columns=[c for c in columns
                                        if c not in ("audit", "q_value", "significant")])
    frame.insert(0, "audit", audit)
    return frame.reindex(columns=list(columns))
