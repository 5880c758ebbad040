"""The evaluate step of the grid: decisions and predictions in, the four result tables out.

:func:`evaluate_audit` scores each cell of an :class:`~faircode.predictions.AuditPredictions`
(from :func:`faircode.benchmark.fit_audit`, in memory or loaded from ``data/predictions/``) with

* the six group-fairness metrics for every protected attribute (bootstrap CI + permutation p),
* accuracy / AUC / F1 with CIs,
* the intersectional demographic-parity gap for every pair of attributes,
* the counterfactual flip rate of every manifest axis (explicit and proxy channels apart).

With training replicates (``run.seeds`` > 1, :mod:`faircode.stability`) every replicate is
scored the same way with its own master seed and summarised in ``stability.csv``.

The audit's operating point (:mod:`faircode.decision`) is resolved here: the manifest's
``decision`` block, else ``threshold`` at ``config.decision_threshold``; S0-S2 decide at the rule's
cutoff, fixed on the training rows, and S3/S4 keep the randomised decisions drawn at fit time
(fitted with the rule's objective).  Every cell's selection rate (overall and per group),
balanced accuracy and majority baseline join ``performance.csv``; a degenerate cell's fairness
rows carry the note ``degenerate_decisions``.  Labels and decisions are oriented once by the
manifest's ``target.favourable`` (:func:`faircode.metrics.orient`) before any group metric.
Benjamini-Hochberg q-values are computed across every fairness test of the audit
(:func:`faircode.metrics.audit_q_values`: each per-attribute null once, the intersectional gaps
and interactions), and ``significant`` is ``q < alpha``.  :func:`write_audit` writes
``<out>/<audit>/`` (four CSVs + ``run.json``).

Every statistic draws from the child stream of its grid position (:class:`Stream`), so the
numbers do not depend on ``jobs`` or on whether the fit ran in this process.

Repeated units: when the audit declares ``dataset.unit`` (``data.unit``) and a unit has several
test rows, the test rows' unit ids are passed to every metric (``units=``): fairness p-values
exchange labels between units, intervals are taken at design-effect-deflated effective sizes,
the performance bootstrap resamples units and flip rates use Clopper–Pearson at the effective
size (:mod:`faircode.metrics`, :mod:`faircode.counterfactual`).  ``design_effect`` (a column of
``fairness.csv``, ``intersectional.csv`` and ``counterfactual.csv``; per metric summarised in
``run.json``) is 1.0 without a unit and with one row per unit (rows are then the independent
units, the design effect is 1 by definition), where every other number is bit-identical to the
unit-free path.  ``mde``/``powered``/``mde_note``
(:func:`faircode.power.detectable_gap` at ``config.alpha`` and ``config.power``) are computed
for every fairness row and every intersectional DD-vs-AA gap, at effective counts (each count
divided by ``max(1, design_effect)``, rounded) when units repeat.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from faircode import clusters, stability
from faircode.config import BenchmarkConfig
from faircode.counterfactual import flip_rates
from faircode.decision import (
    DEGENERATE_NOTE,
    decision_cutoff,
    is_degenerate,
    operating_point_metrics,
    resolve_rule,
)
from faircode.errors import DataError
from faircode.manifest import repository_root
from faircode.metrics import (
    FAIRNESS_COLUMNS,
    INTERSECTIONAL_COLUMNS,
    audit_q_values,
    fairness_metrics,
    intersectional_gap,
    orient,
    performance_metrics,
)
from faircode.models import ModelFamily
from faircode.power import detectable_gap
from faircode.predictions import AuditPredictions, CellPredictions, Stream
from faircode.prepared import AuditLike, PreparedAudit
from faircode.stats import child_seed, confusion_counts
from faircode.strategies import Strategy
from faircode.swap import replacing

__all__ = [
    "AuditResults",
    "CellResult",
    "design_effect_summary",
    "evaluate_audit",
    "parity_plot",
    "provenance",
    "summary",
    "write_audit",
]


@dataclass(frozen=True, slots=True)
class CellResult:
    """Every row one strategy x model cell contributes, and where its time went."""

    strategy: Strategy
    family: ModelFamily
    fairness: tuple[dict[str, Any], ...] = ()
    performance: tuple[dict[str, Any], ...] = ()
    intersectional: tuple[dict[str, Any], ...] = ()
    counterfactual: tuple[dict[str, Any], ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)
    skipped: str = ""
    degenerate: bool = False
    decision: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AuditResults:
    """The four result tables of one audit and the per-cell record that produced them.

    ``stability``/``replicates``: the training-replicate tables (:mod:`faircode.stability`),
    None without replicates (``run.seeds`` 1).
    """

    fairness: pd.DataFrame
    performance: pd.DataFrame
    intersectional: pd.DataFrame
    counterfactual: pd.DataFrame
    cells: tuple[CellResult, ...]
    stability: pd.DataFrame | None = None
    replicates: pd.DataFrame | None = None


def evaluate_audit(
    data: PreparedAudit, predictions: AuditPredictions, *, config: BenchmarkConfig
) -> AuditResults:
    """Score every cell of ``predictions`` on ``data``; return the four tables.

    Reads ``decision_threshold``, ``n_resamples``, ``n_permutations``, ``confidence``, ``alpha``
    and ``jobs`` of ``config``; with ``seeds`` > 1 (which must match the predictions') also
    :attr:`AuditResults.stability` and :attr:`AuditResults.replicates`
    (:func:`faircode.stability.evaluate_stability`).
    """
    if predictions.audit != data.manifest.name:
        raise DataError(f"predictions of {predictions.audit!r} cannot be evaluated on "
                        f"{data.manifest.name!r}")
    if predictions.dataset_sha256 and predictions.dataset_sha256 != data.sha256:
        raise DataError(f"{data.manifest.name}: predictions: dataset_sha256: expected "
                        f"{data.sha256}, got {predictions.dataset_sha256}; re-run fit")
    cells = predictions.cells
    jobs = min(config.jobs, max(1, len(cells)))
    results = Parallel(n_jobs=jobs)(delayed(_score_cell)(data, c, config) for c in cells)
    assembled = _assemble(data, results, config)
    if config.seeds == 1 and predictions.seeds == 1:
        return assembled
    # training replicates (run.seeds > 1): stability.csv and stability_replicates.csv
    table, replicates = stability.evaluate_stability(data, predictions, config=config)
    return dataclasses.replace(assembled, stability=table, replicates=replicates)


def _score_cell(data: PreparedAudit, cell: CellPredictions, config: BenchmarkConfig, *,
                master: int | None = None) -> CellResult:
    """Score one cell's predictions (runs in a worker process).

    ``master`` seeds every statistic (default the manifest's ``random_state``; a training
    replicate passes its own, :mod:`faircode.stability`).
    """
    strategy, family = cell.strategy, cell.family
    if cell.skipped:
        return CellResult(strategy, family, seconds=dict(cell.seconds), skipped=cell.skipped)
    manifest = data.manifest
    master = manifest.random_state if master is None else master
    s, m = list(Strategy).index(strategy), list(ModelFamily).index(family)
    test = data.test_index
    y_test = data.y[test]
    # The audit's operating point, fixed on the training rows (S0-S2; S3/S4 keep their draws).
    rule = resolve_rule(manifest.decision, default_threshold=config.decision_threshold)
    cutoff = decision_cutoff(
        rule, train_scores=cell.train_score if rule.rule == "top_fraction" else None,
        train_labels=data.y[data.train_index])
    y_pred, flipped = cell.decisions(cutoff)
    y_score = cell.test_score
    # every group metric counts the favourable outcome (negative = disadvantaged worse off)
    y_fav, yhat_fav = orient(y_test, y_pred, favourable=manifest.target.favourable)

    t2 = time.perf_counter()
    label = {"strategy": strategy.value, "model": family.value}
    attributes = manifest.protected_attributes
    points = operating_point_metrics(
        y_test, y_pred, {a.name: data.disadvantaged[a.name][test] for a in attributes},
        n_resamples=config.n_resamples, confidence=config.confidence,
        seed=child_seed(master, Stream.DECISIONS, s, m),
    )
    point = {p.metric: p.value for p in points if not p.protected_attribute}
    degenerate = is_degenerate(
        selection_rate=point["selection_rate"], balanced_accuracy=point["balanced_accuracy"],
        min_selection_rate=config.degenerate_min_selection_rate,
        max_selection_rate=config.degenerate_max_selection_rate,
        balanced_accuracy_margin=config.degenerate_balanced_accuracy_margin,
    )
    decision = {**rule.as_dict(), "objective": cell.objective,
                "selection_rate": point["selection_rate"],
                "balanced_accuracy": point["balanced_accuracy"], "degenerate": degenerate}
    if cell.test_decision is None:
        decision.update(cutoff=cutoff.value, inclusive=cutoff.inclusive)
    units = None if data.unit is None else data.unit[test]
    fairness: list[dict[str, Any]] = []
    for a, attribute in enumerate(attributes):
        mask = data.disadvantaged[attribute.name][test]
        counts_d = confusion_counts(y_fav[mask], yhat_fav[mask])
        counts_a = confusion_counts(y_fav[~mask], yhat_fav[~mask])
        for result in fairness_metrics(
            y_fav, yhat_fav, mask,
            n_permutations=config.n_permutations,
            confidence=config.confidence, seed=child_seed(master, Stream.FAIRNESS, s, m, a),
            units=units, n_resamples=config.n_resamples,
        ):
            row = {**label, "protected_attribute": attribute.name,
                   **dataclasses.asdict(result),
                   **_mde(result.metric, counts_d, counts_a, value=result.value,
                          design_effect=result.design_effect, config=config)}
            if degenerate:
                row["note"] = ";".join(n for n in (row["note"], DEGENERATE_NOTE) if n)
            fairness.append(row)
    performance = [
        {**label, **dataclasses.asdict(result)}
        for result in performance_metrics(
            y_test, y_pred, y_score, n_resamples=config.n_resamples,
            confidence=config.confidence, seed=child_seed(master, Stream.PERFORMANCE, s, m),
            units=units,
        )
    ] + [{**label, **dataclasses.asdict(p)} for p in points]
    intersectional: list[dict[str, Any]] = []
    for p, (a, b) in enumerate(itertools.combinations(range(len(attributes)), 2)):
        pair = intersectional_gap(
            yhat_fav, data.disadvantaged[attributes[a].name][test],
            data.disadvantaged[attributes[b].name][test], n_permutations=config.n_permutations,
            confidence=config.confidence, seed=child_seed(master, Stream.INTERSECTIONAL, s, m, p),
            units=units, n_resamples=config.n_resamples,
        )
        intersectional.append({**label, "attribute_a": attributes[a].name,
                               "attribute_b": attributes[b].name, **dataclasses.asdict(pair),
                               **_mde("demographic_parity_diff",
                                      _rate_counts(pair.n_dd, pair.rate_dd),
                                      _rate_counts(pair.n_aa, pair.rate_aa),
                                      value=pair.gap, design_effect=pair.design_effect,
                                      config=config)})
    t3 = time.perf_counter()

    counterfactual: list[dict[str, Any]] = []
    for rows, y_flip in zip(data.perturbed, flipped, strict=True):
        flips = flip_rates(
            y_pred, y_flip, rows.changed, axis=rows.axis, kind=rows.kind,
            favourable=manifest.target.favourable, confidence=config.confidence, units=units,
        )
        record = dataclasses.asdict(flips)
        record["kind"] = flips.kind.value
        counterfactual.append({**label, "columns": " ".join(rows.columns), **record})
    t4 = time.perf_counter()
    fit = cell.seconds
    return CellResult(
        strategy, family, tuple(fairness), tuple(performance), tuple(intersectional),
        tuple(counterfactual),
        seconds={"fit": fit.get("fit", 0.0), "predict": fit.get("predict", 0.0),
                 "statistics": t3 - t2,
                 "counterfactual": fit.get("counterfactual", 0.0) + t4 - t3},
        degenerate=degenerate, decision=decision,
    )


def _mde(
    metric: str,
    counts_d: np.ndarray,
    counts_a: np.ndarray,
    *,
    value: float,
    design_effect: float,
    config: BenchmarkConfig,
) -> dict[str, Any]:
    """``mde``, ``powered``, ``mde_note`` of one comparison, at effective counts with units."""
    factor = clusters.deflation(design_effect)
    if factor != 1.0:  # Kish's effective sizes (power.py takes integer counts: rounded)
        counts_d = np.rint(counts_d / factor).astype(np.int64)
        counts_a = np.rint(counts_a / factor).astype(np.int64)
    found = detectable_gap(metric, counts_d, counts_a, value=value, alpha=config.alpha,
                           power=config.power)
    return {"mde": found.mde, "powered": found.powered, "mde_note": found.note}


def _rate_counts(n: int, rate: float) -> np.ndarray:
    """A cell's favourable decisions as (TN, FP, 0, 0) counts, from its size and rate."""
    positives = round(rate * n) if n else 0
    return np.array([n - positives, positives, 0, 0], dtype=np.int64)


PERFORMANCE_COLUMNS = ("audit", "strategy", "model", "protected_attribute", "metric",
                       "value", "ci_low", "ci_high", "n", "note")
COUNTERFACTUAL_COLUMNS = (
    "audit", "strategy", "model", "axis", "kind", "columns", "flip_rate", "ci_low", "ci_high",
    "to_favourable", "to_unfavourable", "n_changed", "n_unchanged", "n_flipped",
    "design_effect", "note",
)


def _assemble(
    data: AuditLike, results: Sequence[CellResult], config: BenchmarkConfig
) -> AuditResults:
    audit = data.manifest.name
    fairness = _frame(audit, [row for r in results for row in r.fairness], FAIRNESS_COLUMNS)
    intersectional = _frame(audit, [row for r in results for row in r.intersectional],
                            INTERSECTIONAL_COLUMNS)
    # One BH family per audit: each fairness null once, every DD-vs-AA gap and interaction.
    fairness, intersectional = audit_q_values(fairness, intersectional, alpha=config.alpha)
    return AuditResults(
        fairness=fairness,
        performance=_frame(audit, [row for r in results for row in r.performance],
                           PERFORMANCE_COLUMNS),
        intersectional=intersectional,
        counterfactual=_frame(audit, [row for r in results for row in r.counterfactual],
                              COUNTERFACTUAL_COLUMNS),
        cells=tuple(results),
    )


def _frame(audit: str, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    """Rows as a frame with exactly ``columns`` (q_value/significant filled in later)."""
    frame = pd.DataFrame(rows, columns=[c for c in columns
                                        if c not in ("audit", "q_value", "significant")])
    frame.insert(0, "audit", audit)
    return frame.reindex(columns=list(columns))


def _relative_manifest(file: Path) -> str:
    """The manifest's path relative to its repository (results never carry a machine's path)."""
    try:
        return file.resolve().relative_to(repository_root(file.parent)).as_posix()
    except ValueError:
        return file.name


def provenance(*, repo: Path | None = None) -> dict[str, Any]:
    """Package versions and the git commit of the code that produced a result."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str] = {"python": platform.python_version()}
    for package in ("faircode", "numpy", "scipy", "pandas", "scikit-learn", "fairlearn", "joblib"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:  # pragma: no cover - every one is a dependency
            versions[package] = "unknown"
    commit, dirty = None, None
    root = repo if repo is not None else Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True, timeout=10).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                cwd=root, capture_output=True, text=True, check=True,
                                timeout=10).stdout
        dirty = bool(status.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return {"versions": versions, "git_commit": commit, "git_dirty": dirty}


def write_audit(
    data: AuditLike,
    results: AuditResults,
    *,
    config: BenchmarkConfig,
    out_dir: Path,
    provenance_record: dict[str, Any],
) -> Path:
    """Write ``<out_dir>/<audit>/`` (four CSVs + ``run.json``; with training replicates also
    ``stability.csv`` and ``stability_replicates.csv``) atomically; return the folder.

    Everything is written to a sibling staging folder which then replaces the audit's folder in
    one step (:func:`faircode.swap.replacing`): a failure or a kill leaves the old folder or the
    new one, never a half-written one and never none; the next write removes the leftovers.
    """
    manifest = data.manifest
    final = out_dir / manifest.name
    with replacing(final) as staging:
        for name in ("fairness", "performance", "intersectional", "counterfactual"):
            # default float formatting is the shortest exact repr: numbers round-trip
            getattr(results, name).to_csv(staging / f"{name}.csv", index=False)
        if results.stability is not None:  # training replicates (run.seeds > 1) only
            results.stability.to_csv(staging / "stability.csv", index=False)
        if results.replicates is not None:
            results.replicates.to_csv(staging / "stability_replicates.csv", index=False)
        run = {
            "audit": manifest.name,
            "title": manifest.title,
            "manifest": _relative_manifest(manifest.file),
            "manifest_sha256": hashlib.sha256(manifest.file.read_bytes()).hexdigest(),
            "dataset": {"path": manifest.dataset.declared_path, "sha256": data.sha256,
                        "sha256_declared": manifest.dataset.sha256},
            "rows": {"steps": [list(step) for step in data.steps],
                     "train": len(data.train_index), "test": len(data.test_index)},
            "seeds": {"master": manifest.random_state,
                      "scheme": "SeedSequence(master, spawn_key=(stream, strategy, model, "
                                "index)); streams " + ", ".join(
                                    f"{s.value}={s.name.lower()}" for s in Stream
                                    if s is not Stream.REPLICATE),
                      "models": manifest.random_state,
                      **({"replicates": stability.run_record(config,
                                                             master=manifest.random_state)}
                         if config.seeds > 1 else {})},
            "config": config.as_dict(),
            "decision": {
                **resolve_rule(manifest.decision,
                               default_threshold=config.decision_threshold).as_dict(),
                "source": ("manifest decision block" if manifest.decision is not None
                           else "config decision_threshold"),
            },
            "design_effect": design_effect_summary(results, unit=manifest.unit),
            **provenance_record,
            "cells": [
                {"strategy": c.strategy.value, "model": c.family.value,
                 "seconds": {k: round(v, 4) for k, v in c.seconds.items()},
                 **({"decision": c.decision} if c.decision else {}),
                 **({"skipped": c.skipped} if c.skipped else {})}
                for c in results.cells
            ],
        }
        (staging / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    return final


def design_effect_summary(results: AuditResults, *, unit: str | None) -> dict[str, Any]:
    """run.json's design-effect record: per fairness metric (and for the intersectional gap and
    the flip rates) the number of rows with a finite design effect and its min/median/max."""

    def spread(values: pd.Series) -> dict[str, Any]:
        finite = values.to_numpy(dtype=float)
        finite = finite[np.isfinite(finite)]
        if not finite.size:
            return {"n": 0, "min": None, "median": None, "max": None}
        return {"n": int(finite.size), "min": float(finite.min()),
                "median": float(np.median(finite)), "max": float(finite.max())}

    def column(frame: pd.DataFrame) -> pd.Series:  # a table without the column: nothing to say
        return frame["design_effect"] if "design_effect" in frame else pd.Series(dtype=float)

    fairness = results.fairness
    return {
        "unit": unit,
        "definition": "cluster-bootstrap variance / row-bootstrap variance of the statistic "
                      "(flip rates: linearised cluster variance / binomial variance); 1.0 "
                      "without a unit or with one test row per unit; NaN where undefined",
        "fairness": ({metric: spread(column(group))
                      for metric, group in fairness.groupby("metric", sort=False)}
                     if "metric" in fairness else {}),
        "intersectional_gap": spread(column(results.intersectional)),
        "counterfactual": spread(column(results.counterfactual)),
    }


SUMMARY_STRATEGIES = (Strategy.BASELINE, Strategy.UNAWARENESS_PROXY_REMOVAL)
PARITY_METRIC = "demographic_parity_diff"


def _parity(results: AuditResults) -> pd.DataFrame:
    """The first protected attribute's parity gap per cell (grid order)."""
    fairness = results.fairness
    if not len(fairness):
        return pd.DataFrame(columns=["strategy", "model", "parity_gap"])
    first = fairness["protected_attribute"].iloc[0]
    rows = fairness[(fairness["protected_attribute"] == first)
                    & (fairness["metric"] == PARITY_METRIC)]
    return rows.loc[:, ["strategy", "model", "value"]].rename(columns={"value": "parity_gap"})


def summary(results: AuditResults) -> dict[str, Any]:
    """The pipeline's DVC metrics of one audit: S0 and S2 parity gap and accuracy per model.

    The parity gap is the first protected attribute's ``demographic_parity_diff``.
    """
    parity = _parity(results).set_index(["strategy", "model"])["parity_gap"]
    perf = results.performance
    accuracy = perf[perf["metric"] == "accuracy"].set_index(["strategy", "model"])["value"]
    out: dict[str, Any] = {}
    codes = {s: f"S{i}" for i, s in enumerate(Strategy)}
    for strategy in SUMMARY_STRATEGIES:
        out[codes[strategy]] = {
            family.value: {"parity_gap": _number(parity.get((strategy.value, family.value))),
                           "accuracy": _number(accuracy.get((strategy.value, family.value)))}
            for family in ModelFamily
        }
    return out


def _number(value: object) -> float | None:
    """A JSON-safe float (None for a missing or undefined value)."""
    if value is None or pd.isna(value):  # type: ignore[call-overload]
        return None
    return float(value)  # type: ignore[arg-type]


def parity_plot(results: AuditResults | None) -> pd.DataFrame:
    """Plot data for ``dvc plots``: one row per cell, ``cell`` (e.g. ``S0 random_forest``),
    ``strategy``, ``model``, ``parity_gap``; empty (header only) for ``None``."""
    columns = ["cell", "strategy", "model", "parity_gap"]
    if results is None:
        return pd.DataFrame(columns=columns)
    frame = _parity(results)
    codes = {s.value: f"S{i}" for i, s in enumerate(Strategy)}
    frame.insert(0, "cell", [f"{codes[s]} {m}" for s, m in zip(frame["strategy"], frame["model"],
                                                               strict=True)])
    return frame.reset_index(drop=True).loc[:, columns]
