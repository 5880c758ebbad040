"""The report's view of arbitrariness and multiplicity: one headline sentence, two tables, two
figures.

Reads ``<audit>/arbitrariness.csv``, ``self_consistency.csv``, ``multiplicity.csv`` and
``multiplicity_models.csv`` (:mod:`faircode.evaluate.arbitrariness`) of every audit that has
them (the bag stage ran):

* :func:`survival_counts` and :func:`abstention_sentence` -- the headline's sentence: in how many
  audits S0's gap on the first protected attribute survives abstention on arbitrary decisions;
* :func:`arbitrariness_table` -- per strategy, audit, attribute and family: each group's share of
  arbitrary decisions, the single model's gap and the abstaining ensemble's;
* :func:`multiplicity_table` -- per audit and attribute: the set of equally accurate models, its
  gaps' range and the test of a less discriminatory alternative;
* :func:`abstention_figure` (across audits: the gap before and after abstention against the
  abstention rate) and :func:`multiplicity_figure` (per audit: every fitted model's gap against
  its accuracy, the set and its two picked models marked).

Design decisions
----------------
* **Survival is counted per audit over the bagged families where the single model shows the
  gap** (``arbitrariness.csv`` ``survives``: the ensemble shows it too, same sign).  An audit
  counts as "survives" only where the gap survives in *every* such family (the claim of Cooper
  et al. is that abstention removes it; a gap that one family keeps was not removed), and the
  audits where it survives in some families only are counted apart.  An audit where no bagged
  family's single model shows a gap is not in the count.
* **The first protected attribute and the report metric**, as the rest of the headline
  (:func:`faircode.report.findings.findings`: the audit's :class:`AuditFinding` names it).
* Nothing is typed by hand: strategy codes come from the strategy table, numbers from the CSVs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from faircode.report.drawing import Drawing
from faircode.report.figures import FILLED, FigureFile, _save, legend_handles
from faircode.report.findings import BASELINE, AuditFinding
from faircode.report.inputs import MODELS, STRATEGIES, ordered, strategy_code
from faircode.report.style import WIDTH, family_marker, strategy_colour
from faircode.report.tables import Cell, Context, Table, _Footnotes, estimate_cell, num

__all__ = ["Survival", "abstention_figure", "abstention_sentence", "arbitrariness_drawings",
           "arbitrariness_folds", "arbitrariness_table", "multiplicity_figure",
           "multiplicity_table", "survival_counts"]


@dataclass(frozen=True, slots=True)
class Survival:
    """The headline's counts: audits whose single S0 model shows the gap in some bagged family
    (``shown``), those where it survives abstention in every such family (``every``) or in some
    only (``some``), the audits with bagged results (``bagged``) and the abstention rates'
    range over S0's bagged families."""

    bagged: int
    shown: int
    every: int
    some: int
    abstention: tuple[float, float]
    bags: int
    level: float


def _survives(value: object) -> bool:
    """``survives`` as written (True/False, "True"/"False"; NA: no gap to survive)."""
    return str(value).strip().lower() == "true"


def survival_counts(items: Sequence[AuditFinding], frame: pd.DataFrame, *, metric: str,
                    models: Sequence[str]) -> Survival | None:
    """The counts of :class:`Survival` over ``items`` (one per audit, naming its first
    attribute) from the concatenated ``arbitrariness.csv`` rows ``frame`` (module docstring);
    None without bagged rows of ``metric``."""
    if frame.empty:
        return None
    rows = frame[(frame["strategy"].astype(str) == BASELINE)
                 & (frame["metric"].astype(str) == metric) & frame["model"].isin(models)]
    if rows.empty:
        return None
    bagged = shown = every = some = 0
    rates: list[float] = []
    for item in items:
        mine = rows[(rows["audit"].astype(str) == item.audit)
                    & (rows["protected_attribute"].astype(str) == item.attribute)]
        if mine.empty:
            continue
        bagged += 1
        rates += [float(r) for r in mine["abstention_rate"] if np.isfinite(float(r))]
        gapped = mine[mine["single_verdict"].astype(str) == "gap"]
        if gapped.empty:
            continue
        kept = [_survives(v) for v in gapped["survives"]]
        shown += 1
        every += all(kept)
        some += any(kept) and not all(kept)
    if not bagged:
        return None
    return Survival(bagged, shown, every, some,
                    (min(rates), max(rates)) if rates else (np.nan, np.nan),
                    int(rows["bags"].max()), float(rows["consistency_level"].iloc[0]))


