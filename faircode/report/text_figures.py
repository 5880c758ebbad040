"""The text-audit figures: per-term false positive rates, and flip rates explicit beside proxy.

Drawn like every report figure (matplotlib Agg, PNG and PDF, 3.3 in wide, 7 pt; deterministic
files): :func:`term_rates_figure` -- per identity term of the shown categories, each system's
false positive rate on label-0 sentences at its global operating point with its interval, the
background's rate as a tick; :func:`flips_figure` -- per axis, the explicit and the proxy flip
rate with their intervals side by side (one figure per system).  Okabe-Ito colours, a filled
marker where the q of the comparison (the per-term test, the direction test) is below alpha.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from faircode.report.drawing import Drawing
from faircode.report.figures import FigureFile, _save
from faircode.report.style import OKABE_ITO, WIDTH
from faircode.report.text import TextInputs, flips_none, shown_categories

__all__ = ["flips_figure", "term_rates_figure", "text_drawings"]

_SYSTEM_COLOURS = (OKABE_ITO["vermillion"], OKABE_ITO["blue"], OKABE_ITO["green"],
                   OKABE_ITO["orange"])
_KIND_COLOURS = {"explicit": OKABE_ITO["vermillion"], "proxy": OKABE_ITO["blue"]}


def _alpha(inputs: TextInputs) -> float:
    values = {float(r.get("config", {}).get("alpha", 0.05)) for r in inputs.runs.values()}
    return values.pop() if len(values) == 1 else 0.05


def _estimates(ax: plt.Axes, rows: pd.DataFrame, value: str, y: np.ndarray, *, colour: str,
               label: str, alpha: float) -> None:
    """``rows``' ``value`` at heights ``y`` with its interval; filled where ``q < alpha``."""
    ax.hlines(y, rows["ci_low"], rows["ci_high"], color=colour, lw=0.8)
    starred = rows["q_value"].to_numpy(dtype=float) < alpha
    ax.scatter(rows[value], y, s=9, color=colour, zorder=3, label=label,
               facecolors=np.where(starred[:, None], matplotlib.colors.to_rgba(colour),
                                   (1, 1, 1, 1)))


def term_rates_figure(inputs: TextInputs, audit: str, out: Path) -> FigureFile | None:
    """Per term (:func:`~faircode.report.text.shown_categories`, each under its heading), each
    system's FPR [interval] and the background's."""
    t = inputs.terms
    part = t[(t["audit"] == audit) & (t["operating_point"] == "global")
             & (t["metric"] == "false_positive_rate")]
    part = part[part["category"].isin(shown_categories(part))]
    if part.empty:
        return None
    rows: list[tuple[str, str]] = []  # ("category", name) headings, then ("term", name)
    for category, group in part.groupby("category", sort=False):
        rows.append(("category", str(category).replace("_", " ")))
        rows += [("term", str(term)) for term in dict.fromkeys(group["term"])]
    where = {name: len(rows) - 1 - i for i, (kind, name) in enumerate(rows) if kind == "term"}
    systems = list(dict.fromkeys(part["system"]))
    alpha = _alpha(inputs)
    fig, ax = plt.subplots(figsize=(WIDTH, 0.13 * len(rows) + 0.7), layout="constrained")
    offset = np.linspace(-0.18, 0.18, len(systems)) if len(systems) > 1 else np.zeros(1)
    for k, system in enumerate(systems):
        mine = part[part["system"] == system]
        y = np.array([where[str(term)] for term in mine["term"]], dtype=float) + offset[k]
        colour = _SYSTEM_COLOURS[k % len(_SYSTEM_COLOURS)]
        _estimates(ax, mine, "rate", y, colour=colour, label=system, alpha=alpha)
        ax.scatter(mine["background_rate"], y, marker="|", s=18, color=colour, lw=0.6)
    ax.set_yticks(np.arange(len(rows))[::-1], [name for _, name in rows])
    for label, (kind, _) in zip(ax.get_yticklabels(), rows, strict=True):
        if kind == "category":
            label.set_fontweight("bold")
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("false positive rate, non-toxic sentences")
    ax.legend(loc="lower right", frameon=False)
    caption = (f"{audit}: per identity term, each system's false positive rate on the label-0 "
               "sentences at its global operating point with its 95 % interval (Clopper–Pearson "
               "at the frames' effective counts); the tick is the background's rate (every "
               f"other label-0 sentence); filled: the exact stratified test's q < {alpha:g}.")
    return _save(fig, out, f"{audit}_term_fpr", caption, audit=audit, kind="term_fpr")


def flips_figure(inputs: TextInputs, audit: str, system: str, out: Path) -> FigureFile | None:
    """Per axis, the explicit and proxy flip rate [interval] of one system at its global point."""
    f = inputs.flips
    part = f[(f["audit"] == audit) & (f["operating_point"] == "global")
             & (f["system"] == system)]
    if part.empty or flips_none(inputs, audit, system):
        return None  # every rate 0: the page says so in one line (text.section_html)
    axes_names = list(dict.fromkeys(part["axis"]))
    alpha = _alpha(inputs)
    fig, ax = plt.subplots(figsize=(WIDTH, 0.15 * len(axes_names) + 0.9), layout="constrained")
    y = np.arange(len(axes_names))[::-1]
    series = list(dict.fromkeys(zip(part["kind"], part["set"], strict=True)))
    shifts = np.linspace(0.2, -0.2, len(series)) if len(series) > 1 else np.zeros(1)
    for k, (kind, which) in enumerate(series):
        rows = part[(part["kind"] == kind) & (part["set"] == which)]
        at = [axes_names.index(a) for a in rows["axis"]]
        colour = _KIND_COLOURS.get(kind, OKABE_ITO["green"]) if k < 2 else OKABE_ITO["green"]
        _estimates(ax, rows, "flip_rate", y[at] + shifts[k], colour=colour,
                   label=kind if which in ("data", "names") else f"{kind} ({which})",
                   alpha=alpha)
    ax.set_yticks(y, [a.replace("sexual_orientation", "orientation").replace("_to_", " → ")
                      .replace("_", " ") for a in axes_names])
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel(f"flip rate, {system}")
    ax.legend(loc="lower right", frameon=False)
    caption = (f"{audit}, {system}: flip rate of each axis (one direction of a swap) at its "
               "global operating point, explicit (identity term) and proxy (first name) side by "
               "side, with 95 % Clopper–Pearson intervals at the frames' effective counts; "
               f"filled: the direction test's q < {alpha:g}.")
    return _save(fig, out, f"{audit}_flips_{system}", caption, audit=audit, kind="text_flips")


def text_drawings(inputs: TextInputs, out: Path) -> list[Drawing]:
    """Both figures of every text audit (:mod:`faircode.report.drawing`), in page order."""
    drawings = []
    for audit in inputs.runs:
        drawings.append(Drawing(term_rates_figure, (inputs, audit), out))
        systems = inputs.flips.loc[inputs.flips["audit"] == audit, "system"]
        drawings += [Drawing(flips_figure, (inputs, audit, str(system)), out)
                     for system in dict.fromkeys(systems)]
    return drawings
