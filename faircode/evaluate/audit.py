"""The evaluate step of one audit: every cell scored, assembled into the four result tables.

:func:`evaluate_audit` scores each cell of an :class:`~faircode.grid.predictions.AuditPredictions`
(from :func:`faircode.grid.fit.fit_audit`, in memory or loaded from ``data/predictions/``) with
:func:`faircode.evaluate.score.score_cell` and assembles the rows into the four tables
(:func:`faircode.evaluate.tables.assemble`: the audit's one Benjamini-Hochberg family).

Design decisions
----------------
* **One operating point per step.**  The audit's decision rule is resolved here, once
  (:func:`faircode.audit.decision.resolve_rule`: the manifest's ``decision`` block, else
  ``threshold`` at ``decision_threshold``), and handed to every cell and to the writer.
* **The fit step's executor.**  Cells are scored as tasks of the same queue that fits them
  (:func:`faircode.grid.scheduler.run_tasks`: ``jobs`` local workers, the audit's data shipped
  once per worker, ``jobs = 1`` in this process); no number depends on ``jobs``.
* An audit with a deployed system (the manifest's ``system:`` block) has it scored beside the
  grid on the same test rows, and on every row on its own (:mod:`faircode.evaluate.deployed`).
* **Operating-point curves** (``curves.csv``, :mod:`faircode.evaluate.curves`) are computed
  here from the scored cells, after the queue: they need nothing the cells do not hold.
* With training replicates (``run.seeds`` > 1, :mod:`faircode.evaluate.stability`) every further
  replicate is scored the same way with its own master seed; replicate 0 is this run's own
  cells, not scored twice.
* The paired effects of the strategies (:mod:`faircode.evaluate.effects`) come from the scored
  cells' decisions, in this process (a few ms per comparison); each further replicate computes
  its own in its task.
* **A tolerance curve** (S5) adds the frontier and the matched-violation comparisons
  (:mod:`faircode.evaluate.frontier`, :mod:`faircode.evaluate.matched`) of replicate 0's cells,
  under the constraint the fit recorded.
* **The ranking view** (:mod:`faircode.evaluate.ranking`) of replicate 0's scored cells and
  the deployed system's score, on the test rows (and the system's on every row, in
  ``deployed/``).
* **One number per cell** (:mod:`faircode.evaluate.claims`): the tables get their verdicts here,
  and with replicates the K-replicate estimates of :mod:`faircode.evaluate.combine` (replicate 0's
  own numbers as ``rep0_*``), so every view that reads them shows the same number.
* With the bag stage's members (``bagged``, :mod:`faircode.grid.bagging`) the bagged ensembles
  and the set of models are scored last (:mod:`faircode.evaluate.arbitrariness`): they read the
  cells' operating points and the claimed ``fairness.csv``.
"""

from __future__ import annotations

import dataclasses
import time

import pandas as pd

from faircode.audit.decision import DecisionRule, resolve_rule
from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import position
from faircode.core.config import (
    ArbitrarinessConfig,
    CurvesConfig,
    DegenerateConfig,
    ReplicateConfig,
    StatsConfig,
    VerdictsConfig,
)
from faircode.core.errors import DataError
from faircode.evaluate import claims, effects, stability
from faircode.evaluate.arbitrariness import score_arbitrariness
from faircode.evaluate.combine import EFFECT_KEYS, GAP_KEYS
from faircode.evaluate.curves import audit_curves, replicate_curves
from faircode.evaluate.deployed import score_system_all_rows, score_system_test_rows
from faircode.evaluate.frontier import frontier_table
from faircode.evaluate.matched import matched_table
from faircode.evaluate.ranking import ranked_cells, ranking_tables
from faircode.evaluate.score import CellResult, score_cell, scoring_seconds
from faircode.evaluate.tables import AuditResults, assemble
from faircode.grid.bagging import BaggedPredictions
from faircode.grid.predictions import AuditPredictions, CellPredictions
from faircode.grid.scheduler import Task, run_tasks

