"""Training variance across seeds: every cell re-fitted with K seeds, combined into one estimate.

The closed-form intervals of :mod:`faircode.stats.metrics` hold the fitted model fixed; they say
nothing about what a different model seed (or split) would have given.  With ``run.seeds: K`` > 1
every strategy x model cell is fitted K times, every fairness comparison and paired effect is
scored on each replicate, and the K replicates are combined into the number every view shows.

Replicates and their seeds
--------------------------
* **Replicate 0 is the run itself**: master seed ``manifest.random_state``, the prepared split
  and fit; at K = 1 its numbers are ``fairness.csv``'s and no new file is written.
* Replicate ``k >= 1`` has its own master seed ``r_k`` = the first 32-bit word of
  ``SeedSequence(master, spawn_key=(Stream.REPLICATE, k))`` (:func:`replicate_seed`;
  ``r_0 = master``) and is the pipeline run as if the manifest's ``random_state`` were ``r_k``:
  every estimator and S4's calibration split are seeded with ``r_k``, the randomised S3/S4
  predictions with ``child_seed(r_k, Stream.PREDICTION, s, m)``, every statistic with
  ``child_seed(r_k, <stream>, s, m, ...)``.  Seeds are keyed by (replicate, grid position),
  never by execution order, so results are bit-identical for any worker count.
* ``seed_mode``: ``model`` keeps the prepared train/test split for every replicate (the spread
  is the training randomness alone); ``split`` also re-draws the split with ``r_k`` through the
  prepare step's own function (:func:`faircode.audit.data.split_rows`: stratified on the label, by
  unit when the audit declares one), so the spread adds the sampling of the split.
* A replicate keeps no counterfactual predictions and training scores only where the decision
  rule needs them (``top_fraction``).

Statistics per replicate (:func:`score_replicate`)
--------------------------------------------------
Each replicate's cells are scored by the evaluate step's own cell scorer with master ``r_k``:
same decision rule, orientation, closed-form intervals, permutation p-values and
Benjamini-Hochberg family (every fairness null once plus the intersectional gaps and
interactions of *that replicate*), so a replicate's ``ci_low``/``ci_high``, ``q_value`` and
``significant`` mean what they mean in a K = 1 ``fairness.csv``
(``stability_replicates.csv``).  Each further replicate's task also computes its paired effects
(:func:`faircode.evaluate.effects.score_effects`: its own decisions of both strategies on its
own test rows, at master ``r_k``; ``effects_replicates.csv``); replicate 0's are the evaluate
step's, never computed twice.

The combination (:mod:`faircode.evaluate.combine`)
--------------------------------------------------
Every row's K replicates -- replicate 0 like the others -- are combined into one estimate with
an interval for it (:mod:`faircode.stats.replicates`: the mean over the informative replicates,
``√(s_b²/K + f·w̄)`` with the sampling fraction ``f`` of :func:`fraction`), its p-value, its
equivalence test and the one rule for degenerate replicates: ``stability.csv`` and
``effects_stability.csv``.  These are the numbers ``fairness.csv`` and ``effects.csv`` then
carry (:mod:`faircode.evaluate.claims`), replicate 0's own under ``rep0_*``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit.decision import DecisionRule
from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import Strategy
from faircode.core.config import (
    CurvesConfig,
    DegenerateConfig,
    ReplicateConfig,
    StatsConfig,
    VerdictsConfig,
)
from faircode.core.errors import DataError
from faircode.core.seeds import Stream, replicate_seed
from faircode.evaluate import combine
from faircode.evaluate import effects as paired_effects
from faircode.evaluate.combine import STABILITY_COLUMNS
from faircode.evaluate.curves import audit_curves
from faircode.evaluate.score import score_cell, scoring_seconds
from faircode.evaluate.tables import AuditResults, assemble
from faircode.grid.predictions import AuditPredictions, ReplicatePredictions
from faircode.grid.scheduler import Task, run_tasks
from faircode.stats.replicates import sampling_fraction

__all__ = [
    "EFFECT_REPLICATE_COLUMNS",
    "REPLICATE_COLUMNS",
    "STABILITY_COLUMNS",
    "ReplicateScores",
    "StabilityTables",
    "evaluate_stability",
    "fraction",
    "replicate_table",
    "run_record",
    "score_replicate",
    "training_variance",
]

KEYS = combine.GAP_KEYS
REPLICATE_COLUMNS: tuple[str, ...] = (
    "audit", "replicate", "seed", *KEYS, "value", "ci_low", "ci_high", "p_value", "q_value",
    "significant", "note",
)
"""Columns of ``stability_replicates.csv`` (one row per replicate x fairness row)."""
EFFECT_REPLICATE_COLUMNS: tuple[str, ...] = (
    "audit", "replicate", "seed", *combine.EFFECT_KEYS, "value", "ci_low", "ci_high",
    "p_value", "q_value", "significant", "note",
)
"""Columns of ``effects_replicates.csv`` (one row per replicate x effect row)."""


def _replicate_data(data: PreparedAudit, test_index: np.ndarray) -> PreparedAudit:
    """``data`` with test rows ``test_index`` (training rows: the others), no counterfactuals."""
    if np.array_equal(test_index, data.test_index):
        return dataclasses.replace(data, perturbed=())
    train = np.setdiff1d(np.arange(len(data.y)), test_index)
    return dataclasses.replace(data, train_index=train, test_index=np.asarray(test_index),
                               perturbed=())


@dataclass(frozen=True, slots=True)
class ReplicateScores:
    """One replicate's fairness rows (``fairness.csv`` columns, its own q-values), its paired
    effects (:mod:`faircode.evaluate.effects`) and the statistics seconds of its cells."""

    replicate: int
    seed: int
    fairness: pd.DataFrame
    effects: paired_effects.ReplicateEffects | None = None
    seconds: float = 0.0
    curves: pd.DataFrame | None = None
    """Its operating-point curves (:func:`faircode.evaluate.curves.audit_curves`), when asked."""


def score_replicate(
    data: PreparedAudit,
    cells: Sequence[ReplicatePredictions],
    *,
    replicate: int,
    rule: DecisionRule,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    curves: CurvesConfig | None = None,
) -> ReplicateScores:
    """Score one further replicate's cells (grid order): fairness rows with the replicate's own
    BH q-values, its paired effects (module docstring) and, with ``curves``, its
    operating-point curves at its own master seed.  A worker task."""
    manifest = data.manifest
    seed = replicate_seed(manifest.random_state, replicate)
    if not cells:
        raise ValueError("score_replicate: cells: expected the replicate's cells, got none")
    test = next((c.test_index for c in cells if c.cell.fitted), cells[0].test_index)
    if any(not np.array_equal(c.test_index, test) for c in cells if c.cell.fitted):
        raise DataError(f"{manifest.name}: replicate {replicate}: its cells differ in test rows")
    view = _replicate_data(data, test)
    results = [score_cell(view, c.cell, rule=rule, stats=stats, degenerate=degenerate,
                          master=seed, detail=False) for c in cells]
    fairness = assemble(manifest.name, results, rule=rule, alpha=stats.alpha).fairness
    effects = paired_effects.score_effects(view, results, seed=seed, stats=stats,
                                           replicate=replicate)
    drawn = None if curves is None else audit_curves(
        view, results, thresholds=curves.thresholds, confidence=stats.confidence,
        n_resamples=stats.n_resamples, master=seed)
    return ReplicateScores(replicate, seed, fairness.reset_index(drop=True), effects,
                           sum(r.seconds.statistics for r in results), drawn)


def fraction(data: PreparedAudit, replicates: ReplicateConfig) -> float:
    """The sampling fraction ``f`` of :mod:`faircode.stats.replicates`: 1 in ``model`` mode,
    the test share of the units (rows without a declared unit) in ``split`` mode."""
    test, total = len(data.test_index), len(data.y)
    if data.unit is not None:
        test = int(np.unique(np.asarray(data.unit)[data.test_index]).size)
        total = int(np.unique(np.asarray(data.unit)).size)
    return sampling_fraction(seed_mode=replicates.seed_mode, n_test=test, n_total=total)


def replicate_table(scores: Sequence[ReplicateScores]) -> pd.DataFrame:
    """``stability_replicates.csv``: every replicate's fairness rows (value, interval, p, q)."""
    return _stack([(s.replicate, s.seed, s.fairness) for s in scores], REPLICATE_COLUMNS)


