"""The report's figures: matplotlib (Agg), PNG and PDF, sized for a 3.3-inch paper column.

Design decisions
----------------
* **One colour per strategy, one marker per model family in every figure**
  (:mod:`faircode.report.style`): S0 black, S1 orange, S2 sky blue, S3 green, S4 vermillion,
  S5 blue; logistic regression a circle, the forest a square, boosting a triangle.  The heatmap's
  diverging ColorBrewer ``PuOr`` map, centred on parity, encodes the value.
* **Verdicts are drawn, with the page's rule**: a filled marker is a gap shown (verdict
  ``gap``), an open one is not; the heatmap prints ``*`` after a cell with a gap shown in every
  informative family and ``(*)`` after one with a gap in some, ``=`` after one whose every
  informative family shows parity.  Values and intervals are the ones every table shows (the
  K-replicate estimates at K > 1); the heatmap's value is the mean over the informative
  families, the statistic the headline's per-audit lines print
  (:func:`faircode.report.inputs.family_mean`).
* Drawn at print size (3.3 in wide, 7 pt text), never scaled down from a screen-sized figure.
* A value that is not a number is left out (the caption says so, the tables give the reason),
  never drawn as a point at 0; the heatmap's grey cell is the only in-plot "n/a".
* Deterministic files: no creation date in the PDF, no software tag in the PNG.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from faircode.core.metrics import no_gap
from faircode.report.analysis import abs_bounds
from faircode.report.drawing import Drawing
from faircode.report.inputs import (
    MODELS,
    STRATEGIES,
    family_mean,
    is_uninformative,
    ordered,
    strategy_code,
)
from faircode.report.style import SHORT, WIDTH, family_marker, strategy_colour
from faircode.report.tables import Context, num

__all__ = ["FigureFile", "figure_drawings", "heat_norm", "legend_handles"]

FILLED = ("filled marker: a gap shown (verdict gap: the audit's own q < alpha and an interval "
          "excluding no gap{k}); open: none shown")
"""How every figure with markers shows the verdict (``{k}`` names the K > 1 estimate)."""


@dataclass(frozen=True, slots=True)
class FigureFile:
    """One written figure: its PNG, its PDF and the caption the report prints under it."""

    name: str
    png: Path
    pdf: Path
    caption: str
    section: str = "figures"
    """Where the page shows it: ``heatmap`` (the first screen), ``figures`` (across audits) or
    ``audit`` (folded under its audit)."""
    audit: str = ""
    kind: str = ""
    """What it shows (``by_strategy``, ``tradeoff``, ``curves``, ``calibration``, ...)."""


def _save(fig: Figure, out: Path, name: str, caption: str, section: str = "figures", *,
          audit: str = "", kind: str = "") -> FigureFile:
    out.mkdir(parents=True, exist_ok=True)
    png, pdf = out / f"{name}.png", out / f"{name}.pdf"
    # constrained layout, no bbox "tight": the file keeps the exact column width
    fig.savefig(png, dpi=300, metadata={"Software": None})
    fig.savefig(pdf, metadata={"CreationDate": None, "Creator": "faircode", "Producer": None})
    plt.close(fig)
    return FigureFile(name, png, pdf, caption, section, audit, kind)


def _label(metric: str) -> str:
    return metric.replace("_", " ")


def _row_label(audit: str, attribute: str) -> str:
    """Two lines, so long audit names do not widen a column-width figure."""
    return f"{audit}\n{attribute}"


def _fmt(x: float) -> str:
    """Two decimals, sign-aware (:func:`faircode.report.tables.num`)."""
    return num(x, 2)


def _filled(ctx: Context) -> str:
    return FILLED.format(k=", of the K-replicate estimate"
                         if "K = 1," not in ctx.variance_note else "")


def _shown(ctx: Context, audit: str | None = None) -> pd.DataFrame:
    """The report metric's rows as the tables show them (value, interval, ``mark``)."""
    frame = ctx.gaps if not ctx.gaps.empty else ctx.fairness[
        ctx.fairness["metric"] == ctx.metric].assign(mark=False)
    frame = frame[frame["model"].isin(ctx.models)]
    return frame if audit is None else frame[frame["audit"] == audit]


def legend_handles(strategies: list[str], models: list[str]) -> list[Line2D]:
    """A square of each strategy's colour, then each family's marker in grey."""
    handles = [Line2D([], [], color=strategy_colour(s), marker="s", ls="", ms=3.5,
                      label=strategy_code(s)) for s in strategies]
    return handles + [Line2D([], [], color="0.3", marker=family_marker(m, models), ls="", ms=3,
                             label=SHORT.get(m, m)) for m in models]


