"""How the headline's claims move: with one-hot columns, and with another equivalence margin.

``bench/encoding_sensitivity.py`` runs the audits under ``models.encoding: label`` and
``onehot`` and writes ``<results>/encoding_sensitivity.csv`` (one row per audit x claim:
``label``, ``onehot``, ``changed``, ``seeds``); :func:`encoding_line` turns it into the report's
sentence and :func:`sensitivity_html` into its paragraph.  Without the file the report says
nothing about it (the table is a benchmark's output, committed beside the results, not a stage's).

:func:`margin_table` re-decides the headline's parity claims at the margins
:data:`MARGINS` (±0.02, ±0.05, ±0.10) by the headline's own rule
(:mod:`faircode.report.claims`: each audit's claim the largest equivalence p of its families,
one Benjamini-Hochberg family per sentence), from each cell's evidence as ``fairness.csv``
holds it (at K > 1 ``stability.csv``'s), a gap shown still winning; beside it the audits where
some family cannot reach that margin at its size.  Its ±0.05 column is the headline's count.
A margin is a choice the data do not make: the table shows what each would claim.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import pandas as pd

from faircode.core.metrics import metric_info
from faircode.report.claims import claim_p_value, claim_q_values
from faircode.report.findings import findings, margins_of
from faircode.report.html_tables import boxed
from faircode.report.inputs import STRATEGIES, ordered, strategy_code
from faircode.report.tables import Cell, Context, Table, to_html
from faircode.stats.resampling import benjamini_hochberg
from faircode.stats.verdicts import (
    Evidence,
    Margins,
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


def _at_margin(ctx: Context, margin: float) -> pd.DataFrame:
    """The report metric's informative rows (every row set: each audit's family) with ``p``,
    their equivalence p at ``margin``, and ``far`` (the margin is out of reach at the row's
    size, no gap shown)."""
    system = ctx.deployed_fairness
    system = system[system["metric"] == ctx.metric] if not system.empty else system
    rows = pd.concat([ctx.gaps, system], ignore_index=True)
    rows = rows[rows["verdict"].astype(str) != "uninformative"].reset_index(drop=True)
    margins = Margins(difference=margin)
    lower, upper = margins.bounds(ctx.metric)
    p = np.full(len(rows), np.nan)
    for _, part in rows.groupby("audit", sort=False):
        evidence = _evidence(part, ctx.inputs.stability, metric=ctx.metric,
                             confidence=ctx.confidence)
        p[part.index.to_numpy()] = evidence.p_equivalence(lower, upper)
    far = ~margins.reachable(ctx.metric, rows["min_margin"]) if "min_margin" in rows else \
        np.zeros(len(rows), dtype=bool)
    return rows.assign(p=p, far=far & (rows["verdict"] != "gap").to_numpy())


def _held(rows: pd.DataFrame, audits: Sequence[str], *, claims: bool,
          alpha: float) -> int:
    """How many of ``audits`` show parity in every informative family of ``rows`` (one
    strategy's first-attribute rows): as the sentence's claims (intersection-union, one
    family over the audits) or, without pre-specified claims, cell by cell (``cell_q``)."""
    by = {str(a): part for a, part in rows.groupby("audit", sort=False) if a in audits}
    if claims:
        p = {a: claim_p_value(list(part["p"]), list(part["verdict"].astype(str)))
             for a, part in by.items()}
        return sum(q < alpha for q in claim_q_values(p).values())
    return sum(bool((part["cell_q"] < alpha).all() and (part["verdict"] != "gap").all())
               for part in by.values())


def margin_table(ctx: Context, margins: Sequence[float] = MARGINS) -> Table | None:
    """Rows S0-S4, a column per margin: ``k of n`` audits of the strategy's headline sentence
    (S1-S4: where S0 leaves a gap; S0: the others) whose claim of parity in every informative
    family of the first attribute holds (``u`` audits where some family cannot reach the
    margin at its size); None for a ratio or a magnitude metric, or without rows."""
    if ctx.gaps.empty or metric_info(ctx.metric).scale != "difference":
        return None
    items = findings(ctx)
    claims = margins_of(ctx).get("claims") == ctx.metric
    first = {f.audit: f.attribute for f in items}
    gapped = [f.audit for f in items if f.baseline.gaps > 0]
    quiet = [f.audit for f in items if f.baseline.gaps == 0]
    frames = {}
    for m in margins:
        rows = _at_margin(ctx, m)
        rows["cell_q"] = np.nan
        for _, part in rows.groupby("audit", sort=False):  # each audit's family of cells
            rows.loc[part.index, "cell_q"] = benjamini_hochberg(part["p"].to_numpy(float))
        frames[m] = rows[rows["model"].isin(ctx.models)
                         & (rows["protected_attribute"] == rows["audit"].map(first))]
    out = []
    for strategy in ordered(ctx.gaps["strategy"], STRATEGIES):
        audits = quiet if strategy == STRATEGIES[0] else gapped
        cells = []
        for m in margins:
            mine = frames[m][frames[m]["strategy"] == strategy]
            n = mine.loc[mine["audit"].isin(audits), "audit"].nunique()
            held = _held(mine, audits, claims=claims, alpha=ctx.alpha)
            far = mine[mine["audit"].isin(audits)].groupby("audit")["far"].any().sum()
            cells.append(Cell(f"{held} of {n}", f"({far} out of reach)" if far else ""))
        out.append(((strategy_code(strategy),), tuple(cells)))
    legend = (f"Each cell: of the audits a headline sentence speaks of (S1-S4: where S0 leaves "
              "a gap; S0: the others), those whose first protected attribute shows parity of "
              f"{ctx.metric} within the margin in every informative model family"
              + (" (each audit's claim the largest of its families' equivalence p, one "
                 "Benjamini-Hochberg family per sentence: the headline's rule)" if claims else
                 " (each audit's cells one Benjamini-Hochberg family of equivalence tests)")
              + f"; in brackets those where some family's {1 - 2 * ctx.alpha:.0%} interval is "
              "wider than the margin at any estimate (fairness.csv min_margin): no result of "
              "this size could show it. A gap shown is never parity.")
    return Table("margin_sensitivity", f"Parity claims of {ctx.metric} at three margins",
                 ("strategy",), tuple(f"\u00b1{m:g}" for m in margins),
                 (("", tuple(out)),), legend)


def margins_html(ctx: Context) -> str:
    """:func:`margin_table` as the report's paragraph and table (empty without one)."""
    table = margin_table(ctx)
    if table is None:
        return ""
    return ("<p>The declared margin is a choice, not a finding: the same evidence and the same "
            "family re-decided at each margin (the declared margin's column is the headline's "
            "count).</p>" + boxed(to_html(table)))
