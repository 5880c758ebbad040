"""The K training replicates of an audit combined into one row per cell: ``stability.csv`` and
``effects_stability.csv``.

Each replicate's table (its ``fairness.csv`` rows, or its paired effects) gives every row's value
and within-replicate interval; :func:`combine_gaps` and :func:`combine_effects` combine them with
:func:`faircode.stats.replicates.replicate_evidence` (the dataset-aware random-effects estimate:
the mean over the informative replicates, ``√(s_b²/K + f·w̄)``, ``ν = (K − 1)·V/(s_b²/K)``
degrees of freedom) and :mod:`faircode.stats.verdicts` (its interval, the p-value of no gap
consistent with it).  The combination reads only ``(value, ci_low, ci_high, informative)`` per
replicate, so it works with whatever interval a replicate reports.

Design decisions
----------------
* **One rule for degenerate replicates.**  A replicate is informative for a row when its value
  and interval are defined and its decisions are not degenerate (note
  ``degenerate_decisions``; for an effect, neither strategy's).  A row is **uninformative** when
  fewer than ``⌈min_informative_share · K⌉`` of its K replicates are informative
  (:func:`faircode.stats.replicates.required_informative`): note ``degenerate_decisions`` when
  degenerate replicates are why (its numbers are kept, as a degenerate cell's are at K = 1), else
  the numbers are NaN and the note is the replicates' reason (``insufficient_data``).  Its
  p-values are NaN: an uninformative row is no test and enters no family.
* **Equalized odds** is combined through its signed components (the ``tpr_gap`` and ``fpr_gap``
  rows of the same cell and attribute, :func:`faircode.stats.verdicts.max_abs_claims`); its note
  names the larger combined component.
* **Descriptions** beside the claim: ``sd_between``, ``sd_within`` (the root mean
  within-replicate variance), ``min``/``max`` of the replicates' values, ``rep0_value``,
  ``share_significant`` (share of the K replicates significant in their own family),
  ``sign_flips`` (some informative replicate above no gap and another below; never for
  equalized odds, a magnitude), ``n_defined``, ``n_degenerate``, ``n_informative``.
* ``q_value``, ``significant``, the equivalence test (``equivalence_p_value``,
  ``equivalence_q_value``), ``gap_bound`` and ``verdict`` are decided in the audit's families
  (:mod:`faircode.evaluate.claims`, from the evidence columns ``se_low``, ``se_high``,
  ``df_low``, ``df_high``), filled in once the combined rows are in the main tables.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faircode.core.config import VerdictsConfig
from faircode.core.metrics import metric_info, no_gap, table_of
from faircode.stats.operating import DEGENERATE_NOTE
from faircode.stats.replicates import Combined, replicate_evidence, required_informative
from faircode.stats.verdicts import (
    Evidence,
    GapClaims,
    Margins,
    gap_claims,
    margins_of,
    max_abs_claims,
    scale_of,
)

__all__ = [
    "EFFECTS_STABILITY_COLUMNS",
    "EFFECT_KEYS",
    "GAP_KEYS",
    "STABILITY_COLUMNS",
    "Replicated",
    "combine_effects",
    "combine_gaps",
    "replicated",
]

GAP_KEYS = ("strategy", "model", "protected_attribute", "metric")
EFFECT_KEYS = ("strategy", "reference", "model", "protected_attribute", "metric")
CLAIM_COLUMNS = ("value", "ci_low", "ci_high", "ci_method", "p_value", "q_value",
                 "significant", "equivalence_p_value", "equivalence_q_value", "gap_bound",
                 "verdict")
GAP_FAMILY_COLUMNS = ("claim_q_value", "conservative_verdict", "min_margin")
"""A gap's columns after its verdict (:data:`faircode.evaluate.claims.CLAIM_FAMILY_COLUMNS`),
filled in with the families."""
EVIDENCE_COLUMNS = ("se_low", "se_high", "df_low", "df_high")
"""The estimate's one-sided standard errors and degrees of freedom on its test scale (the log
ratio for disparate impact; NaN for equalized odds, whose evidence is its components')."""
DESCRIPTION_COLUMNS = ("n_informative", "n_required", "n_defined", "n_degenerate", "rep0_value",
                       "sd_between", "sd_within", "min", "max", "share_significant",
                       "sign_flips", "note")