def _point(ax: plt.Axes, x: float, y: float, *, colour: str, marker: str, filled: bool,
           size: float = 3.2) -> None:
    ax.plot([x], [y], marker, color=colour, ms=size, mfc=colour if filled else "white",
            mew=0.7, zorder=3)


def by_strategy(ctx: Context, audit: str, out: Path) -> FigureFile | None:
    """Per audit: strategies x families with CI error bars, one panel per attribute."""
    frame = _shown(ctx, audit)
    if frame.empty:
        return None
    attrs = ordered(frame["protected_attribute"], ())
    strategies = ordered(frame["strategy"], STRATEGIES)
    models = ordered(frame["model"], MODELS)
    ref = no_gap(ctx.metric)
    fig, axes = plt.subplots(len(attrs), 1, figsize=(WIDTH, 0.55 + 1.2 * len(attrs)),
                             sharex=True, squeeze=False, layout="constrained")
    offsets = np.linspace(-0.22, 0.22, len(models)) if len(models) > 1 else np.zeros(1)
    for ax, attr in zip(axes[:, 0], attrs, strict=True):
        ax.axhline(ref, color="0.6", lw=0.6, zorder=0)
        sub = frame[frame["protected_attribute"] == attr]
        for model, dx in zip(models, offsets, strict=True):
            rows = sub[sub["model"] == model].set_index("strategy").reindex(strategies)
            bad = is_uninformative(rows["note"].fillna(""))
            y = rows["value"].astype(float).where(~bad).to_numpy()
            lo, hi = rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float)
            marks = rows["mark"].fillna(False).astype(bool).to_numpy()
            for i, s in enumerate(strategies):
                if np.isnan(y[i]):
                    continue  # n/a or uninformative: the tables say which and why
                colour = strategy_colour(s)
                # intervals drawn as segments: a percentile CI need not contain its estimate
                ax.vlines(i + dx, lo[i], hi[i], color=colour, lw=0.7)
                _point(ax, i + dx, y[i], colour=colour, marker=family_marker(model, models),
                       filled=bool(marks[i]))
        ax.set_title(attr, loc="left", pad=2, fontsize=7)
        ax.grid(axis="y", color="0.9", lw=0.5)
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(4))
    axes[-1, 0].set_xticks(range(len(strategies)), [strategy_code(s) for s in strategies])
    fig.legend(handles=legend_handles([], models), ncols=len(models),
               loc="outside upper right", frameon=False, handletextpad=0.2, columnspacing=0.8)
    fig.supylabel(_label(ctx.metric), fontsize=7)
    pct = f"{ctx.confidence:.0%}"
    return _save(fig, out, f"{audit}_{ctx.metric}_by_strategy",
                 f"{audit}: {ctx.metric} per strategy (colour) and model family (marker) with "
                 f"{pct} intervals; {_filled(ctx)}; grey line: parity; a missing marker is n/a "
                 f"or uninformative (the paper table says why). {ctx.variance_note}".strip(),
                 "audit", audit=audit, kind="by_strategy")


def _heat_mark(part: pd.DataFrame) -> str:
    usable = part[~is_uninformative(part["note"].fillna("")) & part["value"].notna()]
    marks = usable["mark"].fillna(False).astype(bool)
    if usable.empty:
        return ""
    if "verdict" in usable and not marks.any() and usable["verdict"].eq("parity").all():
        return "="
    return "" if not marks.any() else "*" if marks.all() else "(*)"


HEAT_SPAN = 1.0
"""The heatmap's colour scale ends at ±1 (a difference's range) in every report."""
FLOOR_PANEL = 8
"""Rows of the residual-floor figure per panel (each panel has its own labelled axis)."""


def heat_norm(span: float) -> matplotlib.colors.FuncNorm:
    """The heatmap's colour scale: signed square root on [-span, span] (0 at the centre)."""
    def forward(x: np.ndarray) -> np.ndarray:
        return np.sign(x) * np.sqrt(np.abs(x))

    def inverse(y: np.ndarray) -> np.ndarray:
        return np.sign(y) * np.square(y)

    return matplotlib.colors.FuncNorm((forward, inverse), vmin=-span, vmax=span)


