"""The fairness-accuracy frontier of one audit: every strategy's point and S5's tolerance curve.

``frontier.csv`` has one row per fitted cell (S0-S4 at their operating point, S5 at each
tolerance of its curve) on the audit's first protected attribute -- the attribute the
mitigations enforce their constraint on: the violation of ``mitigation.constraint`` on the test
rows (the distance from parity of the fairness metric of the same rates,
:func:`faircode.grid.violation.violation_metric`, and its interval), accuracy and balanced
accuracy with their intervals, and for the strategies that enforced the constraint the
violation they reached where they enforced it (``train_violation``: S3 on its training rows,
S4 and S5 on the calibration rows).  The report draws it (:mod:`faircode.report.matched`).

Design decisions
----------------
* **One number per point.**  S0-S5's main points are read from the cells' own rows of the
  fairness and performance tables; S5's curve points are scored by the same function
  (:func:`faircode.evaluate.counted.score_counts`, with S5's own seed position), so the curve's
  first point is the main table's S5 row bit for bit.
* **Distance from parity** ``|gap|``, with the interval of ``|·|`` over the gap's interval
  (``[0, max |end|]`` where it spans 0), so every strategy is placed on one axis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import position
from faircode.core.config import DegenerateConfig, StatsConfig
from faircode.evaluate.counted import score_counts
from faircode.evaluate.score import CellResult, Decided, decided_tally
from faircode.grid.predictions import CellPredictions
from faircode.grid.violation import violation_metric
from faircode.stats.metrics import orient
from faircode.stats.operating import DEGENERATE_NOTE

__all__ = ["FRONTIER_COLUMNS", "distance_interval", "frontier_table"]

FRONTIER_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "model", "protected_attribute", "tolerance", "base",
    "train_violation", "metric", "violation", "violation_low", "violation_high", "accuracy",
    "accuracy_low", "accuracy_high", "balanced_accuracy", "balanced_accuracy_low",
    "balanced_accuracy_high", "note")
"""Columns of ``frontier.csv`` (one row per cell, S5 one per tolerance)."""

_PERFORMANCE = ("accuracy", "balanced_accuracy")


def distance_interval(value: float, low: float, high: float) -> tuple[float, float, float]:
    """``(|value|, low, high)`` of the distance from parity of a signed gap with interval
    ``[low, high]`` (module docstring)."""
    ends = sorted((abs(low), abs(high)))
    lower = 0.0 if low <= 0.0 <= high else ends[0]
    return abs(value), lower, ends[1]


def _blank(value: object) -> bool:
    """Whether a row's attribute is empty (an overall row): None, '' or NaN."""
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def _point(fairness: Sequence[Mapping[str, Any]], performance: Sequence[Mapping[str, Any]], *,
           attribute: str, metric: str) -> dict[str, Any]:
    """A point's violation and performance columns from its table rows."""
    out: dict[str, Any] = {"metric": metric}
    gap = [r for r in fairness if r["protected_attribute"] == attribute
           and r["metric"] == metric]
    nan = math.nan
    if gap:
        row = gap[0]
        value, low, high = (float(row[k]) for k in ("value", "ci_low", "ci_high"))
        distance = distance_interval(value, low, high) if math.isfinite(value) else (nan,) * 3
        out.update(zip(("violation", "violation_low", "violation_high"), distance, strict=True))
        out["note"] = str(row.get("note") or "")
    for name in _PERFORMANCE:
        rows = [r for r in performance if r["metric"] == name
                and _blank(r.get("protected_attribute"))]
        values = (float(rows[0][k]) for k in ("value", "ci_low", "ci_high")) if rows \
            else (nan,) * 3
        out.update(zip((name, f"{name}_low", f"{name}_high"), values, strict=True))
    return out


def _curve_points(data: PreparedAudit, cell: CellPredictions, *, stats: StatsConfig,
                  degenerate: DegenerateConfig, master: int, label: dict[str, str],
                  metric: str) -> list[dict[str, Any]]:
    """S5's curve: every tolerance's decisions scored as a cell of its own position."""
    test = data.test_index
    favourable = data.manifest.target.favourable
    attribute = data.manifest.protected_attributes[0].name
    rows = []
    for tolerance, violation, decisions in zip(cell.tolerances, cell.violations,
                                               cell.curve_decision, strict=True):
        y_fav, yhat_fav = orient(data.y[test], decisions, favourable=favourable)
        tally = decided_tally(data, Decided(np.asarray(decisions, dtype=np.int8), y_fav,
                                            yhat_fav), scale=None)
        counted = score_counts(
            tally, data.manifest.protected_attributes, favourable=favourable, label=label,
            key=position(cell.strategy, cell.family), rule=None, objective=cell.objective,
            stats=stats, degenerate=degenerate, master=master, detail=False)
        point = _point(counted.fairness, counted.performance, attribute=attribute,
                       metric=metric)
        rows.append({**label, "protected_attribute": attribute, "tolerance": tolerance,
                     "base": cell.base, "train_violation": violation, **point})
    return rows


def frontier_table(data: PreparedAudit, results: Sequence[CellResult],
                   cells: Sequence[CellPredictions], *, constraint: str, stats: StatsConfig,
                   degenerate: DegenerateConfig, master: int | None = None) -> pd.DataFrame:
    """``frontier.csv`` of one replicate's scored ``results`` and their predictions ``cells``
    (the same cells, any order): module docstring.  ``master`` seeds the curve points'
    statistics (default the manifest's ``random_state``)."""
    master = data.manifest.random_state if master is None else master
    attribute = data.manifest.protected_attributes[0].name
    metric = violation_metric(constraint, favourable=data.manifest.target.favourable)
    by_cell = {(str(c.strategy), str(c.family)): c for c in cells}
    rows: list[dict[str, Any]] = []
    for result in results:
        cell = by_cell.get((str(result.strategy), str(result.family)))
        if cell is None or result.skipped:
            continue
        label = {"strategy": str(result.strategy), "model": str(result.family)}
        if cell.tolerances and cell.fitted:
            rows += _curve_points(data, cell, stats=stats, degenerate=degenerate, master=master,
                                  label=label, metric=metric)
            continue
        point = _point(result.fairness.records(), result.performance.records(),
                       attribute=attribute, metric=metric)
        if result.unfittable:
            point["note"] = point.get("note") or result.unfittable
        elif result.degenerate and DEGENERATE_NOTE not in point.get("note", ""):
            point["note"] = DEGENERATE_NOTE
        train = cell.violations[0] if cell.violations else math.nan
        rows.append({**label, "protected_attribute": attribute, "tolerance": math.nan,
                     "base": "", "train_violation": train, **point})
    frame = pd.DataFrame(rows, columns=[c for c in FRONTIER_COLUMNS if c != "audit"])
    frame.insert(0, "audit", data.manifest.name)
    frame["note"] = frame["note"].fillna("")
    return frame.reindex(columns=list(FRONTIER_COLUMNS))

