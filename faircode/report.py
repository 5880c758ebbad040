"""The benchmark's answer as a reader sees it: summary, paper tables, figures, one HTML page.

:func:`write_report` reads only what the grid left on disk -- ``<results>/<audit>/`` with the
four CSVs and ``run.json``, or ``unavailable.json`` -- and writes ``summary.csv``, the paper
tables (Markdown and booktabs LaTeX), the figures, the DVC plot files and ``report.html``.
Reading lives in :mod:`faircode.report_inputs`; rendering in :mod:`faircode.report_tables`,
:mod:`faircode.report_figures` and :mod:`faircode.report_html`; this module holds the report's
statistics and writes the outputs.

Design decisions
----------------
* **Names come from the data** (:mod:`faircode.report_inputs`); the only built-in metric name
  is the default ``demographic_parity``, matched to ``demographic_parity_diff`` by
  :func:`resolve_metric` (exact name, or the one metric named ``<name>_<suffix>``).
* **One benchmark-wide Benjamini-Hochberg family** (:func:`benchmark_q_values`): every
  fairness p-value of every audit, each null hypothesis once, plus the intersectional tests
  listed in :data:`INTERSECTIONAL_P_COLUMNS` when present.  A metric whose permutation test
  is another metric's null (:data:`SHARED_NULL_TESTS`: disparate impact tests the same
  "equal positive rates" null as demographic parity) is not counted again; it takes the q of
  the test it shares.  NaN p-values are not tests and are left out of ``m``.
* **Nothing undefined is shown as a number.**  ``insufficient_data``, undefined ratios, NaN
  intervals, cells that were not run and unavailable audits are "n/a" with the reason in a
  footnote; a ``degenerate_decisions`` note is "uninformative", never "no gap".
* **Residual floor** (:func:`residual_floor`): ``|S3| - |S2|`` and ``|S4| - |S2|`` (distance
  from parity: ``|x - 1|`` for a ratio metric) per audit x attribute x model.  The CSVs keep
  only each estimate's CI, not its bootstrap draws, so the interval is conservative interval
  arithmetic: with ``[l, h]`` the CI of a signed gap, ``|gap|`` lies in
  ``[0 if l <= 0 <= h else min(|l|, |h|), max(|l|, |h|)]``; the difference lies in
  ``[lo_m - hi_2, hi_m - lo_2]`` whenever both CIs cover, so under any dependence between the
  two estimates its coverage is at least ``1 - 2 (1 - confidence)`` (90 % from two 95 % CIs).
  "Not distinguishable" means that interval contains 0.
* Library functions take every path explicitly; the CLI and the stage decide where they are.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.config import ReportConfig
from faircode.errors import DataError, FaircodeError, describe
from faircode.report_inputs import (
    MODELS,
    STRATEGIES,
    UNINFORMATIVE_NOTE,
    ReportInputs,
    UnavailableAudit,
    is_uninformative,
    load_results,
    metric_reference,
    ordered,
    resolve_metric,
    strategy_code,
)
from faircode.stats import benjamini_hochberg
from faircode.strategies import Strategy

__all__ = [
    "DEFAULT_METRIC",
    "INTERSECTIONAL_P_COLUMNS",
    "SHARED_NULL_TESTS",
    "ReportConfig",
    "ReportInputs",
    "ReportOutputs",
    "UnavailableAudit",
    "abs_bounds",
    "benchmark_q_values",
    "floor_counts",
    "load_results",
    "metric_reference",
    "residual_floor",
    "resolve_metric",
    "summarise",
    "write_report",
]

DEFAULT_METRIC = "demographic_parity"
SHARED_NULL_TESTS: Mapping[str, str] = {"disparate_impact": "demographic_parity"}
"""Metric (name or ``<name>_*``) -> the metric whose null hypothesis its p-value tests."""
INTERSECTIONAL_P_COLUMNS: tuple[str, ...] = ("p_value", "interaction_p_value")
"""Columns of ``intersectional.csv`` whose p-values join the benchmark-wide family if present."""
REFERENCE, MITIGATED = Strategy.UNAWARENESS_PROXY_REMOVAL.value, (
    Strategy.IN_PROCESSING.value, Strategy.POST_PROCESSING.value)


@dataclass(frozen=True, slots=True)
class ReportOutputs:
    """Where :func:`write_report` wrote each output."""

    summary: Path
    tables: tuple[Path, ...]
    figures: tuple[Path, ...]
    plots: tuple[Path, ...]
    html: Path
    extra: tuple[Path, ...] = field(default=())


# ------------------------------------------------------------------------------ statistics


def _shares_null(metric: str, shared: Mapping[str, str]) -> str | None:
    for key, partner in shared.items():
        if metric == key or metric.startswith(key + "_"):
            return partner
    return None


def benchmark_q_values(
    fairness: pd.DataFrame,
    intersectional: pd.DataFrame,
    *,
    shared_null: Mapping[str, str] = SHARED_NULL_TESTS,
    intersectional_p_columns: Sequence[str] = INTERSECTIONAL_P_COLUMNS,
) -> tuple[pd.Series, pd.DataFrame]:
    """Benjamini-Hochberg q-values over every fairness test of every audit at once.

    The family is: each non-NaN ``p_value`` of ``fairness`` whose metric does not share
    another metric's null (``shared_null``), and each non-NaN p-value in the columns
    ``intersectional_p_columns`` of ``intersectional`` that exist.  A shared-null row gets the
    q of its partner row (same audit, strategy, model, attribute; NaN without one).

    Returns
    -------
    (q for each ``fairness`` row, q for each ``intersectional`` row and present p column)
    """
    p = fairness["p_value"].to_numpy(dtype=float).copy()
    partner = np.array([_shares_null(str(m), shared_null) for m in fairness["metric"]],
                       dtype=object)
    duplicate = np.array([x is not None for x in partner], dtype=bool)
    p[duplicate] = np.nan
    columns = [c for c in intersectional_p_columns if c in intersectional.columns]
    inter_p = [intersectional[c].to_numpy(dtype=float) for c in columns]
    q = benjamini_hochberg(np.concatenate([p, *inter_p]) if len(p) + sum(map(len, inter_p))
                           else np.empty(0))
    q_fair = pd.Series(q[: len(p)], index=fairness.index, name="q_benchmark")
    if duplicate.any():
        key = ["audit", "strategy", "model", "protected_attribute"]
        lookup = {(*k, str(m)): v for *k, m, v in zip(
            *(fairness[c] for c in key), fairness["metric"], q_fair, strict=True)}
        metrics = fairness["metric"].astype(str).unique()
        shared = q_fair.to_numpy(dtype=float, copy=True)
        for i in np.flatnonzero(duplicate):
            row = fairness.iloc[i]
            names = [m for m in metrics
                     if m == partner[i] or m.startswith(str(partner[i]) + "_")]
            found = [lookup.get((*(row[c] for c in key), m)) for m in names]
            shared[i] = next((float(v) for v in found if v is not None), np.nan)
        q_fair = pd.Series(shared, index=fairness.index, name="q_benchmark")
    inter = pd.DataFrame(index=intersectional.index)
    start = len(p)
    for c in columns:
        inter[c.replace("p_value", "q_benchmark")] = q[start: start + len(intersectional)]
        start += len(intersectional)
    return q_fair, inter


def summarise(fairness: pd.DataFrame, *, q_benchmark: pd.Series, alpha: float) -> pd.DataFrame:
    """Per audit x strategy x attribute x metric: mean/min/max over model families and counts.

    ``mean``/``min``/``max`` are over the families with a defined, informative value;
    ``n_significant_raw`` counts families with ``p < alpha``, ``n_significant_bh`` those with a
    benchmark-wide ``q < alpha``; ``note`` lists each family without a value and why.
    """
    frame = fairness.assign(q_benchmark=q_benchmark)
    informative = ~is_uninformative(frame["note"])
    frame["usable"] = frame["value"].where(informative)
    frame["sig_raw"] = frame["p_value"].lt(alpha) & informative
    frame["sig_bh"] = frame["q_benchmark"].lt(alpha) & informative
    frame["uninformative"] = ~informative
    frame["why"] = np.where(
        ~informative, frame["model"] + ": uninformative",
        np.where(frame["value"].isna(), frame["model"] + ": "
                 + frame["note"].replace("", "no value"), ""))
    keys = ["audit", "strategy", "protected_attribute", "metric"]
    grouped = frame.groupby(keys, sort=False)
    out = grouped.agg(
        n_models=("model", "nunique"), n_estimated=("usable", "count"),
        mean=("usable", "mean"), min=("usable", "min"), max=("usable", "max"),
        n_significant_raw=("sig_raw", "sum"), n_significant_bh=("sig_bh", "sum"),
        n_uninformative=("uninformative", "sum"),
        note=("why", lambda s: "; ".join(x for x in s if x)),
    ).reset_index()
    out.insert(2, "strategy_code", out["strategy"].map(strategy_code))
    out["alpha"] = alpha
    return out


def abs_bounds(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of ``|x|`` for ``x`` in ``[low, high]`` (NaN stays NaN)."""
    lo = np.where((low <= 0) & (high >= 0), 0.0, np.minimum(np.abs(low), np.abs(high)))
    hi = np.maximum(np.abs(low), np.abs(high))
    nan = np.isnan(low) | np.isnan(high)
    return np.where(nan, np.nan, lo), np.where(nan, np.nan, hi)


