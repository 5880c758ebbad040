"""The ``regression`` kind's section of the report: its entry of :data:`faircode.report.kinds.
SECTIONS`.

Reads every regression run's tables (each folder checked to hold exactly the files its
``run.json`` records) and shows, per audit, in the outcome's own units:

* **the observed outcome** (the people's numbers): every metric with its interval, q-value and
  verdict, and the groups' means (on a log outcome also in the original units: the published
  dollars);
* **the gap within strata** beside the raw one (declared ``strata``);
* **the grid**: each cell's mean gap of its predictions and its error gap, and the strategy that
  does not apply with its reason (``n/a``, never a number).

``regression_table.md`` holds the same tables; the page's headline gets one sentence naming the
regression audits and their observed mean gaps with verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.core.layout import REGRESSION_TABLE, paper_table_files
from faircode.core.metrics import Metric, metric_info
from faircode.report._readers import read_kind_tables
from faircode.report.drawing import Drawing

__all__ = ["SECTION", "RegressionInputs", "RegressionSection", "headline_sentence",
           "load_regression_results"]

_OBSERVED = "observed"
NOT_APPLICABLE = "not_applicable"
"""The verdict of a strategy that does not apply (:mod:`faircode.evaluate.regression_claims`;
the report reads the tables, not that wing)."""
_TABLES = ("regression_gaps", "regression_groups", "strategies")


@dataclass(frozen=True)
class RegressionInputs:
    """Every regression run's tables and record, by audit."""

    gaps: pd.DataFrame
    groups: pd.DataFrame
    strata: pd.DataFrame
    strategies: pd.DataFrame
    runs: dict[str, dict[str, Any]]


def load_regression_results(folders: Sequence[Path]) -> RegressionInputs | None:
    """The regression audits of ``folders`` (``None`` without any)."""
    read = read_kind_tables(folders, _TABLES, what="a regression audit's",
                            optional=("regression_strata",))
    if read is None:
        return None
    frames, runs = read

    def joined(name: str) -> pd.DataFrame:
        return pd.concat(frames[name], ignore_index=True) if frames[name] else pd.DataFrame()

    return RegressionInputs(joined("regression_gaps"), joined("regression_groups"),
                            joined("regression_strata"), frames["strategies"][0], runs)


def _number(x: object, digits: int = 4) -> str:
    value = float(x)  # type: ignore[arg-type]
    if math.isnan(value):
        return "n/a"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.{digits}g}"


def _estimate(row: pd.Series) -> str:
    if str(row["verdict"]) == NOT_APPLICABLE:
        return f"n/a: {str(row['note']).split(': ', 1)[-1]}"
    return (f"{_number(row['value'])} [{_number(row['ci_low'])}, {_number(row['ci_high'])}]"
            f"{' *' if bool(row['significant']) else ''}")


def observed_frame(inputs: RegressionInputs, audit: str) -> pd.DataFrame:
    """The observed outcome's metrics of ``audit``: one row per attribute x metric."""
    g = inputs.gaps
    rows = g[(g["audit"] == audit) & (g["strategy"] == _OBSERVED)]
    return pd.DataFrame({
        "attribute": rows["protected_attribute"],
        "metric": [metric_info(m).label for m in rows["metric"]],
        "units": rows["value_units"],
        "estimate [95 % interval]": [_estimate(r) for _, r in rows.iterrows()],
        "q": [_number(q, 2) for q in rows["q_value"]],
        "verdict": rows["verdict"].fillna("").replace(NOT_APPLICABLE, "n/a"),
        "margin": [f"[{_number(lo)}, {_number(hi)}]" if pd.notna(lo) else ""
                   for lo, hi in zip(rows["margin_low"], rows["margin_high"], strict=True)]})


