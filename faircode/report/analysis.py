"""The benchmark's answer as a reader sees it: summary, paper tables, figures, one HTML page.

:func:`write_report` reads only what the grid left on disk -- ``<results>/<audit>/`` with the
four CSVs and ``run.json``, or ``unavailable.json`` -- and writes ``summary.csv``, the paper
tables (Markdown and booktabs LaTeX), the figures, the DVC plot files and ``report.html``.
Reading lives in :mod:`faircode.report.inputs`; rendering in :mod:`faircode.report.tables`,
:mod:`faircode.report.figures` and :mod:`faircode.report.html`; this module holds the report's
statistics and writes the outputs.

Design decisions
----------------
* **Names come from the data** (:mod:`faircode.report.inputs`); the only built-in metric name
  is the default ``demographic_parity``, matched to ``demographic_parity_diff`` by
  :func:`resolve_metric` (exact name, or the one metric named ``<name>_<suffix>``).
* **Stars use each audit's own family** (``q_value`` of the CSVs, the q MLflow logs; see
  :mod:`faircode.report.effects`): each audit is its own study.  **The benchmark-wide
  Benjamini-Hochberg family** (:func:`benchmark_q_values`) is a robustness column,
  ``q_benchmark`` (``summary.csv``, the tables' row dumps), never a star: every fairness p-value
  of every audit, each null hypothesis once, plus the intersectional tests listed in
  :data:`INTERSECTIONAL_P_COLUMNS` when present.  A metric whose permutation test
  is another metric's null (:data:`SHARED_NULL_TESTS`: disparate impact tests the same
  "equal positive rates" null as demographic parity) is not counted again; it takes the q of
  the test it shares.  NaN p-values are not tests and are left out of ``m``.  Where an audit has
  a deployed system, the family also holds the tests the report marks for it
  (:func:`benchmark_family`: its fairness tests on the test rows and the calibration gaps of
  that audit); without one the family is exactly the grid's.
* **Nothing undefined is shown as a number.**  ``insufficient_data``, undefined ratios, NaN
  intervals, cells that were not run and unavailable audits are "n/a" with the reason in a
  footnote; a ``degenerate_decisions`` note is "uninformative", never "no gap".
* **Residual floor**: the paired effect of S3 and S4 against S2 on the same test rows
  (:func:`faircode.report.effects.residual_floor`, from ``effects.csv``); :func:`floor_counts`
  counts the audits where it is not distinguishable from S2.
* Library functions take every path explicitly; the CLI and the stage decide where they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faircode.core.config import ReportConfig
from faircode.report.inputs import (
    ReportInputs,
    UnavailableAudit,
    is_uninformative,
    load_results,
    resolve_metric,
    strategy_code,
)
from faircode.stats.resampling import benjamini_hochberg

__all__ = [
    "DEFAULT_METRIC",
    "INTERSECTIONAL_P_COLUMNS",
    "SHARED_NULL_TESTS",
    "SUMMARY_COLUMNS",
    "VERDICT_COUNTS",
    "BenchmarkQ",
    "ReportConfig",
    "ReportInputs",
    "UnavailableAudit",
    "abs_bounds",
    "benchmark_family",
    "benchmark_q_values",
    "floor_counts",
    "load_results",
    "resolve_metric",
    "summarise",
    "summary_rows",
]

DEFAULT_METRIC = "demographic_parity"
SHARED_NULL_TESTS: Mapping[str, str] = {"disparate_impact": "demographic_parity"}
"""Metric (name or ``<name>_*``) -> the metric whose null hypothesis its p-value tests."""
INTERSECTIONAL_P_COLUMNS: tuple[str, ...] = ("p_value", "interaction_p_value")
"""Columns of ``intersectional.csv`` whose p-values join the benchmark-wide family if present."""


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
    q_fair, inter, _ = _family_q(fairness, intersectional, np.empty(0), shared_null=shared_null,
                                 intersectional_p_columns=intersectional_p_columns)
    return q_fair, inter


@dataclass(frozen=True, slots=True)
class BenchmarkQ:
    """The benchmark-wide q of every test the report marks, split back by table."""

    fairness: pd.Series
    intersectional: pd.DataFrame
    deployed: pd.Series
    calibration_gap: pd.Series


def benchmark_family(
    fairness: pd.DataFrame,
    intersectional: pd.DataFrame,
    *,
    deployed: pd.DataFrame,
    calibration_gap: pd.DataFrame,
) -> BenchmarkQ:
    """:func:`benchmark_q_values` over the grid's tests plus the deployed systems' shown tests.

    The family adds the deployed systems' fairness tests on the test rows (``deployed``, the
    rows of strategy ``deployed`` of ``fairness.csv``) and the calibration-gap tests of the
    audits with a system (``calibration_gap``).  With both empty every q equals
    :func:`benchmark_q_values`' bit for bit.
    """
    both = fairness if deployed.empty else pd.concat([fairness, deployed], ignore_index=True)
    extra = calibration_gap["p_value"].to_numpy(dtype=float) if not calibration_gap.empty \
        else np.empty(0)
    q_all, inter, q_gap = _family_q(both, intersectional, extra)
    n = len(fairness)
    return BenchmarkQ(
        fairness=pd.Series(q_all.to_numpy()[:n], index=fairness.index, name="q_benchmark"),
        intersectional=inter,
        deployed=pd.Series(q_all.to_numpy()[n:], index=deployed.index, name="q_benchmark"),
        calibration_gap=pd.Series(q_gap, index=calibration_gap.index, name="q_benchmark"))


def _family_q(
    fairness: pd.DataFrame,
    intersectional: pd.DataFrame,
    extra: np.ndarray,
    *,
    shared_null: Mapping[str, str] = SHARED_NULL_TESTS,
    intersectional_p_columns: Sequence[str] = INTERSECTIONAL_P_COLUMNS,
) -> tuple[pd.Series, pd.DataFrame, np.ndarray]:
    """The family's q-values: fairness rows, intersectional columns, then ``extra`` p-values."""
    p = fairness["p_value"].to_numpy(dtype=float).copy()
    partner = np.array([_shares_null(str(m), shared_null) for m in fairness["metric"]],
                       dtype=object)
    duplicate = np.array([x is not None for x in partner], dtype=bool)
    p[duplicate] = np.nan
    columns = [c for c in intersectional_p_columns if c in intersectional.columns]
    inter_p = [intersectional[c].to_numpy(dtype=float) for c in columns]
    every = [p, *inter_p, *((extra,) if extra.size else ())]
    q = benjamini_hochberg(np.concatenate(every) if sum(map(len, every)) else np.empty(0))
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
    return q_fair, inter, q[start:]


