"""Scoring one row set: a cell's (or any system's) decisions in, its rows of the result tables out.

:func:`score_cell` scores one strategy x model cell of the grid: :func:`decide_cell` fixes its
decisions at the audit's operating point (S0-S2: the rule's cutoff on the training rows, applied
to the stored scores; S3/S4: the randomised decisions drawn at fit time) and
:func:`score_decided` computes its rows of the four tables:

* the group-fairness metrics for every protected attribute (closed-form interval, permutation p)
  with their minimum detectable gaps,
* accuracy / AUC / F1 with CIs and the operating-point numbers (selection rates, balanced
  accuracy, majority baseline),
* the intersectional demographic-parity gap for every pair of attributes,
* the counterfactual flip rate of every manifest axis (explicit and proxy channels apart).

:func:`score_decided` knows nothing of the grid: it takes any :class:`Decided` row set (a grid
cell, a deployed system's own decisions) with its label and seed position.

Design decisions
----------------
* **Oriented once.**  Labels and decisions are oriented by the manifest's ``target.favourable``
  (:func:`faircode.stats.metrics.orient`) before any group metric, and the oriented arrays are
  part of the result (:attr:`CellResult.decided`), so whatever re-uses a cell's decisions (the
  training-replicate draws of :mod:`faircode.evaluate.stability`) does not derive them again.
* **Seeds by position.**  Every statistic draws from the child stream of its grid position
  (``child_seed(master, Stream.<kind>, s, m, ...)``), so the numbers do not depend on ``jobs``
  or on whether the fit ran in this process.  ``master`` is the manifest's ``random_state``
  (a training replicate passes its own).
* **Repeated units**: when the audit declares ``dataset.unit`` and a unit has several test rows,
  the rows' unit ids are passed to every metric (``units=``): fairness p-values exchange labels
  between units, intervals are taken at design-effect-deflated effective sizes, the performance
  bootstrap resamples units and flip rates use Clopper–Pearson at the effective size.  Without a
  unit, or with one row per unit, every number is bit-identical to the unit-free path.
* **Minimum detectable gaps in one call per cell** (:func:`faircode.stats.power.detectable_gaps`,
  bit-identical to one call per row): every fairness row and every intersectional DD-vs-AA gap,
  at effective counts (each count divided by ``max(1, design_effect)``, rounded) when units
  repeat.
* **Immutable rows.**  A :class:`CellResult` is frozen all the way down: its table rows are
  :class:`Rows` (a header and tuples), its timings a :class:`Timings`, its decision record a tuple
  of pairs, its decisions read-only arrays.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from faircode.audit.decision import Cutoff, DecisionRule, decision_cutoff
from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import ModelFamily, Strategy, grid_cells, position
from faircode.core.config import DegenerateConfig, StatsConfig
from faircode.evaluate.counted import CountedRows, score_counts
from faircode.evaluate.outcome import mark_not_applicable
from faircode.evaluate.stratified import stratified_rows, stratum_rate_rows
from faircode.grid.predictions import CellPredictions
from faircode.stats.calibration import Scale
from faircode.stats.flips import flip_rates
from faircode.stats.metrics import orient
from faircode.stats.operating import UNFITTABLE_NOTE, undefined_metrics
from faircode.stats.tally import Tally, tally_rows

__all__ = ["CellResult", "Decided", "Rows", "Timings", "cell_result", "decide_cell",
           "decided_tally", "score_cell", "score_decided", "scoring_seconds"]


@dataclass(frozen=True, slots=True)
class Rows:
    """Table rows under one header, as immutable tuples (what a cell adds to one table)."""

    columns: tuple[str, ...] = ()
    values: tuple[tuple[Any, ...], ...] = ()

    def __post_init__(self) -> None:
        if any(len(v) != len(self.columns) for v in self.values):
            raise ValueError(f"Rows: expected {len(self.columns)} values per row")

    @classmethod
    def of(cls, records: Sequence[Mapping[str, Any]]) -> Rows:
        """The rows of ``records``: every key any record has (first-seen order), NaN where a
        record lacks one (as a DataFrame built from the records fills it)."""
        columns = tuple(dict.fromkeys(k for r in records for k in r))
        nan = float("nan")
        return cls(columns, tuple(tuple(r.get(c, nan) for c in columns) for r in records))

    def records(self) -> list[dict[str, Any]]:
        """The rows as mappings (column -> value; every column in every row)."""
        return [dict(zip(self.columns, v, strict=True)) for v in self.values]


@dataclass(frozen=True, slots=True)
class Timings:
    """Where a cell's seconds went: fit and predict (the fit step), statistics, counterfactual."""

    fit: float = 0.0
    predict: float = 0.0
    statistics: float = 0.0
    counterfactual: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """The timings as ``run.json`` records them."""
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class Decided:
    """A row set's test decisions at its operating point, oriented for every group metric.

    ``y_pred`` is the decisions in the target's coding (1 = label 1 predicted), ``y_fav`` and
    ``yhat_fav`` the labels and decisions oriented so that 1 is the favourable outcome,
    ``flipped`` the decisions on each counterfactual set, ``score`` the score behind them (None
    for a system that has none), ``cutoff`` the cutoff applied to the score (None when the
    decisions were given, as S3/S4's randomised ones).  Arrays are made read-only.
    """

    y_pred: np.ndarray
    y_fav: np.ndarray
    yhat_fav: np.ndarray
    flipped: tuple[np.ndarray, ...] = ()
    score: np.ndarray | None = None
    cutoff: Cutoff | None = None
    outcome: bool = False
    """The decisions are the recorded outcome (people's decisions): no ground truth to score
    them against (:mod:`faircode.evaluate.outcome`)."""

    def __post_init__(self) -> None:
        for array in (self.y_pred, self.y_fav, self.yhat_fav, *self.flipped, self.score):
            if array is not None:
                array.flags.writeable = False