def groups_frame(inputs: RegressionInputs, audit: str) -> pd.DataFrame:
    """The observed outcome's groups of ``audit``: size, mean [interval], original-scale mean."""
    g = inputs.groups
    rows = g[(g["audit"] == audit) & (g["strategy"] == _OBSERVED)]
    return pd.DataFrame({
        "attribute": rows["protected_attribute"], "group": rows["group"], "rows": rows["n"],
        "units": rows["units"],
        "mean [95 % interval]": [f"{_number(m)} [{_number(lo)}, {_number(hi)}]" for m, lo, hi in
                                 zip(rows["mean"], rows["mean_ci_low"], rows["mean_ci_high"],
                                     strict=True)],
        "mean, original units": [_number(x) for x in rows["raw_mean"]],
        "median": [_number(x) for x in rows["q50"]]})


def strata_frame(inputs: RegressionInputs, audit: str) -> pd.DataFrame:
    """The gap within strata of the observed outcome of ``audit``, beside the raw gap."""
    s = inputs.strata
    if s.empty:
        return s
    rows = s[(s["audit"] == audit) & (s["strategy"] == _OBSERVED)]
    return pd.DataFrame({
        "attribute": rows["protected_attribute"], "within": rows["stratum"],
        "raw gap": [_number(x) for x in rows["raw_gap"]],
        "gap within strata [95 % interval]": [
            f"{_number(v)} [{_number(lo)}, {_number(hi)}]{' *' if sig else ''}" for v, lo, hi, sig
            in zip(rows["value"], rows["ci_low"], rows["ci_high"], rows["significant"],
                   strict=True)],
        "strata compared": [f"{c} of {n}" for c, n in zip(rows["strata_compared"], rows["strata"],
                                                          strict=True)]})


def grid_frame(inputs: RegressionInputs, audit: str) -> pd.DataFrame:
    """Every cell's mean gap and error gap on the first attribute, S4 with its reason."""
    g = inputs.gaps
    first = g.loc[(g["audit"] == audit), "protected_attribute"].iloc[0]
    rows = g[(g["audit"] == audit) & (g["strategy"] != _OBSERVED)
             & (g["protected_attribute"] == first)]
    out = []
    for (strategy, model), cell in rows.groupby(["strategy", "model"], sort=False):
        by = {str(m): r for m, r in zip(cell["metric"], cell.itertuples(index=False),
                                        strict=True)}
        mean, mae = by[Metric.MEAN_DIFFERENCE.value], by[Metric.MAE_GAP.value]
        out.append({"strategy": strategy, "model": model, "attribute": first,
                    "mean gap of predictions": _estimate(pd.Series(mean._asdict())),
                    "verdict": "n/a" if mean.verdict == NOT_APPLICABLE else mean.verdict,
                    "error gap (MAE)": _estimate(pd.Series(mae._asdict())) if mae.verdict
                    != NOT_APPLICABLE else "n/a"})
    return pd.DataFrame(out)


def _markdown(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)"
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join(":--" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |"
            for row in frame.itertuples(index=False, name=None)]
    return "\n".join([head, rule, *body])


def _sections(inputs: RegressionInputs, audit: str) -> list[tuple[str, pd.DataFrame]]:
    run = inputs.runs[audit]
    units = (run.get("target") or {}).get("scale_units", "")
    return [(f"{audit}: the observed outcome ({units})", observed_frame(inputs, audit)),
            (f"{audit}: groups", groups_frame(inputs, audit)),
            (f"{audit}: the mean gap within strata, beside the raw gap",
             strata_frame(inputs, audit)),
            (f"{audit}: the grid's predictions (first attribute)", grid_frame(inputs, audit))]


def _tex(text: str) -> str:
    return "".join("\\" + c if c in "&%$#_{}" else c for c in str(text))


