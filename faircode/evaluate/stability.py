"""Training variance across seeds: every cell re-fitted with K seeds, and how far its gaps move.

The bootstrap intervals of :mod:`faircode.stats.metrics` hold the fitted model fixed; they say
nothing
about what a different model seed (or split) would have given.  With ``run.seeds: K`` > 1 every
strategy x model cell is fitted K times and every fairness comparison is scored on each
replicate; ``stability.csv`` summarises, per cell x attribute x metric, how much the gap moves.

Replicates and their seeds
--------------------------
* **Replicate 0 is the run itself**: master seed ``manifest.random_state``, the prepared split,
  today's fit and today's numbers (``fairness.csv`` is replicate 0's table).  With K = 1 nothing
  else happens and no new file is written.
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
  unit
  when the audit declares one), so the spread adds the sampling of the split.
* A replicate keeps no counterfactual predictions and training scores only where the decision
  rule needs them (``top_fraction``).

Statistics per replicate (:func:`score_replicate`)
--------------------------------------------------
Each replicate's cells are scored by the evaluate step's own cell scorer with master ``r_k``:
same decision rule, orientation, permutation p-values and Benjamini-Hochberg family (every
fairness null once plus the intersectional gaps and interactions of *that replicate*), so a
replicate's ``q_value``/``significant`` mean what they mean in ``fairness.csv``.  Its bootstrap
distribution of every comparison comes from the count-level engine at ``stats.n_resamples``:
the stream ``child_seed(r_k, Stream.FAIRNESS, s, m, a, metric index, 0)`` -- exactly
:func:`faircode.stats.metrics.bootstrap_distribution` at the row's seed -- each group resampled at
its own size; with repeated units the cluster bootstrap of :mod:`faircode.stats.clusters` from the
same stream (bit-identical to the row bootstrap with one row per unit).

The summary (:func:`aggregate`)
-------------------------------
Over the K replicates' values: mean, between-seed SD (``ddof=1``), min, max (over the seeds
where the metric is defined, ``n_defined``); ``share_significant`` (share of all K seeds with
``significant``, i.e. ``q < alpha`` as in ``fairness.csv``); ``sign_flips`` (some seed's gap is
above and another's below the no-gap value: 0, 1 for disparate impact; never for equalized
odds, an unsigned magnitude).  ``combined_ci_low``/``combined_ci_high`` is the percentile
interval (``stats.confidence``) of the **mixture of the per-seed bootstrap distributions**: the
K x B draws pooled with equal weight per seed.  Each seed's draws are its own percentile
bootstrap, centred where the engine's percentile bootstrap centres them (on that seed's
estimate, uncorrected), so the pooled spread is, by the law of total variance, the mean
within-seed bootstrap variance (``sd_bootstrap`` is its root) plus the between-seed variance of
the estimates.  Non-finite draws are dropped as
:func:`faircode.stats.resampling.percentile_interval`
drops them.  ``note`` joins the notes the seeds' ``fairness.csv`` rows would carry (e.g.
``degenerate_decisions``, ``insufficient_data``); ``n_degenerate`` counts the seeds whose cell
is uninformative: degenerate, or not fitted at all (``unfittable``: a group too small for that
seed's split).

Paired effects across replicates
--------------------------------
Each further replicate's task also computes its paired effects
(:func:`faircode.evaluate.effects.score_effects`: its own decisions of both strategies on its
own test rows, at master ``r_k``) and keeps their draws; replicate 0's come from the evaluate
step (never computed twice), and :func:`faircode.evaluate.effects.combine` pools them into
``effects_stability.csv``.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit.decision import DecisionRule
from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import ModelFamily, Strategy, position
from faircode.core.config import DegenerateConfig, ReplicateConfig, StatsConfig
from faircode.core.errors import DataError
from faircode.core.seeds import Stream, child_seed, replicate_seed
from faircode.evaluate import effects as paired_effects
from faircode.evaluate.score import CellResult, score_cell, scoring_seconds
from faircode.evaluate.tables import AuditResults, assemble
from faircode.grid.predictions import AuditPredictions, ReplicatePredictions
from faircode.grid.scheduler import Task, run_tasks
from faircode.stats.metrics import FAIRNESS_METRICS, bootstrap_draws
from faircode.stats.operating import DEGENERATE_NOTE, UNFITTABLE_NOTE

__all__ = [
    "REPLICATE_COLUMNS",
    "STABILITY_COLUMNS",
    "ReplicateScores",
    "StabilityTables",
    "aggregate",
    "evaluate_stability",
    "replicate_scores",
    "replicate_table",
    "run_record",
    "score_replicate",
    "training_variance",
]

KEYS = ("strategy", "model", "protected_attribute", "metric")
STABILITY_COLUMNS: tuple[str, ...] = (
    "audit", *KEYS, "seeds", "seed_mode", "value_replicate0", "mean", "sd_between", "min", "max",
    "n_defined", "share_significant", "sign_flips", "sd_bootstrap", "combined_ci_low",
    "combined_ci_high", "n_degenerate", "note",
)
"""Columns of ``stability.csv`` (one row per cell x attribute x metric, as ``fairness.csv``)."""

REPLICATE_COLUMNS: tuple[str, ...] = (
    "audit", "replicate", "seed", *KEYS, "value", "p_value", "q_value", "significant", "note",
)
"""Columns of ``stability_replicates.csv`` (one row per replicate x fairness row)."""


def _replicate_data(data: PreparedAudit, test_index: np.ndarray) -> PreparedAudit:
    """``data`` with test rows ``test_index`` (training rows: the others), no counterfactuals."""
    if np.array_equal(test_index, data.test_index):
        return dataclasses.replace(data, perturbed=())
    train = np.setdiff1d(np.arange(len(data.y)), test_index)
    return dataclasses.replace(data, train_index=train, test_index=np.asarray(test_index),
                               perturbed=())


@dataclass(frozen=True, slots=True)
class ReplicateScores:
    """One replicate's fairness rows (``fairness.csv`` columns, its own q-values) and the
    bootstrap draws behind each row, shape ``(rows, n_resamples)`` (NaN rows where the metric is
    undefined); its paired effects with their draws (:mod:`faircode.evaluate.effects`) and the
    statistics seconds of its cells."""

    replicate: int
    seed: int
    fairness: pd.DataFrame
    draws: np.ndarray
    effects: paired_effects.ReplicateEffects | None = None
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.draws.ndim != 2 or self.draws.shape[0] != len(self.fairness):
            raise ValueError(f"ReplicateScores: draws: expected shape ({len(self.fairness)}, B), "
                             f"got {self.draws.shape}")


def score_replicate(
    data: PreparedAudit,
    cells: Sequence[ReplicatePredictions],
    *,
    replicate: int,
    rule: DecisionRule,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
) -> ReplicateScores:
    """Score one further replicate's cells (grid order): fairness rows with the replicate's own
    BH q-values, and every row's bootstrap draws (module docstring).  A worker task."""
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
    scores = replicate_scores(view, results, fairness, replicate=replicate, seed=seed,
                              n_resamples=stats.n_resamples)
    effects = paired_effects.score_effects(view, results, seed=seed, stats=stats,
                                           replicate=replicate, keep_draws=True)
    return dataclasses.replace(scores, effects=effects, seconds=sum(
        r.seconds.statistics for r in results))


