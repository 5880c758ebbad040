"""``stratified.csv`` and ``stratum_rates.csv``: every row set's parity gap conditional on the
audit's declared legitimate factors, and the strata it pools.

For each scored row set (a grid cell, a deployed system, people's decisions), protected attribute
and declared stratum (manifest ``strata:``):

* ``stratified.csv`` -- one row: the gap conditional on the stratum's columns, disadvantaged minus
  advantaged, beside the raw gap of the same rows.  A ``mantel_haenszel`` stratum gives the
  Mantel–Haenszel common difference within its levels
  (:func:`faircode.stats.stratified.stratified_gap`: Sato interval, within-strata permutation p,
  Cochran–Mantel–Haenszel p and Cochran's Q of a common difference); a ``logistic_regression``
  one the average marginal effect of the group conditional on its covariates
  (:func:`faircode.stats.adjusted.adjusted_gap`: delta-method interval and Wald p).
* ``stratum_rates.csv`` -- per level of each ``mantel_haenszel`` stratum holding rows: each
  group's rows, decisions 1 and their rate (in the target's label coding, as ``groups.csv``:
  ``positive`` says what label 1 is), the level's own gap (favourable, as ``stratified.csv``)
  and its share of the Mantel–Haenszel weight (a level of one group: no gap, weight 0, note
  ``one_group_only``) -- the strata the pooled gap pools, so a reader can
  check them against a published table.

Design decisions
----------------
* Decisions are the oriented ones every group metric uses (1 = favourable), so the gaps read as
  in ``fairness.csv`` and ``raw_gap`` equals its ``demographic_parity_diff`` of the row set.
* ``stratified.csv`` is its own Benjamini–Hochberg family per results folder
  (:func:`faircode.evaluate.tables.assemble`), like the calibration gaps: declaring a stratum
  moves no fairness q-value.
* Seeds: row set ``(s, m)``, attribute ``a``, stratum ``j`` (its position in the manifest's
  ``strata:``) draw from ``child_seed(master, Stream.STRATIFIED, s, m, a, j)``; the adjusted
  gap draws nothing.
* :func:`strata_rows` takes the rows' masks, level codes and covariates as arrays, so a streamed
  decision log (:mod:`faircode.evaluate.streamed`) gets the same rows as a prepared audit.
* An audit without strata has no rows and writes neither file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from faircode.audit.manifest import Manifest
from faircode.audit.prepared import PreparedAudit
from faircode.core.config import StatsConfig
from faircode.core.seeds import Stream, child_seed
from faircode.evaluate.detail import group_names
from faircode.stats.adjusted import ADJUSTED_CI_METHOD, adjusted_gap
from faircode.stats.stratified import STRATIFIED_CI_METHOD, stratified_gap, stratum_counts

__all__ = ["ONE_GROUP_NOTE", "STRATIFIED_COLUMNS", "STRATUM_RATE_COLUMNS", "strata_rows",
           "stratified_rows", "stratum_rate_rows"]

ONE_GROUP_NOTE = "one_group_only"
"""A level holding one group's rows only: no gap, no weight in the pooled gap."""

STRATIFIED_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "model", "protected_attribute", "stratum", "columns", "estimator",
    "value", "ci_low", "ci_high", "ci_method", "p_value", "q_value", "significant",
    "cmh_p_value", "heterogeneity_q", "heterogeneity_df", "heterogeneity_p_value", "raw_gap",
    "strata", "strata_compared", "n_disadvantaged", "n_advantaged", "note",
)
"""Columns of ``stratified.csv`` (one row per row set x attribute x declared stratum)."""
STRATUM_RATE_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "model", "positive", "protected_attribute", "disadvantaged",
    "advantaged", "stratum", "level",
    "n_disadvantaged", "decided_1_disadvantaged", "rate_disadvantaged", "n_advantaged",
    "decided_1_advantaged", "rate_advantaged", "gap", "weight", "note",
)
"""Columns of ``stratum_rates.csv`` (one row per row set x attribute x stratum x level)."""


def _within(gap: Any) -> dict[str, Any]:
    h = gap.heterogeneity
    return {"value": gap.value, "ci_low": gap.ci_low, "ci_high": gap.ci_high,
            "ci_method": STRATIFIED_CI_METHOD, "p_value": gap.p_value,
            "cmh_p_value": gap.cmh_p_value, "heterogeneity_q": h.q, "heterogeneity_df": h.df,
            "heterogeneity_p_value": h.p_value, "raw_gap": gap.raw_gap, "strata": gap.strata,
            "strata_compared": gap.strata_compared, "n_disadvantaged": gap.n_disadvantaged,
            "n_advantaged": gap.n_advantaged, "note": gap.note}


