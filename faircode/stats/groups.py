"""Per-group tables: each group's confusion counts and eight rates, each with a Wilson interval.

What a practitioner reads first about a set of decisions (fairlearn's ``MetricFrame.by_group``,
Aequitas' crosstabs, ProPublica's truth tables): for every group its size, its confusion counts
``TN, FP, FN, TP`` and the rates built from them — base rate, selection rate, TPR, FPR, FNR, PPV,
NPV, accuracy.  :func:`group_rates` computes them for any number of groups in one pass over the
rows; :func:`group_table` returns them as a long table; :func:`wide_group_table` and
:func:`format_group_table` turn that into the one-row-per-group view the peers print.

Design decisions
----------------
* **Label coding, not** :func:`faircode.stats.metrics.orient`.  The table is in the coding of the
  audit's target: label ``1`` is the target's label 1 (COMPAS two-year: re-arrested) and
  decision ``1`` the decision that calls for it (flagged Medium/High).  "Positive" means label 1
  whether it is favourable or not, as in ProPublica's tables, Aequitas (``label_value``/``score``
  1) and fairlearn (``pos_label=1``), so the COMPAS counts read exactly as published (FP = not
  re-arrested but flagged).  The fairness table is oriented instead (1 = favourable): with
  ``favourable: 0`` its ``fpr_gap`` is the difference of this table's FNRs and its ``tpr_gap``
  minus the difference of its FPRs.  Which label is favourable is the caller's to record.
* **Rates** (numerator / denominator, in cell counts): base rate ``(FN+TP)/n``, selection rate
  ``(FP+TP)/n``, TPR ``TP/(FN+TP)``, FPR ``FP/(TN+FP)``, FNR ``FN/(FN+TP)``, PPV ``TP/(FP+TP)``,
  NPV ``TN/(TN+FN)``, accuracy ``(TN+TP)/n``.  A rate whose denominator is 0 is NaN with no
  interval and a note saying which rows are missing (``undefined_empty_group``,
  ``undefined_no_label_1``, ``undefined_no_label_0``, ``undefined_no_decision_1``,
  ``undefined_no_decision_0``) — never 0.  ``small_sample`` is noted when the denominator is
  below :data:`faircode.stats.metrics.SMALL_SAMPLE` (30).
* **Intervals**: the Wilson score interval (:func:`faircode.stats.resampling.wilson_interval`) of
  numerator / denominator.  No resampling, so the table needs no seed.
* **Repeated units** (``units=``; :mod:`faircode.stats.clusters`, ``docs/manifest-units.md``).  When
  some unit has several rows, each rate's interval is the Wilson interval at *effective* counts:
  numerator and denominator divided by ``max(1, deff)`` (Kish), where ``deff`` is the closed-form
  design effect of a ratio estimator over the group's units.  With ``x_u``/``m_u`` unit ``u``'s
  numerator and denominator rows in the group, ``X = Σx_u``, ``M = Σm_u``, ``p = X/M``:
  ``deff = Σ_u (x_u − p·m_u)² / (M·p·(1 − p))``, the linearised cluster variance of ``p`` over its
  binomial variance ``p(1 − p)/M`` (:func:`design_effects`).  It is the large-sample value of
  what :mod:`faircode.stats.metrics` estimates by resampling (the cluster- over the row-bootstrap
  variance, ``tests/test_groups.py`` checks the two agree), it needs no seed, and with one row
  per unit it is exactly 1.  A unit whose rows fall in several groups contributes its part in
  each group.  ``deff`` is NaN (no deflation) when ``p`` is 0 or 1.  Without repeats the
  column ``design_effect`` is 1.0 and the intervals are the row intervals.
* **The stored table is long** (:data:`GROUP_COLUMNS`, one row per group × rate).  Every rate
  carries its own denominator, interval, design effect and note — 6 columns × 8 rates in a wide
  layout — and the long layout is the shape of ``fairness.csv`` (one row per metric), so the
  report, the figures and the MLflow sync filter both alike.  The peers' one-row-per-group view
  is a pivot away (:func:`wide_group_table`, :func:`format_group_table`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe
from faircode.core.metrics import ALL, FN, FP, TN, TP
from faircode.stats import clusters, resampling
from faircode.stats._metric_defs import ratio
from faircode.stats.metrics import SMALL_SAMPLE
from faircode.stats.units import UnitHistogram, ratio_design_effects

__all__ = [
    "GROUP_COLUMNS",
    "RATES",
    "GroupRates",
    "RateEstimate",
    "design_effects",
    "format_group_table",
    "group_frame",
    "group_masks",
    "group_rates",
    "group_rates_from_counts",
    "group_table",
    "wide_group_table",
]

RATES: tuple[str, ...] = (
    "base_rate", "selection_rate", "tpr", "fpr", "fnr", "ppv", "npv", "accuracy",
)
"""The per-group rates, in table order."""

# rate -> (numerator cells, denominator cells, note when the denominator is empty)
_CELLS: dict[str, tuple[tuple[int, ...], tuple[int, ...], str]] = {
    "base_rate": ((FN, TP), ALL, "undefined_empty_group"),
    "selection_rate": ((FP, TP), ALL, "undefined_empty_group"),
    "tpr": ((TP,), (FN, TP), "undefined_no_label_1"),
    "fpr": ((FP,), (TN, FP), "undefined_no_label_0"),
    "fnr": ((FN,), (FN, TP), "undefined_no_label_1"),
    "ppv": ((TP,), (FP, TP), "undefined_no_decision_1"),
    "npv": ((TN,), (TN, FN), "undefined_no_decision_0"),
    "accuracy": ((TN, TP), ALL, "undefined_empty_group"),
}


def _selector(which: int) -> NDArray[np.float64]:
    """The (4, R) 0/1 matrix mapping cell counts to each rate's numerator (0) or denominator (1)."""
    out = np.zeros((4, len(RATES)))
    for r, rate in enumerate(RATES):
        numerator, denominator, _ = _CELLS[rate]
        out[list(numerator if which == 0 else denominator), r] = 1.0
    return out


