"""What the manifest's declared legitimate factors (``strata:``) give every row.

A declared stratum conditions every row set's parity gap on its columns, in one of two ways
(:class:`~faircode.audit.manifest.Stratum` ``estimator``):

* **strata** (``mantel_haenszel``): each row's integer code for the combination of its values
  (:func:`stratum_codes`) and each code's readable level (:func:`stratum_levels`:
  ``chist=1, mhist=2, phist=no``), what the Mantel–Haenszel gap pools and the per-stratum table
  shows (:mod:`faircode.stats.stratified`);
* **covariates** (``logistic_regression``): a numeric design matrix (:func:`covariate_frame`),
  what the logistic regression of the adjusted gap conditions on (:mod:`faircode.stats.adjusted`).

Design decisions
----------------
* **Codes follow the sorted text** of the value combinations, so they do not depend on row order;
  a missing value is a level of its own (sorted last), so no row leaves the stratified gap.
* **Covariates**: a numeric column enters as it is (a missing value as 0 beside an indicator
  ``<column>=(missing)``, the missing-indicator method); any other column one indicator per level
  but its first (R's treatment coding: a categorical column's own level order, else sorted text;
  missing is a level, last).  Terms are named ``<column>`` or ``<column>=<level>``.
* Computed from the raw values at load, so the prepared store carries codes, levels and the
  numeric design, never raw values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from faircode.audit._data_columns import as_text, is_numeric_column
from faircode.audit.manifest import Stratum

__all__ = ["MISSING_LEVEL", "Conditioning", "conditioning", "covariate_frame", "stratum_codes",
           "stratum_levels"]

MISSING_LEVEL = "(missing)"
"""How a missing value reads in a level or a covariate term."""
_LAST = "\uffff"
"""Sorts a missing value after every text."""


def _texts(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame({c: frame[c].astype(object).map(
        lambda v: _LAST + MISSING_LEVEL if v is None or v is pd.NA or v != v else as_text(v))
        for c in columns})


def stratum_codes(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """One integer code per row for the combination of its values of ``columns``.

    Codes number the combinations that occur in sorted order of their text (``0..K-1``); a
    missing value is a level of its own (sorted last), so no row leaves the stratified gap.
    """
    return _texts(frame, columns).groupby(list(columns), sort=True).ngroup().to_numpy(
        dtype=np.int64)


def stratum_levels(frame: pd.DataFrame, columns: Sequence[str]) -> tuple[str, ...]:
    """The readable level of each code of :func:`stratum_codes` (``chist=1, mhist=2``)."""
    text = _texts(frame, columns).drop_duplicates().sort_values(list(columns))
    return tuple(", ".join(f"{c}={str(v).removeprefix(_LAST)}" for c, v in zip(
        columns, row, strict=True)) for row in text.itertuples(index=False, name=None))


def _levels(values: pd.Series) -> list[str]:
    """A non-numeric column's levels in order: its categories' own, else sorted text."""
    present = values.dropna()
    if isinstance(values.dtype, pd.CategoricalDtype):
        seen = set(present.astype(str))
        levels = [str(c) for c in values.cat.categories if str(c) in seen]
    else:
        levels = sorted({as_text(v) for v in present})
    return levels + ([MISSING_LEVEL] if values.isna().any() else [])


def covariate_frame(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The numeric design of ``columns`` (module docstring), one column per term, float64."""
    out: dict[str, np.ndarray] = {}
    for column in columns:
        values = frame[column]
        if is_numeric_column(values):
            numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
            missing = np.isnan(numbers)
            out[column] = np.where(missing, 0.0, numbers)
            if missing.any():
                out[f"{column}={MISSING_LEVEL}"] = missing.astype(np.float64)
            continue
        text = values.astype(object).map(
            lambda v: MISSING_LEVEL if v is None or v is pd.NA or v != v else as_text(v))
        for level in _levels(values)[1:]:
            out[f"{column}={level}"] = (text == level).to_numpy(dtype=np.float64)
    return pd.DataFrame(out, index=frame.index)


@dataclass(frozen=True, slots=True)
class Conditioning:
    """Every declared stratum's data per row: codes and levels, or covariates."""

    codes: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Per ``mantel_haenszel`` stratum, its code per row."""
    levels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per ``mantel_haenszel`` stratum, the level of each code."""
    covariates: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    """Per ``logistic_regression`` stratum, its design matrix (rows x terms)."""


def conditioning(frame: pd.DataFrame, strata: Sequence[Stratum]) -> Conditioning:
    """The :class:`Conditioning` of ``frame``'s rows for the declared ``strata``."""
    pooled = [s for s in strata if not s.regression]
    return Conditioning(
        codes={s.name: stratum_codes(frame, s.columns) for s in pooled},
        levels={s.name: stratum_levels(frame, s.columns) for s in pooled},
        covariates={s.name: covariate_frame(frame, s.columns).reset_index(drop=True)
                    for s in strata if s.regression})