SUMMARY_COLUMNS = ("audit", "strategy", "strategy_code", "model", "protected_attribute",
                   "metric", "value", "ci_low", "ci_high", "p_value", "q_value", "significant",
                   "verdict", "equivalence_q_value", "gap_bound", "q_benchmark",
                   "significant_benchmark", "star", "rep0_value", "note", "alpha")
"""``summary.csv``: one row per fairness test, both families' q under their own names."""


def summary_rows(fairness: pd.DataFrame, *, shown: pd.DataFrame, q_benchmark: pd.Series,
                 alpha: float) -> pd.DataFrame:
    """``summary.csv``: every fairness row with its verdict, both Benjamini-Hochberg families
    and its star.

    ``value``/``ci_low``/``ci_high``/``p_value``/``q_value``/``equivalence_q_value``/
    ``gap_bound`` are ``fairness.csv``'s (at K > 1 the K-replicate estimate; ``rep0_value``
    replicate 0's own, empty at K = 1); ``significant`` = ``q_value < alpha``; ``verdict`` and
    ``star`` (verdict ``gap``) are what the report prints (``shown``:
    :func:`faircode.report.effects.shown_gaps` of every metric, index aligned with
    ``fairness``); ``q_benchmark``/``significant_benchmark`` the benchmark-wide family
    (robustness).
    """
    q = fairness["q_value"].to_numpy(dtype=float)
    qb = q_benchmark.reindex(fairness.index).to_numpy(dtype=float)
    nan = pd.Series(np.nan, index=fairness.index)
    out = fairness.assign(
        strategy_code=fairness["strategy"].map(strategy_code),
        significant=np.nan_to_num(q, nan=1.0) < alpha,
        verdict=shown["verdict"].reindex(fairness.index),
        equivalence_q_value=fairness.get("equivalence_q_value", nan),
        gap_bound=fairness.get("gap_bound", nan),
        q_benchmark=qb, significant_benchmark=np.nan_to_num(qb, nan=1.0) < alpha,
        star=shown["mark"].reindex(fairness.index).fillna(False).astype(bool).to_numpy(),
        rep0_value=fairness.get("rep0_value", nan), alpha=alpha)
    return out.loc[:, list(SUMMARY_COLUMNS)].reset_index(drop=True)