def residual_floor(fairness: pd.DataFrame, *, metric: str) -> pd.DataFrame:
    """``|S_m| - |S2|`` for S3 and S4 with a conservative interval, per audit x attribute x model.

    Distances are from parity (:func:`metric_reference`).  Columns: ``audit``,
    ``protected_attribute``, ``model``, ``strategy``, ``metric``, ``difference``, ``low``,
    ``high``, ``distinguishable`` (interval excludes 0; NaN when undefined), ``note``.
    """
    ref = metric_reference(metric)
    rows = fairness[fairness["metric"] == metric].copy()
    bad = is_uninformative(rows["note"])
    for c in ("value", "ci_low", "ci_high"):
        rows[c] = rows[c].astype(float).where(~bad) - ref
    rows["dist"] = rows["value"].abs()
    rows["uninformative"] = bad
    rows["lo"], rows["hi"] = abs_bounds(rows["ci_low"].to_numpy(float),
                                         rows["ci_high"].to_numpy(float))
    key = ["audit", "protected_attribute", "model"]
    base = rows[rows["strategy"] == REFERENCE].set_index(key)[
        ["dist", "lo", "hi", "note", "uninformative"]]
    out = []
    for strategy in MITIGATED:
        m = rows[rows["strategy"] == strategy].merge(
            base, left_on=key, right_index=True, suffixes=("", "_ref"), how="inner")
        out.append(pd.DataFrame({
            "audit": m["audit"], "protected_attribute": m["protected_attribute"],
            "model": m["model"], "strategy": strategy, "metric": metric,
            "difference": m["dist"] - m["dist_ref"], "low": m["lo"] - m["hi_ref"],
            "high": m["hi"] - m["lo_ref"],
            "note": np.where(m["uninformative"] | m["uninformative_ref"], UNINFORMATIVE_NOTE,
                             (m["note"] + " " + m["note_ref"]).str.strip()),
        }))
    result = pd.concat(out, ignore_index=True) if out else pd.DataFrame()
    if result.empty:
        return result
    defined = result[["low", "high"]].notna().all(axis=1)
    distinguishable = ((result["low"] > 0) | (result["high"] < 0)).astype("boolean")
    result["distinguishable"] = distinguishable.mask(~defined)
    return result