@dataclass(frozen=True, slots=True)
class CellResult:
    """Every row one row set (a strategy x model cell) contributes, and where its time went."""

    strategy: Strategy | str
    family: ModelFamily | str
    fairness: Rows = Rows()
    performance: Rows = Rows()
    intersectional: Rows = Rows()
    counterfactual: Rows = Rows()
    seconds: Timings = Timings()
    skipped: str = ""
    """Why the cell was not run (no rows)."""
    unfittable: str = ""
    """Why the cell could not be fitted (its fairness rows: every value NaN, uninformative)."""
    degenerate: bool = False
    decision: tuple[tuple[str, Any], ...] = ()
    decided: Decided | None = None
    groups: Rows = Rows()
    calibration: Rows = Rows()
    calibration_gap: Rows = Rows()
    stratified: Rows = Rows()
    stratum_rates: Rows = Rows()


def scoring_seconds(data: PreparedAudit) -> float:
    """A cell's expected scoring seconds (dispatch and the in-process decision only): a fixed
    cost plus one proportional to its test rows and protected attributes (the count-level
    statistics cost little; the unit path's cluster resampling more)."""
    rows = len(data.test_index) * len(data.manifest.protected_attributes)
    return 0.02 + rows * (4e-5 if data.unit is not None else 1e-5)


def decide_cell(data: PreparedAudit, cell: CellPredictions, *, rule: DecisionRule) -> Decided:
    """A fitted cell's test decisions at the audit's operating point, fixed on the training rows
    (S0-S2; S3/S4 keep their randomised draws)."""
    cutoff = decision_cutoff(
        rule, train_scores=cell.train_score if rule.rule == "top_fraction" else None,
        train_labels=data.y[data.train_index])
    y_pred, flipped = cell.decisions(cutoff)
    # every group metric counts the favourable outcome (negative = disadvantaged worse off)
    y_fav, yhat_fav = orient(data.y[data.test_index], y_pred,
                             favourable=data.manifest.target.favourable)
    return Decided(y_pred, y_fav, yhat_fav, flipped, score=cell.test_score,
                   cutoff=cutoff if cell.test_decision is None else None)


