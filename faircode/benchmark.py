"""The grid: every strategy x model cell of an audit, scored against every protected attribute.

For one audit, :func:`run_audit` fits the 5 strategies x 3 model families (15 cells) on the
training rows, predicts the test rows, and scores each cell with

* the six group-fairness metrics for every protected attribute (bootstrap CI + permutation p),
* accuracy / AUC / F1 with CIs,
* the intersectional demographic-parity gap for every pair of attributes,
* the counterfactual flip rate of every manifest axis (explicit and proxy channels apart).

Labels and decisions are oriented once by the manifest's ``target.favourable``
(:func:`faircode.metrics.orient`) before any group metric.  Benjamini-Hochberg q-values are then
computed across every fairness test of the audit (:func:`faircode.metrics.audit_q_values`: each
per-attribute null once, the intersectional gaps and interactions), and ``significant`` is
``q < alpha``.

Reproducibility: one master seed, the manifest's ``random_state``.  Each stochastic step draws
from its own child stream ``SeedSequence(master, spawn_key=(stream, strategy, model, ...))``
(see :class:`Stream`), keyed by *position in the grid*, not by execution order, so results are
bit-identical for any ``jobs`` and any completion order.  Models are seeded with the master
seed itself, as the manifest spec requires.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any

import pandas as pd
from joblib import Parallel, delayed

from faircode.config import BenchmarkConfig
from faircode.counterfactual import PerturbedRows, flip_rates, perturb_test_rows
from faircode.data import AuditData
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
from faircode.stats import child_seed
from faircode.strategies import Strategy, fit_strategy, supports_constraint

__all__ = ["AuditResults", "CellResult", "Stream", "provenance", "run_audit", "write_audit"]


class Stream(IntEnum):
    """First component of every child seed's spawn key: which kind of randomness it feeds."""

    FAIRNESS = 0
    PERFORMANCE = 1
    INTERSECTIONAL = 2
    COUNTERFACTUAL = 3
    PREDICTION = 4


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


@dataclass(frozen=True, slots=True)
class AuditResults:
    """The four result tables of one audit and the per-cell record that produced them."""

    fairness: pd.DataFrame
    performance: pd.DataFrame
    intersectional: pd.DataFrame
    counterfactual: pd.DataFrame
    cells: tuple[CellResult, ...]


def run_audit(
    data: AuditData,
    *,
    config: BenchmarkConfig,
    on_cell_done: Callable[[CellResult], None] | None = None,
) -> AuditResults:
    """Run the full grid on one prepared audit and return its result tables.

    ``on_cell_done`` is called in the parent process as each cell finishes (progress display).
    """
    perturbed = perturb_test_rows(data)
    cells = list(itertools.product(Strategy, ModelFamily))
    jobs = min(config.jobs, len(cells))
    tasks = (delayed(_run_cell)(data, s, m, perturbed, config) for s, m in cells)
    results: list[CellResult] = []
    for result in Parallel(n_jobs=jobs, return_as="generator_unordered")(tasks):
        results.append(result)
        if on_cell_done is not None:
            on_cell_done(result)
    order = {cell: i for i, cell in enumerate(cells)}
    results.sort(key=lambda r: order[(r.strategy, r.family)])
    return _assemble(data, results, config)