def abstention_sentence(items: Sequence[AuditFinding], frame: pd.DataFrame, *, metric: str,
                        models: Sequence[str]) -> str:
    """The headline's sentence: in how many audits S0's gap survives abstention on arbitrary
    decisions (:func:`survival_counts`); ``""`` without bagged ensembles."""
    found = survival_counts(items, frame, metric=metric, models=models)
    if found is None:
        return ""
    low, high = found.abstention
    code = strategy_code(BASELINE)
    rate = (f"; {code}'s ensembles abstain on {num(low, 2)}" + (f"\u2013{num(high, 2)}"
                                                                if high > low else "")
            + " of the test rows") if np.isfinite(low) else ""
    head = (f"Abstaining where {code}'s {found.bags} bagged models disagree (self-consistency "
            f"below {found.level:g}), the {metric} gap on the first protected attribute ")
    if not found.shown:
        return (head + f"is shown by no single {code} model of a bagged family in the "
                f"{found.bagged} audit{'s' if found.bagged != 1 else ''} with ensembles"
                + rate + ".")
    gone = found.shown - found.every - found.some
    return (head + f"survives in {found.every} of the {found.shown} audits where a single "
            f"{code} model of a bagged family shows it (in every such family; in some families "
            f"only: {found.some}; in none: {gone})" + rate + ".")


def _share_cell(row: pd.Series | None) -> Cell:
    if row is None or not np.isfinite(float(row["share"])):
        return Cell("n/a", numeric=False)
    return Cell(num(float(row["share"]), 2),
                f"[{num(float(row['ci_low']), 2)}, {num(float(row['ci_high']), 2)}]")


def _single(row: pd.Series) -> pd.Series:
    """The single model's claim in ``arbitrariness.csv`` as a row :func:`estimate_cell` reads."""
    return pd.Series({"value": row["single_value"], "ci_low": row["single_ci_low"],
                      "ci_high": row["single_ci_high"], "verdict": row["single_verdict"],
                      "mark": str(row["single_verdict"]) == "gap", "note": ""})


def arbitrariness_table(ctx: Context) -> Table | None:
    """Per bagged strategy (a section): audit x attribute x family with the abstention rate,
    each group's share of arbitrary decisions, the single model's gap and the ensemble's gap on
    the rows it decides (the report metric)."""
    frame, shares = ctx.inputs.arbitrariness, ctx.inputs.self_consistency
    if frame.empty:
        return None
    frame = frame[(frame["metric"].astype(str) == ctx.metric) & frame["model"].isin(ctx.models)]
    frame = frame.assign(mark=frame["verdict"].astype(str) == "gap")
    share = {(str(r["audit"]), str(r["strategy"]), str(r["model"]),
              str(r["protected_attribute"]), str(r["group"])): r for _, r in shares.iterrows()}
    fn, sections = _Footnotes(), []
    for strategy in ordered(frame["strategy"], STRATEGIES):
        rows = []
        for _, row in frame[frame["strategy"] == strategy].iterrows():
            key = (str(row["audit"]), str(strategy), str(row["model"]),
                   str(row["protected_attribute"]))
            cells = (_share_cell(share.get((*key, "disadvantaged"))),
                     _share_cell(share.get((*key, "advantaged"))),
                     estimate_cell(_single(row), value="value", fn=fn),
                     estimate_cell(row, value="value", fn=fn))
            rows.append(((key[0], key[3], str(row["model"]),
                          num(float(row["abstention_rate"]), 2)), cells))
        sections.append((strategy_code(str(strategy)), tuple(rows)))
    level, bags = float(frame["consistency_level"].iloc[0]), int(frame["bags"].max())
    legend = (f"Each strategy's {bags} bagged members (bootstrap draws of the training rows, "
              "each decided at the single model's operating point) vote on every test row; a "
              f"decision is arbitrary where its self-consistency is below {level:g} and the "
              "ensemble abstains there (abstains: the share of test rows).  Arbitrary: each "
              f"group's share of arbitrary decisions [{ctx.confidence:.0%} Wilson interval].  "
              "Single model: fairness.csv's gap; after abstention: the ensemble's majority "
              f"vote on the rows it decides, with the same inference [{ctx.confidence:.0%} "
              f"CI].  * a gap shown (q < {ctx.alpha:g}, its own table's family); = parity "
              "shown.")
    return Table("arbitrariness_table", f"Arbitrary decisions and the {ctx.metric} gap after "
                 "abstention", ("audit", "attribute", "family", "abstains"),
                 ("arbitrary, disadvantaged", "arbitrary, advantaged", "single model",
                  "after abstention"), tuple(sections), legend, fn.items())


