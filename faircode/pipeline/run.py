"""Running audits end to end: prepare, fit every cell in one queue, evaluate, write.

:func:`run_audit` is the library's one-call path for a notebook or script (one loaded audit,
in memory).  :func:`run_audits` is what ``faircode run`` does: load and prepare every requested
audit, fit all their cells in one queue (longest first), then evaluate and write each; one
audit's failure is reported and loses none of the others' results.  The DVC pipeline runs the
same steps as stages and gives bit-identical numbers (its bag stage's tables with
``--bagged``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from numpy.typing import ArrayLike

from faircode.audit.data import AuditData, load_audit
from faircode.audit.manifest import Manifest, load_manifest
from faircode.audit.outputs import SCORE_SCALES, array_decisions, array_scores
from faircode.audit.prepared import PreparedAudit, prepare
from faircode.core.cells import STRATEGY_CODES, Strategy
from faircode.core.config import BenchmarkConfig, ExecutionConfig
from faircode.core.errors import (
    ConfigError,
    DataUnavailableError,
    FaircodeError,
    config_error,
)
from faircode.core.kinds import TaskKind
from faircode.core.layout import GRID_RUN
from faircode.core.numerics import require
from faircode.evaluate.audit import evaluate_audit
from faircode.evaluate.deployed import score_given
from faircode.evaluate.tables import AuditResults
from faircode.evaluate.write import check_replaceable, write_audit
from faircode.grid.bagging import BaggedPredictions, fit_bagged
from faircode.grid.fit import fit_audit, fit_audits
from faircode.grid.predictions import AuditPredictions, CellPredictions, timings_path
from faircode.grid.scheduler import Finished, OnStart, previous_cell_seconds
from faircode.provenance.state import with_fit_numerics

__all__ = ["AuditRun", "audit_decisions", "degenerate_cells", "evaluate", "fit", "prepare_audits",
           "run_alone", "run_audit", "run_audits", "run_lines", "split_by_kind"]

OnError = Callable[[str, BaseException], None]
"""``on_error(audit, exception)``: an audit failed (bad input or a bug); the others go on."""


def run_audit(
    data: AuditData,
    *,
    config: BenchmarkConfig,
    on_cell_done: Callable[[CellPredictions], None] | None = None,
) -> AuditResults:
    """Run the full grid on one loaded audit (fit, then evaluate, in memory).

    A process that imported numpy before faircode computes with the kernels it loaded: a warning
    says so, and the results record them (:func:`faircode.core.numerics.require`).
    """
    require(strict=False)
    prepared = prepare(data)
    return evaluate(prepared, fit(prepared, config=config, on_cell_done=on_cell_done),
                    config=config)


def fit(data: PreparedAudit, *, config: BenchmarkConfig,
        on_cell_done: Callable[[CellPredictions], None] | None = None) -> AuditPredictions:
    """The fit step of ``config`` on one prepared audit, in this process's queue."""
    return fit_audit(data, mitigation=config.mitigation, replicates=config.replicates,
                     jobs=config.jobs, on_cell_done=on_cell_done, encoding=config.models.encoding)


def audit_decisions(
    data: AuditData | pd.DataFrame,
    *,
    decision: ArrayLike | str | None = None,
    score: ArrayLike | str | None = None,
    scale: str | None = None,
    name: str = "model",
    config: BenchmarkConfig | None = None,
    group: str | Sequence[str] = (),
    label: str | None = None,
    favourable: int = 1,
    unit: str | None = None,
    strata: str | Sequence[str] = (),
    seed: int = 42,
) -> AuditResults:
    """Audit decisions no one here trained, with the benchmark's tables, statistics and verdicts.

    Either on a loaded audit's rows (``data`` an :class:`AuditData`): ``decision`` is 0/1 per
    row in the audit's row order (1 = label 1 predicted), ``score`` a number per row on
    ``scale`` (``probability`` in [0, 1] or ``ordinal``), higher = label 1 more likely; without
    a decision the model decides ``score > models.decision_threshold``.

    Or on a pandas DataFrame that carries its own groups, label and decisions (no manifest):
    ``decision``/``score`` name its columns and ``group``, ``label``, ``unit``, ``strata`` are
    the column specs of ``faircode audit FILE`` (:mod:`faircode.audit.log_columns`: ``"sex=F"``,
    ``"age<25"``; ``label="repaid"``), ``favourable`` the favourable label, ``seed`` the
    audit's master seed::

        faircode.audit_decisions(frame, group=["sex=F", "age<25"], label="repaid",
                                 decision="approved")

    Bad input raises one line naming the array or column and an example value.
    """
    require(strict=False)
    config = config or BenchmarkConfig()
    if isinstance(data, pd.DataFrame):
        return _audit_frame(data, decision=decision, score=score, scale=scale, name=name,
                            config=config, group=group, label=label, favourable=favourable,
                            unit=unit, strata=strata, seed=seed)
    if decision is None and score is None:
        raise ConfigError("audit_decisions: expected decision and/or score, got neither")
    checked_decision = None if decision is None else array_decisions(decision, name="decision")
    checked_score = None
    if score is not None:
        if scale not in SCORE_SCALES:
            raise config_error("audit_decisions: scale", f"one of {', '.join(SCORE_SCALES)}",
                               scale)
        checked_score = array_scores(score, scale=scale, name="score")  # type: ignore[arg-type]
    for array, what in ((checked_decision, "decision"), (checked_score, "score")):
        if array is not None and array.size != len(data.y):
            raise config_error(f"audit_decisions: {what}", f"{len(data.y)} values (the audit's "
                               "rows)", f"{array.size} values")
    return score_given(prepare(data), name=name, decision=checked_decision, score=checked_score,
                       scale=scale, threshold=config.models.decision_threshold, stats=config.stats,
                       degenerate=config.degenerate, verdicts=config.verdicts)


