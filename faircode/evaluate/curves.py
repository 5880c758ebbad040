"""One audit's operating-point curves: S0-S2 at a grid of thresholds, S3/S4 as their one point.

:func:`audit_curves` turns the scored cells of the evaluate step into ``curves.csv``
(:data:`CURVES_COLUMNS`): for every deterministic cell (S0-S2, decisions ``score > t``) the
tidy table of :func:`faircode.stats.curves.operating_curves` -- the eight fairness metrics per
protected attribute and accuracy, balanced accuracy and selection rate, each with its interval --
at every threshold of ``curves.thresholds`` plus the audit's declared cutoff; for S3/S4, whose
decisions are randomised or fitted per group (no single threshold moves them), their main-table
rows at the declared rule.  :func:`curve_plot` is the DVC plot view of it.

Design decisions
----------------
* **The declared point is the main table's, bit for bit.**  The cutoff the cell was decided at
  (:attr:`~faircode.evaluate.score.Decided.cutoff`: ``threshold``'s value, ``base_rate``'s
  training label rate, ``top_fraction``'s training-score quantile) joins the grid with the rule's
  ``inclusive``, and the curve draws from the cell's own ``Stream.PERFORMANCE`` and
  ``Stream.DECISIONS`` child seeds, so its row there equals ``fairness.csv``/``performance.csv``
  (value and interval; ``tests/test_curves.py``).  Column ``point`` says which row is which:
  ``grid``, ``declared`` (the operating point, also when it lies on the grid) or ``point_only``
  (S3/S4; ``threshold`` empty).
* **Repeated units** (``dataset.unit``): the fairness intervals along the curve take the
  declared point's design effects per attribute x metric from the main table (the option of
  :func:`~faircode.stats.curves.operating_curves`; the note says so), accuracy resamples units at
  every threshold.  Without a unit they are row-level, as the main table's.
* **After the queue, in this process.**  The curves read only what the scored cells already hold
  (scores, cutoff, design effects): one sorted count pass per cell, a few ms at B = 2000; no task
  of its own and no refit.  The declared point's p-values, q-values and minimum detectable gaps
  stay in ``fairness.csv`` (a curve has no multiple-testing family).
* **At K > 1, the tables' footing** (:func:`replicate_curves`).  Every replicate draws its own
  curves (its cells, its master seed); each fairness point is the K-replicate estimate with its
  interval (:func:`faircode.evaluate.combine.combine_gaps` over the replicates' points at the
  same threshold -- each replicate's declared point with the others' declared points, its own
  cutoff), replicate 0's own beside it (``rep0_value``, ``rep0_ci_low``, ``rep0_ci_high``), and
  the declared point and S3/S4's points are ``fairness.csv``'s cells: the number every table
  shows.  Accuracy, balanced accuracy and selection rate stay replicate 0's, as
  ``performance.csv`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import CUTOFF_STRATEGIES, STRATEGY_CODES, ModelFamily, Strategy, position
from faircode.core.config import VerdictsConfig
from faircode.core.metrics import Metric
from faircode.core.seeds import Stream, child_seed
from faircode.evaluate.combine import combine_gaps
from faircode.evaluate.score import CellResult
from faircode.stats import clusters
from faircode.stats.curves import CURVE_COLUMNS, OVERALL_METRICS, operating_curves

__all__ = ["CURVES_COLUMNS", "PLOT_METRIC", "POINTS", "REP0_CURVE_COLUMNS", "Point",
           "audit_curves", "curve_plot", "replicate_curves"]

Point = Literal["grid", "declared", "point_only"]
POINTS: tuple[str, ...] = get_args(Point)

CURVES_COLUMNS: tuple[str, ...] = ("audit", "strategy", "model", *CURVE_COLUMNS, "point")
"""Columns of ``results/<audit>/curves.csv``."""

REP0_CURVE_COLUMNS: tuple[str, ...] = ("rep0_value", "rep0_ci_low", "rep0_ci_high")
"""Replicate 0's own point and interval, after :data:`CURVES_COLUMNS` at K > 1."""
_AT_KEYS = ("strategy", "model", "protected_attribute", "at", "metric")
_CELL_KEYS = ("strategy", "model", "protected_attribute", "metric")

PLOT_METRIC: str = Metric.DEMOGRAPHIC_PARITY.value
"""The metric of the DVC plot view (:func:`curve_plot`), on the first protected attribute."""


