"""``faircode report``: every output of the report stage written from the results on disk.

Reads ``results/<audit>/`` (:mod:`faircode.report.inputs`), never the grid or the evaluate step.
An audit with a deployed system adds its tables (:mod:`faircode.report.deployed`), its
calibration figure and a section of the page; an audit without one is rendered as before.  A
task kind with a section of its own (:mod:`faircode.report.kinds`; the text audits',
:mod:`faircode.report.text`) adds its tables, its figures, its part of the page and one
sentence to the headline, for the runs of that kind the results folder holds.

``summary.csv`` holds one row per fairness test with both Benjamini-Hochberg families under
their own names (``q_value``/``significant``: the audit's own, the stars'; ``q_benchmark``/
``significant_benchmark``: every audit at once, a robustness check) and the report's ``star``;
``summary_families.csv`` the aggregate over model families.  The DVC metrics and plot files
are the evaluate stage's (:mod:`faircode.evaluate.summary`).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from faircode.core.errors import DataError, FaircodeError, describe
from faircode.core.layout import (
    FIGURES,
    FIGURES_PREVIOUS,
    REPORT_PAGE,
    RESIDUAL_FLOOR,
    SUMMARY,
    SUMMARY_FAMILIES,
)
from faircode.report import arbitrariness as report_arbitrariness
from faircode.report import effects as report_effects
from faircode.report import matched as report_matched
from faircode.report.analysis import (
    DEFAULT_METRIC,
    benchmark_family,
    floor_counts,
    summarise,
    summary_rows,
)
from faircode.report.deployed import deployed_tables
from faircode.report.figure_reuse import FigureReuse
from faircode.report.inputs import (
    MODELS,
    ReportInputs,
    load_results,
    ordered,
    resolve_metric,
)
from faircode.report.kinds import LoadedSection, load_sections
from faircode.report.people import people_tables
from faircode.report.tables import Context

if TYPE_CHECKING:
    from faircode.report.figures import FigureFile

__all__ = ["ReportOutputs", "write_report"]


@dataclass(frozen=True, slots=True)
class ReportOutputs:
    """Where :func:`write_report` wrote each output."""

    summary: Path
    tables: tuple[Path, ...]
    figures: tuple[Path, ...]
    html: Path
    extra: tuple[Path, ...] = field(default=())
    """``summary_families.csv`` and ``residual_floor.csv``."""


def _alpha(runs: Mapping[str, Mapping[str, Any]], key: str, default: float) -> float:
    values = {float(r.get("config", {}).get(key, default)) for r in runs.values()}
    if len(values) > 1:
        raise DataError(f"run.json: config.{key}: expected one value across audits, "
                        f"got {describe(sorted(values))}")
    return values.pop() if values else default


def write_report(
    results: Path,
    *,
    audits_dir: Path | None = None,
    only: Sequence[str] = (),
    metric: str = DEFAULT_METRIC,
    model: str | None = None,
    provenance: Mapping[str, Any] | None = None,
    workers: int = 1,
) -> ReportOutputs:
    """Write summary, tables, figures and ``report.html`` into ``results``.

    ``results/figures`` belongs to the report (a figure whose inputs are unchanged is carried
    over: :mod:`faircode.report.figure_reuse`).

    ``workers``: processes drawing the figures and encoding the page's images (the files are the
    same bytes for any number: :mod:`faircode.report.drawing`).

    ``provenance`` is the report code's own record
    (``faircode.provenance.state.provenance(code=REPORT_CODE)``; optional): the page shows the
    state of the results (their ``run.json``) and names the code that rendered it.
    """
    from faircode.report.html import write_html
    from faircode.report.tables import write_tables

    inputs = load_results(results, audits_dir=audits_dir, only=only)
    sections = load_sections(results, only=only)  # the kinds' own sections (text audits')
    measured = [*inputs.fairness["metric"].astype(str),
                *inputs.deployed.fairness["metric"].astype(str)]
    if measured or not sections:  # sections alone (a text audit alone): no grid metric to name
        metric = resolve_metric(metric, measured)
    models = ordered(inputs.fairness["model"], MODELS)
    if model is not None and model not in models:
        raise FaircodeError(f"--model: expected one of {', '.join(models)}, "
                            f"got {describe(model)}")
    alpha = _alpha(inputs.runs, "alpha", 0.05)
    confidence = _alpha(inputs.runs, "confidence", 0.95)
    context = _context(inputs, metric=metric, models=tuple([model] if model else models),
                       alpha=alpha, confidence=confidence)
    shown = report_effects.shown_gaps(context.fairness, metric=None, alpha=alpha)
    summary_path, families_path = results / SUMMARY, results / SUMMARY_FAMILIES
    summary_rows(context.fairness, shown=shown, q_benchmark=context.fairness["q_benchmark"],
                 alpha=alpha).to_csv(summary_path, index=False, na_rep="NaN")
    summary = summarise(inputs.fairness, q_benchmark=context.fairness["q_benchmark"],
                        alpha=alpha, verdicts=shown["verdict"])
    summary.to_csv(families_path, index=False, na_rep="NaN")
    floor = report_effects.residual_floor(context.effects, metric=metric)
    floor_path = results / RESIDUAL_FLOOR
    floor.to_csv(floor_path, index=False, na_rep="NaN")
    effects_table = report_effects.effects_table(context)
    matched = report_matched.matched_table(context)
    arbitrary = (report_arbitrariness.arbitrariness_table(context),
                 report_arbitrariness.multiplicity_table(context))
    tables = write_tables(
        context, floor=floor, out=results,
        extra=(*deployed_tables(context), *people_tables(context),
               *([effects_table] if effects_table else []), *([matched] if matched else []),
               *(t for t in arbitrary if t is not None)))
    tables = (*tables, *(p for s in sections for p in s.section.tables(s.inputs, results)))
    figures, by_section = _figures(context, floor=floor, results=results, sections=sections,
                                   workers=workers)
    html = write_html(context, floor=floor, counts=floor_counts(floor),
                      intersectional=context.intersectional, figures=figures,
                      provenance=provenance or {}, out=results / REPORT_PAGE,
                      sections=by_section, workers=workers)
    drawn = (*figures, *(f for _, own in by_section for f in own))
    return ReportOutputs(summary=summary_path, tables=tables,
                         figures=tuple(p for f in drawn for p in (f.png, f.pdf)), html=html,
                         extra=(families_path, floor_path))


def _context(inputs: ReportInputs, *, metric: str, models: tuple[str, ...], alpha: float,
             confidence: float) -> Context:
    """Everything the tables and figures read: the shown gaps and effects (stars from each
    audit's own q), plus the benchmark-wide q as ``q_benchmark`` columns."""
    deployed = inputs.deployed
    gaps = deployed.calibration_gap
    gaps = gaps[gaps["audit"].isin(list(deployed.systems))]  # shown (and tested) with a system
    family = benchmark_family(inputs.fairness, inputs.intersectional,
                              deployed=deployed.fairness, calibration_gap=gaps)
    fairness = inputs.fairness.assign(q_benchmark=family.fairness)
    return Context(
        inputs=inputs, fairness=fairness, metric=metric, models=models, alpha=alpha,
        confidence=confidence,
        deployed_fairness=deployed.fairness.assign(q_benchmark=family.deployed),
        calibration_gap=gaps.assign(q_benchmark=family.calibration_gap),
        gaps=report_effects.shown_gaps(fairness, metric=metric, alpha=alpha),
        effects=report_effects.shown_effects(inputs, alpha=alpha),  # the K-estimates at K > 1
        variance_note=report_effects.training_variance_note(inputs),
        intersectional=pd.concat([inputs.intersectional, family.intersectional], axis=1))


def _figures(ctx: Context, *, floor: pd.DataFrame, results: Path,
             sections: Sequence[LoadedSection], workers: int
             ) -> tuple[tuple[FigureFile, ...], tuple[tuple[LoadedSection, tuple[FigureFile, ...]],
                                                  ...]]:
    """Write ``results/figures/`` whole -- (the grid audits' figures, each section with its
    own) -- on ``workers`` processes: no stale file survives; a per-audit figure whose inputs
    did not change is carried over from the previous figures/ (figure_reuse)."""
    from faircode.report import figures as report_figures
    from faircode.report.calibration_figure import calibration_drawings
    from faircode.report.drawing import draw
    from faircode.report.threshold_curves import curve_drawings

    out, previous = results / FIGURES, results / FIGURES_PREVIOUS
    shutil.rmtree(previous, ignore_errors=True)
    if out.is_dir():
        out.rename(previous)
    try:
        reuse = FigureReuse(previous, results=results, make=report_figures.FigureFile,
                            settings={"metric": ctx.metric, "models": ctx.models,
                                      "alpha": ctx.alpha, "confidence": ctx.confidence})
        grid = [*report_figures.figure_drawings(ctx, floor=floor, out=out),
                *curve_drawings(ctx, out=out), *calibration_drawings(ctx, out=out),
                *report_matched.frontier_drawings(ctx, out=out),
                *report_arbitrariness.arbitrariness_drawings(ctx, out=out)]
        own = [s.section.drawings(s.inputs, out) for s in sections]
        drawn = draw([*grid, *(d for part in own for d in part)], reuse=reuse, workers=workers)
        reuse.write(out)
    finally:
        shutil.rmtree(previous, ignore_errors=True)
    shown, start = [], len(grid)
    for s, part in zip(sections, own, strict=True):
        shown.append((s, tuple(f for f in drawn[start:start + len(part)] if f is not None)))
        start += len(part)
    return tuple(f for f in drawn[:len(grid)] if f is not None), tuple(shown)