STABILITY_COLUMNS: tuple[str, ...] = ("audit", *GAP_KEYS, "seeds", "seed_mode",
                                      "sampling_fraction", *CLAIM_COLUMNS, *GAP_FAMILY_COLUMNS,
                                      *EVIDENCE_COLUMNS, *DESCRIPTION_COLUMNS)
"""Columns of ``stability.csv`` (one row per fairness row of the grid)."""
EFFECTS_STABILITY_COLUMNS: tuple[str, ...] = ("audit", *EFFECT_KEYS, "seeds", "seed_mode",
                                              "sampling_fraction", *CLAIM_COLUMNS,
                                              *EVIDENCE_COLUMNS, *DESCRIPTION_COLUMNS)
"""Columns of ``effects_stability.csv`` (one row per row of ``effects.csv``)."""

METHODS = {"difference": "random_effects_t", "log_ratio": "random_effects_t_log",
           "max_abs": "random_effects_t_max_abs"}
"""``ci_method`` of a K-replicate interval, by the metric's test scale."""
UNDEFINED = ("insufficient_data", "undefined_advantaged_rate_zero", "not_run")
_COMPONENTS = tuple(dict.fromkeys(c.value for m in table_of("binary") for c in m.components))
"""The names a magnitude's note may carry (its larger component): replaced by the combined one."""


@dataclass(frozen=True, slots=True)
class Replicated:
    """Every replicate's value, interval, significance and note of the same rows, ``(rows, K)``."""

    keys: pd.DataFrame
    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    significant: np.ndarray
    notes: np.ndarray

    @property
    def seeds(self) -> int:
        """K."""
        return int(self.value.shape[1])

    @property
    def degenerate(self) -> np.ndarray:
        """Which replicate of each row has degenerate decisions."""
        return np.vectorize(lambda n: DEGENERATE_NOTE in n.split(";"), otypes=[bool])(
            self.notes) if self.notes.size else np.zeros(self.notes.shape, bool)

    @property
    def informative(self) -> np.ndarray:
        """Defined value and interval, decisions not degenerate."""
        return (np.isfinite(self.value) & np.isfinite(self.low) & np.isfinite(self.high)
                & ~self.degenerate)


def replicated(tables: Sequence[pd.DataFrame], keys: Sequence[str]) -> Replicated:
    """The replicates' tables (replicate order, the same rows in the same order) stacked."""
    if not tables:
        raise ValueError("replicated: tables: expected at least one replicate, got none")
    first = tables[0].loc[:, list(keys)].reset_index(drop=True)
    for k, table in enumerate(tables[1:], start=1):
        if not table.loc[:, list(keys)].reset_index(drop=True).equals(first):
            raise ValueError(f"replicated: replicate {k}: expected the rows of replicate 0 in "
                             "the same order")

    def stack(column: str, dtype: type) -> np.ndarray:
        return np.stack([t[column].to_numpy(dtype=dtype) for t in tables], axis=1)

    notes = np.stack([t["note"].fillna("").astype(str).to_numpy(dtype=object) for t in tables],
                     axis=1)
    return Replicated(first, stack("value", float), stack("ci_low", float),
                      stack("ci_high", float), stack("significant", bool), notes)


def combine_gaps(tables: Sequence[pd.DataFrame], *, audit: str, seed_mode: str,
                 fraction: float, confidence: float, alpha: float,
                 verdicts: VerdictsConfig, keys: tuple[str, ...] = GAP_KEYS) -> pd.DataFrame:
    """``stability.csv``'s rows (without the family columns) from the replicates' fairness
    tables (module docstring); ``keys`` identify a row, the metric last (a curve's rows add
    their operating point)."""
    rows = replicated(tables, keys)
    metric = rows.keys["metric"].to_numpy(dtype=str)
    margins = margins_of(verdicts)
    out = _Columns.empty(len(metric))
    combined: dict[int, Evidence] = {}
    for name in dict.fromkeys(metric):
        scale = scale_of(name)
        if scale == "max_abs":
            continue
        idx = np.flatnonzero(metric == name)
        comb = replicate_evidence(name, rows.value[idx], rows.low[idx], rows.high[idx],
                                  rows.informative[idx], fraction=fraction,
                                  confidence=confidence)
        out.fill(idx, gap_claims(name, comb.evidence, confidence=confidence, alpha=alpha,
                                 margins=margins), comb,
                 METHODS[scale])
        combined.update({int(i): _row(comb, j) for j, i in enumerate(idx)})
    _combine_magnitudes(rows, out, combined, confidence=confidence, alpha=alpha,
                        margins=margins)
    frame = _frame(rows, out, audit=audit, keys=keys, seed_mode=seed_mode,
                   fraction=fraction, verdicts=verdicts, null=_nulls(metric),
                   signed=np.array([scale_of(m) != "max_abs" for m in metric], dtype=bool))
    at = list(frame.columns).index("verdict") + 1
    empty: tuple[float | str, ...] = (np.nan, "", np.nan)
    for i, column in enumerate(GAP_FAMILY_COLUMNS):
        frame.insert(at + i, column, empty[i])
    return frame