def _stack(tables: Sequence[tuple[int, int, pd.DataFrame]],
           columns: tuple[str, ...]) -> pd.DataFrame:
    frames = []
    for replicate, seed, table in tables:
        frame = table.loc[:, [c for c in columns if c not in ("replicate", "seed")]].copy()
        frame.insert(1, "replicate", replicate)
        frame.insert(2, "seed", seed)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True).loc[:, list(columns)]


def _by_replicate(predictions: AuditPredictions) -> list[list[ReplicatePredictions]]:
    """Every stored replicate ``1..seeds-1``, each in grid order."""
    groups: dict[int, list[ReplicatePredictions]] = {}
    for r in predictions.replicates:
        groups.setdefault(r.replicate, []).append(r)
    expected = list(range(1, predictions.seeds))
    n_cells = len(predictions.cells)
    if sorted(groups) != expected or any(len(g) != n_cells for g in groups.values()):
        raise DataError(f"{predictions.audit}: predictions: replicates: expected replicates "
                        f"{expected} of {n_cells} cells each, got "
                        f"{ {k: len(v) for k, v in sorted(groups.items())} }; re-run fit")
    return [groups[k] for k in expected]


@dataclass(frozen=True, slots=True)
class StabilityTables:
    """What the training replicates add to an audit's results: ``stability.csv`` and
    ``effects_stability.csv`` (the K-replicate rows, without their families' columns,
    :mod:`faircode.evaluate.combine`), ``stability_replicates.csv`` and
    ``effects_replicates.csv`` (every replicate's rows; the effects None without replicate 0's
    effects), and the statistics seconds of the further replicates (cells, effects)."""

    stability: pd.DataFrame
    replicates: pd.DataFrame
    effects: pd.DataFrame | None = None
    effect_replicates: pd.DataFrame | None = None
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    curves: tuple[pd.DataFrame, ...] = ()
    """The further replicates' curves (replicate order; none without ``curves``)."""
    fraction: float = 1.0
    """The sampling fraction the replicates were combined with (:func:`fraction`)."""


