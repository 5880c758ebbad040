"""The report's view of relaxed post-processing: the claim in one sentence, its table, the frontier.

Reads ``<audit>/matched.csv`` and ``<audit>/frontier.csv`` (:mod:`faircode.evaluate.matched`,
:mod:`faircode.evaluate.frontier`) of every audit that has them:

* :func:`benchmark_matched` -- the matched comparisons of every audit as one Benjamini-Hochberg
  family (``q_benchmark``, its equivalence family, ``verdict_benchmark``): the claim is made
  across the benchmark, so its tests are corrected across it;
* :func:`claim_sentence` -- the headline's sentence on the claim of Cruz & Hardt, counted on
  each audit's own objective (balanced accuracy where it decides at ``base_rate`` or
  ``top_fraction``, else accuracy), from the benchmark verdicts;
* :func:`matched_table` -- the paper's table (``matched_table.md``/``.tex``);
* :func:`frontier_drawings` -- per audit, accuracy and balanced accuracy against the measured
  violation on the test rows: S0-S4's points and S5's tolerance curve, with intervals.

Design decisions
----------------
* **Counted once per cell** (audit x model family), on the audit's objective; the other metric
  is in the table.  "Matches" is ``no_difference`` (shown within ``stats.cost_margin``), never a
  non-rejection; an inconclusive cell is counted as such.
* Nothing is typed by hand: the strategies' codes and labels come from the strategy table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from faircode.core.cells import MATCHED, STRATEGY_TITLES, strategy_code
from faircode.report.drawing import Drawing
from faircode.report.figures import FigureFile, _save, legend_handles
from faircode.report.headline import BALANCED_RULES
from faircode.report.inputs import MODELS, STRATEGIES, is_uninformative, ordered
from faircode.report.style import WIDTH, family_line, family_marker, strategy_colour
from faircode.report.tables import Context, Table, _Footnotes, estimate_cell
from faircode.stats.matched import matched_q_values

__all__ = ["BENCHMARK_COLUMNS", "benchmark_matched", "claim_sentence", "frontier",
           "frontier_drawings", "matched_folds", "matched_table", "objective_rows"]

BENCHMARK_COLUMNS = ("q_benchmark", "equivalence_q_benchmark", "significant_benchmark",
                     "verdict_benchmark")
"""The columns :func:`benchmark_matched` adds."""


def benchmark_matched(matched: pd.DataFrame, *, alpha: float) -> pd.DataFrame:
    """Every audit's matched rows with the benchmark-wide family's q-values and verdicts."""
    if matched.empty:
        return matched.assign(**{c: pd.Series(dtype=object) for c in BENCHMARK_COLUMNS})
    across = matched_q_values(matched.reset_index(drop=True), alpha=alpha)
    out = matched.reset_index(drop=True).copy()
    for mine, theirs in zip(BENCHMARK_COLUMNS, ("q_value", "equivalence_q_value", "significant",
                                                "verdict"), strict=True):
        out[mine] = across[theirs]
    return out


def _rule(run: Mapping[str, Any]) -> str:
    decision = run.get("decision")
    rule = decision.get("rule") if isinstance(decision, Mapping) else None
    return str(rule) if rule else "threshold"


def objective_rows(matched: pd.DataFrame, runs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per comparison x audit x family: the metric of the audit's objective (balanced
    accuracy under a balanced rule, else accuracy)."""
    if matched.empty:
        return matched
    wanted = matched["audit"].astype(str).map(
        lambda a: "balanced_accuracy" if _rule(runs.get(a, {})) in BALANCED_RULES
        else "accuracy")
    return matched[matched["metric"].astype(str) == wanted]


def _margin(runs: Mapping[str, Mapping[str, Any]]) -> float:
    config: Mapping[str, Any] = next(
        (r["config"] for r in runs.values() if isinstance(r.get("config"), Mapping)), {})
    value = config.get("cost_margin", 0.02)
    return float(value) if isinstance(value, int | float) else 0.02