def heatmap(ctx: Context, out: Path) -> FigureFile | None:
    """Cross-audit heatmap: audit x attribute rows, strategy columns, mean gap over families,
    with each cell's significance mark."""
    frame = _shown(ctx)
    if frame.empty:
        return None
    frame = frame.assign(v=frame["value"].where(~is_uninformative(frame["note"].fillna(""))))
    strategies = ordered(frame["strategy"], STRATEGIES)
    grid = frame.pivot_table(index=["audit", "protected_attribute"], columns="strategy",
                             values="v", aggfunc=family_mean, sort=False)
    grid = grid.reindex(columns=strategies)
    marks = {key: _heat_mark(part) for key, part in
             frame.groupby(["audit", "protected_attribute", "strategy"], sort=False)}
    ref = no_gap(ctx.metric)
    values = grid.to_numpy(float) - ref
    # a signed square-root scale fixed at ±HEAT_SPAN: the same gap is the same colour in every
    # report (a run's largest gap never sets it), S0's large gaps stay apart (0.5 and 0.85 are
    # two colours) and a small gap still shows its sign's tint
    span = HEAT_SPAN
    norm = heat_norm(span)
    fig, ax = plt.subplots(figsize=(WIDTH, 0.7 + 0.27 * len(grid)), layout="constrained")
    cmap = matplotlib.colormaps["PuOr"].with_extremes(bad="0.85")
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
    for (i, j), v in np.ndenumerate(values):
        dark = not np.isnan(v) and abs(float(norm(v)) - 0.5) > 0.3
        mark = marks.get((*grid.index[i], strategies[j]), "")
        ax.text(j, i, "n/a" if np.isnan(v) else _fmt(v + ref) + mark, ha="center",
                va="center", fontsize=5.5, color="white" if dark else "black")
    ax.set_xticks(range(len(strategies)), [strategy_code(s) for s in strategies])
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(grid)), [_row_label(a, b) for a, b in grid.index], fontsize=5.5)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    ticks = [t for t in (-0.5, -0.2, -0.05, 0.0, 0.05, 0.2, 0.5) if abs(t) < span]
    bar.set_ticks([-span, *ticks, span])
    bar.ax.set_yticklabels([f"{t + ref:.2f}" for t in (-span, *ticks, span)])
    bar.ax.tick_params(labelsize=5.5, length=2)
    bar.set_label("gap", fontsize=6)  # the caption and the page's legend give the sign
    what = "mean over " + (f"{len(ctx.models)} model families" if len(ctx.models) > 1
                           else ctx.models[0])
    return _save(fig, out, f"heatmap_{ctx.metric}",
                 f"{ctx.metric} by audit, attribute and strategy ({what}; colour on a signed "
                 f"square-root scale fixed at \u00b1{span:g} in every report, so a gap has one "
                 "colour wherever it is shown; grey: n/a; "
                 f"< {ref:g}: the disadvantaged group is worse off). "
                 "* a gap shown in every informative model family, (*) in some (the audit's "
                 f"own q < {ctx.alpha:g} and an interval excluding no gap); = parity within "
                 "the margin shown in every informative family. "
                 f"{ctx.variance_note}".strip(), "heatmap",
                 kind="heatmap")


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
    # panels of at most FLOOR_PANEL rows, each with its own labelled axis: read anywhere, the
    # scale is within a few rows
    panels = [pairs[i:i + FLOOR_PANEL] for i in range(0, len(pairs), FLOOR_PANEL)]
    fig, axes = plt.subplots(len(panels), 1, figsize=(WIDTH, 0.9 + 0.4 * len(pairs)
                                                      + 0.3 * (len(panels) - 1)),
                             layout="constrained", sharex=True, squeeze=False,
                             height_ratios=[len(p) for p in panels])
    index = floor.set_index(["audit", "protected_attribute", "strategy", "model"])
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        ax.axvline(0, color="0.5", lw=0.6, zorder=0)
        for (s, m), dy in zip(slots, offsets, strict=True):
            rows = index.reindex([(a, b, s, m) for a, b in panel])
            x = rows["difference"].to_numpy(float)
            marks = rows["distinguishable"].fillna(False).astype(bool).to_numpy()
            for i, (xi, low, high) in enumerate(zip(x, rows["low"].to_numpy(float),
                                                     rows["high"].to_numpy(float), strict=True)):
                if np.isnan(xi):
                    continue  # undefined: the residual floor table says why
                ax.hlines(i + dy, low, high, color=strategy_colour(s), lw=0.6)
                _point(ax, xi, i + dy, colour=strategy_colour(s),
                       marker=family_marker(m, models), filled=bool(marks[i]), size=2.8)
        ax.set_yticks(range(len(panel)), [_row_label(a, b) for a, b in panel], fontsize=5.5)
        ax.set_ylim(len(panel) - 0.5, -0.5)
        ax.tick_params(labelbottom=True)
        ax.grid(axis="x", color="0.9", lw=0.5)
    fig.supxlabel(f"\u0394 distance from parity against S2 ({_label(ctx.metric)})\n"
                  "(< 0: S3 or S4 closer to parity than S2)", fontsize=7)
    handles = legend_handles(strategies, models)
    for h in handles[:len(strategies)]:
        h.set_label(f"{h.get_label()} \u2212 S2")
    fig.legend(handles=handles, ncols=len(handles), loc="outside upper center",
               frameon=False, handletextpad=0.1, columnspacing=0.6)
    return _save(fig, out, f"residual_floor_{ctx.metric}",
                 f"Residual floor of {ctx.metric}: |S3| \u2212 |S2| and |S4| \u2212 |S2| "
                 "(mitigated distance from parity minus S2's), the paired effect on the same "
                 f"test rows with its {ctx.confidence:.0%} paired signed box interval; filled: "
                 "distinguishable from S2 (its star); a missing marker is undefined. "
                 f"{ctx.variance_note}".strip(), "figures", kind="residual_floor")


