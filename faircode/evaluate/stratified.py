"""``stratified.csv``: every row set's parity gap within the audit's declared strata.

For each scored row set (a grid cell, a deployed system, people's decisions), protected attribute
and declared stratum (manifest ``strata:``), the Mantel–Haenszel common risk difference of the
favourable-decision rates, disadvantaged minus advantaged, within the stratum's levels
(:func:`faircode.stats.stratified.stratified_gap`): its Sato interval, its within-strata
permutation p-value, the Cochran–Mantel–Haenszel p-value, and the raw gap of the same rows beside
it.  The question it answers: is the gap explained by the declared legitimate factors?

Design decisions
----------------
* Decisions are the oriented ones every group metric uses (1 = favourable), so the sign reads as
  in ``fairness.csv`` and ``raw_gap`` equals its ``demographic_parity_diff`` of the row set.
* Its own Benjamini–Hochberg family per results folder (:func:`faircode.evaluate.tables.assemble`),
  like the calibration gaps: declaring a stratum moves no fairness q-value.
* Seeds: row set ``(s, m)``, attribute ``a``, stratum ``j`` draw from ``child_seed(master,
  Stream.STRATIFIED, s, m, a, j)``.
* An audit without strata has no rows and writes no file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from faircode.audit.manifest import Manifest
from faircode.audit.prepared import PreparedAudit
from faircode.core.config import StatsConfig
from faircode.core.seeds import Stream, child_seed
from faircode.stats.stratified import STRATIFIED_CI_METHOD, stratified_gap

__all__ = ["STRATIFIED_COLUMNS", "strata_rows", "stratified_rows"]

STRATIFIED_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "model", "protected_attribute", "stratum", "columns", "value",
    "ci_low", "ci_high", "ci_method", "p_value", "q_value", "significant", "cmh_p_value",
    "raw_gap", "strata", "strata_compared", "n_disadvantaged", "n_advantaged", "note",
)
"""Columns of ``stratified.csv`` (one row per row set x attribute x stratum)."""


def stratified_rows(data: PreparedAudit, yhat_fav: np.ndarray, label: Mapping[str, str], *,
                    stats: StatsConfig, master: int, key: tuple[int, int]
                    ) -> list[dict[str, Any]]:
    """The gap within every declared stratum of oriented test decisions ``yhat_fav``."""
    test = data.test_index
    masks = [np.asarray(data.disadvantaged[a.name][test], dtype=bool)
             for a in data.manifest.protected_attributes]
    codes = [np.asarray(c)[test] for c in data.strata.values()]
    return strata_rows(data.manifest, yhat_fav, masks, codes, label, stats=stats, master=master,
                       key=key)


def strata_rows(manifest: Manifest, yhat_fav: np.ndarray, masks: Sequence[np.ndarray],
                codes: Sequence[np.ndarray], label: Mapping[str, str], *, stats: StatsConfig,
                master: int, key: tuple[int, int]) -> list[dict[str, Any]]:
    """The gap within every stratum of ``manifest`` of the scored rows' oriented decisions
    ``yhat_fav``: ``masks[a]`` is attribute ``a``'s disadvantaged mask, ``codes[j]`` stratum
    ``j``'s code per row (a streamed log's rows, or a prepared audit's test rows)."""
    rows: list[dict[str, Any]] = []
    for a, attribute in enumerate(manifest.protected_attributes):
        for j, stratum in enumerate(manifest.strata):
            gap = stratified_gap(
                yhat_fav, masks[a], codes[j], n_permutations=stats.n_permutations,
                confidence=stats.confidence,
                seed=child_seed(master, Stream.STRATIFIED, *key, a, j))
            rows.append({**label, "protected_attribute": attribute.name, "stratum": stratum.name,
                         "columns": " ".join(stratum.columns), "value": gap.value,
                         "ci_low": gap.ci_low, "ci_high": gap.ci_high,
                         "ci_method": STRATIFIED_CI_METHOD, "p_value": gap.p_value,
                         "cmh_p_value": gap.cmh_p_value, "raw_gap": gap.raw_gap,
                         "strata": gap.strata, "strata_compared": gap.strata_compared,
                         "n_disadvantaged": gap.n_disadvantaged,
                         "n_advantaged": gap.n_advantaged, "note": gap.note})
    return rows
