"""One number, one interval and one verdict per cell, in the tables every view reads.

:func:`gap_claims_table` gives ``fairness.csv`` its claims and :func:`effect_claims_table`
``effects.csv``; every other view (``summary.csv``, the paper table, ``report.html``, MLflow,
``results/metrics/*.json``, the DVC plots) reads these tables and so shows the same number,
interval and verdict of a cell.

Design decisions
----------------
* **At K > 1 the cell's number is the K-replicate estimate** (:mod:`faircode.evaluate.combine`):
  ``value``, ``ci_low``/``ci_high``, ``ci_method`` and ``p_value`` are the combination's, and
  replicate 0's own value, interval, p- and q-value move to ``rep0_value``, ``rep0_ci_low``,
  ``rep0_ci_high``, ``rep0_p_value``, ``rep0_q_value``.  Replicate 0 is a replicate like the
  others; rows that have no replicates (a deployed system, scored once on replicate 0's test
  rows) keep their own numbers, which are also their ``rep0_*``.  ``mde``, ``powered``, the group
  sizes and ``design_effect`` stay replicate 0's test split's (the design, not the estimate).
* **At K = 1** the numbers are the fit's own (closed-form interval, permutation p); the
  equivalence test uses the interval's halves over their normal quantile
  (:func:`faircode.stats.verdicts.interval_evidence`).
* **Two families per audit**, each Benjamini-Hochberg at ``alpha``: the gaps' tests (the audit's
  family of :func:`faircode.stats.metrics.audit_q_values`: each null once, with the
  intersectional tests) and, apart, the equivalence tests (each hypothesis once: ``tpr_gap`` is
  equal opportunity's and takes its ``equivalence_q_value``; disparate impact's margin is its own
  hypothesis).  BH controls the share of false ``parity`` claims among them.  An uninformative
  row is no test: it enters neither family (``q`` NaN).
* **Verdicts** (:func:`faircode.stats.verdicts.gap_verdicts`): ``gap`` needs ``q_value < alpha``
  and the interval excluding no gap; ``parity`` ``equivalence_q_value < alpha``; a row is
  uninformative when it is degenerate (K = 1) or has too few informative replicates (K > 1,
  :mod:`faircode.evaluate.combine`), or no defined value.
* **Effects** the same way, in the effects' own family (:func:`faircode.evaluate.effects.
  effect_q_values`): ``significant`` is ``q < alpha`` *and* an interval excluding 0; the verdict
  (:class:`faircode.stats.verdicts.EffectVerdict`) ``reduced``/``increased`` where significant,
  ``no_change`` where the equivalence test at ``±verdicts.margin`` is significant in its family.
  At K > 1 ``gap_strategy``/``gap_reference`` of a fairness effect are the two strategies'
  ``fairness.csv`` values (the K-replicate estimates); ``value`` is the mean paired effect, which
  need not equal the difference of the two estimates' distances from parity.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from faircode.core.config import VerdictsConfig
from faircode.core.metrics import metric_info, no_gap
from faircode.evaluate.combine import EFFECT_KEYS, GAP_KEYS
from faircode.evaluate.effects import EFFECT_COLUMNS, SAME_TEST, effect_q_values
from faircode.stats.metrics import FAIRNESS_COLUMNS, audit_q_values
from faircode.stats.operating import DEGENERATE_NOTE
from faircode.stats.resampling import benjamini_hochberg
from faircode.stats.verdicts import (
    UNREACHABLE_NOTE,
    Evidence,
    Margins,
    effect_verdicts,
    family_level,
    gap_claims,
    gap_verdicts,
    interval_evidence,
    margins_of,
    max_abs_claims,
    scale_of,
)

__all__ = ["REP0_COLUMNS", "VERDICT_COLUMNS", "effect_claims_table", "effect_columns",
           "fairness_columns", "gap_claims_table", "with_family"]

VERDICT_COLUMNS = ("verdict", "equivalence_p_value", "equivalence_q_value", "gap_bound")
"""The claim columns beside ``significant`` in ``fairness.csv`` (``effects.csv``: all but the
bound)."""
CLAIM_FAMILY_COLUMNS = ("claim_q_value", "conservative_verdict", "min_margin")
"""``fairness.csv``'s columns after the bound: the equivalence q in the family of the
pre-specified claims, the verdict in the audit-wide family (the conservative view) and the
smallest margin parity could be shown within at the cell's size."""

