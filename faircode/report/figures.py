"""The report's figures: matplotlib (Agg), PNG and PDF, sized for a 3.3-inch paper column.

Design decisions
----------------
* Okabe-Ito colours (distinguishable under the common colour-vision deficiencies) and a second
  channel for every colour: each model family also has its own marker, so a grey-scale print
  still reads.  The heatmap uses the ColorBrewer ``PuOr`` diverging map centred on parity.
* Drawn at print size (3.3 in wide, 7 pt text), never scaled down from a screen-sized figure.
* A value that is not a number is written as "n/a" (or "uninf." for degenerate decisions) in
  the plot, never drawn as a point at 0.
* Deterministic files: no creation date in the PDF, no software tag in the PNG.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from faircode.report.analysis import abs_bounds
from faircode.report.figure_reuse import FigureReuse
from faircode.report.inputs import (
    DEPLOYED,
    MODELS,
    STRATEGIES,
    is_uninformative,
    metric_reference,
    ordered,
    strategy_code,
)
from faircode.report.tables import Context

__all__ = ["FAMILY_STYLE", "OKABE_ITO", "FigureFile", "calibration_by_group", "write_figures"]

OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky_blue": "#56B4E9",
             "green": "#009E73", "yellow": "#F0E442", "blue": "#0072B2",
             "vermillion": "#D55E00", "purple": "#CC79A7"}
FAMILY_STYLE = {"logistic_regression": (OKABE_ITO["blue"], "o"),
                "random_forest": (OKABE_ITO["orange"], "s"),
                "gradient_boosting": (OKABE_ITO["purple"], "^")}
_EXTRA_STYLE = [(OKABE_ITO["green"], "D"), (OKABE_ITO["vermillion"], "v"),
                (OKABE_ITO["sky_blue"], "P")]
STRATEGY_COLOURS = [OKABE_ITO[c] for c in ("black", "orange", "sky_blue", "green",
                                             "vermillion", "blue", "purple")]
WIDTH = 3.3
RC: dict[str, Any] = {
      "font.size": 7, "axes.labelsize": 7, "axes.titlesize": 7, "xtick.labelsize": 6.5,
      "ytick.labelsize": 6.5, "legend.fontsize": 6.5, "lines.linewidth": 0.8,
      "lines.markersize": 3.5, "axes.linewidth": 0.6, "xtick.major.width": 0.6,
      "ytick.major.width": 0.6, "errorbar.capsize": 1.5, "font.family": "DejaVu Sans",
      "pdf.fonttype": 42, "svg.hashsalt": "faircode", "axes.spines.top": False,
      "axes.spines.right": False}
SHORT = {"logistic_regression": "LR", "random_forest": "RF", "gradient_boosting": "GB"}


@dataclass(frozen=True, slots=True)
class FigureFile:
    """One written figure: its PNG, its PDF and the caption the report prints under it."""

    name: str
    png: Path
    pdf: Path
    caption: str
    section: str = "figures"
    """Where the page shows it: ``figures`` or ``deployed`` (the deployed-system section)."""


def family_style(model: str, models: list[str]) -> tuple[str, str]:
    """Colour and marker of a model family (extra families get the spare Okabe-Ito colours)."""
    if model in FAMILY_STYLE:
        return FAMILY_STYLE[model]
    extra = [m for m in models if m not in FAMILY_STYLE]
    return _EXTRA_STYLE[extra.index(model) % len(_EXTRA_STYLE)]


def _save(fig: Figure, out: Path, name: str, caption: str,
          section: str = "figures") -> FigureFile:
    out.mkdir(parents=True, exist_ok=True)
    png, pdf = out / f"{name}.png", out / f"{name}.pdf"
    # constrained layout, no bbox "tight": the file keeps the exact column width
    fig.savefig(png, dpi=300, metadata={"Software": None})
    fig.savefig(pdf, metadata={"CreationDate": None, "Creator": "faircode", "Producer": None})
    plt.close(fig)
    return FigureFile(name, png, pdf, caption, section)


def _label(metric: str) -> str:
    return metric.replace("_", " ")


def _row_label(audit: str, attribute: str) -> str:
    """Two lines, so long audit names do not widen a column-width figure."""
    return f"{audit}\n{attribute}"


def _fmt(x: float) -> str:
    text = f"{x:.2f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def by_strategy(ctx: Context, audit: str, out: Path) -> FigureFile | None:
    """Per audit: strategies x families with CI error bars, one panel per attribute."""
    frame = ctx.fairness[(ctx.fairness["audit"] == audit)
                         & (ctx.fairness["metric"] == ctx.metric)
                         & ctx.fairness["model"].isin(ctx.models)]
    if frame.empty:
        return None
    attrs = ordered(frame["protected_attribute"], ())
    strategies = ordered(frame["strategy"], STRATEGIES)
    models = ordered(frame["model"], MODELS)
    ref = metric_reference(ctx.metric)
    fig, axes = plt.subplots(len(attrs), 1, figsize=(WIDTH, 0.5 + 1.2 * len(attrs)),
                             sharex=True, squeeze=False, layout="constrained")
    offsets = np.linspace(-0.22, 0.22, len(models)) if len(models) > 1 else np.zeros(1)
    for ax, attr in zip(axes[:, 0], attrs, strict=True):
        ax.axhline(ref, color="0.6", lw=0.6, zorder=0)
        sub = frame[frame["protected_attribute"] == attr]
        for model, dx in zip(models, offsets, strict=True):
            colour, marker = family_style(model, models)
            rows = sub[sub["model"] == model].set_index("strategy").reindex(strategies)
            bad = is_uninformative(rows["note"])
            y = rows["value"].astype(float).where(~bad).to_numpy()
            lo, hi = rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float)
            x = np.arange(len(strategies)) + dx
            # intervals drawn as segments: a percentile CI need not contain its estimate
            ax.vlines(x, lo, hi, color=colour, lw=0.7)
            ax.plot(x, y, marker, color=colour, ms=3.2, label=SHORT.get(model, model))
            for xi, yi, b in zip(x, y, bad, strict=True):
                if np.isnan(yi):
                    ax.text(xi, 0.97, "uninf." if b else "n/a", transform=ax.get_xaxis_transform(),
                            ha="center", va="top", fontsize=5, color="0.35", rotation=90)
        ax.set_title(attr, loc="left", pad=2, fontsize=7)
        ax.grid(axis="y", color="0.9", lw=0.5)
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(4))
    axes[-1, 0].set_xticks(range(len(strategies)), [strategy_code(s) for s in strategies])
    fig.legend(*axes[0, 0].get_legend_handles_labels(), ncols=len(models),
               loc="outside upper right", frameon=False, handletextpad=0.2,
               columnspacing=0.8)
    fig.supylabel(_label(ctx.metric), fontsize=7)
    pct = f"{ctx.confidence:.0%}"
    return _save(fig, out, f"{audit}_{ctx.metric}_by_strategy",
                 f"{audit}: {ctx.metric} per strategy and model family ({pct} bootstrap CIs; "
                 f"grey line: parity).")


def heatmap(ctx: Context, out: Path) -> FigureFile | None:
    """Cross-audit heatmap: audit x attribute rows, strategy columns, mean gap over families."""
    frame = ctx.fairness[(ctx.fairness["metric"] == ctx.metric)
                         & ctx.fairness["model"].isin(ctx.models)]
    frame = frame.assign(v=frame["value"].where(~is_uninformative(frame["note"])))
    if frame.empty:
        return None
    strategies = ordered(frame["strategy"], STRATEGIES)
    grid = frame.pivot_table(index=["audit", "protected_attribute"], columns="strategy",
                             values="v", aggfunc="mean", sort=False)
    grid = grid.reindex(columns=strategies)
    ref = metric_reference(ctx.metric)
    values = grid.to_numpy(float) - ref
    # colour saturates at the 90th percentile of |gap| (arrows on the bar say so); every
    # cell prints its exact value, so one extreme cell cannot wash out the rest
    finite = np.abs(values[np.isfinite(values)])
    span = float(max(np.quantile(finite, 0.9), 0.02)) if finite.size else 1.0
    fig, ax = plt.subplots(figsize=(WIDTH, 0.55 + 0.27 * len(grid)), layout="constrained")
    cmap = matplotlib.colormaps["PuOr"].with_extremes(bad="0.85")
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=-span, vmax=span,
                      aspect="auto")
    for (i, j), v in np.ndenumerate(values):
        dark = not np.isnan(v) and abs(v) > 0.6 * span
        ax.text(j, i, "n/a" if np.isnan(v) else _fmt(v + ref), ha="center", va="center",
                fontsize=5.5, color="white" if dark else "black")
    ax.set_xticks(range(len(strategies)), [strategy_code(s) for s in strategies])
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(grid)), [_row_label(a, b) for a, b in grid.index], fontsize=5.5)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02, extend="both")
    bar.ax.tick_params(labelsize=5.5, length=2)
    if ref:
        bar.ax.set_yticks(bar.get_ticks(), [f"{t + ref:.2f}" for t in bar.get_ticks()])
    bar.set_label(_label(ctx.metric), fontsize=6)
    what = "mean over " + (f"{len(ctx.models)} model families" if len(ctx.models) > 1
                           else ctx.models[0])
    return _save(fig, out, f"heatmap_{ctx.metric}",
                 f"{ctx.metric} by audit, attribute and strategy ({what}; grey: n/a).")


def floor_figure(ctx: Context, floor: pd.DataFrame, out: Path) -> FigureFile | None:
    """|S3|-|S2| and |S4|-|S2|, the paired effects with their intervals, per audit x attribute
    x family."""
    floor = floor[floor["model"].isin(ctx.models)] if not floor.empty else floor
    if floor.empty:
        return None
    pairs = list(dict.fromkeys(zip(floor["audit"], floor["protected_attribute"], strict=True)))
    strategies = ordered(floor["strategy"], STRATEGIES)
    models = ordered(floor["model"], MODELS)
    slots = [(s, m) for s in strategies for m in models]
    offsets = np.linspace(-0.3, 0.3, len(slots)) if len(slots) > 1 else np.zeros(1)
    fig, ax = plt.subplots(figsize=(WIDTH, 0.9 + 0.4 * len(pairs)), layout="constrained")
    ax.axvline(0, color="0.5", lw=0.6, zorder=0)
    index = floor.set_index(["audit", "protected_attribute", "strategy", "model"])
    colours = {s: STRATEGY_COLOURS[STRATEGIES.index(s)] if s in STRATEGIES else "0.3"
               for s in strategies}
    for (s, m), dy in zip(slots, offsets, strict=True):
        keys = [(a, b, s, m) for a, b in pairs]
        rows = index.reindex(keys)
        y = np.arange(len(pairs)) + dy
        x = rows["difference"].to_numpy(float)
        ax.hlines(y, rows["low"].to_numpy(float), rows["high"].to_numpy(float),
                  color=colours[s], lw=0.6)
        ax.plot(x, y, family_style(m, models)[1], color=colours[s], ms=2.8)
        for yi, xi in zip(y, x, strict=True):
            if np.isnan(xi):
                ax.text(0.99, yi, "n/a", transform=ax.get_yaxis_transform(), ha="right",
                        va="center", fontsize=5, color="0.35")
    ax.set_yticks(range(len(pairs)), [_row_label(a, b) for a, b in pairs], fontsize=5.5)
    ax.invert_yaxis()
    ax.set_xlabel(f"|S_m| − |S2|, {_label(ctx.metric)}\n(< 0: S_m closer to parity than S2)")
    ax.grid(axis="x", color="0.9", lw=0.5)
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=colours[s], marker="s", ls="", ms=3.5,
                      label=f"{strategy_code(s)} − S2") for s in strategies]
    handles += [Line2D([], [], color="0.3", marker=family_style(m, models)[1], ls="", ms=3,
                       label=SHORT.get(m, m)) for m in models]
    fig.legend(handles=handles, ncols=len(handles), loc="outside upper center",
               frameon=False, handletextpad=0.1, columnspacing=0.6)
    return _save(fig, out, f"residual_floor_{ctx.metric}",
                 f"Residual floor of {ctx.metric}: mitigated distance from parity minus S2's, "
                 f"the paired effect on the same test rows with its {ctx.confidence:.0%} paired "
                 f"signed box interval. {ctx.variance_note}".strip())


def tradeoff(ctx: Context, audit: str, out: Path) -> FigureFile | None:
    """Per audit: accuracy against distance from parity; strategy by colour, family by marker."""
    perf = ctx.inputs.performance
    perf = perf[(perf["audit"] == audit) & (perf["metric"] == "accuracy")
                & perf["model"].isin(ctx.models)]
    fair = ctx.fairness[(ctx.fairness["audit"] == audit) & (ctx.fairness["metric"] == ctx.metric)
                        & ctx.fairness["model"].isin(ctx.models)]
    if perf.empty or fair.empty:
        return None
    ref = metric_reference(ctx.metric)
    attrs = ordered(fair["protected_attribute"], ())
    strategies = ordered(fair["strategy"], STRATEGIES)
    models = ordered(fair["model"], MODELS)
    ncols = min(2, len(attrs))
    nrows = -(-len(attrs) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH, 0.55 + 1.35 * nrows), sharey=True,
                             squeeze=False, layout="constrained")
    for ax in axes.flat[len(attrs):]:
        ax.set_visible(False)
    accuracy = perf[["strategy", "model", "value", "ci_low", "ci_high"]]
    for ax, attr in zip(axes.flat, attrs, strict=False):
        sub = fair[(fair["protected_attribute"] == attr) & ~is_uninformative(fair["note"])]
        both = sub.merge(accuracy, on=["strategy", "model"], suffixes=("", "_acc"))
        dist = both["value"].to_numpy(float) - ref
        lo, hi = abs_bounds(both["ci_low"].to_numpy(float) - ref,
                             both["ci_high"].to_numpy(float) - ref)
        y = both["value_acc"].to_numpy(float)
        for i, (s, m) in enumerate(zip(both["strategy"], both["model"], strict=True)):
            if np.isnan(dist[i]):
                continue
            colour = STRATEGY_COLOURS[STRATEGIES.index(s)] if s in STRATEGIES else "0.3"
            ax.hlines(y[i], lo[i], hi[i], color=colour, lw=0.4, alpha=0.6)
            ax.vlines(abs(dist[i]), both["ci_low_acc"].iloc[i], both["ci_high_acc"].iloc[i],
                      color=colour, lw=0.4, alpha=0.6)
            ax.plot([abs(dist[i])], [y[i]], family_style(m, models)[1], color=colour, ms=3)
        ax.set_title(attr, loc="left", pad=2)
        ax.grid(color="0.92", lw=0.5)
        ax.set_xlim(left=0)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(3))
    fig.supxlabel(f"|{_label(ctx.metric)}" + (" − 1|" if ref else "|"), fontsize=7)
    fig.supylabel("accuracy", fontsize=7)
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=STRATEGY_COLOURS[STRATEGIES.index(s)] if s in STRATEGIES
                      else "0.3", marker="s", ls="", ms=3.5, label=strategy_code(s))
               for s in strategies]
    handles += [Line2D([], [], color="0.3", marker=family_style(m, models)[1], ls="", ms=3,
                       label=SHORT.get(m, m)) for m in models]
    fig.legend(handles=handles, ncols=len(handles), loc="outside upper center",
               frameon=False, handletextpad=0.1, columnspacing=0.5)
    return _save(fig, out, f"{audit}_tradeoff_{ctx.metric}",
                 f"{audit}: accuracy against distance from parity of {ctx.metric}, per strategy "
                 f"(colour) and model family (marker), with {ctx.confidence:.0%} CIs.")


GROUP_STYLE = [(OKABE_ITO["vermillion"], "o"), (OKABE_ITO["blue"], "s"),
               (OKABE_ITO["green"], "^"), (OKABE_ITO["purple"], "D")]
"""Colour and marker of the 1st, 2nd, ... group of a calibration panel."""


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
    mark = "*" if float(row.get("q_benchmark", np.nan)) < ctx.alpha else ""
    return (f"gap {_fmt(float(row['value']))} [{_fmt(float(row['ci_low']))}, "
            f"{_fmt(float(row['ci_high']))}]{mark}")


def _calibration_panel(ax: Any, rows: pd.DataFrame, *, ordinal: bool) -> None:
    """Observed label-1 rate against mean score per bin, one line per group, Wilson bars."""
    groups = ordered(rows["group"], ())
    offsets = np.linspace(-0.12, 0.12, len(groups)) if ordinal and len(groups) > 1 \
        else np.zeros(len(groups))
    for i, (group, dx) in enumerate(zip(groups, offsets, strict=True)):
        colour, marker = GROUP_STYLE[i % len(GROUP_STYLE)]
        part = rows[(rows["group"] == group) & (rows["n"].astype(int) > 0)]
        x = part["mean_score"].to_numpy(float) + dx
        ax.vlines(x, part["ci_low"].to_numpy(float), part["ci_high"].to_numpy(float),
                  color=colour, lw=0.6)
        ax.plot(x, part["observed_rate"].to_numpy(float), marker=marker, color=colour,
                ms=2.4, lw=0.7, label=str(group))
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
            _calibration_panel(ax, rows[rows["protected_attribute"] == attr], ordinal=ordinal)
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
        f"(disadvantaged minus advantaged at equal score) [{pct} CI]; * benchmark-wide q < "
        f"{ctx.alpha:g}.", section="deployed")


def write_figures(ctx: Context, *, floor: pd.DataFrame, out: Path,
                  reuse: FigureReuse | None = None) -> tuple[FigureFile, ...]:
    """Write every figure (PNG and PDF) into ``out``; return them in report order.

    With ``reuse`` a per-audit figure whose inputs did not change is carried over from the
    previous report instead of drawn (:mod:`faircode.report.figure_reuse`).
    """
    with matplotlib.rc_context(RC):  # type: ignore[arg-type]  # keys are valid rcParams
        figures = [heatmap(ctx, out), floor_figure(ctx, floor, out)]
        for audit in ctx.inputs.runs:
            figures += [draw(ctx, audit, out) if reuse is None
                        else reuse.figure(draw, ctx, audit, out)
                        for draw in (by_strategy, tradeoff)]
        for audit in ctx.inputs.deployed.systems:
            if audit in ctx.inputs.runs:
                figures.append(calibration_by_group(ctx, audit, out))
    return tuple(f for f in figures if f is not None)
