"""A regression audit's tables: every row set's gaps, its groups, the gap within strata.

Row sets: the **observed outcome** on every row of the audit (strategy ``observed``, model the
manifest's ``system`` -- the people whose numbers they are -- or the target column), and every
grid cell (:mod:`faircode.grid.regression`) on its replicate's test rows, its predictions
against the outcome.  For each row set and protected attribute:

* ``regression_gaps.csv``: every metric of the ``regression`` kind
  (:mod:`faircode.stats.continuous`; a model's error metrics only for a model) with its units,
  interval, permutation test, q-value, detectable gap and verdict
  (:mod:`faircode.evaluate.regression_claims`; the observed outcome and the grid in families of
  their own); the strategy that does not apply (S4) has rows with no number, verdict
  ``not_applicable`` and its reason in the note.  At K > 1 a cell's rows are its
  replicates' combination (:func:`faircode.stats.replicates.combine`: the mean, the
  dataset-aware random-effects interval, its t test) and every replicate's own rows are in
  ``regression_replicates.csv``;
* ``regression_groups.csv``: each group's size, units, mean (and, on a log outcome, its mean on
  the original scale: the published dollars), standard deviation, quantiles, and a model's error
  and residual, with the bootstrap intervals of the mean and of the error;
* ``regression_strata.csv`` (declared ``strata``): the mean gap within each stratum's levels
  beside the raw gap (:func:`faircode.stats.continuous_strata.strata_mean_gap`), in its own
  Benjamini-Hochberg family, for the observed outcome and replicate 0's cells;
* ``strategies.csv``: the grid's strategies, applied or not and why.

A row set without a row of one of an attribute's groups (a replicate's test split drawn
without a rare group: the split is stratified on the first attribute only) has that
attribute's rows without a number, uninformative, the note saying which group is missing; the
K-replicate combination counts only the replicates with a number (``replicates:`` in its note).

Seeds (:data:`faircode.core.seeds.Stream.REGRESSION`): a cell's ``(11, s, m, attribute)`` in
its replicate's master seed; the observed outcome's ``(11, name_stream("observed"),
attribute)``; the strata's ``(11, name_stream("strata"), s, m, attribute, stratum)`` (the
observed outcome's ``s, m`` is ``name_stream("observed"), 0``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from faircode.audit.regression_data import RegressionData
from faircode.core.cells import (
    STRATEGY_TABLE,
    ModelFamily,
    family_name,
    not_applicable_reason,
    position,
)
from faircode.core.config import ReplicateConfig, StatsConfig, VerdictsConfig
from faircode.core.kinds import REGRESSION
from faircode.core.metrics import metric_info, metrics_of
from faircode.core.seeds import Stream, child_seed, name_stream, replicate_seed
from faircode.evaluate.regression_claims import NOT_APPLICABLE, ClaimMargins, decide
from faircode.grid.regression import RegressionPredictions
from faircode.stats.continuous import GROUP_STATISTICS, GroupGaps, group_gaps
from faircode.stats.continuous_strata import STRATA_CI_METHOD, strata_mean_gap
from faircode.stats.replicates import combine, half_variances, sampling_fraction
from faircode.stats.resampling import benjamini_hochberg

__all__ = ["GAP_COLUMNS", "GIVEN", "GROUP_COLUMNS", "OBSERVED", "STRATA_COLUMNS",
           "STRATEGY_COLUMNS", "RegressionResults", "evaluate_regression", "value_units"]

OBSERVED = "observed"
"""The strategy column of the observed outcome's rows (no model: the recorded numbers)."""

GAP_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "model", "protected_attribute", "metric", "value_units", "value",
    "ci_low", "ci_high", "ci_method", "p_value", "q_value", "significant", "verdict",
    "equivalence_p_value", "equivalence_q_value", "margin_low", "margin_high", "gap_bound",
    "mde", "powered", "mde_note", "n_disadvantaged", "n_advantaged", "units_disadvantaged",
    "units_advantaged", "design_effect", "note")
"""Columns of ``regression_gaps.csv`` (``regression_replicates.csv`` adds ``replicate``)."""
GROUP_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "model", "replicate", "protected_attribute", "group", "n", "units",
    "mean", "mean_ci_low", "mean_ci_high", "raw_mean", "sd", "q10", "q50", "q90", "mae",
    "mae_ci_low", "mae_ci_high", "mean_residual", "residual_ci_low", "residual_ci_high")
