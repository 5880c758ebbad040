"""A given model's gaps as one figure: each attribute's parity, TPR and FPR gaps with intervals.

What the MLflow evaluator (:mod:`faircode.pipeline.mlflow_evaluator`) logs beside the tables: one
row per attribute x gap, the point and its interval, the parity margin shaded around 0 and the
verdict written at the right, so the figure reads without the CSVs.

Design decisions
----------------
* **One scale for every model**: the axis spans ±0.25 unless an interval reaches further (then
  the next multiple of 0.25), so two runs' figures compare at a glance.
* **The verdict is the CSV's** (``fairness.csv`` ``verdict``), never recomputed here.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd

from faircode.report.given import GAPS
from faircode.report.style import OKABE_ITO, RC, WIDTH

__all__ = ["gap_figure"]


def gap_figure(fairness: pd.DataFrame, out: Path, *, margin: float = 0.05) -> Path:
    """Draw ``fairness``'s parity, TPR and FPR gaps per attribute into the PNG ``out``."""
    rows = []
    for attribute in dict.fromkeys(fairness["protected_attribute"].astype(str)):
        part = fairness[fairness["protected_attribute"].astype(str) == attribute]
        for metric, label in GAPS:
            found = part[part["metric"] == metric]
            if not found.empty:
                rows.append((f"{attribute}: {label}", found.iloc[0]))
    reach = max([0.25, *(abs(float(r[c])) for _, r in rows for c in ("ci_low", "ci_high")
                         if math.isfinite(float(r[c])))])
    span = math.ceil(reach / 0.25) * 0.25
    with plt.rc_context(RC):  # type: ignore[arg-type]  # keys are valid rcParams
        fig, ax = plt.subplots(figsize=(WIDTH * 1.6, 0.8 + 0.28 * max(len(rows), 1)))
        ax.axvspan(-margin, margin, color="0.9", lw=0, label=f"parity margin ±{margin:g}")
        ax.axvline(0, color="0.4", lw=0.6)
        for y, (_, row) in enumerate(rows):
            value, low, high = (float(row[c]) for c in ("value", "ci_low", "ci_high"))
            verdict = str(row.get("verdict", "") or "")
            colour = OKABE_ITO["vermillion"] if verdict == "gap" else OKABE_ITO["blue"]
            if math.isfinite(value):
                ax.errorbar([value], [y], xerr=[[value - low], [high - value]], fmt="o",
                            color=colour)
            ax.annotate(verdict or "n/a", (1.01, y), xycoords=("axes fraction", "data"),
                        va="center", fontsize=6.5, color=colour)
        ax.set_yticks(range(len(rows)), [name for name, _ in rows])
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlim(-span, span)
        ax.set_xlabel("favourable-outcome rate, disadvantaged minus advantaged (interval: "
                      "fairness.csv)")
        ax.legend(loc="lower left", frameon=False)
        fig.tight_layout()
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=200, metadata={"Software": None})
        plt.close(fig)
    return out
