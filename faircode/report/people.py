"""The report's view of decisions made by people: what they show, and what they cannot.

An audit whose manifest declares ``system.decision: outcome`` audits a decision that *is* its
data's outcome (employers' callbacks, lenders' denials; ``run.json`` ``system.outcome``).  Its
rows on every row of the audit (``<audit>/deployed/``) give three views, built as
:class:`~faircode.report.tables.Table` values like every table of the report:

* :func:`people_groups_table` -- per attribute and group the rows, the decisions 1 (callbacks,
  denials) and their rate with its Wilson interval (``groups.csv``, row set ``all``);
* :func:`people_gaps_table` -- per attribute the parity gap and disparate impact with interval
  and mark, the gap conditional on every declared stratum (``stratified.csv``: the
  Mantel–Haenszel gap within strata with Cochran's Q of a common difference, or a logistic
  regression's average marginal effect conditional on covariates), and every ground-truth metric
  as "n/a — decision is the outcome";
* :func:`people_strata_table` -- per declared stratum and level each group's rows, decisions 1
  and rate, the level's gap and its weight in the pooled gap (``stratum_rates.csv``): the strata
  the Mantel–Haenszel gap pools, to check against a published table;
* :func:`people_lines` -- one line per such audit for the headline, written from the numbers,
  saying also that S0-S4 of that audit predict the people's decision (a screening model trained
  on historical human decisions).

Design decisions
----------------
* **Orientation as everywhere**: gaps count the favourable outcome, disadvantaged minus
  advantaged (a callback; *not* being denied), while the per-group rates are of decision 1 in
  the target's coding (the callback rate, the denial rate), as the studies publish them.
* Marks are each table's own Benjamini–Hochberg q (``deployed/fairness.csv`` and
  ``deployed/stratified.csv``), the families of the system on every row.
* **Conditional, never causal**: a gap within strata or at equal covariates is a comparison of
  people alike in the declared factors; the words are "within" and "conditional on", never
  "explained by".
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit.manifest import LOGISTIC_REGRESSION
from faircode.core.metrics import FAIRNESS_METRICS, Metric, metric_info
from faircode.report.inputs import ordered
from faircode.report.tables import Cell, Context, Table, _Footnotes, estimate_cell, num, signed

__all__ = ["people_gaps_table", "people_groups_table", "people_lines", "people_strata_table",
           "people_tables"]

_ALL = "all"
_DP, _DI = Metric.DEMOGRAPHIC_PARITY.value, Metric.DISPARATE_IMPACT.value


def _people(ctx: Context) -> list[str]:
    """The audits with results whose system's decision is the recorded outcome."""
    return [a for a in ctx.inputs.deployed.people if a in ctx.inputs.runs]


def _marked(row: pd.Series | None, alpha: float) -> pd.Series | None:
    if row is None:
        return None
    out = row.copy()
    out["mark"] = bool(float(row.get("q_value", np.nan)) < alpha)
    return out


def _rates(ctx: Context, audit: str) -> pd.DataFrame:
    """The system's selection-rate rows of ``groups.csv`` on every row, for ``audit``."""
    groups = ctx.inputs.deployed.groups
    if groups.empty:
        return groups
    return groups[(groups["audit"] == audit) & (groups["row_set"].astype(str) == _ALL)
                  & (groups["strategy"].astype(str) == "deployed")
                  & (groups["metric"] == "selection_rate")]


def people_groups_table(ctx: Context) -> Table | None:
    """Rows audit x attribute x group: rows, decisions 1 and their rate [Wilson interval]."""
    rows = []
    fn = _Footnotes()
    for audit in _people(ctx):
        for r in _rates(ctx, audit).to_dict("records"):
            rows.append(((audit, str(r["protected_attribute"]), str(r["group"])), (
                Cell(f"{int(r['denominator']):,}"), Cell(f"{int(r['numerator']):,}"),
                estimate_cell(pd.Series(r), value="value", fn=fn))))
    if not rows:
        return None
    who = "; ".join(f"{a}: {_decision(ctx, a)}" for a in _people(ctx))
    pct = f"{ctx.confidence:.0%}"
    legend = (f"Decisions made by people, on every row of the audit (groups.csv, row set all): "
              f"the rows of each group, how many were decided 1 and that rate with its Wilson "
              f"{pct} interval. Decision 1: {who}.")
    return Table("people_groups_table", "Decisions made by people: the decision rate per group",
                 ("audit", "attribute", "group"), ("rows", "decided 1", "rate"),
                 (("", tuple(rows)),), legend, fn.items())


def _decision(ctx: Context, audit: str) -> str:
    system = ctx.inputs.runs.get(audit, {}).get("system")
    rule = system.get("decision") if isinstance(system, dict) else None
    return str(rule or "the recorded outcome")