def replicate_scores(
    data: PreparedAudit,
    results: Sequence[CellResult],
    fairness: pd.DataFrame,
    *,
    replicate: int,
    seed: int,
    n_resamples: int,
) -> ReplicateScores:
    """A scored replicate's :class:`ReplicateScores`: its fairness table and, from each
    cell's oriented decisions, the bootstrap draws of every row (stream
    ``child_seed(seed, Stream.FAIRNESS, s, m, a)`` of
    :func:`faircode.stats.metrics.bootstrap_draws`)."""
    attributes = data.manifest.protected_attributes
    test = data.test_index
    units = None if data.unit is None else data.unit[test]
    blocks: list[np.ndarray] = []
    for result in results:
        if result.skipped:
            continue
        if result.unfittable:  # its rows are NaN: so are their draws
            blocks.append(np.full((len(attributes) * len(FAIRNESS_METRICS), n_resamples), np.nan))
            continue
        assert result.decided is not None  # every scored cell keeps its decisions
        s, m = position(Strategy(result.strategy), ModelFamily(result.family))
        for a, attribute in enumerate(attributes):
            blocks.append(bootstrap_draws(
                result.decided.y_fav, result.decided.yhat_fav,
                np.asarray(data.disadvantaged[attribute.name][test], dtype=bool),
                n_resamples=n_resamples, seed=child_seed(seed, Stream.FAIRNESS, s, m, a),
                units=units))
    draws = np.concatenate(blocks) if blocks else np.empty((0, n_resamples))
    draws[~np.isfinite(fairness["value"].to_numpy(dtype=float))] = np.nan
    return ReplicateScores(replicate, seed, fairness.reset_index(drop=True), draws)