_NUM, _DEN = _selector(0), _selector(1)

GROUP_COLUMNS: tuple[str, ...] = (
    "row_set", "protected_attribute", "group", "metric", "value", "ci_low", "ci_high",
    "numerator", "denominator", "n", "TN", "FP", "FN", "TP", "design_effect", "note",
)
"""Columns of the long per-group table (one row per row set x attribute x group x rate)."""


@dataclass(frozen=True, slots=True)
class RateEstimate:
    """One rate of one group: value, Wilson interval, its counts, design effect and note."""

    metric: str
    value: float
    ci_low: float
    ci_high: float
    numerator: int
    denominator: int
    design_effect: float
    note: str

    def __post_init__(self) -> None:
        if self.metric not in RATES:
            raise ValueError(f"RateEstimate: metric: expected one of {', '.join(RATES)}, "
                             f"got {describe(self.metric)}")
        if not 0 <= self.numerator <= self.denominator:
            raise ValueError(f"RateEstimate: expected 0 <= numerator <= denominator, "
                             f"got {self.numerator} / {self.denominator}")
        if (self.denominator == 0) != np.isnan(self.value):
            raise ValueError("RateEstimate: value must be NaN exactly when denominator is 0")


@dataclass(frozen=True, slots=True)
class GroupRates:
    """One group's size, confusion counts ``(TN, FP, FN, TP)`` and :data:`RATES` estimates."""

    group: str
    counts: tuple[int, int, int, int]
    rates: tuple[RateEstimate, ...]

    def __post_init__(self) -> None:
        if len(self.counts) != 4 or min(self.counts) < 0:
            raise ValueError(f"GroupRates: counts: expected 4 non-negative ints, "
                             f"got {describe(self.counts)}")
        if tuple(r.metric for r in self.rates) != RATES:
            raise ValueError(f"GroupRates: rates: expected one estimate per rate in order "
                             f"{', '.join(RATES)}")

    @property
    def n(self) -> int:
        """Rows in the group."""
        return int(sum(self.counts))

    def rate(self, metric: str) -> RateEstimate:
        """Return the estimate of ``metric`` (one of :data:`RATES`)."""
        if metric not in RATES:
            raise ValueError(f"metric: expected one of {', '.join(RATES)}, got {describe(metric)}")
        return self.rates[RATES.index(metric)]


def group_masks(groups: Mapping[str, ArrayLike] | ArrayLike, n_rows: int) -> dict[str, NDArray]:
    """Return ``{group name: boolean mask}`` from masks by name or from one label per row.

    A mapping must hold 1-D boolean masks of ``n_rows`` (they may overlap; a row in none is in no
    group).  A label array gives one group per distinct non-missing label, named ``str(label)``,
    in sorted order; missing labels (None, NaN) are in no group.
    """
    if isinstance(groups, Mapping):
        if not groups:
            raise ValueError("groups: expected at least one group, got an empty mapping")
        masks = {str(name): checks.as_mask(f"groups[{name!r}]", mask)
                 for name, mask in groups.items()}
    else:
        array = np.asarray(groups, dtype=object)
        if array.ndim != 1:
            raise ValueError(f"groups: expected a mapping of masks or a 1-D label array, "
                             f"got ndim={array.ndim}")
        labels = pd.Series(array)
        present = labels.notna().to_numpy()
        values = sorted(set(labels[present].tolist()), key=str)
        if not values:
            raise ValueError("groups: expected at least one non-missing label")
        masks = {str(v): (labels == v).to_numpy() & present for v in values}
    for name, mask in masks.items():
        if mask.shape[0] != n_rows:
            raise ValueError(f"groups[{name!r}]: expected {n_rows} rows, got {mask.shape[0]}")
    return masks