def audit_curves(
    data: PreparedAudit,
    cells: Sequence[CellResult],
    *,
    thresholds: Sequence[float],
    confidence: float,
    n_resamples: int,
    master: int | None = None,
) -> pd.DataFrame:
    """The curve table (:data:`CURVES_COLUMNS`) of one audit's scored ``cells`` (grid order).

    ``thresholds`` is the grid (``curves.thresholds``), ``confidence`` and ``n_resamples`` the
    main table's; ``master`` as in :func:`~faircode.evaluate.score.score_cell` (default the
    manifest's ``random_state``).  Skipped cells have no rows.
    """
    master = data.manifest.random_state if master is None else master
    frames = []
    for cell in cells:
        if cell.skipped or cell.decided is None:
            continue
        if cell.decided.cutoff is not None and cell.decided.score is not None:
            frame = _curve(data, cell, thresholds=thresholds, confidence=confidence,
                           n_resamples=n_resamples, master=master)
        else:
            frame = _point_only(data, cell)
        frame.insert(0, "model", str(cell.family))
        frame.insert(0, "strategy", str(cell.strategy))
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=list(CURVES_COLUMNS))
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "audit", data.manifest.name)
    return out.reindex(columns=list(CURVES_COLUMNS))


def _curve(data: PreparedAudit, cell: CellResult, *, thresholds: Sequence[float],
           confidence: float, n_resamples: int, master: int) -> pd.DataFrame:
    """A deterministic cell's curve over ``thresholds`` and its declared cutoff."""
    decided = cell.decided
    assert decided is not None and decided.cutoff is not None and decided.score is not None
    cutoff = decided.cutoff
    test = data.test_index
    key = position(Strategy(cell.strategy), ModelFamily(cell.family))
    frame = operating_curves(
        decided.score, data.y[test],
        {a.name: data.disadvantaged[a.name][test] for a in data.manifest.protected_attributes},
        thresholds=sorted({*map(float, thresholds), cutoff.value}),
        favourable=data.manifest.target.favourable, inclusive=cutoff.inclusive,
        confidence=confidence, n_resamples=n_resamples,
        performance_seed=child_seed(master, Stream.PERFORMANCE, *key),
        decision_seed=child_seed(master, Stream.DECISIONS, *key),
        units=None if data.unit is None else data.unit[test],
        design_effects=None if data.unit is None else _design_effects(cell))
    frame["point"] = np.where(frame["threshold"].to_numpy() == cutoff.value, "declared", "grid")
    return frame


def _design_effects(cell: CellResult) -> dict[str, dict[str, float]]:
    """attribute -> metric -> the main table's design effect of ``cell`` (declared point)."""
    out: dict[str, dict[str, float]] = {}
    for row in cell.fairness.records():
        out.setdefault(str(row["protected_attribute"]), {})[str(row["metric"])] = float(
            row["design_effect"])
    return out


def _point_only(data: PreparedAudit, cell: CellResult) -> pd.DataFrame:
    """S3/S4: the main table's fairness rows and overall accuracy, balanced accuracy and
    selection rate of ``cell``, as curve rows without a threshold."""
    rows: list[dict[str, Any]] = []
    for row in cell.fairness.records():
        rows.append({k: row[k] for k in ("protected_attribute", "metric", "value", "ci_low",
                                         "ci_high", "ci_method", "n_disadvantaged",
                                         "n_advantaged", "note")})
        rows[-1]["n"] = int(row["n_disadvantaged"]) + int(row["n_advantaged"])
    units = None if data.unit is None else data.unit[data.test_index]
    repeated = clusters.repeated_units(units, len(data.test_index)) is not None
    performance = {str(r["metric"]): r for r in cell.performance.records()
                   if not _text(r.get("protected_attribute"))}
    for metric in OVERALL_METRICS:
        row = performance[metric]
        method = ("cluster_percentile_bootstrap" if metric == "accuracy" and repeated
                  else "percentile_bootstrap")
        rows.append({"protected_attribute": "", "metric": metric, "value": row["value"],
                     "ci_low": row["ci_low"], "ci_high": row["ci_high"], "ci_method": method,
                     "n": int(row["n"]), "note": _text(row.get("note"))})
    frame = pd.DataFrame(rows)
    frame["threshold"] = np.nan
    frame["point"] = "point_only"
    for column in ("n_disadvantaged", "n_advantaged"):
        frame[column] = frame[column].astype("Int64")
    return frame


def _text(value: object) -> str:
    """A note or attribute cell as text ('' for a missing one)."""
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def _keyed(curves: pd.DataFrame, grid: set[float]) -> pd.DataFrame:
    """A replicate's fairness points keyed by where they are (``at``): ``declared``, ``point``
    (S3/S4) or the threshold; a declared point on the grid also under its threshold."""
    fair = curves[curves["protected_attribute"].fillna("").astype(str) != ""]
    point = fair["point"].astype(str).to_numpy()
    at = np.where(point == "declared", "declared", np.where(
        point == "point_only", "point", fair["threshold"].map(repr).to_numpy()))
    keyed = fair.assign(at=at)
    on_grid = keyed[(point == "declared") & keyed["threshold"].isin(grid).to_numpy()]
    return pd.concat([keyed, on_grid.assign(at=on_grid["threshold"].map(repr))],
                     ignore_index=True)