def evaluate_stability(
    data: PreparedAudit,
    predictions: AuditPredictions,
    *,
    main: AuditResults,
    replicates: ReplicateConfig,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    verdicts: VerdictsConfig,
    jobs: int,
    main_effects: paired_effects.ReplicateEffects | None = None,
    curves: CurvesConfig | None = None,
) -> StabilityTables:
    """Score every further replicate of ``predictions`` and combine them with replicate 0.

    Replicate 0 is ``main``, the run's own scored cells, and ``main_effects`` their effects
    (never scored again).  ``predictions`` must hold the ``replicates.seeds`` replicates in
    ``replicates.seed_mode``; the further replicates are scored as tasks of the queue on
    ``jobs`` workers (no number depends on it).
    """
    if (predictions.seeds, predictions.seed_mode) != (replicates.seeds, replicates.seed_mode):
        raise DataError(
            f"{predictions.audit}: predictions: run.seeds/run.seed_mode: expected "
            f"{replicates.seeds}/{replicates.seed_mode} as configured, got "
            f"{predictions.seeds}/{predictions.seed_mode}; re-run fit")
    name = data.manifest.name
    # replicate 0: the run's own grid cells (the deployed system is no replicate), in a family
    # of the grid's own tests as every further replicate's (re-assembled, not re-scored)
    grid = [c for c in main.cells if c.strategy in tuple(Strategy)]
    fairness = main.fairness if len(grid) == len(main.cells) else assemble(
        name, grid, rule=main.rule, alpha=stats.alpha).fairness
    zero = ReplicateScores(0, data.manifest.random_state, fairness.reset_index(drop=True),
                           main_effects)
    cost = len(grid) * scoring_seconds(data) * 2  # cells, then their effects
    tasks = [Task(audit=name, key=(k,), fn=_replicate_task,
                  args=(cells, k, main.rule, stats, degenerate, curves), cost=cost)
             for k, cells in enumerate(_by_replicate(predictions), start=1)]
    done = run_tasks(tasks, data={name: data}, jobs=jobs)
    further = [done[t.id] for t in tasks]
    scores = [zero, *further]
    f = fraction(data, replicates)

    def combined(fn: Any, tables: list[pd.DataFrame]) -> pd.DataFrame:
        return fn(tables, audit=name, seed_mode=replicates.seed_mode, fraction=f,
                  confidence=stats.confidence, alpha=stats.alpha, verdicts=verdicts)

    effects = effect_rows = None
    if main_effects is not None:
        pairs = [(s.replicate, s.seed, s.effects.table) for s in scores if s.effects is not None]
        effects = combined(combine.combine_effects, [t for *_, t in pairs])
        effect_rows = _stack(pairs, EFFECT_REPLICATE_COLUMNS)
    seconds = {"statistics": sum(s.seconds for s in further),
               "effects": sum(s.effects.seconds for s in further if s.effects is not None)}
    return StabilityTables(
        combined(combine.combine_gaps, [s.fairness for s in scores]),
        replicate_table(scores), effects, effect_rows, seconds,
        tuple(s.curves for s in further if s.curves is not None), f)


