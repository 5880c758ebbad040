"""What a regression audit's gaps let it claim: q-values, equivalence tests, bounds, verdicts.

Every row of ``regression_gaps.csv`` (a row set x attribute x metric) gets the verdicts of
:mod:`faircode.stats.verdicts` -- ``gap``, ``parity``, ``inconclusive``, ``uninformative`` --
from its estimate, its interval and its test, decided in the audit's families as a binary
audit's are (:mod:`faircode.evaluate.claims`):

* **Families.**  One Benjamini-Hochberg family over the rows' p-values, each null once: a
  metric that reports its twin's test (``same_null``: the mean ratio, the worst group's error)
  takes its twin's q-value and does not enter.  One family over the equivalence p-values.  The
  caller decides the observed outcome's rows and the grid's apart (:func:`decide` per family),
  as a binary audit's people's decisions and its grid are: two questions, two families.
* **The margin is the audit's, in its outcome's units** (``target.margin`` of the manifest,
  :class:`faircode.audit.regression_manifest.Margin`, resolved on the audit's rows): ``±δ`` for
  every difference (a mean, quantile, error or residual gap); for the mean ratio the same
  ``δ`` as a share of the observed advantaged mean, ``[1 − r, 1/(1 − r)]`` (symmetric on the
  log scale, as disparate impact's range), or on a log outcome ``[e^−δ, e^δ]`` (the ratio is
  ``exp`` of the gap); the KS distance, a difference of two distribution functions, takes
  ``verdicts.margin`` (a difference of probabilities, as a rate gap's).  The worst group's error
  is a level, not a gap: no verdict (its ``verdict`` is empty and its ``mde_note`` says
  ``level``).  A strategy that does not apply (S4) has rows of its own with no number, verdict
  ``not_applicable`` and its reason in the note.
* **Evidence** is the interval read as one-sided standard errors
  (:func:`faircode.stats.verdicts.from_interval`; K > 1: the replicates' combination, its own
  degrees of freedom), on the log scale for the ratio; ``gap`` needs ``q < alpha`` *and* an
  interval that excludes no gap, ``parity`` an equivalence q below ``alpha``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faircode.core.metrics import metric_info
from faircode.stats.resampling import benjamini_hochberg
from faircode.stats.verdicts import (
    Evidence,
    family_level,
    far_end,
    from_interval,
    gap_verdicts,
)

__all__ = ["NOT_APPLICABLE", "ClaimMargins", "decide", "evidence_of"]

NOT_APPLICABLE = "not_applicable"
"""The verdict (and the note's start) of a row whose strategy does not apply to a regression:
no number, its reason in the note (the report shows ``n/a`` and the reason; pandas would read
a bare ``n/a`` back as a missing value)."""


@dataclass(frozen=True, slots=True)
class ClaimMargins:
    """The audit's margins: ``difference`` (its outcome's units), ``ratio`` (the mean ratio's
    range) and ``distance`` (the KS distance's)."""

    difference: float
    ratio: tuple[float, float]
    distance: float

    @classmethod
    def of(cls, margin: float, *, log_scale: bool, advantaged_mean: float,
           distance: float) -> ClaimMargins:
        """The margins of an audit with the resolved ``margin`` (module docstring)."""
        if log_scale:
            ratio = (math.exp(-margin), math.exp(margin))
        else:
            share = min(margin / abs(advantaged_mean), 0.99) if advantaged_mean else 0.99
            ratio = (1.0 - share, 1.0 / (1.0 - share))
        return cls(margin, ratio, distance)

    def bounds(self, metric: str) -> tuple[float, float]:
        """``(L, U)`` of ``metric``'s equivalence test on its test scale (log for the ratio);
        NaN for a level."""
        scale = metric_info(metric).scale
        if scale == "ratio":
            return math.log(self.ratio[0]), math.log(self.ratio[1])
        if scale == "distance":
            return -math.inf, self.distance
        if scale == "level":
            return math.nan, math.nan
        return -self.difference, self.difference


def _log(values: pd.Series) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(values.to_numpy(dtype=np.float64))


def evidence_of(rows: pd.DataFrame, *, confidence: float) -> Evidence:
    """The rows' evidence on their test scales: from their intervals, or from the ``estimate``,
    ``se_*`` and ``df_*`` columns where a row carries them (a K-replicate combination)."""
    ratio = rows["metric"].map(lambda m: metric_info(m).scale == "ratio").to_numpy(dtype=bool)
    value, low, high = (np.where(ratio, _log(rows[c]), rows[c].to_numpy(dtype=np.float64))
                        for c in ("value", "ci_low", "ci_high"))
    evidence = from_interval(value, low, high, confidence=confidence)
    if "se_low" not in rows.columns:
        return evidence
    combined = np.isfinite(rows["se_low"].to_numpy(dtype=np.float64))
    parts = [np.where(combined, rows[c].to_numpy(dtype=np.float64), getattr(evidence, f))
             for c, f in (("estimate", "estimate"), ("se_low", "se_low"), ("se_high", "se_high"),
                          ("df_low", "df_low"), ("df_high", "df_high"))]
    return Evidence(*parts)


def decide(rows: pd.DataFrame, *, margins: ClaimMargins, alpha: float,
           confidence: float) -> pd.DataFrame:
    """``rows`` with ``q_value``, ``significant``, ``equivalence_p_value``,
    ``equivalence_q_value``, ``margin_low``, ``margin_high``, ``gap_bound`` and ``verdict``
    (module docstring); rows whose metric does not apply keep their note and no verdict."""
    out = rows.copy()
    metric = out["metric"].astype(str)
    info = [metric_info(m) for m in metric]
    level = np.array([i.scale == "level" for i in info])
    ratio = np.array([i.scale == "ratio" for i in info])
    twin = np.array([i.same_null is not None for i in info])
    p = out["p_value"].to_numpy(dtype=np.float64)
    q = np.full(p.size, np.nan)
    own = ~twin & np.isfinite(p)
    q[own] = benjamini_hochberg(p[own])
    keys = ["strategy", "model", "replicate", "protected_attribute"]
    keys = [k for k in keys if k in out.columns]
    owner_q = dict(zip(zip(*(out[k] for k in keys), metric, strict=True), q, strict=True))
    for i in np.flatnonzero(twin):
        row = out.iloc[i]
        q[i] = owner_q.get((*(row[k] for k in keys), info[i].same_null.value), np.nan)  # type: ignore[union-attr]
    evidence = evidence_of(out, confidence=confidence)
    bounds = np.array([margins.bounds(m) for m in metric]).reshape(-1, 2)
    p_eq = np.full(len(out), np.nan)
    for lower, upper in {(float(a), float(b)) for a, b in bounds if not np.isnan(a)}:
        rows = (bounds[:, 0] == lower) & (bounds[:, 1] == upper)
        part = Evidence(*(np.asarray(getattr(evidence, f))[rows] for f in (
            "estimate", "se_low", "se_high", "df_low", "df_high")))
        p_eq[rows] = part.p_equivalence(lower, upper)
    q_eq = benjamini_hochberg(p_eq)
    eq_level = family_level(p_eq, alpha=alpha)
    eq_low, eq_high = evidence.interval(1.0 - 2.0 * eq_level)
    bound = far_end(eq_low, eq_high)
    low, high = (out[c].to_numpy(dtype=np.float64) for c in ("ci_low", "ci_high"))
    parity_value = np.where(ratio, 1.0, 0.0)
    excludes = (low > parity_value) | (high < parity_value)
    informative = np.isfinite(out["value"].to_numpy(dtype=np.float64)) & np.isfinite(low) \
        & np.isfinite(high) & ~level
    significant = q < alpha
    out["q_value"] = q
    out["significant"] = significant
    out["equivalence_p_value"] = p_eq
    out["equivalence_q_value"] = q_eq
    floor = np.where(np.isneginf(bounds[:, 0]), 0.0, bounds[:, 0])  # a distance's floor: 0
    with np.errstate(over="ignore", invalid="ignore"):  # exp of the other rows, not kept
        out["margin_low"] = np.where(ratio, np.exp(bounds[:, 0]), floor)
        out["margin_high"] = np.where(ratio, np.exp(bounds[:, 1]), bounds[:, 1])
        out["gap_bound"] = np.where(level, np.nan, np.where(ratio, np.exp(bound), bound))
    verdict = gap_verdicts(informative=informative, gap=significant & excludes,
                           parity=np.asarray(q_eq < alpha))
    not_applicable = out["note"].astype(str).str.startswith(NOT_APPLICABLE).to_numpy()
    out["verdict"] = np.where(not_applicable, NOT_APPLICABLE, np.where(level, "", verdict))
    return out