def score_cell(
    data: PreparedAudit,
    cell: CellPredictions,
    *,
    rule: DecisionRule,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    master: int | None = None,
    detail: bool = True,
) -> CellResult:
    """Score one fitted cell (a task of the evaluate step's queue).

    ``rule`` is the audit's resolved operating point; ``master`` seeds every statistic (default
    the manifest's ``random_state``; a training replicate passes its own, without ``detail``:
    the per-group and calibration tables of :mod:`faircode.evaluate.detail`).
    """
    if cell.skipped:
        return CellResult(cell.strategy, cell.family, seconds=_fit_timings(cell.seconds),
                          skipped=cell.skipped)
    if cell.unfittable:  # uninformative: every fairness row undefined, the groups' sizes kept
        label = {"strategy": str(cell.strategy), "model": str(cell.family)}
        rows = [{**label, "protected_attribute": name, **dataclasses.asdict(result),
                 "mde": np.nan, "powered": False, "mde_note": UNFITTABLE_NOTE}
                for name, mask in _masks(data).items()
                for result in undefined_metrics(int(mask.sum()), int((~mask).sum()))]
        return CellResult(cell.strategy, cell.family, fairness=Rows.of(rows),
                          seconds=_fit_timings(cell.seconds), unfittable=cell.unfittable)
    return score_decided(
        data, decide_cell(data, cell, rule=rule), strategy=cell.strategy, family=cell.family,
        key=position(cell.strategy, cell.family), rule=rule, objective=cell.objective,
        stats=stats, degenerate=degenerate,
        master=data.manifest.random_state if master is None else master,
        fit_seconds=cell.seconds, scale="probability" if detail else None, detail=detail,
        row_sets=grid_row_sets(data))


def grid_row_sets(data: PreparedAudit) -> int:
    """The row sets of a grid audit's Benjamini-Hochberg family: every grid cell and the
    deployed system on the test rows (:func:`faircode.evaluate.counted.family_tests`)."""
    return len(grid_cells()) + (data.system is not None)


def score_decided(
    data: PreparedAudit,
    decided: Decided,
    *,
    strategy: Strategy | str,
    family: ModelFamily | str,
    key: tuple[int, int],
    rule: DecisionRule | None,
    objective: str,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    master: int,
    fit_seconds: Mapping[str, float] | None = None,
    scale: Scale | None = "probability",
    row_set: str = "test",
    detail: bool = True,
    row_sets: int = 1,
) -> CellResult:
    """Every table row of one row set's decisions on ``data``'s test rows.

    ``key`` is the row set's seed position ``(s, m)``; ``rule`` the operating point its
    decisions were taken at (None: given, as a deployed system's); ``objective`` what they were
    fitted for (recorded in ``run.json``).  With ``detail``, also the per-group table and, when
    the row set has a score on ``scale``, its calibration by group (``row_set`` names the rows
    in those tables) and, where the audit declares strata, the gap within them.  A row set
    whose decisions are the outcome (:attr:`Decided.outcome`) has its ground-truth numbers
    marked not applicable (:mod:`faircode.evaluate.outcome`).
    """
    label = {"strategy": str(strategy), "model": str(family)}
    t0 = time.perf_counter()
    tally = decided_tally(data, decided, scale=scale if detail else None)
    counted = score_counts(
        tally, data.manifest.protected_attributes, favourable=data.manifest.target.favourable,
        label=label, key=key, rule=rule, objective=objective, stats=stats,
        degenerate=degenerate, master=master, cutoff=decided.cutoff, row_set=row_set,
        detail=detail, outcome=decided.outcome, positive=data.manifest.target.positive(),
        row_sets=row_sets)
    strata: list[dict[str, Any]] = []
    levels: list[dict[str, Any]] = []
    if detail and data.manifest.strata:  # row-level: the strata's codes are not in the counts
        strata = stratified_rows(data, decided.yhat_fav, label, stats=stats, master=master,
                                 key=key)
        levels = stratum_rate_rows(data, decided.yhat_fav, label)
    if decided.outcome:
        mark_not_applicable(counted.fairness, counted.performance, counted.groups)
    t1 = time.perf_counter()
    counterfactual = _counterfactual_rows(data, decided, label, stats=stats)
    t2 = time.perf_counter()
    fit = _fit_timings(fit_seconds or {})
    return cell_result(strategy, family, counted, counterfactual=Rows.of(counterfactual),
                       stratified=Rows.of(strata), stratum_rates=Rows.of(levels),
                       seconds=dataclasses.replace(fit, statistics=t1 - t0,
                                                   counterfactual=fit.counterfactual + t2 - t1),
                       decided=decided)