def claim_sentence(matched: pd.DataFrame, runs: Mapping[str, Mapping[str, Any]], *,
                   alpha: float) -> str:
    """The headline's sentence on the claim: in how many cells the strategy with a tolerance
    curve matches or beats its reference at the reference's own violation, and in how many the
    reference is better, shown (module docstring); '' without matched comparisons."""
    claims = [(s, m) for s, m in MATCHED if m.tolerance is None]
    if matched.empty or not claims:
        return ""
    strategy, match = claims[0]
    rows = objective_rows(benchmark_matched(matched, alpha=alpha), runs)
    rows = rows[(rows["strategy"] == strategy.value) & (rows["reference"] == match.reference)]
    if rows.empty:
        return ""
    verdicts = rows["verdict_benchmark"].astype(str)
    count = {v: int((verdicts == v).sum()) for v in
             ("better", "no_difference", "worse", "inconclusive", "uninformative")}
    n = len(verdicts) - count["uninformative"]
    code, ref = strategy_code(strategy.value), strategy_code(match.reference.value)
    text = (f"Relaxed post-processing of the most accurate model ({code}, "
            f"{STRATEGY_TITLES[code]}) matches or beats {ref} at {ref}'s own training "
            f"violation in {count['better'] + count['no_difference']} of {n} "
            f"cell{'s' if n != 1 else ''} (audit x model family, on each audit's objective: "
            f"better in {count['better']}, no difference within \u00b1{_margin(runs):g} in "
            f"{count['no_difference']}; benchmark-wide q < {alpha:g}); {ref} is better, shown, "
            f"in {count['worse']}")
    if count["inconclusive"]:
        text += f"; inconclusive in {count['inconclusive']}"
    if count["uninformative"]:
        text += f"; uninformative in {count['uninformative']}"
    return text + "."


def _where(row: pd.Series) -> str:
    """The stub's "matched at": the reference's violation and the curve's point."""
    tolerance = float(row["tolerance"])
    if not math.isfinite(tolerance):
        return "n/a"
    if str(row["target"]) != "reference_violation":
        return f"\u03b5 = {tolerance:.3f}"
    shown = {"interpolated": "", "at_point": "", "below_curve": " (curve above)",
             "above_curve": " (curve below)"}.get(str(row["match"]), "")
    return f"{float(row['reference_violation']):.3f} \u2192 \u03b5 {tolerance:.3f}{shown}"


def matched_table(ctx: Context) -> Table | None:
    """The paper's table: per comparison (a section), audit x attribute x family, the paired
    Δ accuracy and Δ balanced accuracy of the matched strategy against its reference."""
    frame = benchmark_matched(ctx.inputs.matched, alpha=ctx.alpha)
    if frame.empty:
        return None
    frame = frame[frame["model"].isin(ctx.models)].assign(
        mark=lambda f: f["significant_benchmark"].astype(bool),
        verdict=lambda f: f["verdict_benchmark"].replace({"no_difference": "no_change"}))
    fn = _Footnotes()
    sections = []
    for strategy, match in MATCHED:
        mine = frame[(frame["strategy"] == strategy.value)
                     & (frame["reference"] == match.reference.value)]
        rows = []
        for (audit, attribute, model), part in mine.groupby(
                ["audit", "protected_attribute", "model"], sort=False):
            by_metric = {str(r["metric"]): r for _, r in part.iterrows()}
            cells = tuple(estimate_cell(by_metric.get(m), value="value", fn=fn)
                          for m in ("accuracy", "balanced_accuracy"))
            first = next(iter(by_metric.values()))
            rows.append(((str(audit), str(attribute), str(model), _where(first)), cells))
        at = ("at its own training violation" if match.tolerance is None
              else f"at \u03b5 = {match.tolerance:g}")
        sections.append((f"{strategy_code(strategy.value)} against "
                         f"{strategy_code(match.reference.value)} {at}", tuple(rows)))
    legend = (f"Each cell: the paired difference strategy - reference on the same test rows "
              f"[{ctx.confidence:.0%} paired interval], the strategy's tolerance curve read at "
              "the reference's violation of the constraint on the rows it enforced it on "
              "(interpolated between the two nearest tolerances; never chosen on test rows). "
              f"* a difference shown (benchmark-wide Benjamini-Hochberg q < {ctx.alpha:g} and "
              "an interval excluding 0); = no difference beyond the cost margin shown "
              "(equivalence, benchmark-wide).  \"curve above\": the curve's tightest point is "
              "looser than the target; \"curve below\": its loosest is tighter.")
    return Table("matched_table", "Relaxed post-processing at the reference's violation: "
                 "paired differences in accuracy and balanced accuracy",
                 ("audit", "attribute", "family", "matched at"),
                 ("\u0394 accuracy", "\u0394 balanced accuracy"), tuple(sections), legend,
                 fn.items())