def _audit_frame(frame: pd.DataFrame, *, decision: object, score: object, scale: str | None,
                 name: str, config: BenchmarkConfig, group: str | Sequence[str],
                 label: str | None, favourable: int, unit: str | None,
                 strata: str | Sequence[str], seed: int) -> AuditResults:
    """:func:`audit_decisions` of a DataFrame's own columns (a log declared by its columns)."""
    from faircode.audit.log_columns import LogColumns
    from faircode.audit.log_declaration import log_manifest
    from faircode.audit.table_file import frame_table
    from faircode.evaluate.streamed import audit_log

    for what, value in (("decision", decision), ("score", score), ("label", label)):
        if value is not None and not isinstance(value, str):
            raise config_error(f"audit_decisions: {what}", "a column name of the DataFrame",
                               value)
    if decision is None or label is None:
        raise ConfigError("audit_decisions: expected decision= and label= column names with a "
                          "DataFrame, got " + ("neither" if decision is None and label is None
                                                else "no " + ("decision" if decision is None
                                                              else "label")))
    columns = LogColumns(
        groups=(group,) if isinstance(group, str) else tuple(group), label=label,
        decision=str(decision), score=None if score is None else str(score), scale=scale,
        unit=unit, strata=(strata,) if isinstance(strata, str) else tuple(strata),
        favourable=favourable, name=name, seed=seed)
    where = Path("audit_decisions")
    doc = columns.declaration(audit="dataframe", log=None,
                              flag=lambda field: f"audit_decisions: {field}")
    manifest = log_manifest(doc, file=where, frame=True)
    _, results = audit_log(manifest, stats=config.stats, degenerate=config.degenerate,
                           verdicts=config.verdicts, table=frame_table(frame))
    return results


def evaluate(data: PreparedAudit, predictions: AuditPredictions, *,
             config: BenchmarkConfig, bagged: BaggedPredictions | None = None) -> AuditResults:
    """The evaluate step of ``config`` on one audit's predictions (with ``bagged``, the bag
    stage's members, also the arbitrariness and multiplicity tables)."""
    return evaluate_audit(data, predictions, decision_threshold=config.models.decision_threshold,
                          stats=config.stats, degenerate=config.degenerate,
                          replicates=config.replicates, jobs=config.jobs,
                          curves=config.curves, verdicts=config.verdicts, bagged=bagged)


def bag(data: PreparedAudit, *, config: BenchmarkConfig,
        execution: ExecutionConfig) -> BaggedPredictions:
    """The bag stage's members of one prepared audit (:func:`faircode.grid.bagging.fit_bagged`
    at ``config``'s ``arbitrariness.*``, ``mitigation.*`` and encoding)."""
    return fit_bagged(data, bags=config.arbitrariness.bags,
                      all_families_below=config.arbitrariness.all_families_below,
                      mitigation=config.mitigation, encoding=config.models.encoding,
                      jobs=config.jobs, execution=execution)


@dataclass(frozen=True, slots=True)
class AuditRun:
    """One audit of a ``faircode run``: its data, predictions, results and result folder."""

    data: PreparedAudit
    predictions: AuditPredictions
    results: AuditResults
    folder: Path


def prepare_audits(paths: Iterable[Path], *, on_error: OnError,
                   on_skipped: Callable[[str], None],
                   obtain: Callable[[Manifest], None] | None = None) -> dict[str, PreparedAudit]:
    """Load and prepare every manifest of ``paths``; an audit without data is ``on_skipped``
    (the message says how to obtain it), any other failure ``on_error``.  ``obtain(manifest)``,
    when given, is called first to fetch a raw file that is not there yet."""
    prepared: dict[str, PreparedAudit] = {}
    for path in paths:
        name = path.parent.name
        try:
            manifest = load_manifest(path)
            name = manifest.name
            if obtain is not None:
                obtain(manifest)
            prepared[name] = prepare(load_audit(manifest))
        except DataUnavailableError as exc:
            on_skipped(str(exc))
        except Exception as exc:  # one audit's failure must not lose the others
            on_error(name, exc)
    return prepared


