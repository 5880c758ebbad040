"""The grid: every strategy x model cell of an audit, fitted (here) and then scored (evaluate).

For one audit the grid is two steps, so a change of threshold or statistics never refits:

1. :func:`fit_audits` fits the 5 strategies x 3 model families (15 cells) of every audit of a
   run, as one queue of tasks (:mod:`faircode.grid.scheduler`: longest expected cell first, on one
   pool of local worker processes or a Dask cluster), and keeps only their predictions
   (:class:`~faircode.grid.predictions.AuditPredictions`): the test
   rows' scores (and decisions of the randomised S3/S4), the training rows' scores, and the
   predictions of every counterfactual test-row set.
2. :func:`~faircode.evaluate.audit.evaluate_audit` applies ``decision_threshold`` and computes every
   metric, interval, p- and q-value into the four result tables.

:func:`fit_audit` is the one-audit case.  :func:`run_audit` is both steps in memory; ``faircode
run`` fits every requested audit in one queue, then evaluates each; the DVC pipeline runs them as
the ``fit`` and ``evaluate`` stages with the predictions stored in between.  The numbers are
bit-identical either way.

Reproducibility: one master seed, the manifest's ``random_state``.  Each stochastic step draws
from its own child stream ``SeedSequence(master, spawn_key=(stream, strategy, model, ...))``
(see :class:`~faircode.core.seeds.Stream`), keyed by *position in the grid*, not by execution
order, so results are bit-identical for any ``jobs``, backend, dispatch and completion order.
Models are seeded with the master seed itself, as the manifest spec requires.  Training
replicates (``run.seeds`` > 1) re-fit every cell with derived master seeds
(:mod:`faircode.evaluate.stability`); they are tasks of the same queue, keyed ``(strategy, model,
k)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from faircode.audit.decision import resolve_rule
from faircode.audit.perturbed import PerturbedRows
from faircode.audit.prepared import PreparedAudit, manifest_sha256, replicate_split
from faircode.core.cells import ModelFamily, Strategy, grid_cells, position
from faircode.core.config import BenchmarkConfig, ExecutionConfig
from faircode.core.seeds import Stream, child_seed, replicate_seed
from faircode.grid.predictions import AuditPredictions, CellPredictions, ReplicatePredictions
from faircode.grid.scheduler import (
    DEFAULT_COEFFICIENTS,
    CostModel,
    Finished,
    OnError,
    OnStart,
    Task,
    run_tasks,
)
from faircode.grid.strategies import fit_strategy, supports_constraint

__all__ = [
    "fit_audit",
    "fit_audits",
    "fit_replicate",
    "grid_tasks",
]

FIT_KEYS = ("constraint", "eps", "max_iter")
"""The config keys the fit step reads (``jobs`` only sets the worker count, not a result)."""


def grid_tasks(
    data: PreparedAudit,
    *,
    config: BenchmarkConfig,
    previous: Mapping[tuple[str, str], float] | None = None,
) -> list[Task]:
    """The 15 grid cells of ``data`` as scheduler tasks, costed by :class:`CostModel`.

    With ``config.seeds`` K > 1 also every cell's training replicates ``1..K-1``
    (:func:`~faircode.grid.fit.fit_replicate`, key ``(strategy, model, k)``, costed as their
    cell).  ``previous``: per-cell seconds of an earlier run of this audit (ordering only).
    """
    model = CostModel(DEFAULT_COEFFICIENTS, observed=previous)
    rows = len(data.train_index)
    name = data.manifest.name
    cost = {(s, m): model.expected(s, m, rows=rows) for s, m in grid_cells()}
    tasks = [Task(audit=name, key=(s, m), fn=_fit_grid_cell, args=(s, m, config),
                  cost=cost[s, m]) for s, m in grid_cells()]
    tasks += [Task(audit=name, key=(s, m, k), fn=fit_replicate, args=(s, m, k, config),
                   cost=cost[s, m]) for k in range(1, config.seeds) for s, m in grid_cells()]
    return tasks


def fit_audits(
    datas: Sequence[PreparedAudit],
    *,
    config: BenchmarkConfig,
    execution: ExecutionConfig | None = None,
    previous: Mapping[str, Mapping[tuple[str, str], float]] | None = None,
    on_start: OnStart | None = None,
    on_cell_done: Callable[[Finished], None] | None = None,
    on_audit_failed: Callable[[str, BaseException], None] | None = None,
) -> list[AuditPredictions]:
    """Fit every cell of every audit of ``datas`` in one queue; their predictions in order.

    Reads ``constraint``, ``eps``, ``max_iter``, ``seeds``, ``seed_mode`` and ``jobs`` of
    ``config`` only; ``execution``
    chooses the backend (default: local processes).  ``previous`` maps an audit to the per-cell
    seconds of its previous run (dispatch order only).  ``on_start(tasks, workers)`` and
    ``on_cell_done(finished)`` are called in this process (progress display).  Without
    ``on_audit_failed`` the first failing cell raises; with it, a failing audit is reported
    there and left out of the result, and the other audits go on.
    """
    names = [d.manifest.name for d in datas]
    if len(set(names)) != len(names):
        raise ValueError(f"fit_audits: expected distinct audits, got {names}")
    previous = previous or {}
    tasks = [t for d in datas
             for t in grid_tasks(d, config=config, previous=previous.get(d.manifest.name))]
    on_error: OnError | None = None if on_audit_failed is None else (
        lambda task, exc: on_audit_failed(task.audit, exc))
    results = run_tasks(tasks, data={d.manifest.name: d for d in datas}, jobs=config.jobs,
                        execution=execution, on_start=on_start, on_done=on_cell_done,
                        on_error=on_error)
    out = []
    for data in datas:
        name = data.manifest.name
        keys = [(name, cell) for cell in grid_cells()]
        replicate_keys = [(name, (s, m, k)) for k in range(1, config.seeds)
                          for s, m in grid_cells()]  # replicate, then grid order
        if not all(k in results for k in keys + replicate_keys):
            continue  # failed (reported through on_audit_failed)
        out.append(AuditPredictions(
            audit=name, cells=tuple(results[k] for k in keys),
            config={k: getattr(config, k) for k in FIT_KEYS},
            manifest_sha256=manifest_sha256(data.manifest), dataset_sha256=data.sha256,
            replicates=tuple(results[k] for k in replicate_keys), seeds=config.seeds,
            seed_mode=config.seed_mode,
        ))
    return out


def fit_audit(
    data: PreparedAudit,
    *,
    config: BenchmarkConfig,
    execution: ExecutionConfig | None = None,
    previous: Mapping[tuple[str, str], float] | None = None,
    on_cell_done: Callable[[CellPredictions], None] | None = None,
) -> AuditPredictions:
    """Fit every cell of the grid on ``data`` and return their predictions (grid order).

    The one-audit case of :func:`fit_audits`; ``on_cell_done`` receives each cell's predictions
    in this process as it finishes.
    """
    def done(finished: Finished) -> None:
        if on_cell_done is not None and isinstance(finished.result, CellPredictions):
            on_cell_done(finished.result)  # grid cells only, not training replicates

    [predictions] = fit_audits(
        [data], config=config, execution=execution, on_cell_done=done,
        previous=None if previous is None else {data.manifest.name: previous})
    return predictions


def _fit_grid_cell(
    data: PreparedAudit, strategy: Strategy, family: ModelFamily, config: BenchmarkConfig,
) -> CellPredictions:
    """Scheduler task of one grid cell: :func:`_fit_cell` on the audit's counterfactual sets."""
    return _fit_cell(data, strategy, family, data.perturbed, config)


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