__all__ = ["evaluate_audit", "score_cells"]


def evaluate_audit(
    data: PreparedAudit,
    predictions: AuditPredictions,
    *,
    decision_threshold: float,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    replicates: ReplicateConfig | None = None,
    jobs: int = 1,
    curves: CurvesConfig | None = None,
    verdicts: VerdictsConfig | None = None,
    bagged: BaggedPredictions | None = None,
    arbitrariness: ArbitrarinessConfig | None = None,
) -> AuditResults:
    """Score every cell of ``predictions`` on ``data``; return the four tables.

    ``decision_threshold`` is the operating point of an audit without a ``decision`` block;
    ``verdicts`` the margins and the replicate rule of the claims (default
    :class:`~faircode.core.config.VerdictsConfig`);
    ``replicates`` must match the predictions' (with ``seeds`` > 1 the result also holds
    :attr:`AuditResults.stability` and :attr:`AuditResults.replicates`); ``jobs`` local workers
    score the cells (no number depends on it).  With ``curves`` (``curves.*``) the result also
    holds :attr:`AuditResults.curves` (:func:`faircode.evaluate.curves.audit_curves`).  With
    ``bagged`` (the bag stage's members) also the ensembles' and the set of models' tables
    (:func:`faircode.evaluate.arbitrariness.score_arbitrariness`, at ``arbitrariness``'s level
    and tolerance).
    """
    if predictions.audit != data.manifest.name:
        raise DataError(f"predictions of {predictions.audit!r} cannot be evaluated on "
                        f"{data.manifest.name!r}")
    if predictions.dataset_sha256 and predictions.dataset_sha256 != data.sha256:
        raise DataError(f"{data.manifest.name}: predictions: dataset_sha256: expected "
                        f"{data.sha256}, got {predictions.dataset_sha256}; re-run fit")
    replicates = replicates or ReplicateConfig()
    verdicts = verdicts or VerdictsConfig()
    started = time.perf_counter()
    rule = resolve_rule(data.manifest.decision, default_threshold=decision_threshold)
    results = score_cells(data, predictions.cells, rule=rule, stats=stats,
                          degenerate=degenerate, jobs=jobs)
    system = score_system_test_rows(data, stats=stats, degenerate=degenerate)
    assembled = assemble(data.manifest.name, [*results, *([system] if system else [])],
                         rule=rule, alpha=stats.alpha)
    assembled.deployed = score_system_all_rows(data, stats=stats, degenerate=degenerate,
                                               verdicts=verdicts)
    ranked_at = time.perf_counter()
    ranked = ranking_tables(data, ranked_cells([*results, *([system] if system else [])]),
                            rows=data.test_index, row_set="test", stats=stats,
                            verdicts=verdicts)
    if ranked is not None:
        assembled.ranking, assembled.ranking_topk = ranked
    ranking_seconds = time.perf_counter() - ranked_at
    if curves is not None:  # the operating-point curves (curves.csv) of replicate 0's cells
        assembled.curves = audit_curves(data, results, thresholds=curves.thresholds,
                                        confidence=stats.confidence,
                                        n_resamples=stats.n_resamples)
    if any(c.tolerances for c in predictions.cells):  # a tolerance curve (S5)
        constraint = str(predictions.config["constraint"])
        assembled.frontier = frontier_table(data, results, predictions.cells,
                                            constraint=constraint, stats=stats,
                                            degenerate=degenerate)
        assembled.matched = matched_table(data, results, predictions.cells, stats=stats,
                                          replicates=replicates.seeds)
    single = replicates.seeds == 1 and predictions.seeds == 1
    zero = effects.score_effects(data, results, seed=data.manifest.random_state, stats=stats)
    seconds: dict[str, float] = {
        "statistics": sum(r.seconds.statistics for r in results), "effects": zero.seconds,
        "ranking": ranking_seconds}
    extra = None
    if not single:
        # training replicates (run.seeds > 1): stability.csv, stability_replicates.csv,
        # effects_stability.csv and effects_replicates.csv
        extra = stability.evaluate_stability(
            data, predictions, main=assembled, replicates=replicates, stats=stats,
            degenerate=degenerate, verdicts=verdicts, jobs=jobs, main_effects=zero,
            curves=curves)
        seconds.update({f"replicates_{k}": v for k, v in extra.seconds.items()})
    fairness, intersectional = claims.gap_claims_table(
        assembled.fairness, assembled.intersectional,
        combined=None if extra is None else extra.stability, confidence=stats.confidence,
        alpha=stats.alpha, verdicts=verdicts)
    table = claims.effect_claims_table(
        zero.table, combined=None if extra is None else extra.effects, fairness=fairness,
        confidence=stats.confidence, alpha=stats.alpha, verdicts=verdicts,
        margins=effects.effect_margins(stats))
    assembled = dataclasses.replace(
        assembled, fairness=fairness, intersectional=intersectional, effects=table,
        seconds=seconds, curves=_replicated_curves(assembled.curves, extra, fairness,
                                                   curves=curves, replicates=replicates,
                                                   stats=stats, verdicts=verdicts))
    if bagged is not None:
        t0 = time.perf_counter()
        tables = score_arbitrariness(
            data, bagged, results, fairness, rule=rule, stats=stats, degenerate=degenerate,
            verdicts=verdicts, config=arbitrariness or ArbitrarinessConfig(),
            replicates=predictions.replicates)
        assembled = dataclasses.replace(
            assembled, self_consistency=tables.self_consistency,
            arbitrariness=tables.arbitrariness, multiplicity=tables.multiplicity,
            multiplicity_models=tables.models)
        seconds["arbitrariness"] = time.perf_counter() - t0
    if extra is not None:
        assembled = dataclasses.replace(
            assembled, stability=claims.with_family(extra.stability, fairness, GAP_KEYS),
            replicates=extra.replicates, effect_replicates=extra.effect_replicates,
            effects_stability=None if extra.effects is None else claims.with_family(
                extra.effects, table, EFFECT_KEYS))
    seconds["evaluate"] = time.perf_counter() - started
    return assembled


