"""Dixon et al.'s error-rate equality differences: FPED, FNED, each term against the overall.

Dixon, Li, Sorensen, Thain & Vasserman ("Measuring and Mitigating Unintended Bias in Text
Classification", AIES 2018) sum, over the identity terms ``t``, how far each term's error rate
lies from the rate over *all* sentences: ``FPED = Σ_t |FPR − FPR_t|`` (false positives among
label-0 sentences) and ``FNED = Σ_t |FNR − FNR_t|`` (false negatives among label-1 ones).
:func:`equality_difference` computes one of them, and every term's ``rate_t − rate``, from plain
masks (errors, eligible rows, one mask per term) with a cluster-bootstrap interval.

Design decisions
----------------
* **Against the overall rate**, as the paper: the overall rate includes the term's own rows (a
  comparison with the *other* sentences is :mod:`faircode.stats.term_rates`').  A term without
  eligible rows is left out of the sum (and has a NaN difference).
* **Units.**  The intervals resample template frames with the audit's unit weights
  (:func:`faircode.stats.subgroup_auc.unit_weights`, the AUCs' draws): each draw's rates are
  ratios of the drawn frames' error and eligible counts, a matrix product over frames.
  Percentile intervals; a draw in which a term has no eligible row leaves that term out of its
  sum, as the point estimate would.
* A sum of absolute values lies above 0 even for a system with no difference between terms
  (each ``|·|`` keeps its noise), so FPED is a descriptive magnitude, not a test; its interval
  says how much it could move over frames.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core.checks import as_mask, check_confidence
from faircode.stats.resampling import percentile_interval
from faircode.stats.subgroup_auc import UnitWeights

__all__ = ["EqualityDifference", "equality_difference"]


@dataclass(frozen=True, slots=True)
class EqualityDifference:
    """The overall rate, each term's ``rate_t − rate`` with its interval, and their absolute
    sum (FPED or FNED) with its interval."""

    overall: float
    differences: NDArray[np.float64]
    differences_low: NDArray[np.float64]
    differences_high: NDArray[np.float64]
    total: float
    total_low: float
    total_high: float
    n_terms: int


def _rates(errors: NDArray[np.float64], rows: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(rows > 0, errors / np.where(rows > 0, rows, 1.0), np.nan)


def equality_difference(errors: ArrayLike, eligible: ArrayLike, members: Sequence[ArrayLike], *,
                        weights: UnitWeights, confidence: float = 0.95) -> EqualityDifference:
    """``Σ_t |rate − rate_t|`` over the ``members`` masks (module docstring), each row's unit
    and the draws being ``weights``' (one row per row of the masks)."""
    err, ok = as_mask("errors", errors), as_mask("eligible", eligible)
    check_confidence(confidence)
    masks = np.stack([as_mask(f"members[{i}]", m) for i, m in enumerate(members)], axis=1) \
        if members else np.zeros((err.size, 0), dtype=bool)
    unit = weights.unit
    if unit.shape != err.shape or masks.shape[0] != err.size:
        raise ValueError(f"errors, eligible, members, weights: expected {err.size} rows each, got "
                         f"{unit.size} units and {masks.shape[0]} member rows")
    n_units = weights.weights.shape[1]
    wrong = (err & ok).astype(np.float64)
    rows = ok.astype(np.float64)
    unit_err = np.bincount(unit, weights=wrong, minlength=n_units)
    unit_rows = np.bincount(unit, weights=rows, minlength=n_units)
    member_err = np.stack([np.bincount(unit, weights=wrong * masks[:, t], minlength=n_units)
                           for t in range(masks.shape[1])], axis=1) if masks.shape[1] else \
        np.zeros((n_units, 0))
    member_rows = np.stack([np.bincount(unit, weights=rows * masks[:, t], minlength=n_units)
                            for t in range(masks.shape[1])], axis=1) if masks.shape[1] else \
        np.zeros((n_units, 0))
    overall = float(_rates(unit_err.sum(), unit_rows.sum()))
    diff = _rates(member_err.sum(0), member_rows.sum(0)) - overall
    w = weights.weights
    drawn = _rates(w @ member_err, w @ member_rows) - _rates(w @ unit_err, w @ unit_rows)[:, None]
    bounds = [percentile_interval(drawn[:, t], confidence=confidence)
              for t in range(diff.size)]
    low = np.array([b[0] for b in bounds], dtype=np.float64)
    high = np.array([b[1] for b in bounds], dtype=np.float64)
    defined = np.isfinite(diff)
    if not defined.any():
        nan = math.nan
        return EqualityDifference(overall, diff, low, high, nan, nan, nan, 0)
    total = float(np.abs(diff[defined]).sum())
    totals = np.nansum(np.abs(drawn[:, defined]), axis=1)
    t_low, t_high = percentile_interval(totals, confidence=confidence)
    return EqualityDifference(overall, diff, low, high, total, t_low, t_high,
                              int(defined.sum()))
