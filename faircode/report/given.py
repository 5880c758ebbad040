"""A given model's numbers in a few lines: what ``faircode audit`` prints and its report leads with.

A model no one here trained (a practitioner's predictions file, :mod:`faircode.pipeline.
audit_command`) is scored like a deployed system: one row set, strategy ``deployed``.
:func:`given_lines` states its accuracy and, per protected attribute, the parity gap with its
interval, the audit's own q, whether it is significant and powered (the minimum detectable gap)
and the group sizes, then the error-rate gaps (TPR and FPR); the command prints them and the
report of its folder opens on them.  Every number is ``fairness.csv``'s / ``performance.csv``'s
as written: the gaps count the favourable outcome, disadvantaged minus advantaged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from faircode.core.metrics import Metric, metric_info
from faircode.report.tables import Cell, Context, Table, _Footnotes, estimate_cell

__all__ = ["GAPS", "RATES", "given_lines", "groups_table"]

GAPS = tuple((m.value, metric_info(m).label)
             for m in (Metric.DEMOGRAPHIC_PARITY, Metric.TPR_GAP, Metric.FPR_GAP))
"""The gaps :func:`given_lines` states per attribute (favourable-outcome rates)."""

RATES = (("base_rate", "base rate"), ("selection_rate", "decided 1"), ("tpr", "TPR"),
         ("fpr", "FPR"), ("fnr", "FNR"), ("ppv", "PPV"), ("accuracy", "accuracy"))
"""The per-group rates of :func:`groups_table` (``groups.csv``, label coding)."""


def _cell(row: Any) -> str:
    """``-0.118 [-0.210, -0.031]`` (n/a for an undefined value)."""
    value, low, high = (float(row[c]) for c in ("value", "ci_low", "ci_high"))
    if not np.isfinite(value):
        return f"n/a ({row['note'] or 'undefined'})"
    interval = f" [{low:.3f}, {high:.3f}]" if np.isfinite(low) and np.isfinite(high) else ""
    return f"{value:+.3f}{interval}"


def given_lines(fairness: pd.DataFrame, performance: pd.DataFrame) -> list[str]:
    """Per attribute: the parity gap (interval, q, significant, powered) and the error-rate gaps;
    the accuracy first.  Gaps are favourable-outcome rates, disadvantaged minus advantaged."""
    lines = []
    accuracy = performance[performance["metric"] == "accuracy"]
    if len(accuracy):
        lines.append(f"accuracy {_cell(accuracy.iloc[0]).lstrip('+')}")
    for attribute in dict.fromkeys(fairness["protected_attribute"].astype(str)):
        rows = fairness[fairness["protected_attribute"].astype(str) == attribute]
        parts = []
        for metric, label in GAPS:
            found = rows[rows["metric"] == metric]
            if found.empty:
                continue
            row = found.iloc[0]
            text = f"{label} {_cell(row)}"
            if metric == Metric.DEMOGRAPHIC_PARITY and np.isfinite(float(row["value"])):
                sig = "significant" if str(row["significant"]) == "True" else "not significant"
                powered = "powered" if str(row["powered"]) == "True" else "not powered"
                text += (f" (q {float(row['q_value']):.3g}, {sig}; mde {float(row['mde']):.3f},"
                         f" {powered}; n {int(row['n_disadvantaged']):,} vs "
                         f"{int(row['n_advantaged']):,})")
            parts.append(text)
        lines.append(f"{attribute}: " + "; ".join(parts))
    lines.append("(gaps: favourable-outcome rate, disadvantaged minus advantaged; q: the "
                 "audit's own Benjamini-Hochberg q; every number: fairness.csv)")
    return lines


def groups_table(ctx: Context) -> Table | None:
    """Per audit x given model x attribute x group: n and the rates of ``groups.csv``, each with
    its Wilson interval, in the target's label coding (the header says what label 1 is)."""
    groups = ctx.inputs.deployed.groups
    if groups.empty:
        return None
    fn, sections = _Footnotes(), []
    for (audit, model), part in groups.groupby(["audit", "model"], sort=False):
        positive = str(part["positive"].iloc[0]) if "positive" in part.columns else "label 1"
        rows = []
        for (attr, group), rates in part.groupby(["protected_attribute", "group"], sort=False):
            found = {str(m): r for m, (_, r) in zip(rates["metric"], rates.iterrows(),
                                                     strict=True)}
            cells = [Cell(f"{int(rates['n'].iloc[0]):,}"),
                     *(estimate_cell(found.get(m), value="value", fn=fn) for m, _ in RATES)]
            rows.append(((str(attr), str(group)), tuple(cells)))
        sections.append((f"{audit}: {model}; positive = {positive}", tuple(rows)))
    pct = f"{ctx.confidence:.0%}"
    legend = ("Per group, in the target's label coding (positive = label 1, as each section "
              "says; decided 1 = the decision calling for label 1): base rate = share with "
              "label 1, TPR = P(decided 1 | label 1), FPR = P(decided 1 | label 0), FNR = "
              f"P(decided 0 | label 1), PPV = P(label 1 | decided 1); Wilson {pct} intervals "
              "(groups.csv). fairness.csv's gaps count the favourable outcome instead: with "
              "label 1 unfavourable its fpr_gap is the difference of these FNRs and its "
              "tpr_gap minus the difference of these FPRs.")
    return Table("given_groups", "The given model per group: counts and rates",
                 ("attribute", "group"), ("n", *(label for _, label in RATES)),
                 tuple(sections), legend, fn.items())