"""Columns of ``regression_groups.csv``."""
STRATA_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "model", "protected_attribute", "stratum", "columns", "value",
    "ci_low", "ci_high", "ci_method", "p_value", "q_value", "significant", "wald_p_value",
    "raw_gap", "strata", "strata_compared", "n_disadvantaged", "n_advantaged", "note")
"""Columns of ``regression_strata.csv``."""
STRATEGY_COLUMNS: tuple[str, ...] = ("code", "strategy", "label", "applies", "reason")
"""Columns of ``strategies.csv``."""


def value_units(metric: str, outcome_units: str) -> str:
    """What a metric's value is measured in: the outcome's units for a gap or a level, a
    ratio, or a share of rows (the KS distance: a difference of two distribution functions)."""
    scale = metric_info(metric).scale
    return {"ratio": "ratio", "distance": "share of rows"}.get(scale, outcome_units)


@dataclass(frozen=True)
class RegressionResults:
    """Every table of one regression audit (module docstring)."""

    gaps: pd.DataFrame
    groups: pd.DataFrame
    strategies: pd.DataFrame
    strata: pd.DataFrame | None = None
    replicates: pd.DataFrame | None = None
    margin: float = math.nan


@dataclass(frozen=True, slots=True)
class _RowSet:
    strategy: str
    model: str
    replicate: int
    rows: np.ndarray
    values: np.ndarray
    truth: np.ndarray | None
    seed: np.random.SeedSequence
    key: tuple[int, int]


GIVEN = "deployed"
"""The strategy column of a model no one here trained (``faircode audit --prediction``), as a
binary audit's deployed system's."""