def design_effects(x_u: ArrayLike, m_u: ArrayLike) -> NDArray[np.float64]:
    """Return the ratio-estimator design effect of ``Σx_u / Σm_u`` over axis 0 (the units).

    ``deff = Σ_u (x_u − p·m_u)² / (M·p·(1 − p))`` with ``M = Σm_u`` and ``p = Σx_u / M``: the
    linearised cluster variance of ``p`` over its binomial variance.  NaN where ``M = 0`` or
    ``p`` is 0 or 1; exactly 1 when every unit has one row (``m_u`` in {0, 1}).
    """
    x = np.asarray(x_u, dtype=np.float64)
    m = np.asarray(m_u, dtype=np.float64)
    total_x, total_m = x.sum(axis=0), m.sum(axis=0)
    p = ratio(total_x, total_m)
    spread = ((x - np.nan_to_num(p) * m) ** 2).sum(axis=0)
    return ratio(spread, total_m * p * (1.0 - p))


def group_rates(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    groups: Mapping[str, ArrayLike] | ArrayLike,
    *,
    units: ArrayLike | None = None,
    confidence: float = 0.95,
) -> tuple[GroupRates, ...]:
    """Compute every group's confusion counts and :data:`RATES` with Wilson intervals.

    ``y_true`` and ``y_pred`` are 0/1 in the target's label coding (module docstring); ``groups``
    is a mapping of boolean masks or one label per row (:func:`group_masks`).  With repeated
    ``units`` the intervals are at design-effect-deflated effective counts.
    """
    y = checks.as_binary("y_true", y_true)
    yhat = checks.as_binary("y_pred", y_pred)
    checks.check_lengths(y_true=y, y_pred=yhat)
    checks.check_confidence(confidence)
    masks = group_masks(groups, y.size)
    inverse = clusters.repeated_units(units, y.size)
    cells = 2 * y.astype(np.int64) + yhat
    member = np.stack(list(masks.values()))                      # (G, n)
    counts = np.stack([np.bincount(cells[m], minlength=4) for m in member]).astype(np.int64)
    parts = None
    if inverse is not None:
        parts = [UnitHistogram.from_rows(inverse[m], cells[m], 4) for m in member]
    return group_rates_from_counts(tuple(masks), counts, parts, confidence=confidence)


def group_rates_from_counts(
    names: Sequence[str],
    counts: ArrayLike,
    parts: Sequence[UnitHistogram] | None = None,
    *,
    confidence: float = 0.95,
) -> tuple[GroupRates, ...]:
    """:func:`group_rates` from each group's ``(TN, FP, FN, TP)`` counts ``(G, 4)`` and, when some
    unit repeats, each group's histogram of the units' parts in it (4 slots; else None).

    The design effects are exact over the unit types
    (:func:`faircode.stats.units.ratio_design_effects`), so they do not depend on the order of
    units.
    """
    checks.check_confidence(confidence)
    counts = np.asarray(counts, dtype=np.int64)
    num, den = counts @ _NUM.astype(np.int64), counts @ _DEN.astype(np.int64)   # (G, R)
    deff = np.ones(num.shape)
    if parts is not None:
        deff = np.stack([ratio_design_effects(p.vectors @ _NUM.astype(np.int64),
                                              p.vectors @ _DEN.astype(np.int64),
                                              p.multiplicity) for p in parts])
    factor = np.where(np.isfinite(deff) & (deff > 1.0), deff, 1.0)
    low, high = resampling.wilson_interval(num / factor, den / factor, confidence=confidence)
    value = ratio(num, den)
    out = []
    for g, name in enumerate(names):
        estimates = tuple(
            RateEstimate(rate, float(value[g, r]), float(low[g, r]), float(high[g, r]),
                         int(num[g, r]), int(den[g, r]), float(deff[g, r]),
                         _note(rate, int(den[g, r])))
            for r, rate in enumerate(RATES)
        )
        tn, fp, fn, tp = (int(c) for c in counts[g])
        out.append(GroupRates(name, (tn, fp, fn, tp), estimates))
    return tuple(out)