def combine_effects(tables: Sequence[pd.DataFrame], *, audit: str, seed_mode: str,
                    fraction: float, confidence: float, alpha: float,
                    verdicts: VerdictsConfig) -> pd.DataFrame:
    """``effects_stability.csv``'s rows (without the family columns) from the replicates'
    effect tables: every effect on the difference scale (no change 0, margin ``±δ``)."""
    rows = replicated(tables, EFFECT_KEYS)
    out = _Columns.empty(len(rows.keys))
    comb = replicate_evidence("effect", rows.value, rows.low, rows.high, rows.informative,
                              fraction=fraction, confidence=confidence)
    out.fill(np.arange(len(rows.keys)), gap_claims(
        "effect", comb.evidence, confidence=confidence, alpha=alpha,
        margins=margins_of(verdicts)), comb, METHODS["difference"])
    return _frame(rows, out, audit=audit, keys=EFFECT_KEYS, seed_mode=seed_mode,
                  fraction=fraction, verdicts=verdicts, null=np.zeros(len(rows.keys)),
                  signed=np.ones(len(rows.keys), bool))


@dataclass(slots=True)
class _Columns:
    """The combined claim and description columns being filled in."""

    value: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_value: np.ndarray
    se_low: np.ndarray
    se_high: np.ndarray
    df_low: np.ndarray
    df_high: np.ndarray
    n_informative: np.ndarray
    sd_between: np.ndarray
    sd_within: np.ndarray
    ci_method: np.ndarray
    larger: np.ndarray  # equalized odds: the larger combined component

    @classmethod
    def empty(cls, n: int) -> _Columns:
        def nan() -> np.ndarray:
            return np.full(n, np.nan)

        return cls(nan(), nan(), nan(), nan(), nan(), nan(), nan(), nan(),
                   np.zeros(n, np.int64), nan(), nan(), np.full(n, "", dtype=object),
                   np.full(n, "", dtype=object))

    def claim(self, idx: np.ndarray, claims: GapClaims, method: str) -> None:
        """Set the claim columns of rows ``idx``."""
        self.value[idx], self.ci_low[idx], self.ci_high[idx] = (
            claims.value, claims.ci_low, claims.ci_high)
        self.p_value[idx] = claims.p_value
        self.ci_method[idx] = method

    def fill(self, idx: np.ndarray, claims: GapClaims, comb: Combined, method: str) -> None:
        """Set rows ``idx`` from one signed metric's claims and combination."""
        self.claim(idx, claims, method)
        ev = comb.evidence
        self.se_low[idx], self.se_high[idx] = ev.se_low, ev.se_high
        self.df_low[idx], self.df_high[idx] = ev.df_low, ev.df_high
        self.n_informative[idx] = comb.n_informative
        self.sd_between[idx], self.sd_within[idx] = comb.sd_between, comb.sd_within


def _row(comb: Combined, j: int) -> Evidence:
    """Row ``j`` of a combination's evidence, as one-row evidence."""
    ev = comb.evidence
    return Evidence(*(np.atleast_1d(getattr(ev, f)[j]) for f in (
        "estimate", "se_low", "se_high", "df_low", "df_high")))