def tradeoff(ctx: Context, audit: str, out: Path) -> FigureFile | None:
    """Per audit: accuracy against distance from parity; strategy by colour, family by marker,
    the majority-class accuracy as a dashed line."""
    perf = ctx.inputs.performance
    perf = perf[(perf["audit"] == audit) & perf["model"].isin(ctx.models)]
    majority = perf.loc[perf["metric"] == "majority_baseline_accuracy", "value"]
    perf = perf[perf["metric"] == "accuracy"]
    fair = _shown(ctx, audit)
    if perf.empty or fair.empty:
        return None
    ref = no_gap(ctx.metric)
    attrs = ordered(fair["protected_attribute"], ())
    strategies = ordered(fair["strategy"], STRATEGIES)
    models = ordered(fair["model"], MODELS)
    ncols = min(2, len(attrs))
    nrows = -(-len(attrs) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH, 0.6 + 1.35 * nrows), sharey=True,
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
        if len(majority):
            ax.axhline(float(majority.iloc[0]), color="0.45", lw=0.6, ls="--", zorder=0)
        for i, (s, m) in enumerate(zip(both["strategy"], both["model"], strict=True)):
            if np.isnan(dist[i]):
                continue
            colour = strategy_colour(s)
            ax.hlines(y[i], lo[i], hi[i], color=colour, lw=0.4, alpha=0.6)
            ax.vlines(abs(dist[i]), both["ci_low_acc"].iloc[i], both["ci_high_acc"].iloc[i],
                      color=colour, lw=0.4, alpha=0.6)
            _point(ax, abs(dist[i]), y[i], colour=colour, marker=family_marker(m, models),
                   filled=bool(both["mark"].iloc[i]), size=3)
        ax.set_title(attr, loc="left", pad=2)
        ax.grid(color="0.92", lw=0.5)
        ax.set_xlim(left=0)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(3))
    fig.supxlabel(f"|{_label(ctx.metric)}" + (" − 1|" if ref else "|"), fontsize=7)
    fig.supylabel("accuracy", fontsize=7)
    fig.legend(handles=legend_handles(strategies, models), ncols=len(strategies) + len(models),
               loc="outside upper center", frameon=False, handletextpad=0.1,
               columnspacing=0.5)
    return _save(fig, out, f"{audit}_tradeoff_{ctx.metric}",
                 f"{audit}: accuracy against distance from parity of {ctx.metric}, per strategy "
                 f"(colour) and model family (marker), with {ctx.confidence:.0%} intervals; "
                 f"{_filled(ctx)} (the gap); dashed: the majority-class accuracy.",
                 "audit", audit=audit, kind="tradeoff")


def figure_drawings(ctx: Context, *, floor: pd.DataFrame, out: Path) -> list[Drawing]:
    """The heatmap, the residual floor and each audit's two figures, in report order (drawn,
    or carried over when an audit's tables did not change, by :func:`faircode.report.drawing.
    draw`)."""
    return [Drawing(heatmap, (ctx,), out), Drawing(floor_figure, (ctx, floor), out),
            *(Drawing(function, (ctx, audit), out, audit) for audit in ctx.inputs.runs
              for function in (by_strategy, tradeoff))]
