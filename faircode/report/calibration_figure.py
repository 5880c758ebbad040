"""The deployed-system figure: calibration by group of the system beside one grid model.

Design decisions
----------------
* The house figure style (:mod:`faircode.report.style`): the colour of a panel is its
  strategy's (a deployed system purple, S0 black), the groups are told apart by marker, line
  style and fill, so no colour means a group in one figure and a strategy in the next.
* Marks are the audit's own q (``calibration_gap.csv`` ``q_value``), as everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from faircode.report.drawing import Drawing
from faircode.report.figures import FigureFile, _fmt, _save
from faircode.report.inputs import DEPLOYED, MODELS, STRATEGIES, ordered, strategy_code
from faircode.report.style import SHORT, WIDTH, strategy_colour
from faircode.report.tables import Context

__all__ = ["GROUP_STYLE", "calibration_by_group", "calibration_drawings"]


GROUP_STYLE: tuple[tuple[str, str, bool], ...] = (("o", "-", True), ("s", "--", False),
                                                  ("^", ":", True), ("D", "-.", False))
"""Marker, line style and fill of the 1st, 2nd, ... group of a panel (the colour is the
panel's strategy: :func:`faircode.report.style.strategy_colour`)."""


def _calibration_rows(ctx: Context, audit: str) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The deployed system's all-row bins, one grid model's test-row bins, and its label."""
    frame = ctx.inputs.deployed.calibration
    frame = frame[frame["audit"] == audit]
    tool = frame[(frame["strategy"] == DEPLOYED) & (frame["row_set"] == "all")]
    grid = frame[(frame["strategy"] != DEPLOYED) & (frame["row_set"] == "test")
                 & frame["model"].isin(ctx.models)]
    cells = [(s, m) for s in ordered(grid["strategy"], STRATEGIES)
             for m in ordered(grid["model"], MODELS)
             if ((grid["strategy"] == s) & (grid["model"] == m)).any()]
    if not cells:
        return tool, grid.iloc[0:0], ""
    strategy, model = cells[0]  # S0 logistic regression when present
    chosen = grid[(grid["strategy"] == strategy) & (grid["model"] == model)]
    return tool, chosen, f"{strategy_code(strategy)} {SHORT.get(model, model)}"


def _gap_text(ctx: Context, audit: str, attr: str, strategy: str, model: str,
              row_set: str) -> str:
    gaps = ctx.calibration_gap
    if gaps.empty:
        return "gap n/a"
    hit = gaps[(gaps["audit"] == audit) & (gaps["protected_attribute"] == attr)
               & (gaps["strategy"] == strategy) & (gaps["model"] == model)
               & (gaps["row_set"] == row_set)]
    if hit.empty or np.isnan(float(hit["value"].iloc[0])):
        return "gap n/a"
    row = hit.iloc[0]
    mark = "*" if float(row.get("q_value", np.nan)) < ctx.alpha else ""
    return (f"gap {_fmt(float(row['value']))} [{_fmt(float(row['ci_low']))}, "
            f"{_fmt(float(row['ci_high']))}]{mark}")


def _calibration_panel(ax: Any, rows: pd.DataFrame, *, ordinal: bool, colour: str) -> None:
    """Observed label-1 rate against mean score per bin, one line per group (marker and line
    style; the colour is the panel's strategy), Wilson bars."""
    groups = ordered(rows["group"], ())
    offsets = np.linspace(-0.12, 0.12, len(groups)) if ordinal and len(groups) > 1 \
        else np.zeros(len(groups))
    for i, (group, dx) in enumerate(zip(groups, offsets, strict=True)):
        marker, line, filled = GROUP_STYLE[i % len(GROUP_STYLE)]
        part = rows[(rows["group"] == group) & (rows["n"].astype(int) > 0)]
        x = part["mean_score"].to_numpy(float) + dx
        ax.vlines(x, part["ci_low"].to_numpy(float), part["ci_high"].to_numpy(float),
                  color=colour, lw=0.6)
        ax.plot(x, part["observed_rate"].to_numpy(float), marker=marker, ls=line, color=colour,
                mfc=colour if filled else "white", ms=2.6, lw=0.7, label=str(group))
    if not ordinal:
        ax.plot([0, 1], [0, 1], ls="--", color="0.6", lw=0.6, zorder=0)
        ax.set_xlim(0, 1)
        ax.set_xticks([0, 0.5, 1], ["0", "0.5", "1"])
    else:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True, nbins=5))
    ax.set_ylim(0, 1)
    ax.grid(color="0.92", lw=0.5)
    ax.legend(loc="upper left", frameon=False, fontsize=5, handlelength=1.2,
              handletextpad=0.3, borderaxespad=0.2)


def calibration_by_group(ctx: Context, audit: str, out: Path) -> FigureFile | None:
    """Per audit with a system: calibration by group of the system (every row) beside S0 LR.

    Rows of panels are the attributes; the left column is the deployed system on every row of
    the audit (one bin per score value), the right one grid model on the test rows.
    """
    tool, grid, grid_label = _calibration_rows(ctx, audit)
    if tool.empty:
        return None
    system = ctx.inputs.deployed.systems[audit]
    attrs = ordered(tool["protected_attribute"], ())
    fig = plt.figure(figsize=(WIDTH, 0.55 + 1.3 * len(attrs)), layout="constrained")
    left, right = np.asarray(fig.subfigures(1, 2, wspace=0.02)).ravel()
    columns = [(left, tool, f"{system}, every row", DEPLOYED, system, "all", True)]
    if not grid.empty:
        strategy, model = str(grid["strategy"].iloc[0]), str(grid["model"].iloc[0])
        columns.append((right, grid, f"{grid_label}, test rows", strategy, model, "test", False))
    for sub, rows, title, strategy, model, row_set, ordinal in columns:
        axes = sub.subplots(len(attrs), 1, squeeze=False, sharex=True)[:, 0]
        sub.suptitle(title, fontsize=7)
        for ax, attr in zip(axes, attrs, strict=True):
            _calibration_panel(ax, rows[rows["protected_attribute"] == attr], ordinal=ordinal,
                               colour=strategy_colour(strategy))
            ax.set_title(f"{attr}: {_gap_text(ctx, audit, attr, strategy, model, row_set)}",
                         loc="left", pad=2, fontsize=6)
        axes[-1].set_xlabel("score" if ordinal else "probability (bin mean)")
        if ordinal:
            sub.supylabel("observed label-1 rate", fontsize=6.5)
    pct = f"{ctx.confidence:.0%}"
    return _save(
        fig, out, f"{audit}_calibration_by_group",
        f"{audit}: calibration by group: observed label-1 rate against mean score per bin, "
        f"with Wilson {pct} intervals. Left: the deployed system {system} on every row (one "
        f"bin per score value); right: {grid_label or 'no grid model with a score'} on the "
        "test rows (dashed: perfect calibration). Panel titles: the calibration gap "
        f"(disadvantaged minus advantaged at equal score) [{pct} CI]; * the audit's own q < "
        f"{ctx.alpha:g}. Colour: the strategy (a deployed system purple); groups by marker "
        "and line style.", section="audit", audit=audit, kind="calibration")


def calibration_drawings(ctx: Context, *, out: Path) -> list[Drawing]:
    """The calibration figure of every audit with a deployed system and results (always drawn:
    it reads the deployed inputs; :mod:`faircode.report.drawing`)."""
    return [Drawing(calibration_by_group, (ctx, audit), out)
            for audit in ctx.inputs.deployed.systems if audit in ctx.inputs.runs]