REP0_COLUMNS = ("rep0_value", "rep0_ci_low", "rep0_ci_high", "rep0_p_value", "rep0_q_value")
"""Replicate 0's own numbers, kept under their names at K > 1."""
REP0_ONLY = ("swap_p_value", "swap_q_value")
"""Per-replicate tests of an effect the K-replicate combination does not redo: at K > 1 they
are replicate 0's, under ``rep0_<column>``."""
FAMILY_COLUMNS = ("q_value", "significant", "equivalence_p_value", "equivalence_q_value",
                  "gap_bound", "verdict", *CLAIM_FAMILY_COLUMNS)
_SOURCE = ("value", "ci_low", "ci_high", "p_value", "q_value")
_SAME_EQUIVALENCE = SAME_TEST
"""``tpr_gap`` is equal opportunity (same value, interval and margin): one equivalence test."""


def fairness_columns(replicated: bool) -> tuple[str, ...]:
    """``fairness.csv``'s columns: the verdict columns after ``significant``; replicate 0's
    columns last when ``replicated`` (K > 1)."""
    at = FAIRNESS_COLUMNS.index("significant") + 1
    columns = (*FAIRNESS_COLUMNS[:at], *VERDICT_COLUMNS, *CLAIM_FAMILY_COLUMNS,
               *FAIRNESS_COLUMNS[at:])
    return (*columns, *REP0_COLUMNS) if replicated else columns


def effect_columns(base: tuple[str, ...] = EFFECT_COLUMNS,
                   replicated: bool = False) -> tuple[str, ...]:
    """``effects.csv``'s columns: ``base`` (the per-replicate columns) with ``verdict``,
    the equivalence margin (where ``base`` has it), ``equivalence_p_value`` and
    ``equivalence_q_value`` after ``significant`` (so ``effect_columns()`` is
    :data:`~faircode.evaluate.effects.EFFECT_COLUMNS`); replicate 0's columns last when
    ``replicated`` (K > 1)."""
    claim = ("verdict", *(["equivalence_margin"] if "equivalence_margin" in base else []),
             "equivalence_p_value", "equivalence_q_value")
    columns = [c for c in base if c not in claim]
    at = columns.index("significant") + 1
    order = (*columns[:at], *claim, *columns[at:])
    return (*order, *REP0_COLUMNS) if replicated else order