def latex_table(inputs: RegressionInputs) -> str:
    """The headline gaps as a LaTeX table: per audit and attribute the observed mean gap in the
    outcome's units with its interval and verdict, and the gap within each declared stratum."""
    g, s = inputs.gaps, inputs.strata
    lines = [r"\begin{tabular}{lllrll}", r"\hline",
             r"audit & attribute & units & mean gap [95\% interval] & verdict & within strata "
             r"\\", r"\hline"]
    for audit, run in inputs.runs.items():
        units = (run.get("target") or {}).get("scale_units", "")
        rows = g[(g["audit"] == audit) & (g["strategy"] == _OBSERVED)
                 & (g["metric"] == Metric.MEAN_DIFFERENCE.value)]
        for row in rows.to_dict("records"):
            within = "" if s.empty else "; ".join(
                f"{r['stratum']} {_number(r['value'])}" for r in s[
                    (s["audit"] == audit) & (s["strategy"] == _OBSERVED)
                    & (s["protected_attribute"] == row["protected_attribute"])].to_dict("records"))
            lines.append(" & ".join(_tex(x) for x in (
                audit, row["protected_attribute"], units,
                f"{_number(row['value'])} [{_number(row['ci_low'])}, {_number(row['ci_high'])}]",
                row["verdict"], within or "--")) + r" \\")
    return "\n".join([*lines, r"\hline", r"\end{tabular}", ""])


def headline_sentence(inputs: RegressionInputs) -> str:
    """One sentence naming the regression audits and their observed mean gaps (first
    attribute), in each outcome's units, with their verdicts."""
    clauses = []
    for audit, run in inputs.runs.items():
        g = inputs.gaps
        rows = g[(g["audit"] == audit) & (g["strategy"] == _OBSERVED)
                 & (g["metric"] == Metric.MEAN_DIFFERENCE.value)]
        if rows.empty:
            continue
        row = rows.iloc[0]
        units = (run.get("target") or {}).get("scale_units", "")
        clauses.append(f"{audit} {row['protected_attribute']} {_number(row['value'])} {units} "
                       f"({row['verdict']})")
    if not clauses:
        return ""
    return ("Regression audits (a number per person, gaps in the outcome's units, "
            "disadvantaged minus advantaged): " + "; ".join(clauses) + ".")


class RegressionSection:
    """The ``regression`` kind's part of the report."""

    def load(self, folders: Sequence[Path]) -> RegressionInputs | None:
        """The regression runs' tables and records."""
        return load_regression_results(folders)

    def tables(self, inputs: RegressionInputs, out: Path) -> tuple[Path, ...]:
        """The paper table (:data:`~faircode.core.layout.REGRESSION_TABLE`): every section in
        markdown, the headline gaps in LaTeX."""
        parts = ["# Regression audits", "",
                 "Gaps are disadvantaged minus advantaged, in the outcome's units (a log "
                 "outcome's in log points); [95 % interval]; * q below alpha in the audit's "
                 "Benjamini-Hochberg family; verdicts against the audit's declared margin "
                 "(docs/statistics.md).", ""]
        for audit in inputs.runs:
            for title, frame in _sections(inputs, audit):
                parts += [f"## {title}", "", _markdown(frame), ""]
        markdown, latex = (out / f for f in paper_table_files(REGRESSION_TABLE))
        markdown.write_text("\n".join(parts), encoding="utf-8")
        latex.write_text(latex_table(inputs), encoding="utf-8")
        return markdown, latex

    def drawings(self, inputs: RegressionInputs, out: Path) -> list[Drawing]:
        """No figures of its own: its tables say it."""
        return []

    def headline(self, inputs: RegressionInputs) -> str:
        """:func:`headline_sentence`."""
        return headline_sentence(inputs)

    def html(self, inputs: RegressionInputs, *, figures: str, fold: Callable[[str, str], str],
             table: Callable[[Any], str]) -> str:
        """The page's regression section."""
        parts = ["<h2>Regression audits</h2>",
                 "<p>A number per person (pay, a rating): the observed outcome's gaps, the gap "
                 "within the declared strata beside the raw one, and the grid's regression "
                 "models (S0-S3; S4 does not apply and says why), each gap in the outcome's own "
                 "units with its interval, q-value and verdict against the audit's declared "
                 "margin.</p>", figures]
        for audit in inputs.runs:
            for title, frame in _sections(inputs, audit):
                if not frame.empty:
                    parts.append(fold(title, table(frame)))
        return "".join(parts)


SECTION = RegressionSection()
"""The ``regression`` kind's section."""