def _run_cell(
    data: AuditData,
    strategy: Strategy,
    family: ModelFamily,
    perturbed: Sequence[PerturbedRows],
    config: BenchmarkConfig,
) -> CellResult:
    """Fit, predict and score one cell (runs in a worker process)."""
    if not supports_constraint(strategy, config.constraint):
        return CellResult(strategy, family, skipped=(
            f"{strategy.value} cannot enforce constraint {config.constraint!r}"))
    manifest = data.manifest
    master = manifest.random_state
    s, m = list(Strategy).index(strategy), list(ModelFamily).index(family)
    first = manifest.protected_attributes[0].name
    train, test = data.train_index, data.test_index
    y_train, y_test = data.y[train], data.y[test]

    t0 = time.perf_counter()
    fitted = fit_strategy(
        strategy, family,
        X=data.X.iloc[train], y=y_train, sensitive=data.disadvantaged[first][train],
        manifest=manifest, config=config,
    )
    t1 = time.perf_counter()
    predict_seed = int(child_seed(master, Stream.PREDICTION, s, m).generate_state(1)[0])
    x_test = data.X.iloc[test]
    y_pred, y_score = fitted.predict(
        x_test, sensitive=data.disadvantaged[first][test], random_state=predict_seed
    )
    t2 = time.perf_counter()

    label = {"strategy": strategy.value, "model": family.value}
    # every group metric counts the favourable outcome (negative = disadvantaged worse off)
    y_fav, yhat_fav = orient(y_test, y_pred, favourable=manifest.target.favourable)
    fairness: list[dict[str, Any]] = []
    attributes = manifest.protected_attributes
    for a, attribute in enumerate(attributes):
        for result in fairness_metrics(
            y_fav, yhat_fav, data.disadvantaged[attribute.name][test],
            n_permutations=config.n_permutations,
            confidence=config.confidence, seed=child_seed(master, Stream.FAIRNESS, s, m, a),
        ):
            fairness.append({**label, "protected_attribute": attribute.name,
                             **dataclasses.asdict(result)})
    performance = [
        {**label, **dataclasses.asdict(result)}
        for result in performance_metrics(
            y_test, y_pred, y_score, n_resamples=config.n_resamples,
            confidence=config.confidence, seed=child_seed(master, Stream.PERFORMANCE, s, m),
        )
    ]
    intersectional: list[dict[str, Any]] = []
    for p, (a, b) in enumerate(itertools.combinations(range(len(attributes)), 2)):
        pair = intersectional_gap(
            yhat_fav, data.disadvantaged[attributes[a].name][test],
            data.disadvantaged[attributes[b].name][test], n_permutations=config.n_permutations,
            confidence=config.confidence, seed=child_seed(master, Stream.INTERSECTIONAL, s, m, p),
        )
        intersectional.append({**label, "attribute_a": attributes[a].name,
                               "attribute_b": attributes[b].name, **dataclasses.asdict(pair)})
    t3 = time.perf_counter()

    counterfactual: list[dict[str, Any]] = []
    for rows in perturbed:
        y_flip, _ = fitted.predict(rows.X, sensitive=rows.sensitive, random_state=predict_seed)
        flips = flip_rates(
            y_pred, y_flip, rows.changed, axis=rows.axis, kind=rows.kind,
            favourable=manifest.target.favourable, confidence=config.confidence,
        )
        record = dataclasses.asdict(flips)
        record["kind"] = flips.kind.value
        counterfactual.append({**label, "columns": " ".join(rows.columns), **record})
    t4 = time.perf_counter()
    return CellResult(
        strategy, family, tuple(fairness), tuple(performance), tuple(intersectional),
        tuple(counterfactual),
        seconds={"fit": t1 - t0, "predict": t2 - t1, "statistics": t3 - t2,
                 "counterfactual": t4 - t3},
    )


PERFORMANCE_COLUMNS = ("audit", "strategy", "model", "metric", "value", "ci_low", "ci_high", "n",
                       "note")
COUNTERFACTUAL_COLUMNS = (
    "audit", "strategy", "model", "axis", "kind", "columns", "flip_rate", "ci_low", "ci_high",
    "to_favourable", "to_unfavourable", "n_changed", "n_unchanged", "n_flipped", "note",
)


def _assemble(
    data: AuditData, results: Sequence[CellResult], config: BenchmarkConfig
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
    data: AuditData,
    results: AuditResults,
    *,
    config: BenchmarkConfig,
    out_dir: Path,
    provenance_record: dict[str, Any],
) -> Path:
    """Write ``<out_dir>/<audit>/`` (four CSVs + ``run.json``) atomically; return the folder.

    Everything is written to a sibling temporary folder which then replaces the audit's folder,
    so a failure never leaves a half-written result beside complete ones.
    """
    manifest = data.manifest
    final = out_dir / manifest.name
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{manifest.name}-", dir=out_dir))
    try:
        for name in ("fairness", "performance", "intersectional", "counterfactual"):
            # default float formatting is the shortest exact repr: numbers round-trip
            getattr(results, name).to_csv(staging / f"{name}.csv", index=False)
        run = {
            "audit": manifest.name,
            "title": manifest.title,
            "manifest": str(manifest.file),
            "manifest_sha256": hashlib.sha256(manifest.file.read_bytes()).hexdigest(),
            "dataset": {"path": manifest.dataset.declared_path, "sha256": data.sha256,
                        "sha256_declared": manifest.dataset.sha256},
            "rows": {"steps": [list(step) for step in data.steps],
                     "train": len(data.train_index), "test": len(data.test_index)},
            "seeds": {"master": manifest.random_state,
                      "scheme": "SeedSequence(master, spawn_key=(stream, strategy, model, "
                                "index)); streams " + ", ".join(
                                    f"{s.value}={s.name.lower()}" for s in Stream),
                      "models": manifest.random_state},
            "config": config.as_dict(),
            **provenance_record,
            "cells": [
                {"strategy": c.strategy.value, "model": c.family.value,
                 "seconds": {k: round(v, 4) for k, v in c.seconds.items()},
                 **({"skipped": c.skipped} if c.skipped else {})}
                for c in results.cells
            ],
        }
        (staging / "run.json").write_text(json.dumps(run, indent=2) + "\n")
        # Swap folders by renames only: the previous results survive until the new ones are in.
        previous = staging.with_name(staging.name + ".previous")
        if final.exists():
            os.replace(final, previous)
        os.replace(staging, final)
        shutil.rmtree(previous, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final
