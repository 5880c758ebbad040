"""The operating-point curve figure of one audit: a fairness gap and accuracy against threshold.

Reads ``<audit>/curves.csv`` (:attr:`faircode.report.inputs.ReportInputs.curves`, written by
:mod:`faircode.evaluate.curves`) from disk.  Two rows of panels -- the report's metric on the
audit's first protected attribute, and accuracy -- by three columns, S0, S1 and S2; in each panel
one line per model family with its interval as a band, and the declared operating point of that
cell as a filled marker on its line.  S3 and S4 have no curve (their decisions are randomised or
fitted per group, no threshold moves them): they are drawn as their single point with its
interval in the S2 column (they use S2's core features), at the declared cutoff.

Design decisions
----------------
* The house figure style (:mod:`faircode.report.style`): the colour is the strategy (each
  column one colour; S3 and S4's points theirs), the model family its line style and marker,
  3.3 in wide, 7 pt text, PNG and PDF; a missing value is a gap in a line, never 0.
* Bands are drawn below the lines at a low alpha so that three families stay readable where
  they overlap; the y axes are shared along a row, so the three strategies compare by eye.
* The line runs through the grid and the declared point (which lies between two grid
  thresholds for a ``base_rate`` or ``top_fraction`` cutoff); the declared point is also a
  marker on it.
* At K > 1 the lines and bands are the K-replicate estimates (``curves.csv``'s ``value``, as
  every table shows them) and a dotted line beside each is replicate 0's own (``rep0_value``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from faircode.core.cells import CUTOFF_STRATEGIES, Strategy
from faircode.core.metrics import no_gap
from faircode.report.drawing import Drawing
from faircode.report.figures import FigureFile, _label, _save
from faircode.report.inputs import MODELS, ordered, strategy_code
from faircode.report.style import (
    SHORT,
    WIDTH,
    family_line,
    family_marker,
    strategy_colour,
)
from faircode.report.tables import Context

__all__ = ["CURVE_STRATEGIES", "POINT_STRATEGIES", "curve_drawings", "curve_figure"]

CURVE_STRATEGIES: tuple[str, ...] = tuple(s.value for s in CUTOFF_STRATEGIES)
"""The columns of the figure (S0-S2: a threshold decides them)."""
POINT_STRATEGIES: tuple[str, ...] = tuple(s.value for s in Strategy if s not in CUTOFF_STRATEGIES)
"""S3 and S4: one operating point each (strategy colour, family marker)."""


def _rows(curves: pd.DataFrame, audit: str, metric: str, attribute: str) -> pd.DataFrame:
    """One audit's rows of ``metric`` (``attribute``; '' for the whole-test-set metrics)."""
    attr = curves["protected_attribute"].fillna("").astype(str)
    return curves[(curves["audit"] == audit) & (curves["metric"] == metric)
                  & (attr == attribute)]


def _panel(ax: plt.Axes, rows: pd.DataFrame, models: list[str], *, colour: str) -> None:
    """One strategy's curves (every family, its line style): band, line, declared point."""
    for model in models:
        marker, line_style = family_marker(model, models), family_line(model, models)
        part = rows[rows["model"] == model].sort_values("threshold")
        if part.empty:
            continue
        line = part[part["point"] != "point_only"]
        x = line["threshold"].to_numpy(float)
        ax.fill_between(x, line["ci_low"].to_numpy(float), line["ci_high"].to_numpy(float),
                        color=colour, alpha=0.15, lw=0)
        ax.plot(x, line["value"].to_numpy(float), ls=line_style, color=colour, lw=0.8)
        if "rep0_value" in line:  # K > 1: replicate 0's own curve beside the estimate
            ax.plot(x, line["rep0_value"].to_numpy(float), ls=":", color=colour, lw=0.5,
                    alpha=0.7)
        declared = line[line["point"] == "declared"]
        ax.plot(declared["threshold"].to_numpy(float), declared["value"].to_numpy(float),
                marker, color=colour, ms=3.2, mec="white", mew=0.4, zorder=3)