def floor_counts(floor: pd.DataFrame) -> pd.DataFrame:
    """Per mitigated strategy x model: audits (and pairs) whose gap is not distinguishable.

    An audit counts as "not distinguishable from S2" when no attribute's interval excludes 0;
    attributes without a defined interval are left out (``n_undefined``).
    """
    if floor.empty:
        return pd.DataFrame(columns=["strategy", "model", "audits_not_distinguishable",
                                     "audits", "pairs_not_distinguishable", "pairs",
                                     "n_undefined"])
    f = floor.assign(defined=floor["distinguishable"].notna(),
                     dist=floor["distinguishable"].fillna(False).astype(bool))
    rows = []
    for (strategy, model), g in f.groupby(["strategy", "model"], sort=False):
        d = g[g["defined"]]
        per_audit = d.groupby("audit")["dist"].any()
        rows.append({"strategy": strategy, "model": model,
                     "audits_not_distinguishable": int((~per_audit).sum()),
                     "audits": len(per_audit),
                     "pairs_not_distinguishable": int((~d["dist"]).sum()), "pairs": len(d),
                     "n_undefined": int((~g["defined"]).sum())})
    return pd.DataFrame(rows)


def _alpha(runs: Mapping[str, Mapping[str, Any]], key: str, default: float) -> float:
    values = {float(r.get("config", {}).get(key, default)) for r in runs.values()}
    if len(values) > 1:
        raise DataError(f"run.json: config.{key}: expected one value across audits, "
                        f"got {describe(sorted(values))}")
    return values.pop() if values else default


