"""What a practitioner reads first: per-group tables and calibration by group of one row set.

For any scored row set (a grid cell, a deployed system), on the rows it was scored on:

* :func:`group_rows` -- ``groups.csv``: per protected attribute and group, n, base rate,
  selection rate, TPR, FPR, FNR, PPV, NPV and accuracy with their confusion counts and Wilson
  intervals (at design-effect-deflated counts with repeated units;
  :func:`faircode.stats.groups.group_table`);
* :func:`calibration_rows` -- ``calibration.csv``: where the row set has a score, the binned
  calibration of each group (observed label-1 rate against mean score per bin, with intervals;
  :func:`faircode.stats.calibration.calibration_table`);
* :func:`calibration_gap_rows` -- ``calibration_gap.csv``: per attribute the within-bin
  outcome difference between the groups at equal score, with bootstrap interval and
  permutation test (:func:`faircode.stats.calibration.calibration_gap`).

Design decisions
----------------
* **The target's own coding**, not the favourable-first orientation of the fairness metrics: a
  positive is label 1 and a flag is a decision of 1, so a deployed tool's table reads as its
  publisher printed it (ProPublica's truth tables) and a score predicts label 1 (calibration).
  Every row of ``groups.csv`` says so in its ``positive`` column (``label 1 = two_year_recid
  true (unfavourable)``), since ``fairness.csv``'s gaps count the favourable outcome instead.
* **Groups are named by what defines them** (:func:`group_names`: the manifest's values or the
  threshold), disadvantaged first.
* **Binning**: a model's predicted probability in 10 quantile bins of the row set's scores; a
  deployed system's score on its declared scale (an ordinal score has one bin per level).
* Seeds: the gap of attribute ``a`` draws from ``child_seed(master, Stream.CALIBRATION, s, m,
  a)`` (its bootstrap and permutation are the children 0 and 1 of that stream).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from faircode.audit.manifest import ProtectedAttribute
from faircode.audit.prepared import PreparedAudit
from faircode.core.config import StatsConfig
from faircode.core.seeds import Stream, child_seed
from faircode.stats.calibration import Scale, calibration_gap, calibration_table
from faircode.stats.groups import group_table

__all__ = ["GAP_COLUMNS", "calibration_gap_rows", "calibration_rows", "group_names",
           "group_rows"]

GAP_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "model", "row_set", "protected_attribute", "value", "ci_low", "ci_high",
    "p_value", "q_value", "significant", "score_gap", "bins_compared", "bins_dropped",
    "n_disadvantaged", "n_advantaged", "note",
)
"""Columns of ``calibration_gap.csv`` (one row per row set x attribute)."""


def group_names(attribute: ProtectedAttribute) -> tuple[str, str]:
    """The (disadvantaged, advantaged) groups' names, from how the manifest defines them."""
    if attribute.type == "categorical":
        def values(side: tuple[object, ...] | None, other: tuple[object, ...] | None) -> str:
            if side:
                return ", ".join(str(v) for v in side)
            return "not " + ", ".join(str(v) for v in other or ())
        return (values(attribute.disadvantaged_values, attribute.advantaged_values),
                values(attribute.advantaged_values, attribute.disadvantaged_values))
    below, above = f"{attribute.column} < {attribute.threshold:g}", \
        f"{attribute.column} >= {attribute.threshold:g}"
    return (below, above) if attribute.disadvantaged == "below" else (above, below)


def _groups(data: PreparedAudit) -> dict[str, dict[str, np.ndarray]]:
    """Per attribute, its two groups' masks on the scored rows, disadvantaged first."""
    out = {}
    for attribute in data.manifest.protected_attributes:
        mask = np.asarray(data.disadvantaged[attribute.name][data.test_index], dtype=bool)
        dis, adv = group_names(attribute)
        out[attribute.name] = {dis: mask, adv: ~mask}
    return out


def _units(data: PreparedAudit) -> np.ndarray | None:
    return None if data.unit is None else data.unit[data.test_index]


def group_rows(data: PreparedAudit, y_pred: np.ndarray, label: Mapping[str, str], *,
               row_set: str, confidence: float) -> list[dict[str, Any]]:
    """The per-group table of decisions ``y_pred`` (label coding) on ``data``'s scored rows."""
    y = data.y[data.test_index]
    rows: list[dict[str, Any]] = []
    counts = {"positive": data.manifest.target.positive()}  # what TPR, FPR, ... count
    for name, groups in _groups(data).items():
        table = group_table(y, y_pred, groups, protected_attribute=name, row_set=row_set,
                            units=_units(data), confidence=confidence)
        rows.extend({**label, **counts, **{str(k): v for k, v in r.items()}}
                    for r in table.to_dict("records"))
    return rows


def calibration_rows(data: PreparedAudit, score: np.ndarray, label: Mapping[str, str], *,
                     row_set: str, scale: Scale, confidence: float) -> list[dict[str, Any]]:
    """The binned calibration by group of ``score`` on ``data``'s scored rows."""
    y = data.y[data.test_index]
    rows: list[dict[str, Any]] = []
    for name, groups in _groups(data).items():
        table = calibration_table(y, score, groups, scale=scale, protected_attribute=name,
                                  row_set=row_set, units=_units(data), confidence=confidence)
        rows.extend({**label, **{str(k): v for k, v in r.items()}}
                    for r in table.to_dict("records"))
    return rows


def calibration_gap_rows(
    data: PreparedAudit, score: np.ndarray, label: Mapping[str, str], *, row_set: str,
    scale: Scale, stats: StatsConfig, master: int, key: tuple[int, int],
) -> list[dict[str, Any]]:
    """The calibration gap of every attribute (q-values are the table's, filled in later)."""
    y = data.y[data.test_index]
    rows: list[dict[str, Any]] = []
    for a, (name, groups) in enumerate(_groups(data).items()):
        dis, adv = groups.values()
        gap = calibration_gap(y, score, dis, adv, scale=scale,
                              seed=child_seed(master, Stream.CALIBRATION, *key, a),
                              n_resamples=stats.n_resamples, n_permutations=stats.n_permutations,
                              confidence=stats.confidence, units=_units(data))
        rows.append({**label, "row_set": row_set, "protected_attribute": name,
                     "value": gap.value, "ci_low": gap.ci_low, "ci_high": gap.ci_high,
                     "p_value": gap.p_value, "score_gap": gap.score_gap,
                     "bins_compared": gap.bins_compared, "bins_dropped": gap.bins_dropped,
                     "n_disadvantaged": gap.n_disadvantaged, "n_advantaged": gap.n_advantaged,
                     "note": gap.note})
    return rows
