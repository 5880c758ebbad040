"""How the headline's claims move: with one-hot columns, and with another equivalence margin.

``bench/encoding_sensitivity.py`` runs the audits under ``models.encoding: label`` and
``onehot`` and writes ``<results>/encoding_sensitivity.csv`` (one row per audit x claim:
``label``, ``onehot``, ``changed``, ``seeds``); :func:`encoding_line` turns it into the report's
sentence and :func:`sensitivity_html` into its paragraph.  Without the file the report says
nothing about it (the table is a benchmark's output, committed beside the results, not a stage's).

:func:`margin_table` re-decides the headline's parity claims at the margins
:data:`MARGINS` (±0.02, ±0.05, ±0.10): per strategy, the audits whose first attribute shows
parity in every informative model family, with the equivalence tests of the report metric's
cells as one Benjamini-Hochberg family per audit (the pre-specified claims' rule,
:func:`faircode.stats.verdicts.family_parity`) from each cell's evidence as ``fairness.csv``
holds it (at K > 1 ``stability.csv``'s), a gap shown still winning; beside it the audits where
some such family cannot reach that margin at its size.  Its ±0.05 column is the headline's count
when the report metric is the claims'.  A margin is a choice the data do not make: the table
shows what each would claim.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import pandas as pd

from faircode.core.metrics import metric_info
from faircode.report.html_tables import boxed
from faircode.report.inputs import STRATEGIES, ordered, strategy_code
from faircode.report.tables import Cell, Context, Table, to_html
from faircode.stats.verdicts import (
    Evidence,
    Margins,
    family_parity,
    interval_evidence,
    log_ratio_interval,
)

__all__ = ["MARGINS", "encoding_line", "margin_table", "margins_html", "sensitivity_html"]

MARGINS: tuple[float, ...] = (0.02, 0.05, 0.10)
"""The margins of the sensitivity table (the declared one is among them by default)."""
_KEYS = ("audit", "strategy", "model", "protected_attribute", "metric")


def _changed(frame: pd.DataFrame) -> pd.Series:
    """Whether each claim changed (the CSV holds True/False, and nothing for a plain number)."""
    return frame["changed"].map(lambda v: str(v).strip().lower() in ("true", "1"))


def encoding_line(frame: pd.DataFrame) -> str:
    """One sentence: how many headline claims change under one-hot encoding, and which."""
    if frame.empty:
        return ""
    claims = frame[frame["changed"].map(lambda v: str(v).strip() not in ("", "nan"))]
    moved = claims[_changed(claims)]
    seeds = sorted({int(s) for s in frame["seeds"]}) if "seeds" in frame else [1]
    audits = frame["audit"].nunique()
    head = (f"Encoding sensitivity (bench/encoding_sensitivity.py, K = "
            f"{'/'.join(map(str, seeds))}, {audits} audit{'s' if audits != 1 else ''}): with "
            "one-hot nominal columns for logistic regression instead of the specification's "
            "integer codes, ")
    if moved.empty:
        return head + f"none of the {len(claims)} headline claims changes."
    which = "; ".join(f"{r.audit} {r.claim}: {r.label} -> {r.onehot}"
                      for r in moved.itertuples())
    return head + f"{len(moved)} of {len(claims)} headline claims change ({which})."


def sensitivity_html(frame: pd.DataFrame) -> str:
    """The line as an HTML paragraph (empty without a table)."""
    line = encoding_line(frame)
    return f'<p class="note" id="encoding-sensitivity">{html.escape(line)}</p>' if line else ""


def _evidence(rows: pd.DataFrame, stability: pd.DataFrame, *, metric: str,
              confidence: float) -> Evidence:
    """Each row's evidence on its test scale: its interval's (one fit), or at K > 1 the
    K-replicate estimate's (``stability.csv``'s ``se_*``/``df_*``)."""
    own = interval_evidence(metric, rows["value"], rows["ci_low"], rows["ci_high"],
                            confidence=confidence)
    if stability.empty or "se_low" not in stability:
        return own
    lookup = stability.set_index([stability[k].astype(str) for k in _KEYS])
    found = lookup.reindex(pd.MultiIndex.from_frame(rows.loc[:, list(_KEYS)].astype(str)))
    se = found["se_low"].to_numpy(dtype=float)
    use = np.isfinite(se)
    value = rows["value"].to_numpy(dtype=float)
    if metric_info(metric).scale == "ratio":
        value = log_ratio_interval(value, value, value, confidence=confidence)[0]
    fields = [np.where(use, a, b) for a, b in (
        (value, own.estimate), (se, own.se_low),
        (found["se_high"].to_numpy(dtype=float), own.se_high),
        (found["df_low"].to_numpy(dtype=float), own.df_low),
        (found["df_high"].to_numpy(dtype=float), own.df_high))]
    return Evidence(*fields)


def _decided(ctx: Context, margin: float) -> pd.DataFrame:
    """The report metric's shown rows with ``parity`` (at ``margin``, in each audit's family of
    its cells) and ``reach`` (the cell cannot show that margin at its size)."""
    system = ctx.deployed_fairness
    system = system[system["metric"] == ctx.metric] if not system.empty else system
    rows = pd.concat([ctx.gaps, system], ignore_index=True)  # the family: every row set
    rows = rows[rows["verdict"].astype(str) != "uninformative"].reset_index(drop=True)
    margins = Margins(difference=margin)
    parity = np.zeros(len(rows), dtype=bool)
    for _, part in rows.groupby("audit", sort=False):
        idx = part.index.to_numpy()
        evidence = _evidence(part, ctx.inputs.stability, metric=ctx.metric,
                             confidence=ctx.confidence)
        parity[idx] = family_parity(ctx.metric, evidence, margins=margins, alpha=ctx.alpha)
    far = ~margins.reachable(ctx.metric, rows["min_margin"]) if "min_margin" in rows else \
        np.zeros(len(rows), dtype=bool)
    gap = (rows["verdict"] == "gap").to_numpy()
    return rows.assign(parity=parity & ~gap, far=far & ~gap)


def margin_table(ctx: Context, margins: Sequence[float] = MARGINS) -> Table | None:
    """Rows S0-S4, a column per margin: ``k of n`` audits with parity in every informative
    family of their first attribute (``u`` audits where some family cannot reach the margin at
    its size); None for a ratio or a magnitude metric, or without rows."""
    if ctx.gaps.empty or metric_info(ctx.metric).scale != "difference":
        return None
    first = {a: ordered(p["protected_attribute"], ())[0]
             for a, p in ctx.gaps.groupby("audit", sort=False)}
    decided = {m: _decided(ctx, m) for m in margins}
    rows = []
    for strategy in ordered(ctx.gaps["strategy"], STRATEGIES):
        cells = []
        for m in margins:
            frame = decided[m]
            mine = frame[(frame["strategy"] == strategy) & frame["model"].isin(ctx.models)
                         & (frame["protected_attribute"] == frame["audit"].map(first))]
            per = mine.groupby("audit", sort=False)
            shown = sum(bool(p["parity"].all()) for _, p in per)
            far = sum(bool(p["far"].any()) for _, p in per)
            cells.append(Cell(f"{shown} of {per.ngroups}", f"({far} out of reach)"
                              if far else ""))
        rows.append(((strategy_code(strategy),), tuple(cells)))
    legend = (f"Each cell: the audits whose first protected attribute shows parity of "
              f"{ctx.metric} within the margin in every informative model family (each audit's "
              "cells one Benjamini-Hochberg family of equivalence tests; a gap shown wins), of "
              "the audits with an informative family; in brackets those where some family's "
              f"{1 - 2 * ctx.alpha:.0%} interval is wider than the margin at any estimate "
              "(fairness.csv min_margin): no result of this size could show it.")
    return Table("margin_sensitivity", f"Parity claims of {ctx.metric} at three margins",
                 ("strategy",), tuple(f"\u00b1{m:g}" for m in margins),
                 (("", tuple(rows)),), legend)


def margins_html(ctx: Context) -> str:
    """:func:`margin_table` as the report's paragraph and table (empty without one)."""
    table = margin_table(ctx)
    if table is None:
        return ""
    return ("<p>The declared margin is a choice, not a finding: the same evidence and the same "
            "family re-decided at each margin (the declared margin's column is the headline's "
            "count).</p>" + boxed(to_html(table)))