def fit_replicate(
    data: PreparedAudit,
    strategy: Strategy,
    family: ModelFamily,
    replicate: int,
    config: BenchmarkConfig,
) -> ReplicatePredictions:
    """Fit one cell as training replicate ``replicate`` and predict its test rows (a worker task).

    Reads ``constraint``, ``eps``, ``max_iter``, ``decision_threshold`` and ``seed_mode``.
    Replicate 0 reproduces the grid's own fit of the cell (same seeds, same split).
    """
    manifest = data.manifest
    train, test = replicate_split(data, replicate=replicate, mode=config.seed_mode)
    if not supports_constraint(strategy, config.constraint):
        return ReplicatePredictions(replicate, CellPredictions(strategy, family, skipped=(
            f"{strategy.value} cannot enforce constraint {config.constraint!r}")), test)
    seed = replicate_seed(manifest.random_state, replicate)
    s, m = position(strategy, family)
    first = data.disadvantaged[manifest.protected_attributes[0].name]
    rule = resolve_rule(manifest.decision, default_threshold=config.decision_threshold)
    t0 = time.perf_counter()
    fitted = fit_strategy(
        strategy, family, X=data.X.iloc[train], y=data.y[train], sensitive=first[train],
        manifest=manifest, config=config,
        groups=None if data.unit is None else data.unit[train], decision=rule,
        random_state=seed,
    )
    t1 = time.perf_counter()
    draw = int(child_seed(seed, Stream.PREDICTION, s, m).generate_state(1)[0])
    y_pred, y_score = fitted.predict(data.X.iloc[test], sensitive=first[test], random_state=draw)
    train_score = None
    if rule.rule == "top_fraction" and y_score is not None:
        _, train_score = fitted.predict(data.X.iloc[train], sensitive=first[train],
                                        random_state=draw)
    randomised = strategy in (Strategy.IN_PROCESSING, Strategy.POST_PROCESSING)
    cell = CellPredictions(
        strategy, family, test_score=y_score, test_decision=y_pred if randomised else None,
        train_score=train_score, seconds={"fit": t1 - t0, "predict": time.perf_counter() - t1},
        objective=fitted.objective,
    )
    return ReplicatePredictions(replicate, cell, test)