def aggregate(
    scores: Sequence[ReplicateScores], *, seed_mode: str, confidence: float
) -> pd.DataFrame:
    """``stability.csv``'s rows from every replicate's scores (replicate order; module
    docstring for each column)."""
    if not scores:
        raise ValueError("aggregate: scores: expected at least one replicate, got none")
    first = scores[0].fairness
    keys = first.loc[:, list(KEYS)].reset_index(drop=True)
    for other in scores[1:]:
        if not other.fairness.loc[:, list(KEYS)].reset_index(drop=True).equals(keys):
            raise ValueError(f"aggregate: replicate {other.replicate}: expected the rows of "
                             "replicate 0 in the same order")
    values = np.stack([s.fairness["value"].to_numpy(dtype=float) for s in scores], axis=1)
    significant = np.stack([s.fairness["significant"].to_numpy(dtype=bool) for s in scores], 1)
    draws = np.stack([s.draws for s in scores], axis=1)  # (rows, K, B)
    draws = np.where(np.isfinite(draws), draws, np.nan)
    n_rows, k = values.shape
    metric = keys["metric"].to_numpy()
    finite = np.isfinite(values)
    null = np.where(metric == "disparate_impact_ratio", 1.0, 0.0)[:, None]
    signed = metric != "equalized_odds_diff"
    tail = (1.0 - confidence) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows give NaN, as intended
        mean = np.nanmean(values, axis=1)
        sd = np.nanstd(values, axis=1, ddof=1)
        low_high = np.nanquantile(draws.reshape(n_rows, -1), [tail, 1.0 - tail], axis=1)
        sd_boot = np.sqrt(np.nanmean(np.nanvar(draws, axis=2, ddof=1), axis=1))
        lowest = np.nanmin(values, axis=1) if n_rows else np.empty(0)
        highest = np.nanmax(values, axis=1) if n_rows else np.empty(0)
    n_defined = finite.sum(axis=1)
    sd = np.where(n_defined >= 2, sd, np.nan)
    flips = signed & (finite & (values > null)).any(axis=1) & (finite & (values < null)).any(1)
    notes = np.stack([s.fairness["note"].fillna("").astype(str).to_numpy() for s in scores], 1)
    degenerate = ((np.char.find(notes.astype(str), DEGENERATE_NOTE) >= 0)
                  | (np.char.find(notes.astype(str), UNFITTABLE_NOTE) >= 0))  # uninformative
    frame = pd.DataFrame({
        "audit": first["audit"].to_numpy() if len(first) else np.empty(0, dtype=object),
        **{c: keys[c].to_numpy() for c in KEYS},
        "seeds": k, "seed_mode": seed_mode, "value_replicate0": values[:, 0], "mean": mean,
        "sd_between": sd, "min": lowest, "max": highest, "n_defined": n_defined,
        "share_significant": significant.mean(axis=1), "sign_flips": flips,
        "sd_bootstrap": sd_boot, "combined_ci_low": low_high[0], "combined_ci_high": low_high[1],
        "n_degenerate": degenerate.sum(axis=1), "note": [_join_notes(row) for row in notes],
    })
    return frame.loc[:, list(STABILITY_COLUMNS)]