def cell_result(strategy: Strategy | str, family: ModelFamily | str, counted: CountedRows, *,
                counterfactual: Rows = Rows(), seconds: Timings = Timings(),
                decided: Decided | None = None, stratified: Rows = Rows(),
                stratum_rates: Rows = Rows()) -> CellResult:
    """The :class:`CellResult` of a row set's counted rows (:func:`~faircode.evaluate.counted.
    score_counts`)."""
    return CellResult(
        strategy, family, Rows.of(counted.fairness), Rows.of(counted.performance),
        Rows.of(counted.intersectional), counterfactual, seconds=seconds,
        degenerate=counted.degenerate, decision=tuple(counted.decision.items()),
        decided=decided, groups=Rows.of(counted.groups),
        calibration=Rows.of(counted.calibration),
        calibration_gap=Rows.of(counted.calibration_gap), stratified=stratified,
        stratum_rates=stratum_rates,
    )


def decided_tally(data: PreparedAudit, decided: Decided, *, scale: Scale | None) -> Tally:
    """The counts of a row set's test decisions (:func:`faircode.stats.tally.tally_rows`): its
    groups, units and, on ``scale``, its score (clipped into [0, 1] by :func:`_on_scale`) with
    the calibration bins."""
    test = data.test_index
    score = decided.score
    if score is not None and scale is not None:
        score = _on_scale(score, scale)
    return tally_rows(
        [a.name for a in data.manifest.protected_attributes], data.y[test], decided.y_pred,
        list(_masks(data).values()), units=_units(data), score=score, scale=scale)


def _on_scale(score: np.ndarray, scale: Scale) -> np.ndarray:
    """A probability score with its floating-point excess (S3's mixture can sum to 1 + 1e-16)
    clipped into [0, 1]; anything further out is left for the calibration checks to refuse."""
    if scale != "probability":
        return score
    tolerance = 1e-9
    inside = (score >= -tolerance) & (score <= 1.0 + tolerance)
    return np.where(inside, np.clip(score, 0.0, 1.0), score)


def _fit_timings(seconds: Mapping[str, float]) -> Timings:
    return Timings(fit=seconds.get("fit", 0.0), predict=seconds.get("predict", 0.0),
                   counterfactual=seconds.get("counterfactual", 0.0))


def _units(data: PreparedAudit) -> np.ndarray | None:
    return None if data.unit is None else data.unit[data.test_index]


def _masks(data: PreparedAudit) -> dict[str, np.ndarray]:
    """Each protected attribute's disadvantaged mask on the test rows, in manifest order."""
    test = data.test_index
    return {a.name: data.disadvantaged[a.name][test] for a in data.manifest.protected_attributes}


def _counterfactual_rows(
    data: PreparedAudit, decided: Decided, label: Mapping[str, str], *, stats: StatsConfig,
) -> list[dict[str, Any]]:
    """The flip rate of every counterfactual set of the audit."""
    rows: list[dict[str, Any]] = []
    for perturbed, y_flip in zip(data.perturbed, decided.flipped, strict=True):
        flips = flip_rates(
            decided.y_pred, y_flip, perturbed.changed, axis=perturbed.axis, kind=perturbed.kind,
            favourable=data.manifest.target.favourable, confidence=stats.confidence,
            units=_units(data),
        )
        record = dataclasses.asdict(flips)
        record["kind"] = flips.kind.value
        rows.append({**label, "columns": " ".join(perturbed.columns), **record})
    return rows