def _combine_magnitudes(rows: Replicated, out: _Columns, combined: dict[int, Evidence], *,
                        confidence: float, alpha: float, margins: Margins) -> None:
    """Equalized odds from the combined ``tpr_gap`` and ``fpr_gap`` of its cell x attribute (a
    magnitude from its two signed components)."""
    keys = rows.keys
    position = {tuple(r): i for i, r in enumerate(keys.itertuples(index=False, name=None))}
    metric = keys["metric"].to_numpy(dtype=str)
    for i in np.flatnonzero([scale_of(m) == "max_abs" for m in metric]):
        head = tuple(keys.iloc[i])[:-1]
        parts = tuple(c.value for c in metric_info(metric[i]).components)
        t, f = (combined.get(position.get((*head, c), -1)) for c in parts)
        if t is None or f is None:
            continue  # a table without the signed components: nothing to combine from
        claims = max_abs_claims(t, f, confidence=confidence, alpha=alpha, margins=margins)
        out.claim(np.array([i]), claims, METHODS["max_abs"])
        own = rows.informative[i]
        out.n_informative[i] = own.sum()
        if own.sum() >= 2:
            out.sd_between[i] = float(np.std(rows.value[i][own], ddof=1))
        if np.isfinite(claims.value[0]):
            out.larger[i] = parts[0] if abs(t.estimate[0]) >= abs(f.estimate[0]) else parts[1]


def _nulls(metric: np.ndarray) -> np.ndarray:
    return np.array([no_gap(m) for m in metric], dtype=float)


def _frame(rows: Replicated, out: _Columns, *, audit: str, keys: Sequence[str], seed_mode: str,
           fraction: float, verdicts: VerdictsConfig, null: np.ndarray,
           signed: np.ndarray) -> pd.DataFrame:
    """The combined rows with their descriptions; uninformative rows per the one rule."""
    k = rows.seeds
    required = required_informative(k, verdicts.min_informative_share)
    informative = rows.informative
    degenerate = rows.degenerate
    n_deg = degenerate.sum(axis=1)
    defined = np.isfinite(rows.value)
    uninformative = out.n_informative < required
    undefined = uninformative & (n_deg == 0)
    for column in (out.value, out.ci_low, out.ci_high, out.se_low, out.se_high, out.df_low,
                   out.df_high):
        column[undefined] = np.nan
    out.p_value[uninformative] = np.nan
    shown = np.where(informative, rows.value, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows give NaN, as intended
        lowest, highest = np.nanmin(shown, axis=1), np.nanmax(shown, axis=1)
    flips = signed & (informative & (rows.value > null[:, None])).any(axis=1) & (
        informative & (rows.value < null[:, None])).any(axis=1)
    notes = [_note(rows.notes[i], larger=out.larger[i], n_deg=int(n_deg[i]),
                   n_undefined=int(k - defined[i].sum()), uninformative=bool(uninformative[i]))
             for i in range(len(rows.keys))]
    frame = pd.DataFrame({
        "audit": audit, **{c: rows.keys[c].to_numpy() for c in keys}, "seeds": k,
        "seed_mode": seed_mode, "sampling_fraction": fraction, "value": out.value,
        "ci_low": out.ci_low, "ci_high": out.ci_high, "ci_method": out.ci_method,
        "p_value": out.p_value, "q_value": np.nan, "significant": False,
        "equivalence_p_value": np.nan, "equivalence_q_value": np.nan, "gap_bound": np.nan,
        "verdict": "",
        "se_low": out.se_low, "se_high": out.se_high, "df_low": out.df_low,
        "df_high": out.df_high, "n_informative": out.n_informative,
        "n_required": required, "n_defined": defined.sum(axis=1), "n_degenerate": n_deg,
        "rep0_value": rows.value[:, 0], "sd_between": out.sd_between,
        "sd_within": out.sd_within, "min": lowest, "max": highest,
        "share_significant": rows.significant.mean(axis=1), "sign_flips": flips,
        "note": notes})
    return frame.reset_index(drop=True)


def _note(notes: np.ndarray, *, larger: str, n_deg: int, n_undefined: int,
          uninformative: bool) -> str:
    """A combined row's note (module docstring)."""
    parts: dict[str, None] = dict.fromkeys([larger] if larger else [])
    reasons: dict[str, None] = {}
    for note in notes:
        for part in (p for p in str(note).split(";") if p):
            if part in UNDEFINED:
                reasons[part] = None
            elif part not in (DEGENERATE_NOTE, *_COMPONENTS):
                parts[part] = None
    if n_deg:
        parts[f"degenerate_replicates:{n_deg}"] = None
    if n_undefined:
        parts[f"undefined_replicates:{n_undefined}"] = None
    if uninformative:
        parts.update(dict.fromkeys([DEGENERATE_NOTE] if n_deg else list(reasons)[:1]
                                   or ["insufficient_data"]))
    return ";".join(parts)
