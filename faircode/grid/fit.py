"""The grid: every strategy x model cell of an audit, fitted (here) and then scored (evaluate).

For one audit the grid is two steps, so a change of threshold or statistics never refits:

1. :func:`fit_audits` fits the strategies of the strategy table x 3 model families (18 cells;
   or the strategies asked for) of every audit of a run, as one queue of tasks
   (:mod:`faircode.grid.scheduler`: longest expected cell first, on one pool of local worker
   processes or a Dask cluster), and keeps only their predictions
   (:class:`~faircode.grid.predictions.AuditPredictions`): the test rows' scores (and decisions
   of the randomised S3-S5; S5's at every tolerance), the training rows' scores, and the
   predictions of every counterfactual test-row set.
2. :func:`~faircode.evaluate.audit.evaluate_audit` applies the operating point and computes every
   metric, interval, p- and q-value into the four result tables.

:func:`fit_audit` is the one-audit case.  :func:`faircode.pipeline.run.run_audit` is both steps
in memory; ``faircode run`` fits every requested audit in one queue, then evaluates each; the DVC
pipeline runs them as stages with the predictions stored in between -- one fit stage per part of
the strategy table, each reading its strategies' ``mitigation.*`` keys (S0-S2 none; S3
constraint, eps, max_iter; S4 constraint; S5 constraint, tolerances), so a mitigation sweep
re-fits only what it changes.  The numbers are
bit-identical either way.

One function fits a cell, :func:`fit_cell`, for the grid (the prepared split, the master seed,
the counterfactual sets) and for a training replicate (its own split and seed, no
counterfactual sets); the fit step reads only ``mitigation``, ``models.encoding`` (how the
models see nominal columns, :func:`faircode.grid.models.make_model`) and the manifest's declared
decision rule (which objective S3-S5 fit), never the threshold value.

Reproducibility: one master seed, the manifest's ``random_state``.  Each stochastic step draws
from its own child stream ``SeedSequence(master, spawn_key=(stream, strategy, model, ...))``
(see :class:`~faircode.core.seeds.Stream`), keyed by *position in the grid*, not by execution
order, so results are bit-identical for any ``jobs``, backend, dispatch and completion order.
Models are seeded with the master seed itself, as the manifest spec requires.  Training
replicates (``run.seeds`` > 1) re-fit every cell with derived master seeds
(:func:`faircode.core.seeds.replicate_seed`); they are tasks of the same queue, keyed
``(strategy, model, k)``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from faircode.audit.perturbed import PerturbedRows
from faircode.audit.prepared import PreparedAudit, manifest_sha256, replicate_split
from faircode.core.cells import (
    STRATEGY_TABLE,
    ModelFamily,
    Strategy,
    grid_cells,
    position,
    strategy_info,
)
from faircode.core.config import Encoding, ExecutionConfig, MitigationConfig, ReplicateConfig
from faircode.core.numerics import configuration
from faircode.core.seeds import Stream, child_seed, replicate_seed
from faircode.grid.calibration import Unfittable
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
from faircode.grid.strategies import READS, fit_strategy, supports_constraint

__all__ = ["fit_audit", "fit_audits", "fit_cell", "fit_replicate", "grid_tasks"]

RANDOMISED = tuple(s.strategy for s in STRATEGY_TABLE if not s.cutoff)
"""The strategies whose decisions are drawn at fit time (the others are a cutoff on a score)."""


def grid_tasks(
    data: PreparedAudit,
    *,
    mitigation: MitigationConfig,
    replicates: ReplicateConfig,
    strategies: Sequence[Strategy] = tuple(Strategy),
    previous: Mapping[tuple[str, str], float] | None = None,
    encoding: Encoding = "label",
) -> list[Task]:
    """The grid cells of ``strategies`` on ``data`` as scheduler tasks, costed by
    :class:`CostModel`.

    With ``replicates.seeds`` K > 1 also every cell's training replicates ``1..K-1``
    (:func:`fit_replicate`, key ``(strategy, model, k)``, costed as their cell).  ``previous``:
    per-cell seconds of an earlier run of this audit (ordering only).
    """
    model = CostModel(DEFAULT_COEFFICIENTS, observed=previous)
    rows = len(data.train_index)
    name = data.manifest.name
    cells = [(s, m) for s, m in grid_cells() if s in strategies]
    cost = {(s, m): model.expected(s, m, rows=rows) for s, m in cells}
    tasks = [Task(audit=name, key=(s, m), fn=_fit_grid_cell, args=(s, m, mitigation, encoding),
                  cost=cost[s, m]) for s, m in cells]
    tasks += [Task(audit=name, key=(s, m, k), fn=fit_replicate,
                   args=(s, m, k, mitigation, replicates.seed_mode, encoding), cost=cost[s, m])
              for k in range(1, replicates.seeds) for s, m in cells]
    return tasks


def fit_audits(
    datas: Sequence[PreparedAudit],
    *,
    mitigation: MitigationConfig,
    replicates: ReplicateConfig | None = None,
    strategies: Sequence[Strategy] = tuple(Strategy),
    jobs: int = 1,
    execution: ExecutionConfig | None = None,
    previous: Mapping[str, Mapping[tuple[str, str], float]] | None = None,
    on_start: OnStart | None = None,
    on_cell_done: Callable[[Finished], None] | None = None,
    on_audit_failed: Callable[[str, BaseException], None] | None = None,
    encoding: Encoding = "label",
) -> list[AuditPredictions]:
    """Fit every cell of ``strategies`` of every audit of ``datas`` in one queue; their
    predictions in order.

    ``jobs`` local workers (or ``execution``'s backend; no number depends on either).
    ``previous`` maps an audit to the per-cell seconds of its previous run (dispatch order
    only).  ``on_start(tasks, workers)`` and ``on_cell_done(finished)`` are called in this
    process (progress display).  Without ``on_audit_failed`` the first failing cell raises; with
    it, a failing audit is reported there and left out of the result, and the other audits go
    on.  ``encoding`` (``models.encoding``) is recorded in the predictions' ``config`` when it is
    not the default ``label`` (so a ``label`` run's record is what it always was).
    """
    replicates = replicates or ReplicateConfig()
    names = [d.manifest.name for d in datas]
    if len(set(names)) != len(names):
        raise ValueError(f"fit_audits: expected distinct audits, got {names}")
    previous = previous or {}
    tasks = [t for d in datas
             for t in grid_tasks(d, mitigation=mitigation, replicates=replicates,
                                 strategies=strategies, previous=previous.get(d.manifest.name),
                                 encoding=encoding)]
    on_error: OnError | None = None if on_audit_failed is None else (
        lambda task, exc: on_audit_failed(task.audit, exc))
    results = run_tasks(tasks, data={d.manifest.name: d for d in datas}, jobs=jobs,
                        execution=execution, on_start=on_start, on_done=on_cell_done,
                        on_error=on_error)
    cells = [(s, m) for s, m in grid_cells() if s in strategies]
    read = dataclasses.asdict(mitigation)
    record = {k: read[k] for k in read if any(k in READS[s] for s in strategies)}
    kernels = configuration()  # the workers' too (the scheduler checked each result)
    if encoding != "label":
        record["encoding"] = encoding
    out = []
    for data in datas:
        name = data.manifest.name
        keys = [(name, cell) for cell in cells]
        replicate_keys = [(name, (s, m, k)) for k in range(1, replicates.seeds)
                          for s, m in cells]  # replicate, then grid order
        if not all(k in results for k in keys + replicate_keys):
            continue  # failed (reported through on_audit_failed)
        out.append(AuditPredictions(
            audit=name, cells=tuple(results[k] for k in keys), config=record,
            manifest_sha256=manifest_sha256(data.manifest), dataset_sha256=data.sha256,
            replicates=tuple(results[k] for k in replicate_keys), seeds=replicates.seeds,
            seed_mode=replicates.seed_mode, numerics=kernels,
        ))
    return out


def fit_audit(
    data: PreparedAudit,
    *,
    mitigation: MitigationConfig,
    replicates: ReplicateConfig | None = None,
    strategies: Sequence[Strategy] = tuple(Strategy),
    jobs: int = 1,
    execution: ExecutionConfig | None = None,
    previous: Mapping[tuple[str, str], float] | None = None,
    on_cell_done: Callable[[CellPredictions], None] | None = None,
    encoding: Encoding = "label",
) -> AuditPredictions:
    """Fit every cell of ``strategies`` on ``data`` and return their predictions (grid order).

    The one-audit case of :func:`fit_audits`; ``on_cell_done`` receives each cell's predictions
    in this process as it finishes.
    """
    def done(finished: Finished) -> None:
        if on_cell_done is not None and isinstance(finished.result, CellPredictions):
            on_cell_done(finished.result)  # grid cells only, not training replicates

    [predictions] = fit_audits(
        [data], mitigation=mitigation, replicates=replicates, strategies=strategies, jobs=jobs,
        execution=execution, on_cell_done=done, encoding=encoding,
        previous=None if previous is None else {data.manifest.name: previous})
    return predictions


def fit_cell(
    data: PreparedAudit,
    strategy: Strategy,
    family: ModelFamily,
    *,
    mitigation: MitigationConfig,
    seed: int,
    train: np.ndarray,
    test: np.ndarray,
    perturbed: Sequence[PerturbedRows] | None,
    keep_train_scores: bool,
    encoding: Encoding = "label",
) -> CellPredictions:
    """Fit one cell on the rows ``train`` with master seed ``seed``; predict its ``test`` rows,
    every counterfactual set of ``perturbed`` (None: none, and no time recorded for them) and,
    with ``keep_train_scores``, the training rows (a worker task's body).

    Every estimator (and S4's calibration split) is seeded with ``seed``; the randomised S3-S5
    predictions with ``child_seed(seed, Stream.PREDICTION, s, m)``, the same draws for the test
    rows, every counterfactual set and every point of a tolerance curve (common random
    numbers); ``s`` is the position of the strategy whose draws the strategy table says it
    shares (``draws``: S5 S4's), else its own.  A cell that cannot be fitted on
    these rows (:class:`~faircode.grid.strategies.Unfittable`: a group too small for S4's
    stratified calibration split) is returned with its reason in ``unfittable``, so one cell,
    not the audit, is lost; evaluate scores it as uninformative.
    """
    if not supports_constraint(strategy, mitigation.constraint):
        return CellPredictions(strategy, family, skipped=(
            f"{strategy.value} cannot enforce constraint {mitigation.constraint!r}"))
    manifest = data.manifest
    first = data.disadvantaged[manifest.protected_attributes[0].name]
    t0 = time.perf_counter()
    try:
        fitted = fit_strategy(
            strategy, family, X=data.X.iloc[train], y=data.y[train], sensitive=first[train],
            manifest=manifest, mitigation=mitigation,
            groups=None if data.unit is None else data.unit[train], decision=manifest.decision,
            random_state=seed, encoding=encoding, nominal=data.nominal,
        )
    except Unfittable as exc:  # this cell only: the audit's other cells go on
        return CellPredictions(strategy, family, seconds={"fit": time.perf_counter() - t0},
                               unfittable=f"{manifest.file}: {exc}")
    t1 = time.perf_counter()
    info = strategy_info(strategy)
    draw = int(child_seed(seed, Stream.PREDICTION, *position(info.draws or strategy, family))
               .generate_state(1)[0])
    y_pred, y_score = fitted.predict(data.X.iloc[test], sensitive=first[test], random_state=draw)
    curve = fitted.predict_curve(data.X.iloc[test], sensitive=first[test], random_state=draw)
    t2 = time.perf_counter()
    randomised = strategy in RANDOMISED
    cf_score, cf_decision = [], []
    for rows in perturbed or ():
        flip, score = fitted.predict(rows.X, sensitive=rows.sensitive, random_state=draw)
        cf_score.append(score)
        cf_decision.append(flip if randomised else None)
    t3 = time.perf_counter()
    train_score = None
    if keep_train_scores:
        _, train_score = fitted.predict(data.X.iloc[train], sensitive=first[train],
                                        random_state=draw)
    seconds = {"fit": t1 - t0, "predict": t2 - t1}
    if perturbed is not None:
        seconds["counterfactual"] = t3 - t2
    return CellPredictions(
        strategy, family, test_score=y_score, test_decision=y_pred if randomised else None,
        train_score=train_score, counterfactual_score=tuple(cf_score),
        counterfactual_decision=tuple(cf_decision), seconds=seconds, objective=fitted.objective,
        violations=fitted.violations, tolerances=fitted.tolerances, curve_decision=curve,
        base=fitted.base,
    )


def _fit_grid_cell(
    data: PreparedAudit, strategy: Strategy, family: ModelFamily, mitigation: MitigationConfig,
    encoding: Encoding = "label",
) -> CellPredictions:
    """Scheduler task of one grid cell: the prepared split, the master seed, every
    counterfactual set, the training scores."""
    return fit_cell(data, strategy, family, mitigation=mitigation,
                    seed=data.manifest.random_state, train=data.train_index,
                    test=data.test_index, perturbed=data.perturbed, keep_train_scores=True,
                    encoding=encoding)


def fit_replicate(
    data: PreparedAudit,
    strategy: Strategy,
    family: ModelFamily,
    replicate: int,
    mitigation: MitigationConfig,
    seed_mode: str,
    encoding: Encoding = "label",
) -> ReplicatePredictions:
    """Scheduler task of training replicate ``replicate`` of one cell: its split
    (:func:`~faircode.audit.prepared.replicate_split`) and seed, no counterfactual sets,
    training scores only where the decision rule needs them (``top_fraction``).  Replicate 0
    reproduces the grid's own fit of the cell."""
    manifest = data.manifest
    train, test = replicate_split(data, replicate=replicate, mode=seed_mode)
    rule = manifest.decision
    cell = fit_cell(data, strategy, family, mitigation=mitigation,
                    seed=replicate_seed(manifest.random_state, replicate), train=train,
                    test=test, perturbed=None,
                    keep_train_scores=rule is not None and rule.rule == "top_fraction"
                    and strategy_info(strategy).score, encoding=encoding)
    return ReplicatePredictions(replicate, cell, test)