def _alternative_cells(row: pd.Series, fn: _Footnotes, alpha: float) -> tuple[Cell, Cell]:
    gap = pd.Series({**row.to_dict(), "mark": str(row["verdict"]) == "shown", "verdict": ""})
    accuracy = pd.Series({"value": row["accuracy_difference"], "ci_low": row["accuracy_ci_low"],
                          "ci_high": row["accuracy_ci_high"], "note": "", "mark": False,
                          "verdict": "parity" if float(row["equivalence_q_value"]) < alpha
                          else ""})
    missing = str(row["note"]) or "no alternative in the set"
    if not np.isfinite(float(row["value"])):
        return (Cell("n/a", notes=(fn(missing),), numeric=False),
                Cell("n/a", notes=(fn(missing),), numeric=False))
    return (estimate_cell(gap, value="value", fn=fn),
            estimate_cell(accuracy, value="value", fn=fn))


def multiplicity_table(ctx: Context) -> Table | None:
    """Per audit and attribute: the set within the tolerance, its gaps' range, and the paired
    test of its least-gap model against its most accurate one on the held-out rows."""
    frame = ctx.inputs.multiplicity
    if frame.empty:
        return None
    fn, rows = _Footnotes(), []
    for _, row in frame.iterrows():
        span = f"{num(float(row['gap_min']), 2)} to {num(float(row['gap_max']), 2)}" \
            if np.isfinite(float(row["gap_min"])) else "n/a"
        rows.append(((str(row["audit"]), str(row["protected_attribute"]),
                      f"{int(row['n_set'])} of {int(row['n_models'])}", span),
                     _alternative_cells(row, fn, ctx.alpha)))
    first = frame.iloc[0]
    legend = (f"The set: every fitted model (grid cells, training replicates on the same test "
              f"rows, bagged members) within {float(first['tolerance']):g} of the best accuracy "
              f"on a seeded half of the test rows, degenerate models left out; its "
              f"{first['metric']} gaps there.  On the other half: Δ|gap| of the set's least-gap "
              f"model against its most accurate one [{ctx.confidence:.0%} paired CI], * where "
              "a less discriminatory alternative of equal accuracy is shown (Δ|gap| < 0 shown, "
              f"and Δ accuracy shown within ±{float(first['tolerance']):g}: = in its column; "
              f"q < {ctx.alpha:g} over the audit's attributes).")
    return Table("multiplicity_table", "Equally accurate models: the gaps' range and a less "
                 "discriminatory alternative", ("audit", "attribute", "set", "gaps"),
                 ("\u0394|gap|", "\u0394 accuracy"), (("", tuple(rows)),), legend, fn.items())


def arbitrariness_folds(ctx: Context, *, fold: Callable[[str, str], str]) -> list[str]:
    """The page's folded tables (none without bagged ensembles)."""
    from faircode.report.html_tables import boxed
    from faircode.report.tables import to_html

    tables = [t for t in (arbitrariness_table(ctx), multiplicity_table(ctx)) if t is not None]
    return [fold(t.caption, boxed(to_html(t))) for t in tables]


def abstention_figure(ctx: Context, out: Path) -> FigureFile | None:
    """Across audits: each bagged family's gap on the first attribute before abstention (open)
    and after it (filled where shown) against the ensemble's abstention rate."""
    frame = ctx.inputs.arbitrariness
    if frame.empty:
        return None
    firsts = {a: ordered(frame[frame["audit"] == a]["protected_attribute"], ())[0]
              for a in ordered(frame["audit"], ())}
    frame = frame[(frame["metric"].astype(str) == ctx.metric) & frame["model"].isin(ctx.models)
                  & (frame["protected_attribute"] == frame["audit"].map(firsts))]
    frame = frame[np.isfinite(frame["value"].astype(float))
                  & np.isfinite(frame["single_value"].astype(float))]
    if frame.empty:
        return None
    strategies, models = ordered(frame["strategy"], STRATEGIES), ordered(frame["model"], MODELS)
    fig, ax = plt.subplots(figsize=(WIDTH, 2.3), layout="constrained")
    for _, row in frame.iterrows():
        colour = strategy_colour(str(row["strategy"]))
        marker = family_marker(str(row["model"]), models)
        x = float(row["abstention_rate"])
        before, after = float(row["single_value"]), float(row["value"])
        ax.plot([x, x], [before, after], color=colour, lw=0.5, alpha=0.6)
        ax.plot([x], [before], marker, color=colour, ms=2.6, mfc="white", mew=0.6)
        ax.plot([x], [after], marker, color=colour, ms=3.0, mew=0.6,
                mfc=colour if str(row["verdict"]) == "gap" else "white")
    ax.axhline(0.0, color="0.6", lw=0.5)
    ax.set_xlabel("abstention rate of the ensemble")
    ax.set_ylabel(f"{ctx.metric.replace('_', ' ')} (first attribute)")
    ax.grid(color="0.92", lw=0.5)
    fig.legend(handles=legend_handles(strategies, models), ncols=len(strategies) + len(models),
               loc="outside upper center", frameon=False, handletextpad=0.1, columnspacing=0.5)
    return _save(fig, out, "abstention",
                 f"The {ctx.metric} gap on each audit's first attribute before and after "
                 "abstention on arbitrary decisions, against the share of test rows the "
                 "bagged ensemble abstains on; one vertical segment per audit, strategy and "
                 "family from the single model's gap (small open marker) to the ensemble's on "
                 f"the rows it decides ({FILLED.format(k='')}).", kind="abstention")