def _adjusted(gap: Any) -> dict[str, Any]:
    return {"value": gap.value, "ci_low": gap.ci_low, "ci_high": gap.ci_high,
            "ci_method": ADJUSTED_CI_METHOD, "p_value": gap.p_value, "raw_gap": gap.raw_gap,
            "n_disadvantaged": gap.n_disadvantaged, "n_advantaged": gap.n_advantaged,
            "note": gap.note}


def stratified_rows(data: PreparedAudit, yhat_fav: np.ndarray, label: Mapping[str, str], *,
                    stats: StatsConfig, master: int, key: tuple[int, int]
                    ) -> list[dict[str, Any]]:
    """The gap conditional on every declared stratum of oriented test decisions ``yhat_fav``."""
    test = data.test_index
    masks = [np.asarray(data.disadvantaged[a.name][test], dtype=bool)
             for a in data.manifest.protected_attributes]
    codes = {s.name: np.asarray(data.strata[s.name])[test]
             for s in data.manifest.strata if not s.regression}
    designs = {s.name: data.covariates[s.name].to_numpy(dtype=np.float64)[test]
               for s in data.manifest.strata if s.regression}
    return strata_rows(data.manifest, yhat_fav, masks, codes, label, stats=stats, master=master,
                       key=key, designs=designs)


def strata_rows(manifest: Manifest, yhat_fav: np.ndarray, masks: Sequence[np.ndarray],
                codes: Mapping[str, np.ndarray], label: Mapping[str, str], *,
                stats: StatsConfig, master: int, key: tuple[int, int],
                designs: Mapping[str, np.ndarray] | None = None) -> list[dict[str, Any]]:
    """The gap conditional on every stratum of ``manifest`` of the scored rows' oriented
    decisions ``yhat_fav`` (a prepared audit's test rows, or a streamed log's rows):
    ``masks[a]`` is attribute ``a``'s disadvantaged mask, ``codes[name]`` a ``mantel_haenszel``
    stratum's level code per row, ``designs[name]`` a ``logistic_regression`` one's covariates."""
    rows: list[dict[str, Any]] = []
    for a, attribute in enumerate(manifest.protected_attributes):
        for j, stratum in enumerate(manifest.strata):
            head = {**label, "protected_attribute": attribute.name, "stratum": stratum.name,
                    "columns": " ".join(stratum.columns), "estimator": stratum.estimator}
            if stratum.regression:
                rows.append({**head, **_adjusted(adjusted_gap(
                    yhat_fav, masks[a], (designs or {})[stratum.name],
                    confidence=stats.confidence))})
                continue
            gap = stratified_gap(
                yhat_fav, masks[a], codes[stratum.name], n_permutations=stats.n_permutations,
                confidence=stats.confidence,
                seed=child_seed(master, Stream.STRATIFIED, *key, a, j))
            rows.append({**head, **_within(gap)})
    return rows


def stratum_rate_rows(data: PreparedAudit, yhat_fav: np.ndarray, label: Mapping[str, str]
                      ) -> list[dict[str, Any]]:
    """Per attribute, ``mantel_haenszel`` stratum and level holding test rows: the groups'
    counts and decision-1 rates, the level's gap and its Mantel–Haenszel weight share."""
    test = data.test_index
    target = data.manifest.target
    flip = target.favourable == 0  # counts of decision 1 in the label coding
    rows: list[dict[str, Any]] = []
    for attribute in data.manifest.protected_attributes:
        mask = np.asarray(data.disadvantaged[attribute.name][test], dtype=bool)
        groups = dict(zip(("disadvantaged", "advantaged"), group_names(attribute), strict=True))
        for name, codes in data.strata.items():
            counts = stratum_counts(yhat_fav, mask, np.asarray(codes)[test])
            n_d, f_d, n_a, f_a = counts.T.astype(np.float64)
            both = (n_d > 0) & (n_a > 0)
            weight = np.where(both, n_d * n_a / np.maximum(n_d + n_a, 1), 0.0)
            share = weight / weight.sum() if weight.sum() > 0 else weight
            levels = data.stratum_levels[name]
            for k in np.flatnonzero(n_d + n_a > 0):
                x_d, x_a = (n_d[k] - f_d[k], n_a[k] - f_a[k]) if flip else (f_d[k], f_a[k])
                rate_d = x_d / n_d[k] if n_d[k] else np.nan
                rate_a = x_a / n_a[k] if n_a[k] else np.nan
                gap = f_d[k] / n_d[k] - f_a[k] / n_a[k] if both[k] else np.nan
                rows.append({**label, "positive": target.positive(),
                             "protected_attribute": attribute.name, **groups,
                             "stratum": name, "level": levels[k], "n_disadvantaged": int(n_d[k]),
                             "decided_1_disadvantaged": int(x_d), "rate_disadvantaged": rate_d,
                             "n_advantaged": int(n_a[k]), "decided_1_advantaged": int(x_a),
                             "rate_advantaged": rate_a, "gap": gap, "weight": share[k],
                             "note": "" if both[k] else ONE_GROUP_NOTE})
    return rows