def _replicate_task(data: PreparedAudit, cells: Sequence[ReplicatePredictions], replicate: int,
                    rule: DecisionRule, stats: StatsConfig, degenerate: DegenerateConfig,
                    curves: CurvesConfig | None) -> ReplicateScores:
    """One replicate's scoring, as a scheduler task (module level: picklable)."""
    return score_replicate(data, cells, replicate=replicate, rule=rule, stats=stats,
                           degenerate=degenerate, curves=curves)


def run_record(replicates: ReplicateConfig, *, master: int) -> dict[str, Any]:
    """run.json's record of the replicates (only written when ``seeds > 1``)."""
    return {
        "seeds": replicates.seeds, "mode": replicates.seed_mode,
        "masters": [replicate_seed(master, k) for k in range(replicates.seeds)],
        "scheme": "replicate 0: the master seed; replicate k >= 1: first 32-bit word of "
                  f"SeedSequence(master, spawn_key=({int(Stream.REPLICATE)}, k)), used as the "
                  "master seed of the whole run (models, S4 calibration split, predictions, "
                  "statistics" + (", train/test split" if replicates.seed_mode == "split"
                                  else "")
                  + ")",
    }


def training_variance(replicates: ReplicateConfig) -> dict[str, Any]:
    """run.json's ``training_variance``: whether the run's intervals include it, and where."""
    if replicates.seeds == 1:
        return {"included": False, "replicates": 1,
                "note": "run.seeds 1: every interval, p-value and significance flag reflects "
                        "test-sample noise of one fit only; training variance is not included "
                        "(run.seeds > 1 adds it)"}
    return {"included": True, "replicates": replicates.seeds, "seed_mode": replicates.seed_mode,
            "note": "fairness.csv and effects.csv carry the K-replicate estimate with an "
                    "interval for it (sampling and training variance, stability.csv and "
                    "effects_stability.csv); replicate 0's own numbers are its rep0_* columns"}
