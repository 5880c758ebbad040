"""The ``regression`` kind's evaluator: a regression audit's fit into ``results/<audit>/``.

Reads the manifest, the raw file (``data/raw/<audit>/``, where the manifest's path points) and
the regression fit stage's predictions (``<predictions>/<audit>/regression/``,
:func:`faircode.grid.regression.save_regression_predictions`), evaluates every row set
(:func:`faircode.evaluate.regression.evaluate_regression`) and writes the audit's folder
(:func:`write_regression_audit`: the :data:`faircode.core.layout.REGRESSION_TABLES`, the
optional ones it has, ``run.json``) and two DVC views: the headline ``metrics/<audit>.json``
(:func:`headline`: the first attribute and, per strategy, the mean over the informative model
families of the predicted mean gap in the outcome's units -- the keys of every audit,
:mod:`faircode.evaluate.headline_keys`) and ``metrics/full/<audit>.json`` (:func:`full_summary`:
the units, the margin, and the observed outcome's and every row set's mean gap with its
verdict).  An audit whose predictions are the pipeline's
unavailable note gets that note and an ``{"available": false}`` headline, importing nothing
numerical.  ``faircode run`` runs the same steps in one process (:func:`run_regression`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faircode.core.kinds import REGRESSION
from faircode.core.layout import (
    REGRESSION_RUN,
    dvc_views,
    unavailable_message,
    write_unavailable,
)
from faircode.evaluate.headline_keys import UNAVAILABLE_HEADLINE, headline_record
from faircode.evaluate.job import Job, Upstream

if TYPE_CHECKING:
    from faircode.audit.regression_data import RegressionData
    from faircode.core.config import BenchmarkConfig
    from faircode.evaluate.regression import RegressionResults
    from faircode.grid.regression import RegressionPredictions

__all__ = ["EVALUATOR", "PART", "RegressionEvaluator", "full_summary",
           "headline", "run_regression", "write_regression_audit"]

PART = "regression"
"""The regression fit stage's folder under ``data/predictions/<audit>/``."""


def headline(results: RegressionResults, data: RegressionData) -> dict[str, Any]:
    """The DVC headline (:mod:`faircode.evaluate.headline_keys`): the first attribute and, per
    strategy, the mean over its informative model families of the predicted mean gap on it, in
    the outcome's units (null for a strategy that does not apply)."""
    import pandas as pd

    from faircode.core.cells import strategy_code
    from faircode.evaluate.regression import OBSERVED

    attribute = data.manifest.protected_attributes[0].name
    gaps = results.gaps
    rows = gaps[(gaps["protected_attribute"] == attribute)
                & (gaps["metric"] == REGRESSION.headline) & (gaps["strategy"] != OBSERVED)
                & (gaps["verdict"].astype(str) != "uninformative")]
    codes = rows["strategy"].map(lambda s: strategy_code(str(s)))
    means = pd.to_numeric(rows["value"], errors="coerce").groupby(codes.to_numpy()).mean()
    return headline_record(attribute, {str(code): value for code, value in means.items()})


def full_summary(results: RegressionResults, data: RegressionData) -> dict[str, Any]:
    """The full DVC view: the first attribute's mean gap, in the outcome's units, of the
    observed outcome and every cell (``S<n>.<family code>``), with the verdicts."""
    from faircode.core.cells import FAMILY_CODES, ModelFamily, family_name, strategy_code
    from faircode.core.metrics import Metric
    from faircode.evaluate.regression import OBSERVED

    attribute = data.manifest.protected_attributes[0].name
    rows = results.gaps[(results.gaps["protected_attribute"] == attribute)
                        & (results.gaps["metric"] == Metric.MEAN_DIFFERENCE.value)]
    codes = {family_name(f, REGRESSION.name): FAMILY_CODES[f] for f in ModelFamily}
    gaps: dict[str, Any] = {}
    for strategy, model, value, verdict in zip(
            rows["strategy"].astype(str), rows["model"].astype(str),
            rows["value"].to_numpy(dtype=float), rows["verdict"].astype(str), strict=True):
        key = OBSERVED if strategy == OBSERVED else \
            f"{strategy_code(strategy)}.{codes.get(model, model)}"
        gaps[key] = {"gap": None if value != value else round(float(value), 4),
                     "verdict": verdict}
    return {"attr": attribute, "units": data.manifest.target.scale_units,
            "margin": round(data.margin, 6), "mean_gap": gaps}