def matched_folds(ctx: Context, *, fold: Callable[[str, str], str]) -> list[str]:
    """The page's folded table of the matched comparisons (none without a tolerance curve)."""
    from faircode.report.html_tables import boxed
    from faircode.report.tables import to_html

    table = matched_table(ctx)
    return [] if table is None else [fold(table.caption, boxed(to_html(table)))]


def _drawable(frame: pd.DataFrame) -> pd.DataFrame:
    keep = frame["violation"].notna() & ~is_uninformative(frame["note"].fillna("").astype(str))
    return frame[keep]


def frontier(ctx: Context, audit: str, out: Path) -> FigureFile | None:
    """Per audit: accuracy and balanced accuracy against the measured violation on the test
    rows, S0-S4's points and S5's tolerance curve per family, with intervals."""
    frame = ctx.inputs.frontier
    frame = frame[(frame["audit"] == audit) & frame["model"].isin(ctx.models)] \
        if not frame.empty else frame
    frame = _drawable(frame) if not frame.empty else frame
    if frame.empty:
        return None
    strategies = ordered(frame["strategy"], STRATEGIES)
    models = ordered(frame["model"], MODELS)
    fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 1.9), sharex=True, layout="constrained")
    for ax, what in zip(axes, ("accuracy", "balanced_accuracy"), strict=True):
        for (strategy, model), part in frame.groupby(["strategy", "model"], sort=False):
            colour, marker = strategy_colour(str(strategy)), family_marker(str(model), models)
            x, y = part["violation"].to_numpy(float), part[what].to_numpy(float)
            curve = part["tolerance"].notna().any()
            if curve:
                ax.plot(x, y, color=colour, ls=family_line(str(model), models), lw=0.7)
            ax.errorbar(x, y, xerr=[x - part["violation_low"].to_numpy(float),
                                    part["violation_high"].to_numpy(float) - x],
                        yerr=[y - part[f"{what}_low"].to_numpy(float),
                              part[f"{what}_high"].to_numpy(float) - y],
                        fmt=marker, color=colour, ms=2.6, mfc="white" if curve else colour,
                        elinewidth=0.3, capsize=0, alpha=0.8, zorder=3)
        ax.set_title(what.replace("_", " "), loc="left", pad=2)
        ax.grid(color="0.92", lw=0.5)
        ax.set_xlim(left=0)
    metric = str(frame["metric"].iloc[0])
    attribute = str(frame["protected_attribute"].iloc[0])
    fig.supxlabel(f"|{metric.replace('_', ' ')}| on the test rows ({attribute})", fontsize=7)
    fig.legend(handles=legend_handles(strategies, models), ncols=len(strategies) + len(models),
               loc="outside upper center", frameon=False, handletextpad=0.1,
               columnspacing=0.5)
    tolerances = sorted(float(t) for t in frame["tolerance"].dropna().unique())
    curve_code = strategy_code(MATCHED[0][0].value) if MATCHED else ""
    return _save(fig, out, f"{audit}_frontier",
                 f"{audit} ({attribute}): accuracy and balanced accuracy against the violation "
                 f"of the mitigation constraint on the test rows (|{metric}|), with "
                 f"{ctx.confidence:.0%} intervals: every strategy's point (colour; marker = model "
                 f"family) and {curve_code}'s tolerance curve (line, open markers; \u03b5 = "
                 f"{', '.join(f'{t:g}' for t in tolerances)}, each fitted and its base model "
                 "chosen on training rows only). Uninformative cells are left out.",
                 "audit", audit=audit, kind="frontier")


def frontier_drawings(ctx: Context, *, out: Path) -> list[Drawing]:
    """The frontier figure of every audit with a ``frontier.csv``."""
    frame = ctx.inputs.frontier
    audits = [] if frame.empty else [a for a in ctx.inputs.runs
                                     if (frame["audit"] == a).any()]
    return [Drawing(frontier, (ctx, audit), out, audit) for audit in audits]

