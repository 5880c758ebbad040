"""What a practitioner reads first: per-group tables and calibration by group of one row set.

For any scored row set (a grid cell, a deployed system, a streamed decision log), from its counts
(:class:`faircode.stats.tally.Tally`):

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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from faircode.audit.manifest import ProtectedAttribute
from faircode.core.config import StatsConfig
from faircode.core.seeds import Stream, child_seed
from faircode.stats.calibration import BinCounts, calibration_from_counts, gap_from_counts
from faircode.stats.groups import group_frame, group_rates_from_counts
from faircode.stats.score_table import bin_totals
from faircode.stats.tally import Tally

__all__ = ["GAP_COLUMNS", "bin_counts", "calibration_gap_rows", "calibration_rows",
           "group_names", "group_rows"]

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


def _side_folds(tally: Tally, a: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Joint-group slot layouts (``width`` slots per joint group) -> attribute ``a``'s
    disadvantaged and advantaged groups' ``width`` slots."""
    side = tally.side_of(a)
    eye = np.eye(width, dtype=np.int64)
    return (np.concatenate([eye * (s == 0) for s in side]),
            np.concatenate([eye * (s == 1) for s in side]))


def group_rows(tally: Tally, attributes: Sequence[ProtectedAttribute],
               label: Mapping[str, str], *, row_set: str, confidence: float,
               positive: str = "") -> list[dict[str, Any]]:
    """The per-group table of the tally's decisions (label coding); ``positive`` is what label
    1 is (:meth:`~faircode.audit.manifest.TargetSpec.positive`: what TPR, FPR, ... count)."""
    rows: list[dict[str, Any]] = []
    for a, attribute in enumerate(attributes):
        fold_d, fold_a = _side_folds(tally, a, 4)
        counts = np.stack([tally.counts(fold_d)[0], tally.counts(fold_a)[0]])
        parts = None if tally.units is None else [tally.units.project(f)
                                                  for f in (fold_d, fold_a)]
        rates = group_rates_from_counts(group_names(attribute), counts, parts,
                                        confidence=confidence)
        table = group_frame(rates, protected_attribute=attribute.name, row_set=row_set)
        rows.extend({**label, "positive": positive, **{str(k): v for k, v in r.items()}}
                    for r in table.to_dict("records"))
    return rows


def bin_counts(tally: Tally) -> list[tuple[BinCounts, BinCounts]]:
    """Per attribute, the disadvantaged and advantaged groups' rows, sums and unit parts per bin
    (the score table read once)."""
    assert tally.scores is not None and tally.bins is not None
    totals = bin_totals(tally.scores, tally.bins)
    out = []
    for a in range(len(tally.attributes)):
        fold_d, fold_a = _side_folds(tally, a, 2)
        pair = []
        for side, fold in enumerate((fold_d, fold_a)):
            rows, _ = totals.fold(fold)
            _, sums = totals.fold(fold @ np.ones((2, 1), dtype=np.int64))
            parts = None if tally.unit_bins is None else tally.unit_bins[2 * a + side]
            pair.append(BinCounts(rows, sums[:, 0], parts))
        out.append((pair[0], pair[1]))
    return out


def calibration_rows(tally: Tally, attributes: Sequence[ProtectedAttribute],
                     label: Mapping[str, str], *, row_set: str, confidence: float,
                     counted: list[tuple[BinCounts, BinCounts]] | None = None,
                     ) -> list[dict[str, Any]]:
    """The binned calibration by group of the tally's score (its bins: ``tally.bins``;
    ``counted``: :func:`bin_counts` of the tally, when already read)."""
    assert tally.bins is not None
    rows: list[dict[str, Any]] = []
    for attribute, (dis, adv) in zip(attributes, counted or bin_counts(tally), strict=True):
        names = group_names(attribute)
        table = calibration_from_counts(tally.bins, {names[0]: dis, names[1]: adv},
                                        protected_attribute=attribute.name, row_set=row_set,
                                        confidence=confidence)
        rows.extend({**label, **{str(k): v for k, v in r.items()}}
                    for r in table.to_dict("records"))
    return rows


def calibration_gap_rows(
    tally: Tally, attributes: Sequence[ProtectedAttribute], label: Mapping[str, str], *,
    row_set: str, stats: StatsConfig, master: int, key: tuple[int, int],
    counted: list[tuple[BinCounts, BinCounts]] | None = None,
) -> list[dict[str, Any]]:
    """The calibration gap of every attribute (q-values are the table's, filled in later)."""
    assert tally.bins is not None
    rows: list[dict[str, Any]] = []
    for a, (attribute, (dis, adv)) in enumerate(zip(attributes, counted or bin_counts(tally),
                                                   strict=True)):
        gap = gap_from_counts(tally.bins, dis, adv,
                              seed=child_seed(master, Stream.CALIBRATION, *key, a),
                              n_resamples=stats.n_resamples, n_permutations=stats.n_permutations,
                              confidence=stats.confidence)
        rows.append({**label, "row_set": row_set, "protected_attribute": attribute.name,
                     "value": gap.value, "ci_low": gap.ci_low, "ci_high": gap.ci_high,
                     "p_value": gap.p_value, "score_gap": gap.score_gap,
                     "bins_compared": gap.bins_compared, "bins_dropped": gap.bins_dropped,
                     "n_disadvantaged": gap.n_disadvantaged, "n_advantaged": gap.n_advantaged,
                     "note": gap.note})
    return rows
