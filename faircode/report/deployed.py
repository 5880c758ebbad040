"""The report's deployed-system views: the tool beside S0-S4, and the published-audit replication.

For an audit whose manifest declares a ``system:`` the evaluate step writes the system's rows
beside the grid's (:mod:`faircode.report.inputs`, :class:`~faircode.report.inputs.DeployedInputs`).
Two tables are built from them, as :class:`~faircode.report.tables.Table` values so the Markdown,
LaTeX and HTML versions cannot disagree:

* :func:`deployed_table` -- rows audit x attribute x gap, columns S0-S4 and the deployed system,
  on the same test rows: the parity gap, the FPR gap, the FNR gap and the calibration gap, each
  with its interval and significance mark (the audit's own q).
* :func:`replication_table` -- the system on every row of the audit, per attribute and group:
  ``n``, ``TN, FP, FN, TP``, FPR, FNR and PPV with Wilson intervals (``groups.csv``, row set
  ``all``): the per-group table of a published audit (ProPublica's truth tables for COMPAS).
* :func:`orientation_table` -- the system's error-rate gaps on every row in both orientations,
  each named in words: the label coding a published audit uses (ProPublica's FPR: flagged among
  those not re-arrested, COMPAS +0.214) beside the favourable orientation of ``fairness.csv``
  (its ``fpr_gap``: decided favourable among label unfavourable, COMPAS -0.197).  Where label 1
  is unfavourable the two orientations swap FPR and FNR, so the same rows' two "FPR gaps" count
  different people and may differ in sign.

Design decisions
----------------
* **Both tables are in the target's label coding**, the coding of the per-group tables and of
  calibration (:mod:`faircode.stats.groups`, :mod:`faircode.stats.calibration`): decision 1 is
  the decision that calls for label 1, FPR is ``P(decided 1 | label 0)``, FNR
  ``P(decided 0 | label 1)``, the calibration gap the within-bin difference of the label-1 rate.
  That is how the published audits state them (ProPublica's FPR 44.85 % vs 23.45 % is a label-1
  = re-arrest FPR), so the two tables and the figure read alike and the replication can be
  checked count for count.  The fairness table is oriented instead (1 = favourable), so the
  gaps of table one are ``fairness.csv``'s rows re-signed per audit from ``target.favourable``:
  with ``favourable: 1`` parity = ``demographic_parity_diff``, FPR gap = ``fpr_gap``, FNR gap =
  ``-tpr_gap``; with ``favourable: 0`` parity = ``-demographic_parity_diff``, FPR gap =
  ``-tpr_gap``, FNR gap = ``fpr_gap`` (a negated interval is ``[-high, -low]``; the test and
  its q do not depend on the sign).
* Marks are the audit's own BH q (``q_value`` of ``fairness.csv`` and ``calibration_gap.csv``),
  the same family as the paper table's stars and MLflow's.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from faircode.core.cells import STRATEGY_TABLE
from faircode.core.metrics import Metric
from faircode.report.inputs import DEPLOYED, STRATEGIES, ordered, strategy_code
from faircode.report.tables import Cell, Context, Table, _Footnotes, estimate_cell

__all__ = ["GAPS", "ORIENTATIONS", "deployed_table", "deployed_tables", "orientation_table",
           "replication_table", "signed_gaps", "system_names"]

DP, _TPR, _FPR = (m.value for m in (Metric.DEMOGRAPHIC_PARITY, Metric.TPR_GAP, Metric.FPR_GAP))
GAPS: tuple[str, ...] = ("parity gap", "FPR gap", "FNR gap", "calibration gap")
"""The rows of :func:`deployed_table` per attribute, in order."""
_REPLICATION = (("fpr", "FPR"), ("fnr", "FNR"), ("ppv", "PPV"))
_ALL, _TEST = "all", "test"
_NO_SCORE = tuple(s.strategy.value for s in STRATEGY_TABLE if not s.score)
"""The strategies that decide without a score (so without a calibration gap)."""


def signed_gaps(favourable: int) -> dict[str, tuple[str, float]]:
    """``{gap: (fairness.csv metric, sign)}`` giving each label-coded gap (module docstring)."""
    if favourable == 1:
        return {"parity gap": (DP, 1.0), "FPR gap": (_FPR, 1.0), "FNR gap": (_TPR, -1.0)}
    return {"parity gap": (DP, -1.0), "FPR gap": (_TPR, -1.0), "FNR gap": (_FPR, 1.0)}


def _signed(row: pd.Series | None, sign: float, alpha: float) -> pd.Series | None:
    """``row`` with value and interval multiplied by ``sign`` and its mark: its verdict ``gap``
    (per-audit q and an interval excluding no gap; q alone for rows written before verdicts)."""
    if row is None:
        return None
    out = row.copy()
    low, high = float(row["ci_low"]) * sign, float(row["ci_high"]) * sign
    out["value"] = float(row["value"]) * sign
    out["ci_low"], out["ci_high"] = min(low, high), max(low, high)
    verdict = row.get("verdict")
    out["mark"] = (verdict == "gap" if isinstance(verdict, str) and verdict
                   else bool(float(row.get("q_value", np.nan)) < alpha))
    return out


def _index(frame: pd.DataFrame, keys: list[str]) -> dict[tuple[str, ...], pd.Series]:
    if frame.empty:
        return {}
    return {tuple(str(v) for v in k): r for k, r in zip(
        frame[keys].itertuples(index=False, name=None), (r for _, r in frame.iterrows()),
        strict=True)}


def _missing_reason(strategy: str, gap: str) -> str:
    if gap == "calibration gap":
        return ("no calibration gap: the cell has no score (post-processing decides without "
                "one)" if strategy in _NO_SCORE else
                "no calibration gap for this cell (calibration_gap.csv has no row)")
    return "no result row for this cell"


def deployed_table(ctx: Context) -> Table | None:
    """Rows audit x attribute x gap; columns S0-S4 and ``deployed``; one section per family."""
    deployed, systems = ctx.inputs.deployed, system_names(ctx)
    if not systems:
        return None
    fn = _Footnotes()
    grid = ctx.fairness[ctx.fairness["audit"].isin(systems)]
    strategies = ordered(grid["strategy"], STRATEGIES) or list(STRATEGIES)
    fair = _index(grid, ["model", "audit", "protected_attribute", "strategy", "metric"])
    tool = _index(ctx.deployed_fairness, ["audit", "protected_attribute", "metric"])
    gaps = ctx.calibration_gap
    gaps = gaps[gaps["row_set"].astype(str) == _TEST] if not gaps.empty else gaps
    calib = _index(gaps, ["model", "audit", "protected_attribute", "strategy"])
    sections = []
    for model in ctx.models:
        rows = []
        for audit, system in systems.items():
            how = signed_gaps(deployed.favourable[audit])
            mine = ctx.deployed_fairness[ctx.deployed_fairness["audit"] == audit]
            for attr in ordered(mine["protected_attribute"], ()):
                for gap in GAPS:
                    cells = []
                    for s in (*strategies, DEPLOYED):
                        m = system if s == DEPLOYED else model
                        if gap == "calibration gap":
                            row = _signed(calib.get((m, audit, attr, s)), 1.0, ctx.alpha)
                        else:
                            metric, sign = how[gap]
                            found = tool.get((audit, attr, metric)) if s == DEPLOYED else \
                                fair.get((model, audit, attr, s, metric))
                            row = _signed(found, sign, ctx.alpha)
                        cells.append(estimate_cell(row, value="value", fn=fn,
                                                   missing=_missing_reason(s, gap)))
                    rows.append(((audit, attr, gap), tuple(cells)))
        sections.append((model, tuple(rows)))
    pct = f"{ctx.confidence:.0%}"
    who = "; ".join(f"{a}: {deployed.titles.get(a, n)} ({n})" for a, n in systems.items())
    legend = (
        f"Each cell: estimate [{pct} CI]; * the audit's own Benjamini-Hochberg q < "
        f"{ctx.alpha:g} (q_value). Same test rows for every column. Disadvantaged minus "
        "advantaged, in the "
        "target's label coding (decision 1 = the decision calling for label 1, as in the "
        "per-group table): parity gap = difference in the share decided 1; FPR gap = in "
        "P(decided 1 | label 0); FNR gap = in P(decided 0 | label 1); calibration gap = the "
        "within-score-bin difference of the label-1 rate (Mantel-Haenszel weights; > 0: at "
        "equal score the disadvantaged group has label 1 more often). Where label 1 is "
        "unfavourable a positive parity or FPR gap puts the disadvantaged group at a "
        "disadvantage (fairness.csv counts the favourable outcome instead: both orientations "
        "side by side in the orientation table). Deployed: " + who + ".")
    return Table("deployed_table", "The deployed system beside S0-S4 on the same test rows",
                 ("audit", "attribute", "gap"),
                 (*(strategy_code(s) for s in strategies), DEPLOYED), tuple(sections), legend,
                 fn.items())


def _count(row: pd.Series, column: str) -> Cell:
    return Cell(f"{int(row[column]):,}")


def replication_table(ctx: Context) -> Table | None:
    """Rows audit x attribute x group: the system on every row, counts and FPR, FNR, PPV.

    A system whose decision is the outcome has no error to count (its FP and FN are 0 by
    construction): it is left out here and shown by :mod:`faircode.report.people`.
    """
    deployed = ctx.inputs.deployed
    systems = {a: n for a, n in system_names(ctx).items() if a not in deployed.people}
    groups = deployed.groups
    if not systems or groups.empty:
        return None
    mine = groups[(groups["strategy"].astype(str) == DEPLOYED)
                  & (groups["row_set"].astype(str) == _ALL) & groups["audit"].isin(systems)]
    if mine.empty:
        return None
    fn = _Footnotes()
    rows = []
    for (audit, attr, group), part in mine.groupby(["audit", "protected_attribute", "group"],
                                                   sort=False):
        rate = {str(m): r for m, (_, r) in zip(part["metric"], part.iterrows(), strict=True)}
        first = part.iloc[0]
        cells = [_count(first, c) for c in ("n", "TN", "FP", "FN", "TP")]
        cells += [estimate_cell(rate.get(metric), value="value", fn=fn)
                  for metric, _ in _REPLICATION]
        rows.append(((str(audit), str(attr), str(group)), tuple(cells)))
    pct = f"{ctx.confidence:.0%}"
    who = "; ".join(f"{a}: {deployed.titles.get(a, n)} ({n})" for a, n in systems.items())
    legend = (f"The deployed system on every row of the audit (groups.csv, row set all), in the "
              "target's label coding: FP = label 0 decided 1, FN = label 1 decided 0; FPR = "
              "FP/(TN+FP), FNR = FN/(FN+TP), PPV = TP/(FP+TP), each with its Wilson "
              f"{pct} interval. Positive: {_positives(mine)}. Systems: {who}.")
    return Table("replication_table",
                 "The deployed system on every row: per-group counts and error rates",
                 ("audit", "attribute", "group"),
                 ("n", "TN", "FP", "FN", "TP", *(label for _, label in _REPLICATION)),
                 (("", tuple(rows)),), legend, fn.items())


def _positives(groups: pd.DataFrame) -> str:
    """What each audit's label 1 is (``groups.csv``'s ``positive`` column; older files lack
    it: then "label 1")."""
    if "positive" not in groups.columns:
        return "label 1"
    found = groups.drop_duplicates("audit")
    return "; ".join(f"{a}: {p}" for a, p in zip(found["audit"], found["positive"], strict=True))


ORIENTATIONS: tuple[tuple[str, str, str], ...] = (
    ("label coding (as published)", "FPR gap: decided 1 among label 0", "FPR gap"),
    ("label coding (as published)", "FNR gap: decided 0 among label 1", "FNR gap"),
    ("favourable orientation (fairness.csv)",
     f"{_FPR}: decided favourable among label unfavourable", _FPR),
    ("favourable orientation (fairness.csv)",
     f"FNR gap = -{_TPR}: decided unfavourable among label favourable", f"-{_TPR}"),
)
"""The rows of :func:`orientation_table` per attribute: (orientation, what the gap counts,
key: a label-coded gap of :func:`signed_gaps` or a ``fairness.csv`` metric, ``-`` negated)."""


def _oriented(favourable: int, key: str) -> tuple[str, float]:
    """``(fairness.csv metric, sign)`` of an :data:`ORIENTATIONS` row."""
    if key in GAPS:
        return signed_gaps(favourable)[key]
    return (key[1:], -1.0) if key.startswith("-") else (key, 1.0)


def orientation_table(ctx: Context) -> Table | None:
    """Rows audit x attribute x orientation x gap: the system's FPR and FNR gaps on every row
    in the label coding and in the favourable orientation, each said in words."""
    deployed = ctx.inputs.deployed
    systems = {a: n for a, n in system_names(ctx).items() if a not in deployed.people}
    fair = deployed.fairness_all
    if not systems or fair.empty:
        return None
    found = _index(fair[fair["audit"].isin(systems)], ["audit", "protected_attribute", "metric"])
    fn, rows = _Footnotes(), []
    for audit in systems:
        mine = fair[fair["audit"] == audit]
        for attr in ordered(mine["protected_attribute"], ()):
            for orientation, counts, key in ORIENTATIONS:
                metric, sign = _oriented(deployed.favourable[audit], key)
                row = _signed(found.get((audit, attr, metric)), sign, ctx.alpha)
                rows.append(((audit, attr, orientation, counts),
                             (estimate_cell(row, value="value", fn=fn),)))
    if not rows:
        return None
    pct = f"{ctx.confidence:.0%}"
    codes = "; ".join(f"{a}: {_coding(ctx, a)}" for a in systems)
    legend = (
        f"The deployed system on every row of the audit (deployed/fairness.csv): each "
        f"error-rate gap, disadvantaged minus advantaged [{pct} CI], * the system's own "
        "Benjamini-Hochberg q, in two orientations. Label coding: decision 1 is the decision "
        "calling for label 1 and the FPR is the share decided 1 among label 0, as published "
        "audits state it (ProPublica's FPR for COMPAS: rated Medium or High among those not "
        "re-arrested). Favourable orientation: fairness.csv's, where 1 is the favourable "
        "outcome; its fpr_gap is the share decided favourable among label unfavourable. Where "
        "label 1 is unfavourable the orientations swap FPR and FNR: fairness.csv's fpr_gap is "
        "then the label coding's FNR gap, and the label coding's FPR gap is minus "
        "fairness.csv's tpr_gap. "
        f"Codings: {codes}.")
    return Table("orientation_table",
                 "The deployed system's error-rate gaps, in the published label coding and in "
                 "the favourable orientation", ("audit", "attribute", "orientation", "gap"),
                 ("disadvantaged minus advantaged",), (("", tuple(rows)),), legend, fn.items())


def _coding(ctx: Context, audit: str) -> str:
    """``decision 1 = <the system's rule>, label 1 = <...> (unfavourable)`` of an audit."""
    run = ctx.inputs.runs.get(audit, {})
    system = run.get("system") if isinstance(run.get("system"), dict) else {}
    groups = ctx.inputs.deployed.groups
    mine = groups[groups["audit"] == audit] if "positive" in groups.columns else groups.iloc[:0]
    label = str(mine["positive"].iloc[0]) if len(mine) else \
        f"label 1 ({'favourable' if ctx.inputs.deployed.favourable[audit] else 'unfavourable'})"
    rule = system.get("decision") if isinstance(system, dict) else None
    return f"decision 1 = {rule or 'the decision calling for label 1'}, {label}"


def deployed_tables(ctx: Context) -> tuple[Table, ...]:
    """The deployed-system tables of the report (none without a system)."""
    return tuple(t for t in (deployed_table(ctx), replication_table(ctx), orientation_table(ctx))
                 if t is not None)


def system_names(ctx: Context) -> Mapping[str, str]:
    """``{audit: system name}`` of the audits with results and a deployed system."""
    return {a: n for a, n in ctx.inputs.deployed.systems.items() if a in ctx.inputs.runs}