def _join_notes(notes: Sequence[str]) -> str:
    """The distinct note parts of one row over the seeds, in order of first appearance."""
    parts: dict[str, None] = {}
    for note in notes:
        parts.update(dict.fromkeys(p for p in note.split(";") if p))
    return ";".join(parts)


def replicate_table(scores: Sequence[ReplicateScores]) -> pd.DataFrame:
    """``stability_replicates.csv``: every replicate's fairness rows (value, p, q, note)."""
    frames = []
    for s in scores:
        frame = s.fairness.loc[:, ["audit", *KEYS, "value", "p_value", "q_value",
                                   "significant", "note"]].copy()
        frame.insert(1, "replicate", s.replicate)
        frame.insert(2, "seed", s.seed)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True).loc[:, list(REPLICATE_COLUMNS)]


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
    """What the training replicates add to an audit's results: ``stability.csv``,
    ``stability_replicates.csv``, ``effects_stability.csv`` (None without replicate 0's effect
    draws), and the statistics seconds of the further replicates (cells, effects)."""

    stability: pd.DataFrame
    replicates: pd.DataFrame
    effects: pd.DataFrame | None = None
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)


def evaluate_stability(
    data: PreparedAudit,
    predictions: AuditPredictions,
    *,
    main: AuditResults,
    replicates: ReplicateConfig,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    jobs: int,
    main_effects: paired_effects.ReplicateEffects | None = None,
) -> StabilityTables:
    """Score every further replicate of ``predictions`` and summarise them.

    Replicate 0 is ``main``, the run's own scored cells, and ``main_effects`` their effects with
    draws (never scored again).  ``predictions`` must hold the ``replicates.seeds`` replicates in
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
    zero = replicate_scores(data, grid, fairness, replicate=0,
                            seed=data.manifest.random_state, n_resamples=stats.n_resamples)
    cost = len(grid) * scoring_seconds(data) * 2  # cells, then their effects
    tasks = [Task(audit=name, key=(k,), fn=_replicate_task,
                  args=(cells, k, main.rule, stats, degenerate), cost=cost)
             for k, cells in enumerate(_by_replicate(predictions), start=1)]
    done = run_tasks(tasks, data={name: data}, jobs=jobs)
    further = [done[t.id] for t in tasks]
    scores = [zero, *further]
    effects = None
    if main_effects is not None:
        effects = paired_effects.combine(
            [main_effects, *(s.effects for s in further if s.effects is not None)],
            seed_mode=replicates.seed_mode, confidence=stats.confidence)
    seconds = {"statistics": sum(s.seconds for s in further),
               "effects": sum(s.effects.seconds for s in further if s.effects is not None)}
    return StabilityTables(
        aggregate(scores, seed_mode=replicates.seed_mode, confidence=stats.confidence),
        replicate_table(scores), effects, seconds)


def _replicate_task(data: PreparedAudit, cells: Sequence[ReplicatePredictions], replicate: int,
                    rule: DecisionRule, stats: StatsConfig,
                    degenerate: DegenerateConfig) -> ReplicateScores:
    """One replicate's scoring, as a scheduler task (module level: picklable)."""
    return score_replicate(data, cells, replicate=replicate, rule=rule, stats=stats,
                           degenerate=degenerate)


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
                        "(run.seeds > 1 adds stability.csv and effects_stability.csv)"}
    return {"included": True, "replicates": replicates.seeds, "seed_mode": replicates.seed_mode,
            "note": "stability.csv and effects_stability.csv pool the replicates' bootstrap "
                    "draws (sampling and training variance); fairness.csv and effects.csv are "
                    "replicate 0 alone"}