def _fold(table: pd.DataFrame, combined: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    """``table`` with the combined rows' numbers (matched on ``keys``) and ``rep0_*``."""
    out = table.copy()
    for rep0, source in zip(REP0_COLUMNS, _SOURCE, strict=True):
        out[rep0] = out[source]
    index = pd.MultiIndex.from_frame(out.loc[:, list(keys)].astype(str))
    lookup = combined.set_index([combined[k].astype(str) for k in keys])
    found = index.isin(lookup.index)
    rows = lookup.reindex(index[found])
    for column in ("value", "ci_low", "ci_high", "p_value"):
        out.loc[found, column] = rows[column].to_numpy(dtype=float)
    for column in ("ci_method", "note"):  # text, whatever a reader inferred for the column
        out[column] = out[column].astype(object).where(out[column].notna(), "")
        out.loc[found, column] = rows[column].fillna("").astype(str).to_numpy()
    return out


def _row_evidence(table: pd.DataFrame, combined: pd.DataFrame | None, keys: tuple[str, ...],
                  *, confidence: float, effect: bool = False) -> Evidence:
    """Every row's evidence on its test scale: a combined row's (its ``se_*``/``df_*``
    columns), else its own interval's (:func:`faircode.stats.verdicts.interval_evidence`);
    NaN for equalized odds, whose evidence is its components'.  ``effect``: every row is a
    difference (an effect), whatever its metric."""
    n = len(table)
    est, se_low, se_high, df_low, df_high = (np.full(n, np.nan) for _ in range(5))
    metric = table["metric"].to_numpy(dtype=str)
    value = table["value"].to_numpy(dtype=float)
    rows, own = None, np.ones(n, bool)
    if combined is not None:
        lookup = combined.set_index([combined[k].astype(str) for k in keys])
        index = pd.MultiIndex.from_frame(table.loc[:, list(keys)].astype(str))
        rows, own = lookup.reindex(index), ~index.isin(lookup.index)
    for name in dict.fromkeys(metric):
        scale = "effect" if effect else name
        if scale_of(scale) == "max_abs":
            continue
        mine = metric == name
        idx = np.flatnonzero(mine & own)
        ev = interval_evidence(scale, *(table[c].to_numpy(dtype=float)[idx]
                                        for c in ("value", "ci_low", "ci_high")),
                               confidence=confidence)
        est[idx], se_low[idx], se_high[idx] = ev.estimate, ev.se_low, ev.se_high
        df_low[idx], df_high[idx] = ev.df_low, ev.df_high
        if rows is not None:
            idx = np.flatnonzero(mine & ~own)
            with np.errstate(divide="ignore", invalid="ignore"):
                est[idx] = np.log(value[idx]) if scale_of(scale) == "log_ratio" else value[idx]
            for out, column in ((se_low, "se_low"), (se_high, "se_high"),
                                (df_low, "df_low"), (df_high, "df_high")):
                out[idx] = rows[column].to_numpy(dtype=float)[idx]
    return Evidence(est, se_low, se_high, df_low, df_high)


def _equivalence(table: pd.DataFrame, ev: Evidence, *, confidence: float, alpha: float,
                 margins: Margins, keys: tuple[str, ...], bad: np.ndarray,
                 effect: Mapping[str, float] | None = None, claims: str | None = None
                 ) -> dict[str, np.ndarray]:
    """Every row's equivalence test: ``p`` (TOST from its evidence; for equalized odds both
    components'), ``q`` (Benjamini-Hochberg over the audit's family, uninformative rows left
    out), ``bound`` (the far end of the ``1 − 2·t`` interval at that family's level ``t``) and
    ``reach`` (:func:`faircode.stats.verdicts.reach_of`); with ``claims`` (a metric: its rows
    are the pre-specified claims) also ``claim_q`` and ``claim_bound``, the same in the family
    of those rows alone (NaN elsewhere).  ``effect``: every row is a paired effect, a
    difference tested at its metric's margin (``effect[metric]``, default
    ``margins.difference``)."""
    metric = table["metric"].to_numpy(dtype=str)
    names = np.array([f"effect:{m}" if effect is not None else m for m in metric], dtype=object)

    def at(level: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return _claims_by_metric(table, ev, names, confidence=confidence, alpha=alpha,
                                 margins=margins, keys=keys, level=level, effect=effect or {})

    p_eq, _, reach = at(None)
    p_eq = np.where(bad, np.nan, p_eq)
    own = ~np.isin(metric, list(_SAME_EQUIVALENCE))
    out = {"p": p_eq, "q": _equivalence_q(table, p_eq, keys),
           "bound": np.where(bad, np.nan, at(family_level(p_eq[own], alpha=alpha))[1]),
           "reach": np.where(bad, np.nan, reach)}
    if claims is not None:
        mine = np.isin(metric, [claims, *(m for m, t in _SAME_EQUIVALENCE.items()
                                          if t == claims)])
        out["claim_q"] = np.where(mine, _equivalence_q(table, np.where(mine, p_eq, np.nan),
                                                       keys), np.nan)
        level = family_level(p_eq[mine & own], alpha=alpha)
        out["claim_bound"] = np.where(mine & ~bad, at(level)[1], np.nan)
    return out


def _claims_by_metric(table: pd.DataFrame, ev: Evidence, names: np.ndarray, *,
                      confidence: float, alpha: float, margins: Margins, keys: tuple[str, ...],
                      level: float | None = None,
                      effect: Mapping[str, float]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(equivalence_p_value, bound, reach)`` of every row from its evidence (module
    docstring)."""
    p_eq, bound, reach = (np.full(len(table), np.nan) for _ in range(3))
    for name in dict.fromkeys(names):
        idx = np.flatnonzero(names == name)
        if scale_of(str(name)) == "max_abs":
            parts = [_component(table, ev, idx, c.value, keys)
                     for c in metric_info(str(name)).components]
            claims = max_abs_claims(*parts, confidence=confidence, alpha=alpha,
                                    margins=margins, level=level)
        elif str(name).startswith("effect:"):
            margin = Margins(difference=effect.get(str(name)[7:], margins.difference),
                             ratio=margins.ratio)
            claims = gap_claims("effect", _take(ev, idx), confidence=confidence, alpha=alpha,
                                margins=margin, level=level)
        else:
            claims = gap_claims(str(name), _take(ev, idx), confidence=confidence, alpha=alpha,
                                margins=margins, level=level)
        p_eq[idx], bound[idx], reach[idx] = claims.p_equivalence, claims.bound, claims.reach
    return p_eq, bound, reach


def _component(table: pd.DataFrame, ev: Evidence, rows: np.ndarray, component: str,
               keys: tuple[str, ...]) -> Evidence:
    """The evidence of ``component`` in the cell of each of ``rows`` (NaN where it has none)."""
    position = _positions(table, keys)
    pick = np.array([position.get((*(str(table[k].iat[int(i)]) for k in keys[:-1]),
                                   component), -1) for i in rows], dtype=np.int64)
    nan = np.full(len(rows), np.nan)
    fields = [np.where(pick >= 0, getattr(ev, f)[np.maximum(pick, 0)], nan)
              for f in ("estimate", "se_low", "se_high", "df_low", "df_high")]
    return Evidence(*fields)


def _take(ev: Evidence, idx: np.ndarray) -> Evidence:
    return Evidence(*(getattr(ev, f)[idx] for f in ("estimate", "se_low", "se_high", "df_low",
                                                    "df_high")))


def _positions(table: pd.DataFrame, keys: tuple[str, ...]) -> dict[tuple[str, ...], int]:
    return {tuple(str(v) for v in r): i for i, r in enumerate(
        table.loc[:, list(keys)].itertuples(index=False, name=None))}


def _excludes(table: pd.DataFrame, null: np.ndarray) -> np.ndarray:
    low, high = table["ci_low"].to_numpy(dtype=float), table["ci_high"].to_numpy(dtype=float)
    return np.asarray((low > null) | (high < null), dtype=bool)


def _equivalence_q(table: pd.DataFrame, p_eq: np.ndarray, keys: tuple[str, ...]) -> np.ndarray:
    """BH over the equivalence family; a metric of :data:`_SAME_EQUIVALENCE` takes its twin's."""
    metric = table["metric"].to_numpy(dtype=str)
    own = ~np.isin(metric, list(_SAME_EQUIVALENCE))
    q = np.full(len(table), np.nan)
    q[own] = benjamini_hochberg(p_eq[own])
    position = _positions(table, keys)
    for i in np.flatnonzero(~own):
        head = tuple(str(table[k].iat[int(i)]) for k in keys[:-1])
        j = position.get((*head, _SAME_EQUIVALENCE[metric[i]]))
        q[i] = q[j] if j is not None else np.nan
    return q


def _notes(table: pd.DataFrame) -> pd.Series:
    """The ``note`` column as text ('' where empty, whatever dtype a reader inferred)."""
    return table["note"].astype(object).where(table["note"].notna(), "").astype(str)


def _uninformative(table: pd.DataFrame) -> np.ndarray:
    notes = _notes(table)
    degenerate = notes.map(lambda n: DEGENERATE_NOTE in n.split(";")).to_numpy(dtype=bool)
    defined = np.isfinite(table[["value", "ci_low", "ci_high"]].to_numpy(dtype=float)).all(1)
    return degenerate | ~defined


def gap_claims_table(fairness: pd.DataFrame, intersectional: pd.DataFrame, *,
                     combined: pd.DataFrame | None, confidence: float, alpha: float,
                     verdicts: VerdictsConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``fairness.csv`` (and ``intersectional.csv``'s q-values, the same family) with the
    cells' claims (module docstring); ``combined`` is ``stability.csv``'s rows at K > 1."""
    table = fairness.reset_index(drop=True)
    if combined is not None:
        table = _fold(table, combined, GAP_KEYS)
    bad = _uninformative(table)
    evidence = _row_evidence(table, combined, GAP_KEYS, confidence=confidence)
    margins = margins_of(verdicts)
    eq = _equivalence(table, evidence, confidence=confidence, alpha=alpha, margins=margins,
                      keys=GAP_KEYS, bad=bad, claims=verdicts.claims)
    tested = table.assign(p_value=np.where(bad, np.nan, table["p_value"].to_numpy(dtype=float)))
    tested, intersectional = audit_q_values(tested, intersectional, alpha=alpha)
    table["q_value"], table["significant"] = tested["q_value"], tested["significant"]
    metric = table["metric"].to_numpy(dtype=str)
    null = np.array([no_gap(m) for m in metric], dtype=float)
    gap = table["significant"].to_numpy(dtype=bool) & _excludes(table, null)
    claim = np.isfinite(eq["claim_q"])
    q_shown = np.where(claim, eq["claim_q"], eq["q"])
    table["verdict"] = gap_verdicts(informative=~bad, gap=gap,
                                    parity=np.nan_to_num(q_shown, nan=1.0) < alpha)
    table["equivalence_p_value"], table["equivalence_q_value"] = eq["p"], eq["q"]
    table["gap_bound"] = np.where(claim, eq["claim_bound"], eq["bound"])
    table["claim_q_value"] = eq["claim_q"]
    table["conservative_verdict"] = gap_verdicts(
        informative=~bad, gap=gap, parity=np.nan_to_num(eq["q"], nan=1.0) < alpha)
    table["min_margin"] = eq["reach"]
    unreachable = ~bad & (table["verdict"] == "inconclusive").to_numpy() & ~np.array(
        [bool(margins.reachable(m, r)) for m, r in zip(metric, eq["reach"], strict=True)])
    table["note"] = [_with_note(n, UNREACHABLE_NOTE) if u else n
                     for n, u in zip(_notes(table), unreachable, strict=True)]
    return table.loc[:, list(fairness_columns(combined is not None))], intersectional


def _with_note(note: str, token: str) -> str:
    return ";".join(t for t in (note, token) if t)


def effect_claims_table(effects: pd.DataFrame, *, combined: pd.DataFrame | None,
                        fairness: pd.DataFrame | None = None, confidence: float, alpha: float,
                        verdicts: VerdictsConfig,
                        margins: Mapping[str, float] | None = None) -> pd.DataFrame:
    """``effects.csv`` with the effects' claims (module docstring); ``combined`` is
    ``effects_stability.csv``'s rows at K > 1, ``fairness`` the claimed ``fairness.csv`` whose
    values become ``gap_strategy``/``gap_reference``; ``margins`` each effect metric's
    equivalence margin (default ``verdicts.margin`` for every metric).  At K = 1 a table that
    already carries its verdicts and equivalence test is returned as it is.  At K > 1 a
    per-replicate test the combination does not redo (:data:`REP0_ONLY`: the swap test) keeps
    replicate 0's value under ``rep0_<column>``."""
    table = effects.reset_index(drop=True)
    if combined is None and {"verdict", "equivalence_p_value"} <= set(table.columns):
        return table  # one replicate's effects with their own claims (faircode.evaluate.effects)
    if combined is not None:
        table = _fold(table, combined, EFFECT_KEYS)
        table = table.rename(columns={c: f"rep0_{c}" for c in REP0_ONLY if c in table})
        if fairness is not None:
            _own_values(table, fairness)
    bad = _uninformative(table) | table["note"].fillna("").astype(str).str.contains(
        "not_run").to_numpy()
    evidence = _row_evidence(table, combined, EFFECT_KEYS, confidence=confidence, effect=True)
    eq = _equivalence(table, evidence, confidence=confidence, alpha=alpha,
                      margins=margins_of(verdicts), keys=EFFECT_KEYS, bad=bad,
                      effect=dict(margins or {}))
    p_eq, q_eq = eq["p"], eq["q"]
    tested = effect_q_values(table.assign(p_value=np.where(
        bad, np.nan, table["p_value"].to_numpy(dtype=float))), alpha=alpha)
    shown = tested["significant"].to_numpy(dtype=bool) & _excludes(table, np.zeros(len(table)))
    table["q_value"], table["significant"] = tested["q_value"], shown
    table["verdict"] = effect_verdicts(
        table["ci_low"], table["ci_high"], significant=shown, informative=~bad,
        equivalent=np.nan_to_num(q_eq, nan=1.0) < alpha)
    table["equivalence_p_value"], table["equivalence_q_value"] = p_eq, q_eq
    columns = effect_columns(tuple(effects.columns), combined is not None)
    if combined is not None:
        columns = tuple(f"rep0_{c}" if c in REP0_ONLY else c for c in columns)
    return table.loc[:, [c for c in columns if c in table]]


def _own_values(effects: pd.DataFrame, fairness: pd.DataFrame) -> None:
    """Set each fairness effect's ``gap_strategy``/``gap_reference`` to ``fairness.csv``'s."""
    values = {k: v for k, v in zip(
        fairness.loc[:, list(GAP_KEYS)].astype(str).itertuples(index=False, name=None),
        fairness["value"].to_numpy(dtype=float), strict=True)}
    for column, who in (("gap_strategy", "strategy"), ("gap_reference", "reference")):
        keys = zip(effects[who].astype(str), effects["model"].astype(str),
                   effects["protected_attribute"].astype(str), effects["metric"].astype(str),
                   strict=True)
        found = [values.get(k) for k in keys]
        mask = np.array([v is not None for v in found], dtype=bool)
        effects.loc[mask, column] = [v for v in found if v is not None]


def with_family(combined: pd.DataFrame, table: pd.DataFrame,
                keys: tuple[str, ...]) -> pd.DataFrame:
    """``combined`` (``stability.csv``/``effects_stability.csv``) with the family columns of the
    claimed main table (``q_value``, ``significant``, ``equivalence_q_value``, ``verdict``)."""
    lookup = table.set_index([table[k].astype(str) for k in keys])
    rows = lookup.reindex(pd.MultiIndex.from_frame(combined.loc[:, list(keys)].astype(str)))
    out = combined.copy()
    for column in FAMILY_COLUMNS:
        if column in rows:
            out[column] = rows[column].to_numpy()
    return out