def people_gaps_table(ctx: Context) -> Table | None:
    """Rows audit x attribute x measure: parity, disparate impact, the gap within each declared
    stratum, then every ground-truth metric (not applicable); one column, every row."""
    deployed = ctx.inputs.deployed
    fair, strata = deployed.fairness_all, deployed.stratified_all
    fn = _Footnotes()
    rows = []
    for audit in _people(ctx):
        mine = fair[fair["audit"] == audit] if not fair.empty else fair
        within = strata[strata["audit"] == audit] if not strata.empty else strata
        for attr in ordered(mine["protected_attribute"], ()) if not mine.empty else []:
            metrics = {str(r["metric"]): r for _, r in
                       mine[mine["protected_attribute"] == attr].iterrows()}
            for metric in (_DP, _DI):
                rows.append(((audit, attr, metric_info(metric).label), (estimate_cell(
                    _marked(metrics.get(metric), ctx.alpha), value="value", fn=fn),)))
            for _, r in within[within["protected_attribute"] == attr].iterrows():
                rows.extend(((audit, attr, label), (cell,))
                            for label, cell in _conditional(r, ctx.alpha, fn))
            for metric in FAIRNESS_METRICS:
                if metric not in (_DP, _DI):
                    rows.append(((audit, attr, metric_info(metric).label), (estimate_cell(
                        metrics.get(metric), value="value", fn=fn),)))
    if not rows:
        return None
    pct = f"{ctx.confidence:.0%}"
    legend = (
        f"Decisions made by people, on every row of the audit: estimate [{pct} CI]; * q < "
        f"{ctx.alpha:g} in the table's own Benjamini-Hochberg family (deployed/fairness.csv, "
        "deployed/stratified.csv). Gaps count the favourable outcome, disadvantaged minus "
        "advantaged. Within a stratum: the Mantel-Haenszel common difference of the groups' "
        "favourable rates at equal levels of the declared legitimate factor(s) (Sato variance, "
        "within-strata permutation test), with Cochran's Q of one common difference across "
        "the strata (a small p: the strata's gaps differ, and the pooled gap averages unlike "
        "gaps; the strata table shows each). Conditional on covariates: a logistic "
        "regression's average marginal effect of the group (delta-method interval, Wald "
        "test). Each compares people alike in the declared factors; neither says what causes "
        "the gap, and a gap conditional on factors that themselves differ by group is not the "
        "whole of it. The decision is the recorded outcome, so nothing separate is its ground "
        "truth: every error-rate or accuracy metric is not applicable, by design (not 0, not "
        "an error).")
    return Table("people_gaps_table",
                 "Decisions made by people: the gap, the gap conditional on declared factors, "
                 "and what cannot be measured", ("audit", "attribute", "measure"),
                 ("the people's decision",), (("", tuple(rows)),), legend, fn.items())


def _conditional(row: pd.Series, alpha: float, fn: _Footnotes) -> list[tuple[str, Cell]]:
    """The people's gaps table's rows of one ``stratified.csv`` row: the gap conditional on the
    stratum, and for strata Cochran's Q of a common difference."""
    cell = estimate_cell(_marked(row, alpha), value="value", fn=fn)
    if str(row.get("estimator", "")) == LOGISTIC_REGRESSION:
        return [(f"parity gap conditional on {row['stratum']} ({row['columns']}): logistic "
                 "regression, average marginal effect", cell)]
    out = [(f"parity gap within {row['stratum']} ({row['columns']}): Mantel-Haenszel", cell)]
    q, df = float(row.get("heterogeneity_q", np.nan)), row.get("heterogeneity_df", np.nan)
    if np.isfinite(q):
        p = float(row["heterogeneity_p_value"])
        out.append((f"heterogeneity across the {row['stratum']} strata (Cochran's Q)",
                    Cell(f"Q {q:.2f}, df {int(df)}, p {p:.2g}", numeric=False)))
    return out


def _level_cells(r: Mapping[Hashable, Any]) -> tuple[Cell, ...]:
    """One level's cells: per group "name: decided 1 / rows" and the rate; gap; weight."""
    cells: list[Cell] = []
    for side in ("disadvantaged", "advantaged"):
        n, x = int(r[f"n_{side}"]), int(r[f"decided_1_{side}"])
        cells += [Cell(f"{r[side]}: {x:,} / {n:,}", numeric=False),
                  Cell(num(float(r[f"rate_{side}"]), 3) if n else "no rows", numeric=bool(n))]
    gap = float(r["gap"])
    cells += [Cell(("+" if gap >= 0 else "") + num(gap) if np.isfinite(gap) else "one group only",
                   numeric=bool(np.isfinite(gap))), Cell(num(float(r["weight"]), 3))]
    return tuple(cells)