def multiplicity_figure(ctx: Context, audit: str, out: Path) -> FigureFile | None:
    """Per audit: every fitted model's parity gap against its accuracy on the selection half,
    one panel per attribute; the set dark, the incumbent and the alternative ringed."""
    frame = ctx.inputs.multiplicity_models
    frame = frame[frame["audit"] == audit] if not frame.empty else frame
    if frame.empty:
        return None
    attrs = ordered(frame["protected_attribute"], ())
    strategies, models = ordered(frame["strategy"], STRATEGIES), ordered(frame["model"], MODELS)
    fig, axes = plt.subplots(1, len(attrs), figsize=(WIDTH, 2.0), squeeze=False, sharey=True,
                             layout="constrained")
    for ax, attr in zip(axes[0], attrs, strict=True):
        part = frame[frame["protected_attribute"] == attr]
        for (strategy, model), cell in part.groupby(["strategy", "model"], sort=False):
            member = cell["member"].astype(int) >= 0
            for chosen, alpha in ((cell[member], 0.35), (cell[~member], 1.0)):
                inside = chosen["in_set"].astype(str).str.lower() == "true"
                ax.scatter(chosen["gap"], chosen["accuracy"], s=np.where(inside, 7, 4),
                           marker=family_marker(str(model), models), alpha=alpha,
                           c=np.where(inside, strategy_colour(str(strategy)), "0.75"),
                           linewidths=0)
        for role, ring in (("incumbent", "0.2"), ("alternative", "#D55E00")):
            picked = part[part["role"].astype(str) == role]
            ax.scatter(picked["gap"], picked["accuracy"], s=30, facecolors="none",
                       edgecolors=ring, linewidths=0.8)
        ax.axvline(0.0, color="0.6", lw=0.5)
        ax.set_title(str(attr), loc="left", pad=2)
        ax.grid(color="0.92", lw=0.5)
    axes[0][0].set_ylabel("accuracy (selection half)")
    tests = ctx.inputs.multiplicity
    metric = str(tests["metric"].iloc[0]) if not tests.empty else "parity gap"
    fig.supxlabel(f"{metric.replace('_', ' ')} (selection half)", fontsize=7)
    fig.legend(handles=legend_handles(strategies, models), ncols=len(strategies) + len(models),
               loc="outside upper center", frameon=False, handletextpad=0.1, columnspacing=0.5)
    return _save(fig, out, f"{audit}_multiplicity",
                 f"{audit}: every fitted model's {metric} gap against its accuracy on the half of "
                 "the test rows that picks the set (grid fits opaque, bagged members faint; "
                 "grey: outside the set of equally accurate models); ringed: the set's most "
                 "accurate model (dark) and its least-gap model (vermillion), compared on the "
                 "other half (multiplicity table).", "audit", audit=audit, kind="multiplicity")


def arbitrariness_drawings(ctx: Context, *, out: Path) -> list[Drawing]:
    """The abstention figure and every audit's multiplicity figure (none without results)."""
    drawings = [] if ctx.inputs.arbitrariness.empty else [
        Drawing(abstention_figure, (ctx,), out)]
    frame = ctx.inputs.multiplicity_models
    audits = [] if frame.empty else [a for a in ctx.inputs.runs if (frame["audit"] == a).any()]
    return drawings + [Drawing(multiplicity_figure, (ctx, a), out, a) for a in audits]