def replicate_curves(curves: Sequence[pd.DataFrame], fairness: pd.DataFrame, *,
                     thresholds: Sequence[float], seed_mode: str, fraction: float,
                     confidence: float, alpha: float, verdicts: VerdictsConfig) -> pd.DataFrame:
    """``curves.csv`` at K > 1 from every replicate's curves (replicate 0 first) and the
    claimed ``fairness`` table (module docstring): replicate 0's rows, each fairness point the
    K-replicate estimate with its interval, ``rep0_*`` its own."""
    grid = {float(t) for t in thresholds}
    keyed = [_keyed(c, grid) for c in curves]
    index = pd.MultiIndex.from_frame(pd.concat([k.loc[:, list(_AT_KEYS)] for k in keyed])
                                     .astype(str).drop_duplicates())
    tables = []
    for k in keyed:
        k = k.set_index([k[c].astype(str) for c in _AT_KEYS]).reindex(index)
        tables.append(pd.DataFrame({
            **{c: index.get_level_values(c) for c in _AT_KEYS},
            "value": k["value"].to_numpy(float), "ci_low": k["ci_low"].to_numpy(float),
            "ci_high": k["ci_high"].to_numpy(float), "significant": False,
            "note": k["note"].fillna("").astype(str).to_numpy()}))
    combined = combine_gaps(tables, audit="", seed_mode=seed_mode, fraction=fraction,
                            confidence=confidence, alpha=alpha, verdicts=verdicts,
                            keys=_AT_KEYS).set_index(list(_AT_KEYS))
    out = curves[0].copy()
    for rep0, own in zip(REP0_CURVE_COLUMNS, ("value", "ci_low", "ci_high"), strict=True):
        out[rep0] = out[own]
    fair = out["protected_attribute"].fillna("").astype(str) != ""
    mine = _keyed(out[fair], set()).set_index(list(_AT_KEYS))  # replicate 0's own keys
    found = combined.reindex(pd.MultiIndex.from_frame(mine.index.to_frame().astype(str)))
    rows = np.flatnonzero(fair.to_numpy())
    for column in ("value", "ci_low", "ci_high", "ci_method", "note"):
        out.loc[out.index[rows], column] = found[column].to_numpy()
    _table_cells(out, fairness)
    return out.reindex(columns=[*CURVES_COLUMNS, *REP0_CURVE_COLUMNS])


def _table_cells(out: pd.DataFrame, fairness: pd.DataFrame) -> None:
    """The declared points and S3/S4's take ``fairness``'s value, interval and method."""
    table = fairness.set_index([fairness[c].astype(str) for c in _CELL_KEYS])
    shown = out["point"].isin(["declared", "point_only"]) & (
        out["protected_attribute"].fillna("").astype(str) != "")
    keys = pd.MultiIndex.from_frame(out.loc[shown, list(_CELL_KEYS)].astype(str))
    cells = table.reindex(keys)
    for column in ("value", "ci_low", "ci_high", "ci_method"):
        out.loc[shown, column] = cells[column].to_numpy()


def curve_plot(curves: pd.DataFrame | None, *, attribute: str | None = None) -> pd.DataFrame:
    """DVC plot data: ``threshold`` and one column per S0-S2 cell (``S0 logistic_regression``
    ...; every cell of the grid, empty where one has no curve) holding :data:`PLOT_METRIC` of
    ``attribute`` (default the table's first attribute), one row per threshold (the grid and
    the declared cutoff, ascending).  At K > 1 (``rep0_value`` in ``curves``) the columns hold
    the K-replicate estimate and ``<cell> rep0`` beside each replicate 0's own.  Header only
    for ``None`` or an empty table."""
    columns = [f"{STRATEGY_CODES[s]} {m.value}" for s in CUTOFF_STRATEGIES for m in ModelFamily]
    if curves is None or curves.empty:
        return pd.DataFrame(columns=["threshold", *columns])
    fair = curves[curves["protected_attribute"].astype(str) != ""]
    first = attribute if attribute is not None else str(fair["protected_attribute"].iloc[0])
    rows = fair[(fair["protected_attribute"] == first) & (fair["metric"] == PLOT_METRIC)
                & (fair["point"] != "point_only")]
    cells = rows.assign(cell=[f"{STRATEGY_CODES[Strategy(s)]} {m}"
                              for s, m in zip(rows["strategy"], rows["model"], strict=True)])
    wide = cells.pivot_table(index="threshold", columns="cell", values="value",
                             aggfunc="first", dropna=False).reindex(columns=columns)
    if "rep0_value" in cells:
        own = cells.pivot_table(index="threshold", columns="cell", values="rep0_value",
                                aggfunc="first", dropna=False).reindex(columns=columns)
        own.columns = [f"{c} rep0" for c in columns]
        wide = pd.concat([wide, own.reindex(wide.index)], axis=1).loc[
            :, [x for c in columns for x in (c, f"{c} rep0")]]
    return wide.reset_index().rename_axis(columns=None)

