"""``faircode report``: every output of the report stage written from the results on disk.

Reads ``results/<audit>/`` (:mod:`faircode.report.inputs`), never the grid or the evaluate step.
An audit with a deployed system adds its tables (:mod:`faircode.report.deployed`), its
calibration figure and a section of the page; an audit without one is rendered as before.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.core.errors import DataError, FaircodeError, describe
from faircode.report.analysis import (
    DEFAULT_METRIC,
    benchmark_family,
    floor_counts,
    residual_floor,
    summarise,
)
from faircode.report.deployed import deployed_tables
from faircode.report.inputs import (
    MODELS,
    STRATEGIES,
    ReportInputs,
    load_results,
    ordered,
    resolve_metric,
    strategy_code,
)

__all__ = ["ReportOutputs", "write_plot_data", "write_report"]


@dataclass(frozen=True, slots=True)
class ReportOutputs:
    """Where :func:`write_report` wrote each output."""

    summary: Path
    tables: tuple[Path, ...]
    figures: tuple[Path, ...]
    plots: tuple[Path, ...]
    html: Path
    extra: tuple[Path, ...] = field(default=())


def _alpha(runs: Mapping[str, Mapping[str, Any]], key: str, default: float) -> float:
    values = {float(r.get("config", {}).get(key, default)) for r in runs.values()}
    if len(values) > 1:
        raise DataError(f"run.json: config.{key}: expected one value across audits, "
                        f"got {describe(sorted(values))}")
    return values.pop() if values else default


def write_plot_data(inputs: ReportInputs, *, out: Path) -> tuple[Path, ...]:
    """Write ``<out>/<metric>/<audit>[.<attribute>].csv``: one row per strategy, one column
    per model family (value), for DVC ``plots:`` (x ``strategy_index``, y the families)."""
    written = []
    for table, extra in (("fairness", ["protected_attribute"]), ("performance", [])):
        frame = getattr(inputs, table)
        if frame.empty:
            continue
        for keys, g in frame.groupby(["audit", "metric", *extra], sort=True):
            audit, metric, *attr = (str(k) for k in keys)
            wide = g.pivot_table(index="strategy", columns="model", values="value",
                                 aggfunc="first", dropna=False)
            wide = wide.reindex(index=ordered(g["strategy"], STRATEGIES),
                                columns=ordered(g["model"], MODELS))
            wide.insert(0, "strategy_code", [strategy_code(s) for s in wide.index])
            wide.insert(0, "strategy_index", range(len(wide)))
            path = out / metric / (".".join([audit, *attr]) + ".csv")
            path.parent.mkdir(parents=True, exist_ok=True)
            wide.reset_index().to_csv(path, index=False, na_rep="NaN")
            written.append(path)
    return tuple(written)


def write_report(
    results: Path,
    *,
    audits_dir: Path | None = None,
    only: Sequence[str] = (),
    metric: str = DEFAULT_METRIC,
    model: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> ReportOutputs:
    """Write summary, tables, figures, DVC plot data and ``report.html`` into ``results``.

    ``results/figures`` and ``results/plots`` belong to the report and are rewritten whole.

    ``provenance`` is the report code's own record
    (``faircode.core.provenance.provenance(code=REPORT_CODE)``; optional): the page shows the
    state of the results (their ``run.json``) and names the code that rendered it.
    """
    from faircode.report import figures as report_figures
    from faircode.report import html as report_html
    from faircode.report import tables as report_tables

    inputs = load_results(results, audits_dir=audits_dir, only=only)
    metric = resolve_metric(metric, inputs.fairness["metric"].astype(str))
    models = ordered(inputs.fairness["model"], MODELS)
    if model is not None and model not in models:
        raise FaircodeError(f"--model: expected one of {', '.join(models)}, "
                            f"got {describe(model)}")
    alpha = _alpha(inputs.runs, "alpha", 0.05)
    confidence = _alpha(inputs.runs, "confidence", 0.95)
    deployed = inputs.deployed
    gaps = deployed.calibration_gap
    gaps = gaps[gaps["audit"].isin(list(deployed.systems))]  # shown (and tested) with a system
    family = benchmark_family(inputs.fairness, inputs.intersectional,
                              deployed=deployed.fairness, calibration_gap=gaps)
    q_fair, q_inter = family.fairness, family.intersectional
    fairness = inputs.fairness.assign(q_benchmark=q_fair)
    intersectional = pd.concat([inputs.intersectional, q_inter], axis=1)
    summary = summarise(inputs.fairness, q_benchmark=q_fair, alpha=alpha)
    summary_path = results / "summary.csv"
    summary.to_csv(summary_path, index=False, na_rep="NaN")
    floor = residual_floor(fairness, metric=metric)
    floor_path = results / "residual_floor.csv"
    floor.to_csv(floor_path, index=False, na_rep="NaN")
    context = report_tables.Context(
        inputs=inputs, fairness=fairness, metric=metric,
        models=tuple([model] if model else models), alpha=alpha, confidence=confidence,
        deployed_fairness=deployed.fairness.assign(q_benchmark=family.deployed),
        calibration_gap=gaps.assign(q_benchmark=family.calibration_gap))
    tables = report_tables.write_tables(context, floor=floor, out=results,
                                        extra=deployed_tables(context))
    for generated in ("figures", "plots"):  # wholly the report's: no stale file survives
        shutil.rmtree(results / generated, ignore_errors=True)
    figures = report_figures.write_figures(context, floor=floor, out=results / "figures")
    plots = write_plot_data(inputs, out=results / "plots")
    html = report_html.write_html(
        context, summary=summary, floor=floor, counts=floor_counts(floor),
        intersectional=intersectional, figures=figures, provenance=provenance or {},
        out=results / "report.html")
    return ReportOutputs(summary=summary_path, tables=tables,
                         figures=tuple(p for f in figures for p in (f.png, f.pdf)), plots=plots,
                         html=html, extra=(floor_path,))