# ------------------------------------------------------------------------------ writing


def write_plot_data(inputs: ReportInputs, *, out: Path) -> tuple[Path, ...]:
    """Write ``<out>/<metric>/<audit>[.<attribute>].csv``: one row per strategy, one column
    per model family (value), for DVC ``plots:`` (x ``strategy_index``, y the families)."""
    written = []
    for table, extra in (("fairness", ["protected_attribute"]), ("performance", [])):
        frame = getattr(inputs, table)
        if frame.empty:
            continue
        for keys, g in frame.groupby(["audit", "metric", *extra], sort=True):
            audit, metric, *attr = (str(k) for k in keys)
            wide = g.pivot_table(index="strategy", columns="model", values="value",
                                 aggfunc="first", dropna=False)
            wide = wide.reindex(index=ordered(g["strategy"], STRATEGIES),
                                columns=ordered(g["model"], MODELS))
            wide.insert(0, "strategy_code", [strategy_code(s) for s in wide.index])
            wide.insert(0, "strategy_index", range(len(wide)))
            path = out / metric / (".".join([audit, *attr]) + ".csv")
            path.parent.mkdir(parents=True, exist_ok=True)
            wide.reset_index().to_csv(path, index=False, na_rep="NaN")
            written.append(path)
    return tuple(written)


def write_report(
    results: Path,
    *,
    audits_dir: Path | None = None,
    only: Sequence[str] = (),
    metric: str = DEFAULT_METRIC,
    model: str | None = None,
    provenance: Mapping[str, Any] | None = None,
    dvc_lock: Path | None = None,
) -> ReportOutputs:
    """Write summary, tables, figures, DVC plot data and ``report.html`` into ``results``.

    ``results/figures`` and ``results/plots`` belong to the report and are rewritten whole.

    ``provenance`` is the report code's own record (``benchmark.provenance()``); ``dvc_lock``
    the ``dvc.lock`` whose sha256 the page prints (both optional).
    """
    from faircode import report_figures, report_html, report_tables

    inputs = load_results(results, audits_dir=audits_dir, only=only)
    metric = resolve_metric(metric, inputs.fairness["metric"].astype(str))
    models = ordered(inputs.fairness["model"], MODELS)
    if model is not None and model not in models:
        raise FaircodeError(f"--model: expected one of {', '.join(models)}, "
                            f"got {describe(model)}")
    alpha = _alpha(inputs.runs, "alpha", 0.05)
    confidence = _alpha(inputs.runs, "confidence", 0.95)
    q_fair, q_inter = benchmark_q_values(inputs.fairness, inputs.intersectional)
    fairness = inputs.fairness.assign(q_benchmark=q_fair)
    intersectional = pd.concat([inputs.intersectional, q_inter], axis=1)
    summary = summarise(inputs.fairness, q_benchmark=q_fair, alpha=alpha)
    summary_path = results / "summary.csv"
    summary.to_csv(summary_path, index=False, na_rep="NaN")
    floor = residual_floor(fairness, metric=metric)
    floor_path = results / "residual_floor.csv"
    floor.to_csv(floor_path, index=False, na_rep="NaN")
    context = report_tables.Context(inputs=inputs, fairness=fairness, metric=metric,
                                    models=tuple([model] if model else models), alpha=alpha,
                                    confidence=confidence)
    tables = report_tables.write_tables(context, floor=floor, out=results)
    for generated in ("figures", "plots"):  # wholly the report's: no stale file survives
        shutil.rmtree(results / generated, ignore_errors=True)
    figures = report_figures.write_figures(context, floor=floor, out=results / "figures")
    plots = write_plot_data(inputs, out=results / "plots")
    html = report_html.write_html(
        context, summary=summary, floor=floor, counts=floor_counts(floor),
        intersectional=intersectional, figures=figures, provenance=provenance or {},
        dvc_lock=dvc_lock, out=results / "report.html")
    return ReportOutputs(summary=summary_path, tables=tables,
                         figures=tuple(p for f in figures for p in (f.png, f.pdf)), plots=plots,
                         html=html, extra=(floor_path,))