def _row_sets(data: RegressionData, predictions: RegressionPredictions | None,
              given: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> Iterator[_RowSet]:
    master = data.manifest.random_state
    system = data.manifest.system
    who = system.name if system is not None else data.manifest.target.column
    observed = name_stream(OBSERVED)
    yield _RowSet(OBSERVED, who, 0, np.arange(data.y.size), data.y, None,
                  child_seed(master, Stream.REGRESSION, observed), (observed, 0))
    for name, (rows, values) in given.items():
        key = (name_stream(f"{GIVEN}:{name}"), 0)
        yield _RowSet(GIVEN, name, 0, rows, values, data.y[rows],
                      child_seed(master, Stream.REGRESSION, *key), key)
    for cell in () if predictions is None else predictions.cells:
        if cell.unfittable:
            continue
        seed = replicate_seed(master, cell.replicate)
        key = position(cell.strategy, cell.family)
        yield _RowSet(cell.strategy.value, cell.model, cell.replicate, cell.rows,
                      cell.prediction, data.y[cell.rows],
                      child_seed(seed, Stream.REGRESSION, *key), key)


def _gap_rows(data: RegressionData, rs: _RowSet, a: int, result: GroupGaps, *,
              units: str) -> list[dict[str, Any]]:
    attribute = data.manifest.protected_attributes[a].name
    base = {"audit": data.manifest.name, "strategy": rs.strategy, "model": rs.model,
            "replicate": rs.replicate, "protected_attribute": attribute,
            "n_disadvantaged": result.disadvantaged.n, "n_advantaged": result.advantaged.n,
            "units_disadvantaged": result.disadvantaged.units,
            "units_advantaged": result.advantaged.units}
    return [{**base, "metric": g.metric, "value_units": value_units(g.metric, units),
             "value": g.value, "ci_low": g.ci_low, "ci_high": g.ci_high,
             "ci_method": g.ci_method, "p_value": g.p_value, "mde": g.mde,
             "powered": g.powered, "mde_note": g.mde_note, "design_effect": g.design_effect,
             "note": ";".join(n for n in (g.note, result.note) if n)} for g in result.gaps]


def _group_rows(data: RegressionData, rs: _RowSet, a: int, result: GroupGaps
                ) -> list[dict[str, Any]]:
    attribute = data.manifest.protected_attributes[a]
    mask = data.disadvantaged[attribute.name][rs.rows]
    out = []
    for group, summary, rows in (("disadvantaged", result.disadvantaged, mask),
                                 ("advantaged", result.advantaged, ~mask)):
        stats = summary.statistics
        row: dict[str, Any] = {
            "audit": data.manifest.name, "strategy": rs.strategy, "model": rs.model,
            "replicate": rs.replicate, "protected_attribute": attribute.name, "group": group,
            "n": summary.n, "units": summary.units, "sd": summary.sd,
            "raw_mean": float(data.raw_y[rs.rows][rows].mean())
            if rs.truth is None and data.manifest.target.log_scale else math.nan}
        for name in GROUP_STATISTICS:
            value, low, high = stats.get(name, (math.nan, math.nan, math.nan))
            column = {"residual": "mean_residual"}.get(name, name)
            row[column] = value
            if name in ("mean", "mae", "residual"):
                row[f"{name}_ci_low"], row[f"{name}_ci_high"] = low, high
        out.append(row)
    return out


def _absent_note(mask: np.ndarray) -> str:
    """The note of a row set that holds one group of an attribute only."""
    return (f"uninformative: no {'advantaged' if mask.all() else 'disadvantaged'} row among "
            f"these {mask.size} rows")


def _absent_gap_rows(data: RegressionData, rs: _RowSet, a: int, mask: np.ndarray, *,
                     units: str) -> list[dict[str, Any]]:
    """A row set without a row of one of ``a``'s groups (a replicate's test split can miss a
    rare group): every metric's row without a number, its note saying why -- uninformative,
    and left out of the K-replicate combination (module docstring)."""
    attribute = data.manifest.protected_attributes[a].name
    note = _absent_note(mask)
    n_d = int(mask.sum())
    return [{"audit": data.manifest.name, "strategy": rs.strategy, "model": rs.model,
             "replicate": rs.replicate, "protected_attribute": attribute,
             "n_disadvantaged": n_d, "n_advantaged": mask.size - n_d,
             "units_disadvantaged": math.nan, "units_advantaged": math.nan,
             "metric": metric, "value_units": value_units(metric, units), "value": math.nan,
             "ci_low": math.nan, "ci_high": math.nan, "ci_method": "none",
             "p_value": math.nan, "mde": math.nan, "powered": False, "mde_note": note,
             "design_effect": math.nan, "note": note}
            for metric in metrics_of(REGRESSION.name)
            if rs.truth is not None or not metric_info(metric).ground_truth]


def _absent_group_rows(data: RegressionData, rs: _RowSet, a: int, mask: np.ndarray
                       ) -> list[dict[str, Any]]:
    """Both groups' rows of :func:`_absent_gap_rows`' row set: their counts, no statistic."""
    attribute = data.manifest.protected_attributes[a].name
    n_d = int(mask.sum())
    return [{"audit": data.manifest.name, "strategy": rs.strategy, "model": rs.model,
             "replicate": rs.replicate, "protected_attribute": attribute, "group": group,
             "n": n, "units": math.nan, "sd": math.nan, "raw_mean": math.nan}
            for group, n in (("disadvantaged", n_d), ("advantaged", mask.size - n_d))]


def _not_applicable_rows(data: RegressionData, *, units: str) -> list[dict[str, Any]]:
    rows = []
    for info in STRATEGY_TABLE:
        reason = not_applicable_reason(info.strategy, REGRESSION.name)
        if not reason:
            continue
        for family in ModelFamily:
            for attribute in data.manifest.protected_attributes:
                rows += [{"audit": data.manifest.name, "strategy": info.strategy.value,
                          "model": family_name(family, REGRESSION.name), "replicate": 0,
                          "protected_attribute": attribute.name, "metric": metric,
                          "value_units": value_units(metric, units), "value": math.nan,
                          "ci_low": math.nan, "ci_high": math.nan, "ci_method": NOT_APPLICABLE,
                          "p_value": math.nan, "mde": math.nan, "powered": False,
                          "mde_note": NOT_APPLICABLE, "design_effect": math.nan,
                          "note": f"{NOT_APPLICABLE}: {reason}"} for metric in
                         metrics_of(REGRESSION.name)]
    return rows


def _strata_rows(data: RegressionData, rs: _RowSet, a: int, *,
                 stats: StatsConfig) -> list[dict[str, Any]]:
    attribute = data.manifest.protected_attributes[a].name
    mask = data.disadvantaged[attribute][rs.rows]
    columns = {s.name: s.columns for s in data.manifest.strata}
    out = []
    for j, (name, codes) in enumerate(data.strata.items()):
        gap = strata_mean_gap(rs.values, mask, np.asarray(codes)[rs.rows],
                              n_resamples=stats.n_resamples, n_permutations=stats.n_permutations,
                              confidence=stats.confidence,
                              seed=child_seed(data.manifest.random_state, Stream.REGRESSION,
                                              name_stream("strata"), *rs.key, a, j))
        out.append({"audit": data.manifest.name, "strategy": rs.strategy, "model": rs.model,
                    "protected_attribute": attribute, "stratum": name,
                    "columns": " ".join(columns[name]), "value": gap.value,
                    "ci_low": gap.ci_low, "ci_high": gap.ci_high, "ci_method": STRATA_CI_METHOD,
                    "p_value": gap.p_value, "wald_p_value": gap.wald_p_value,
                    "raw_gap": gap.raw_gap, "strata": gap.strata,
                    "strata_compared": gap.strata_compared,
                    "n_disadvantaged": gap.n_disadvantaged, "n_advantaged": gap.n_advantaged,
                    "note": gap.note})
    return out


def _combined(rows: pd.DataFrame, *, replicates: ReplicateConfig, fraction: float,
              stats: StatsConfig) -> pd.DataFrame:
    """One row per cell x attribute x metric from its K replicates' rows (module docstring)."""
    keys = ["strategy", "model", "protected_attribute", "metric"]
    out = []
    for _, group in rows.groupby(keys, sort=False):
        numbered = group[np.isfinite(group["value"].to_numpy(dtype=np.float64))]
        first = (numbered if len(numbered) else group).iloc[0].to_dict()
        ratio = metric_info(str(first["metric"])).scale == "ratio"
        raw = [group[c].to_numpy(dtype=np.float64) for c in ("value", "ci_low", "ci_high")]
        with np.errstate(divide="ignore", invalid="ignore"):
            value, low, high = ([np.log(x) for x in raw] if ratio else raw)
        var_low, var_high = half_variances(value, low, high, confidence=stats.confidence)
        ok = np.isfinite(value) & np.isfinite(low) & np.isfinite(high)
        combined = combine(value[None], var_low[None], var_high[None], ok[None],
                           fraction=fraction)
        e = combined.evidence
        ci_low, ci_high = e.interval(stats.confidence)
        se = float((e.se_low[0] + e.se_high[0]) / 2)
        mde = (float(sps.t.ppf(1 - stats.alpha / 2, e.df_low[0])) + float(
            sps.norm.ppf(stats.power))) * se if np.isfinite(se) else math.nan
        estimate = float(e.estimate[0])
        shown = [math.exp(x) if ratio else x for x in (estimate, ci_low[0], ci_high[0])]
        if metric_info(str(first["metric"])).scale == "distance":  # a share of rows: [0, 1]
            shown = [min(max(x, 0.0), 1.0) for x in shown]
        if metric_info(str(first["metric"])).scale == "level":
            mde = math.nan
        out.append({**first, "replicate": -1, "value": shown[0],  # -1: every replicate
                    "ci_low": shown[1], "ci_high": shown[2],
                    "ci_method": "random_effects_t_log" if ratio else "random_effects_t",
                    "p_value": float(e.p_value(0.0)[0]), "mde": mde,
                    "powered": bool(np.isfinite(mde) and abs(estimate) >= mde),
                    "estimate": estimate, "se_low": e.se_low[0], "se_high": e.se_high[0],
                    "df_low": e.df_low[0], "df_high": e.df_high[0],
                    "note": ";".join(n for n in (str(first["note"]), f"replicates:"
                                                 f"{int(combined.n_informative[0])}") if n)})
    table = pd.DataFrame(out)
    own = table.set_index(["strategy", "model", "protected_attribute", "metric"])["p_value"]
    for i, metric in enumerate(table["metric"]):  # a twin reports its null's test (same_null)
        twin = metric_info(str(metric)).same_null
        if twin is not None:
            row = table.iloc[i]
            table.loc[table.index[i], "p_value"] = own.get(
                (row["strategy"], row["model"], row["protected_attribute"], twin.value),
                math.nan)
    return table


def evaluate_regression(data: RegressionData, predictions: RegressionPredictions | None, *,
                        stats: StatsConfig, verdicts: VerdictsConfig,
                        replicates: ReplicateConfig,
                        given: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None
                        ) -> RegressionResults:
    """Every table of ``data``'s audit from the grid's ``predictions`` (None: none) and the
    ``given`` models' (name -> the rows they predict and their predictions: strategy
    ``deployed``, ``faircode audit --prediction``), module docstring."""
    units = data.manifest.target.scale_units
    gap_rows: list[dict[str, Any]] = []
    group_rows: list[dict[str, Any]] = []
    strata_rows: list[dict[str, Any]] = []
    observed_mean = math.nan
    for rs in _row_sets(data, predictions, given or {}):
        unit = None if data.unit is None else data.unit[rs.rows]
        for a, attribute in enumerate(data.manifest.protected_attributes):
            mask = data.disadvantaged[attribute.name][rs.rows]
            if mask.all() or not mask.any():  # a replicate's test rows without one group
                gap_rows += _absent_gap_rows(data, rs, a, mask, units=units)
                group_rows += _absent_group_rows(data, rs, a, mask)
                continue
            result = group_gaps(rs.values, mask, truth=rs.truth, units=unit,
                                log_scale=data.manifest.target.log_scale,
                                n_resamples=stats.n_resamples,
                                n_permutations=stats.n_permutations,
                                confidence=stats.confidence, alpha=stats.alpha,
                                power=stats.power, seed=child_seed(rs.seed, a))
            if rs.strategy == OBSERVED and a == 0:
                observed_mean = result.advantaged.statistics["mean"][0]
            gap_rows += _gap_rows(data, rs, a, result, units=units)
            group_rows += _group_rows(data, rs, a, result)
            if data.strata and rs.replicate == 0:
                strata_rows += _strata_rows(data, rs, a, stats=stats)
    return _assemble(data, gap_rows, group_rows, strata_rows, observed_mean, stats=stats,
                     verdicts=verdicts, replicates=replicates, units=units,
                     n_test=0 if predictions is None else _test_size(predictions),
                     grid=predictions is not None)


def _test_size(predictions: RegressionPredictions) -> int:
    return int(predictions.cells[0].rows.size) if predictions.cells else 0


def _assemble(data: RegressionData, gap_rows: list[dict[str, Any]],
              group_rows: list[dict[str, Any]], strata_rows: list[dict[str, Any]],
              observed_mean: float, *, stats: StatsConfig, verdicts: VerdictsConfig,
              replicates: ReplicateConfig, units: str, n_test: int,
              grid: bool) -> RegressionResults:
    """The tables from the rows: K-replicate combination, the grid's n/a rows, one family per
    kind of row set (the observed outcome, a given model, the grid), verdicts."""
    rows = pd.DataFrame(gap_rows)
    per_replicate = None
    if replicates.seeds > 1 and n_test:
        cells = rows[rows["strategy"] != OBSERVED]
        per_replicate = cells.reindex(columns=["replicate", *GAP_COLUMNS])
        fraction = sampling_fraction(seed_mode=replicates.seed_mode, n_test=n_test,
                                     n_total=int(data.y.size))
        rows = pd.concat([rows[rows["strategy"] == OBSERVED],
                          _combined(cells, replicates=replicates, fraction=fraction,
                                    stats=stats)], ignore_index=True)
    if grid:
        rows = pd.concat([rows, pd.DataFrame(_not_applicable_rows(data, units=units))],
                         ignore_index=True)
    margins = ClaimMargins.of(data.margin, log_scale=data.manifest.target.log_scale,
                              advantaged_mean=observed_mean, distance=verdicts.margin)
    family = rows["strategy"].where(rows["strategy"].isin([OBSERVED, GIVEN]), "grid")
    gaps = pd.concat([decide(part, margins=margins, alpha=stats.alpha,
                             confidence=stats.confidence)
                      for _, part in rows.groupby(family, sort=False)], ignore_index=True)
    if per_replicate is not None:
        per_replicate = pd.concat([decide(part, margins=margins, alpha=stats.alpha,
                                          confidence=stats.confidence)
                                   for _, part in per_replicate.groupby("replicate")],
                                  ignore_index=True).reindex(columns=["replicate",
                                                                      *GAP_COLUMNS])
    strata = None
    if strata_rows:
        strata = pd.DataFrame(strata_rows)
        strata["q_value"] = benjamini_hochberg(strata["p_value"].to_numpy(dtype=np.float64))
        strata["significant"] = strata["q_value"] < stats.alpha
        strata = strata.reindex(columns=list(STRATA_COLUMNS))
    strategies = pd.DataFrame([{"code": s.code, "strategy": s.strategy.value, "label": s.label,
                                "applies": REGRESSION.name in s.kinds,
                                "reason": not_applicable_reason(s.strategy, REGRESSION.name)}
                               for s in STRATEGY_TABLE], columns=list(STRATEGY_COLUMNS))
    return RegressionResults(gaps.reindex(columns=list(GAP_COLUMNS)),
                             pd.DataFrame(group_rows).reindex(columns=list(GROUP_COLUMNS)),
                             strategies, strata, per_replicate, data.margin)