def _points(ax: plt.Axes, rows: pd.DataFrame, models: list[str], *, at: float) -> None:
    """S3/S4's single points (value and interval) at the declared cutoff ``at``."""
    slots = [(s, m) for s in POINT_STRATEGIES for m in models]
    offsets = np.linspace(-0.035, 0.035, len(slots)) if len(slots) > 1 else np.zeros(1)
    for (strategy, model), dx in zip(slots, offsets, strict=True):
        hit = rows[(rows["strategy"] == strategy) & (rows["model"] == model)]
        if hit.empty or np.isnan(float(hit["value"].iloc[0])):
            continue
        colour = strategy_colour(strategy)
        x = at + dx
        ax.vlines(x, float(hit["ci_low"].iloc[0]), float(hit["ci_high"].iloc[0]),
                  color=colour, lw=0.6, zorder=3)
        ax.plot([x], [float(hit["value"].iloc[0])], family_marker(model, models), color=colour,
                ms=3.2, mec="black", mew=0.3, zorder=4)


def curve_figure(ctx: Context, audit: str, out: Path) -> FigureFile | None:
    """Per audit with ``curves.csv``: the report's metric (first attribute) and accuracy
    against the decision threshold, S0-S2 with bands, S3/S4 as points; None without curves."""
    curves = ctx.inputs.curves
    if curves.empty or not (curves["audit"] == audit).any():
        return None
    mine = curves[(curves["audit"] == audit) & curves["model"].isin(ctx.models)]
    attrs = [a for a in ordered(mine["protected_attribute"].dropna().astype(str), ()) if a]
    if not attrs:
        return None
    models = ordered(mine["model"], MODELS)
    strategies = [s for s in CURVE_STRATEGIES if (mine["strategy"] == s).any()]
    rows = [(_rows(mine, audit, ctx.metric, attrs[0]), f"{_label(ctx.metric)}\n({attrs[0]})",
             no_gap(ctx.metric)), (_rows(mine, audit, "accuracy", ""), "accuracy", None)]
    declared = mine.loc[mine["point"] == "declared", "threshold"].astype(float)
    at = float(declared.median()) if len(declared) else 0.5
    fig, axes = plt.subplots(2, max(1, len(strategies)), figsize=(WIDTH, 2.55), sharex=True,
                             sharey="row", squeeze=False, layout="constrained")
    for r, (frame, ylabel, ref) in enumerate(rows):
        for c, strategy in enumerate(strategies):
            ax = axes[r, c]
            if ref is not None:
                ax.axhline(ref, color="0.6", lw=0.6, zorder=0)
            _panel(ax, frame[frame["strategy"] == strategy], models,
                   colour=strategy_colour(strategy))
            if strategy == CURVE_STRATEGIES[-1]:
                _points(ax, frame, models, at=at)
            ax.grid(color="0.92", lw=0.5)
            ax.set_xlim(0, 1)
            ax.set_xticks([0, 0.5, 1], ["0", ".5", "1"])
            if r == 0:
                ax.set_title(strategy_code(strategy), pad=2)
        axes[r, 0].set_ylabel(ylabel, fontsize=6.5)
    fig.supxlabel("decision threshold (decide 1 above it)", fontsize=7)
    handles = [Line2D([], [], color="0.3", lw=0.8, ls=family_line(m, models),
                      marker=family_marker(m, models), ms=3, label=SHORT.get(m, m))
               for m in models]
    handles += [Line2D([], [], color=strategy_colour(s), marker="s", ls="", ms=3.5,
                       label=strategy_code(s)) for s in POINT_STRATEGIES
                if (mine["strategy"] == s).any()]
    fig.legend(handles=handles, ncols=len(handles), loc="outside upper center", frameon=False,
               handletextpad=0.3, columnspacing=0.8)
    pct = f"{ctx.confidence:.0%}"
    replicated = ("At K > 1 every point is the K-replicate estimate with its interval, as in "
                  "the tables (the declared point is fairness.csv's cell); the dotted line is "
                  "replicate 0's own. " if "rep0_value" in mine else "")
    return _save(fig, out, f"{audit}_curves_{ctx.metric}",
                 f"{audit}: {ctx.metric} ({attrs[0]}) and accuracy against the decision "
                 f"threshold for S0-S2 (colour: the strategy), one line per model family (line "
                 f"style and marker) with {pct} intervals (bands); the marker on each line is the "
                 "cell's declared operating point. S3 (green) and S4 (vermillion) have no "
                 "curve: their single point and interval at the declared rule, drawn in the S2 "
                 f"column (same core features) at the declared cutoff. {replicated}".strip(),
                 "audit", audit=audit,
                 kind="curves")


def curve_drawings(ctx: Context, *, out: Path) -> list[Drawing]:
    """The curve figure of every audit (audit order; an audit without ``curves.csv`` draws
    nothing), each one the reuse may carry over (:mod:`faircode.report.drawing`)."""
    return [Drawing(curve_figure, (ctx, audit), out, audit) for audit in ctx.inputs.runs]
