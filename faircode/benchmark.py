"""The grid: every strategy x model cell of an audit, fitted (here) and then scored (evaluate).

For one audit the grid is two steps, so a change of threshold or statistics never refits:

1. :func:`fit_audit` fits the 5 strategies x 3 model families (15 cells) on the training rows
   and keeps only their predictions (:class:`~faircode.predictions.AuditPredictions`): the test
   rows' scores (and decisions of the randomised S3/S4), the training rows' scores, and the
   predictions of every counterfactual test-row set.
2. :func:`~faircode.evaluate.evaluate_audit` applies ``decision_threshold`` and computes every
   metric, interval, p- and q-value into the four result tables.

:func:`run_audit` is both in memory (``faircode run``); the DVC pipeline runs them as the
``fit`` and ``evaluate`` stages with the predictions stored in between.  The numbers are
bit-identical either way.

Reproducibility: one master seed, the manifest's ``random_state``.  Each stochastic step draws
from its own child stream ``SeedSequence(master, spawn_key=(stream, strategy, model, ...))``
(see :class:`~faircode.predictions.Stream`), keyed by *position in the grid*, not by execution
order, so results are bit-identical for any ``jobs`` and any completion order.  Models are
seeded with the master seed itself, as the manifest spec requires.  Training replicates
(``run.seeds`` > 1) re-fit every cell with derived master seeds (:mod:`faircode.stability`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence

from joblib import Parallel, delayed

from faircode.config import BenchmarkConfig
from faircode.counterfactual import PerturbedRows
from faircode.data import AuditData
from faircode.decision import resolve_rule
from faircode.evaluate import (
    FAIRNESS_COLUMNS,
    AuditResults,
    CellResult,
    evaluate_audit,
    provenance,
    write_audit,
)
from faircode.models import ModelFamily
from faircode.predictions import AuditPredictions, CellPredictions, ReplicatePredictions, Stream
from faircode.prepared import PreparedAudit, manifest_sha256, prepare
from faircode.stability import fit_replicate
from faircode.stats import child_seed
from faircode.strategies import Strategy, fit_strategy, supports_constraint

__all__ = [
    "FAIRNESS_COLUMNS",
    "AuditResults",
    "CellResult",
    "Stream",
    "fit_audit",
    "grid_cells",
    "provenance",
    "run_audit",
    "write_audit",
]

FIT_KEYS = ("constraint", "eps", "max_iter")
"""The config keys the fit step reads (``jobs`` only sets the worker count, not a result)."""


def grid_cells() -> list[tuple[Strategy, ModelFamily]]:
    """The 15 strategy x model cells in grid (report and seed-key) order."""
    return list(itertools.product(Strategy, ModelFamily))


def fit_audit(
    data: PreparedAudit,
    *,
    config: BenchmarkConfig,
    on_cell_done: Callable[[CellPredictions], None] | None = None,
) -> AuditPredictions:
    """Fit every cell of the grid on ``data`` and return their predictions (grid order).

    Reads ``constraint``, ``eps``, ``max_iter``, ``seeds``, ``seed_mode`` and ``jobs`` of
    ``config`` only.  With ``seeds`` K > 1 the training replicates 1..K-1 of every cell
    (:func:`~faircode.stability.fit_replicate`) run in the same worker pool.
    ``on_cell_done`` is called in the parent process as each cell finishes (progress display).
    """
    cells = grid_cells()
    tasks = [delayed(_fit_cell)(data, s, m, data.perturbed, config) for s, m in cells]
    tasks += [delayed(fit_replicate)(data, s, m, k, config)
              for k in range(1, config.seeds) for s, m in cells]
    jobs = min(config.jobs, len(tasks))
    results: list[CellPredictions] = []
    replicates: list[ReplicatePredictions] = []
    for result in Parallel(n_jobs=jobs, return_as="generator_unordered")(tasks):
        if isinstance(result, ReplicatePredictions):
            replicates.append(result)
            continue
        results.append(result)
        if on_cell_done is not None:
            on_cell_done(result)
    order = {cell: i for i, cell in enumerate(cells)}
    results.sort(key=lambda r: order[(r.strategy, r.family)])
    replicates.sort(key=lambda r: (r.replicate, order[(r.cell.strategy, r.cell.family)]))
    return AuditPredictions(
        audit=data.manifest.name, cells=tuple(results),
        config={k: getattr(config, k) for k in FIT_KEYS},
        manifest_sha256=manifest_sha256(data.manifest), dataset_sha256=data.sha256,
        replicates=tuple(replicates), seeds=config.seeds, seed_mode=config.seed_mode,
    )


def run_audit(
    data: AuditData,
    *,
    config: BenchmarkConfig,
    on_cell_done: Callable[[CellPredictions], None] | None = None,
) -> AuditResults:
    """Run the full grid on one loaded audit (fit, then evaluate, in memory)."""
    prepared = prepare(data)
    predictions = fit_audit(prepared, config=config, on_cell_done=on_cell_done)
    return evaluate_audit(prepared, predictions, config=config)


def _fit_cell(
    data: PreparedAudit,
    strategy: Strategy,
    family: ModelFamily,
    perturbed: Sequence[PerturbedRows],
    config: BenchmarkConfig,
) -> CellPredictions:
    """Fit one cell and predict its test, training and counterfactual rows (in a worker)."""
    if not supports_constraint(strategy, config.constraint):
        return CellPredictions(strategy, family, skipped=(
            f"{strategy.value} cannot enforce constraint {config.constraint!r}"))
    manifest = data.manifest
    s, m = list(Strategy).index(strategy), list(ModelFamily).index(family)
    first = data.disadvantaged[manifest.protected_attributes[0].name]
    train, test = data.train_index, data.test_index
    randomised = strategy in (Strategy.IN_PROCESSING, Strategy.POST_PROCESSING)

    t0 = time.perf_counter()
    fitted = fit_strategy(
        strategy, family, X=data.X.iloc[train], y=data.y[train], sensitive=first[train],
        manifest=manifest, config=config,
        groups=None if data.unit is None else data.unit[train],
        decision=resolve_rule(manifest.decision, default_threshold=config.decision_threshold),
    )
    t1 = time.perf_counter()
    seed = int(child_seed(manifest.random_state, Stream.PREDICTION, s, m).generate_state(1)[0])
    y_pred, y_score = fitted.predict(data.X.iloc[test], sensitive=first[test], random_state=seed)
    t2 = time.perf_counter()
    cf_score, cf_decision = [], []
    for rows in perturbed:
        flip, score = fitted.predict(rows.X, sensitive=rows.sensitive, random_state=seed)
        cf_score.append(score)
        cf_decision.append(flip if randomised else None)
    t3 = time.perf_counter()
    _, train_score = fitted.predict(data.X.iloc[train], sensitive=first[train], random_state=seed)
    return CellPredictions(
        strategy, family, test_score=y_score, test_decision=y_pred if randomised else None,
        train_score=train_score, counterfactual_score=tuple(cf_score),
        counterfactual_decision=tuple(cf_decision),
        seconds={"fit": t1 - t0, "predict": t2 - t1, "counterfactual": t3 - t2},
        objective=fitted.objective,
    )