def run_audits(
    prepared: Mapping[str, PreparedAudit],
    *,
    config: BenchmarkConfig,
    execution: ExecutionConfig,
    out: Path,
    provenance_record: Mapping[str, Any],
    on_error: OnError,
    on_start: OnStart | None = None,
    on_cell_done: Callable[[Finished], None] | None = None,
    bagged: bool = False,
) -> list[AuditRun]:
    """Fit every cell of every audit of ``prepared`` in one queue (ordered by the previous
    run's timings beside ``<out>/<audit>`` where they exist), then -- with ``bagged`` after
    fitting each audit's bagged ensembles (:func:`bag`: the bag stage's tables too) -- evaluate
    and write each audit into ``out``.  An audit whose ``<out>/<audit>`` is not a folder the
    grid may replace (:func:`~faircode.evaluate.write.check_replaceable`) is reported before
    anything is fitted."""
    writable = {}
    for name, data in prepared.items():  # refused before, not after, the fitting
        try:
            check_replaceable(out / name, audit=name, kind=GRID_RUN)
        except Exception as exc:
            on_error(name, exc)
            continue
        writable[name] = data
    prepared = writable
    previous = {name: previous_cell_seconds(timings_path(out / name)) for name in prepared}
    fitted = fit_audits(list(prepared.values()), mitigation=config.mitigation,
                        replicates=config.replicates, jobs=config.jobs, execution=execution,
                        previous=previous, on_start=on_start, on_cell_done=on_cell_done,
                        on_audit_failed=on_error, encoding=config.models.encoding)
    runs = []
    for predictions in fitted:
        data = prepared[predictions.audit]
        try:
            members = bag(data, config=config, execution=execution) if bagged else None
            results = evaluate(data, predictions, config=config, bagged=members)
            folder = write_audit(data, results, config=config, out_dir=out,
                                 provenance_record=with_fit_numerics(provenance_record,
                                                                     predictions.numerics))
        except Exception as exc:  # one audit's failure must not lose the others
            on_error(predictions.audit, exc)
            continue
        runs.append(AuditRun(data, predictions, results, folder))
    return runs


def degenerate_cells(results: AuditResults) -> list[str]:
    """The uninformative cells of an audit: each degenerate one with its selection rate and
    balanced accuracy, each one that could not be fitted with why."""
    out = []
    for cell in results.cells:
        if cell.unfittable:
            out.append(f"{STRATEGY_CODES[Strategy(cell.strategy)]} {cell.family} (not fitted: "
                       f"{cell.unfittable})")
        if cell.degenerate:
            decision = dict(cell.decision)
            out.append(f"{STRATEGY_CODES[Strategy(cell.strategy)]} {cell.family} (selection "
                       f"rate {decision['selection_rate']:.4f}, balanced accuracy "
                       f"{decision['balanced_accuracy']:.4f})")
    return out


def split_by_kind(paths: Iterable[Path], *, on_error: OnError
                  ) -> tuple[list[Path], list[tuple[Path, TaskKind]]]:
    """The manifests of the grid's kind, and the others with their task kind
    (:func:`faircode.audit.kinds.manifest_task_kind`); an unknown kind is ``on_error``."""
    from faircode.audit.kinds import manifest_task_kind

    grid: list[Path] = []
    alone: list[tuple[Path, TaskKind]] = []
    for path in paths:
        try:
            kind = manifest_task_kind(path)
        except FaircodeError as exc:
            on_error(path.parent.name, exc)
            continue
        if kind.grid:
            grid.append(path)
        else:
            alone.append((path, kind))
    return grid, alone


def run_alone(path: Path, kind: TaskKind, *, config: BenchmarkConfig, out: Path,
              obtain: Callable[[Any], None]) -> Path:
    """Run one audit of a kind that needs nothing but its raw file (its only data stage is
    ``fetch``: a multi-class audit) with its kind's evaluator, into ``out``; another kind is
    one line saying where it runs."""
    from faircode.audit.kinds import load_any_manifest
    from faircode.evaluate.job import Job
    from faircode.evaluate.kinds import evaluator

    if kind.data_stages != ("fetch",):
        raise ConfigError(f"{path}: kind: expected an audit faircode run can run from its raw "
                          f"file, got a {kind.name} audit (its stages "
                          f"{', '.join(kind.data_stages)} run in the pipeline: list it under "
                          f"{kind.params_key} in params.yaml, run faircode pipeline, then "
                          "dvc repro)")
    manifest = load_any_manifest(path)
    obtain(manifest)
    return evaluator(kind).run(Job(kind.name, manifest.name, out, path), config=config)


def run_lines(folder: Path, kind: TaskKind) -> list[str]:
    """What ``faircode run`` prints of a run without the grid: its report section's headline
    sentence (:mod:`faircode.report.kinds`)."""
    from faircode.report.kinds import section

    shown = section(kind)
    inputs = shown.load([folder])
    return [shown.headline(inputs)] if inputs is not None else []