def _replicated_curves(drawn: pd.DataFrame | None, extra: stability.StabilityTables | None,
                       fairness: pd.DataFrame, *, curves: CurvesConfig | None,
                       replicates: ReplicateConfig, stats: StatsConfig,
                       verdicts: VerdictsConfig) -> pd.DataFrame | None:
    """``curves.csv`` on the tables' footing: at K > 1 every point the K-replicate estimate
    (:func:`faircode.evaluate.curves.replicate_curves`), else replicate 0's curves as drawn."""
    if drawn is None or curves is None or extra is None or not extra.curves:
        return drawn
    return replicate_curves([drawn, *extra.curves], fairness, thresholds=curves.thresholds,
                            seed_mode=replicates.seed_mode, fraction=extra.fraction,
                            confidence=stats.confidence, alpha=stats.alpha, verdicts=verdicts)


def score_cells(
    data: PreparedAudit,
    cells: tuple[CellPredictions, ...],
    *,
    rule: DecisionRule,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    jobs: int,
    master: int | None = None,
) -> list[CellResult]:
    """Every cell scored as a task of the queue (grid order kept); ``master`` as in
    :func:`~faircode.evaluate.score.score_cell`."""
    name = data.manifest.name
    cost = scoring_seconds(data)
    tasks = [Task(audit=name, key=position(c.strategy, c.family), fn=_score_task,
                  args=(c, rule, stats, degenerate, master), cost=cost) for c in cells]
    done = run_tasks(tasks, data={name: data}, jobs=jobs)
    return [done[t.id] for t in tasks]


def _score_task(data: PreparedAudit, cell: CellPredictions, rule: DecisionRule,
                stats: StatsConfig, degenerate: DegenerateConfig,
                master: int | None) -> CellResult:
    """One cell's scoring, as a scheduler task (module level: picklable)."""
    return score_cell(data, cell, rule=rule, stats=stats, degenerate=degenerate, master=master)