VERDICT_COUNTS = ("gap", "parity", "inconclusive", "uninformative")
"""The verdicts ``summary_families.csv`` counts per audit x strategy x attribute x metric."""


def summarise(fairness: pd.DataFrame, *, q_benchmark: pd.Series, alpha: float,
              verdicts: pd.Series | None = None) -> pd.DataFrame:
    """Per audit x strategy x attribute x metric: mean/min/max over model families and counts
    (``summary_families.csv``).

    ``mean``/``min``/``max`` are over the families with a defined, informative value;
    ``n_significant_raw`` counts families with ``p < alpha``, ``n_significant`` those with the
    audit's own ``q_value < alpha`` (the stars' family), ``n_significant_benchmark`` those with a
    benchmark-wide ``q < alpha``; ``n_gap``, ``n_parity``, ``n_inconclusive``,
    ``n_uninformative`` the families of each verdict (``verdicts``, index aligned with
    ``fairness``); ``note`` lists each family without a value and why.
    """
    frame = fairness.assign(q_benchmark=q_benchmark)
    informative = ~is_uninformative(frame["note"])
    frame["usable"] = frame["value"].where(informative)
    frame["sig_raw"] = frame["p_value"].lt(alpha) & informative
    frame["sig_audit"] = frame["q_value"].lt(alpha) & informative
    frame["sig_bh"] = frame["q_benchmark"].lt(alpha) & informative
    shown = verdicts.reindex(frame.index) if verdicts is not None else pd.Series(
        np.where(informative, "", "uninformative"), index=frame.index)
    for verdict in VERDICT_COUNTS:
        frame[f"is_{verdict}"] = shown.eq(verdict)
    frame["why"] = np.where(
        ~informative, frame["model"] + ": uninformative",
        np.where(frame["value"].isna(), frame["model"] + ": "
                 + frame["note"].replace("", "no value"), ""))
    keys = ["audit", "strategy", "protected_attribute", "metric"]
    grouped = frame.groupby(keys, sort=False)
    out = grouped.agg(
        n_models=("model", "nunique"), n_estimated=("usable", "count"),
        mean=("usable", "mean"), min=("usable", "min"), max=("usable", "max"),
        n_significant_raw=("sig_raw", "sum"), n_significant=("sig_audit", "sum"),
        n_significant_benchmark=("sig_bh", "sum"),
        **{f"n_{v}": (f"is_{v}", "sum") for v in VERDICT_COUNTS},
        note=("why", lambda s: "; ".join(x for x in s if x)),
    ).reset_index()
    out.insert(2, "strategy_code", out["strategy"].map(strategy_code))
    out["alpha"] = alpha
    return out


def abs_bounds(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of ``|x|`` for ``x`` in ``[low, high]`` (NaN stays NaN): one strategy's distance
    from parity in the trade-off figure (never a difference of two strategies')."""
    lo = np.where((low <= 0) & (high >= 0), 0.0, np.minimum(np.abs(low), np.abs(high)))
    hi = np.maximum(np.abs(low), np.abs(high))
    nan = np.isnan(low) | np.isnan(high)
    return np.where(nan, np.nan, lo), np.where(nan, np.nan, hi)


def floor_counts(floor: pd.DataFrame) -> pd.DataFrame:
    """Per mitigated strategy x model: audits (and pairs) whose gap is not distinguishable.

    An audit counts as "not distinguishable from S2" when no attribute's effect is
    ``distinguishable`` (its star, :func:`faircode.report.effects.residual_floor`); attributes
    without a defined effect are left out (``n_undefined``).
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


# ------------------------------------------------------------------------------ writing