def people_strata_table(ctx: Context) -> Table | None:
    """Per people's-decision audit, attribute, declared stratum and level: each group's
    decisions 1 of its rows and their rate, the level's gap and its weight in the pooled gap."""
    levels = ctx.inputs.deployed.stratum_rates_all
    sections = []
    for audit in _people(ctx):
        mine = levels[levels["audit"] == audit] if not levels.empty else levels
        if mine.empty:
            continue
        rows = [((str(r["protected_attribute"]), str(r["stratum"]), str(r["level"])),
                 _level_cells(r)) for r in mine.to_dict("records")]
        positive = str(mine["positive"].iloc[0]) if "positive" in mine.columns else "label 1"
        sections.append((f"{audit} ({positive})", tuple(rows)))
    if not sections:
        return None
    legend = (
        "Decisions made by people, on every row of the audit (deployed/stratum_rates.csv): per "
        "level of each declared stratum, each group's decisions 1 of its rows and their rate "
        "(in the target's label coding, as each section says); the level's gap of the "
        "favourable rates, disadvantaged minus advantaged; and its share of the "
        "Mantel-Haenszel weight n_D n_A / N, the weight with which the gap within the "
        "stratum pools it (0 for a level holding one group only).")
    return Table("people_strata_table",
                 "Decisions made by people: the strata the gap within strata pools",
                 ("attribute", "stratum", "level"),
                 ("disadvantaged: decided 1 / rows", "rate", "advantaged: decided 1 / rows",
                  "rate", "gap", "weight"), tuple(sections), legend)


def people_tables(ctx: Context) -> tuple[Table, ...]:
    """The people's-decision tables of the report (none without such an audit)."""
    return tuple(t for t in (people_groups_table(ctx), people_gaps_table(ctx),
                             people_strata_table(ctx)) if t is not None)


def _estimate(row: pd.Series | None, alpha: float) -> str:
    if row is None or not np.isfinite(float(row["value"])):
        return "n/a"
    star = "*" if float(row.get("q_value", np.nan)) < alpha else ""
    return (f"{_signed(float(row['value']))} [{_signed(float(row['ci_low']))}, "
            f"{_signed(float(row['ci_high']))}]{star}")


def _signed(x: float) -> str:
    return signed(x, 3)


def _inside(row: pd.Series, alpha: float) -> str:
    """``; within consumer_credit -0.143 [...]* (strata differ: Cochran's Q p 0.036)`` or
    ``; conditional on stated_criteria -0.066 [...]*``."""
    if str(row.get("estimator", "")) == LOGISTIC_REGRESSION:
        return f"; conditional on {row['stratum']} {_estimate(row, alpha)}"
    p = float(row.get("heterogeneity_p_value", np.nan))
    differ = f" (Cochran's Q of a common gap: p {p:.2g})" if np.isfinite(p) else ""
    return f"; within {row['stratum']} {_estimate(row, alpha)}{differ}"


def people_lines(ctx: Context) -> dict[str, tuple[str, str]]:
    """``{audit: (label, text)}``: one headline line per people's-decision audit (its first
    protected attribute), written from its numbers on every row."""
    deployed = ctx.inputs.deployed
    out = {}
    for audit in _people(ctx):
        fair = deployed.fairness_all
        mine = fair[(fair["audit"] == audit)] if not fair.empty else fair
        attrs = ordered(mine["protected_attribute"], ()) if not mine.empty else []
        if not attrs:
            continue
        attr = attrs[0]
        rows = mine[mine["protected_attribute"] == attr]
        dp = next((r for _, r in rows[rows["metric"] == _DP].iterrows()), None)
        rates = _rates(ctx, audit)
        rates = rates[rates["protected_attribute"] == attr] if not rates.empty else rates
        shown = " vs ".join(f"{attr} = {r['group']}: {num(float(r['value']), 3)} "
                            f"({int(r['numerator']):,} of {int(r['denominator']):,})"
                            for r in rates.to_dict("records"))
        strata = deployed.stratified_all
        within = strata[(strata["audit"] == audit) & (strata["protected_attribute"] == attr)] \
            if not strata.empty else strata
        inside = "".join(_inside(r, ctx.alpha) for _, r in within.iterrows())
        rule = _decision(ctx, audit).removeprefix("the recorded outcome (").removesuffix(")")
        text = (f"{deployed.titles.get(audit, audit)}. Decision 1 = {rule}: {shown}; parity gap "
                f"{_estimate(dp, ctx.alpha)}{inside}; error rates n/a \u2014 the decision is "
                "the outcome. S0-S4 here are trained to predict these decisions: a screening "
                "model learning from historical human decisions.")
        out[audit] = (f"{audit} \u00b7 {attr} \u00b7 the people's decision", text)
    return out