def _note(rate: str, denominator: int) -> str:
    if denominator == 0:
        return _CELLS[rate][2]
    return "small_sample" if denominator < SMALL_SAMPLE else ""


def group_table(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    groups: Mapping[str, ArrayLike] | ArrayLike,
    *,
    protected_attribute: str,
    row_set: str,
    units: ArrayLike | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Return :func:`group_rates` as the long table of :data:`GROUP_COLUMNS`.

    One row per group × rate, groups in the order given, rates in :data:`RATES` order; every row
    repeats its group's ``n`` and confusion counts.  ``row_set`` names the decisions (e.g.
    ``"deployed"`` or ``"baseline/logistic_regression"``).
    """
    return group_frame(group_rates(y_true, y_pred, groups, units=units, confidence=confidence),
                       protected_attribute=protected_attribute, row_set=row_set)


def group_frame(rates: Sequence[GroupRates], *, protected_attribute: str,
                row_set: str) -> pd.DataFrame:
    """The long table (:data:`GROUP_COLUMNS`) of computed group rates (:func:`group_table`)."""
    rows = []
    for g in rates:
        tn, fp, fn, tp = g.counts
        for r in g.rates:
            rows.append((row_set, protected_attribute, g.group, r.metric, r.value, r.ci_low,
                         r.ci_high, r.numerator, r.denominator, g.n, tn, fp, fn, tp,
                         r.design_effect, r.note))
    return pd.DataFrame(rows, columns=list(GROUP_COLUMNS))


_KEYS = ["row_set", "protected_attribute", "group"]
_LABELS = {"base_rate": "base rate", "selection_rate": "selection rate", "accuracy": "accuracy"}


def wide_group_table(table: pd.DataFrame) -> pd.DataFrame:
    """Pivot a long table to one row per row set × attribute × group (the peers' layout).

    Columns: the keys, ``n, TN, FP, FN, TP``, then ``<rate>, <rate>_ci_low, <rate>_ci_high`` for
    every rate present, and ``note`` joining the rates' notes as ``rate:note`` (``;``-separated).
    Groups keep the long table's order.
    """
    missing = [c for c in GROUP_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"table: expected the columns of GROUP_COLUMNS, missing {missing}")
    order = table[_KEYS].drop_duplicates()
    base = order.merge(table.drop_duplicates(_KEYS)[[*_KEYS, "n", "TN", "FP", "FN", "TP"]],
                       on=_KEYS, how="left")
    metrics = [m for m in RATES if m in set(table["metric"])]
    for metric in metrics:
        part = table[table["metric"] == metric][[*_KEYS, "value", "ci_low", "ci_high"]]
        part = part.rename(columns={"value": metric, "ci_low": f"{metric}_ci_low",
                                    "ci_high": f"{metric}_ci_high"})
        base = base.merge(part, on=_KEYS, how="left")
    noted = table[table["note"].fillna("") != ""]
    notes = (noted["metric"] + ":" + noted["note"]).groupby(
        [noted[k] for k in _KEYS], sort=False).agg(";".join).rename("note").reset_index()
    base = base.merge(notes, on=_KEYS, how="left")
    base["note"] = base["note"].fillna("")
    return base


def format_group_table(
    table: pd.DataFrame, *, metrics: Sequence[str] = ("fpr", "fnr", "ppv"), digits: int = 3
) -> str:
    """Render a long table as a Markdown table: keys, ``n``, the counts, ``rate [low, high]``.

    ``metrics`` picks the rates shown (default FPR, FNR and PPV, the ProPublica/rebuttal pair).
    """
    unknown = [m for m in metrics if m not in RATES]
    if unknown:
        raise ValueError(f"metrics: expected rates among {', '.join(RATES)}, got {unknown}")
    wide = wide_group_table(table)
    header = ["row set", "attribute", "group", "n", "TN", "FP", "FN", "TP",
              *(_LABELS.get(m, m.upper()) for m in metrics)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in wide.itertuples(index=False):
        cells = [str(row.row_set), str(row.protected_attribute), str(row.group),
                 *(f"{int(getattr(row, c)):,}" for c in ("n", "TN", "FP", "FN", "TP"))]
        for m in metrics:
            value, low, high = (getattr(row, f) for f in (m, f"{m}_ci_low", f"{m}_ci_high"))
            cells.append("undefined" if np.isnan(value)
                         else f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