def _relative(file: Path) -> str:
    from faircode.audit.manifest import repository_root

    try:
        return file.resolve().relative_to(repository_root(file.parent)).as_posix()
    except ValueError:
        return file.name


def write_regression_audit(data: RegressionData, results: RegressionResults,
                           predictions: RegressionPredictions | None, *,
                           config: BenchmarkConfig, out_dir: Path,
                           provenance_record: Mapping[str, Any],
                           seconds: Mapping[str, float],
                           extra: Mapping[str, Any] | None = None,
                           kind: str = REGRESSION_RUN) -> Path:
    """Write ``<out_dir>/<audit>/`` whole (its tables and ``run.json``, with ``extra``'s keys:
    the predictions file a ``faircode audit`` read), swapped in in one step
    (:func:`faircode.evaluate.swap.replacing`); a target that is not this audit's results of
    ``kind`` is refused first (:func:`faircode.evaluate.write.check_replaceable`)."""
    from faircode.core.config import config_record
    from faircode.core.digests import folder_digests
    from faircode.core.layout import run_record, table_path
    from faircode.core.seeds import Stream
    from faircode.evaluate.swap import replacing
    from faircode.evaluate.write import check_replaceable, fit_timings, save_timings
    from faircode.provenance.state import params_digest

    manifest = data.manifest
    final = out_dir / manifest.name
    check_replaceable(final, audit=manifest.name, kind=kind)
    tables = {"regression_gaps": results.gaps, "regression_groups": results.groups,
              "strategies": results.strategies, "regression_strata": results.strata,
              "regression_replicates": results.replicates}
    with replacing(final) as staging:
        for name, frame in tables.items():
            if frame is not None:
                frame.to_csv(table_path(staging, name), index=False)
        target = manifest.target
        run = {
            "audit": manifest.name, "kind": REGRESSION_RUN, "title": manifest.title,
            "manifest": _relative(manifest.file),
            "manifest_sha256": hashlib.sha256(manifest.file.read_bytes()).hexdigest(),
            "dataset": {"path": manifest.dataset.declared_path, "sha256": data.sha256,
                        "sha256_declared": manifest.dataset.sha256},
            "target": {"column": target.column, "units": target.units,
                       "transform": target.transform, "scale_units": target.scale_units,
                       "margin": {"declared": target.margin.describe(),
                                  "resolved": data.margin}},
            **({"system": {"name": manifest.system.name, "title": manifest.system.title,
                           "outcome": True}} if manifest.system is not None else {}),
            **({"strata": {s.name: list(s.columns) for s in manifest.strata}}
               if manifest.strata else {}),
            **({"unit": manifest.unit} if manifest.unit is not None else {}),
            "rows": {step: n for step, n in data.steps},
            "split": {"train": len(data.train_index), "test": len(data.test_index)},
            "seeds": {"master": manifest.random_state,
                      "scheme": f"SeedSequence(master_k, spawn_key=({int(Stream.REGRESSION)}, "
                                "s, m, attribute)); the observed outcome's "
                                f"({int(Stream.REGRESSION)}, name_stream('observed'), attribute)"},
            "replicates": {"seeds": config.replicates.seeds,
                           "seed_mode": config.replicates.seed_mode},
            "unfittable": {f"{c.strategy.value} {c.model} {c.replicate}": c.unfittable
                           for c in (predictions.cells if predictions else ()) if c.unfittable},
            **(extra or {}),
            "config": config_record(config),
            **provenance_record,
            "state": {**(provenance_record.get("state") or {}),
                      "params_sha256": params_digest(config_record(config))},
            "files": folder_digests(staging),
        }
        run_record(staging).write_text(json.dumps(run, indent=2) + "\n")
    save_timings(final, seconds, cells=fit_timings(predictions.cells if predictions else ()))
    return final


def run_regression(manifest_path: Path, *, config: BenchmarkConfig, out_dir: Path,
                   provenance_record: Mapping[str, Any],
                   predictions_folder: Path | None = None) -> Path:
    """Load one regression audit, fit its grid (or read the fit stage's ``predictions_folder``),
    evaluate it and write its results folder; the folder (``faircode run``, the evaluate
    stage)."""
    from faircode.audit.regression_data import load_regression_audit
    from faircode.audit.regression_manifest import load_regression_manifest
    from faircode.evaluate.regression import evaluate_regression
    from faircode.grid.predictions import timings_path
    from faircode.grid.regression import fit_regression_grid, load_regression_predictions
    from faircode.provenance.state import with_fit_numerics

    data = load_regression_audit(load_regression_manifest(manifest_path))
    started = time.perf_counter()
    if predictions_folder is None:
        predictions = fit_regression_grid(data, mitigation=config.mitigation,
                                          replicates=config.replicates,
                                          encoding=config.models.encoding)
    else:
        predictions = load_regression_predictions(predictions_folder, sha256=data.sha256,
                                                  timings=timings_path(predictions_folder))
    fitted = time.perf_counter()
    results = evaluate_regression(data, predictions, stats=config.stats,
                                  verdicts=config.verdicts, replicates=config.replicates)
    seconds = {"fit": round(sum(c.seconds for c in predictions.cells), 3),
               "evaluate": round(time.perf_counter() - fitted, 3)}
    if predictions_folder is None:
        seconds["fit_wall"] = round(fitted - started, 3)
    record = with_fit_numerics(provenance_record, predictions.numerics)
    folder = write_regression_audit(data, results, predictions, config=config, out_dir=out_dir,
                                    provenance_record=record, seconds=seconds)
    views = dvc_views(out_dir, data.manifest.name)
    views.full.parent.mkdir(parents=True, exist_ok=True)
    views.headline.write_text(json.dumps(headline(results, data), indent=1) + "\n")
    views.full.write_text(json.dumps({data.manifest.name: full_summary(results, data)},
                                     indent=1) + "\n")
    return folder


class RegressionEvaluator:
    """The ``regression`` kind's :class:`~faircode.evaluate.job.Evaluator`."""

    def settle(self, audit: str, *, manifest: Path, upstream: Upstream, results: Path,
               config: BenchmarkConfig, say: Callable[[str], None]) -> Job | None:
        """Carry the fit's unavailable note into ``results/<audit>``; else the job."""
        fitted = upstream.predictions / audit / PART
        views = dvc_views(results, audit)
        message = unavailable_message(fitted)
        if message is None:
            from faircode.provenance.state import provenance

            return Job(REGRESSION.name, audit, results, manifest, (fitted,), views,
                       provenance())
        write_unavailable(results / audit, audit=audit, message=message)
        views.full.parent.mkdir(parents=True, exist_ok=True)
        views.headline.write_text(json.dumps(UNAVAILABLE_HEADLINE) + "\n")
        views.full.write_text(json.dumps({audit: {"available": False}}) + "\n")
        say(f"skipped: {message}")
        return None

    def run(self, job: Job, *, config: BenchmarkConfig) -> Path:
        """Evaluate and write one regression audit (in this process or a worker)."""
        return run_regression(job.manifest, config=config, out_dir=job.results,
                              provenance_record=dict(job.provenance_record),
                              predictions_folder=job.inputs[0])


EVALUATOR = RegressionEvaluator()
"""The ``regression`` kind's entry of :data:`faircode.evaluate.kinds.EVALUATORS`."""
