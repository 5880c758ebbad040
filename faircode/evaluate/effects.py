"""What a mitigation buys: the paired effects of every comparison of strategies, per audit.

From the scored cells of one replicate (their oriented test decisions,
:attr:`faircode.evaluate.score.CellResult.decided`), :func:`score_effects` computes, for every
model family x protected attribute x effect metric
(:data:`faircode.stats.paired.EFFECT_METRICS`: the eight fairness metrics, then accuracy and
balanced accuracy), the paired effect of each comparison of :data:`COMPARISONS` (each
strategy's ``against`` in :data:`faircode.core.cells.STRATEGY_TABLE`: every mitigated strategy
against S0, S1-S4 vs S0, and the residual floor, S3 and S4 against S2) --
with :func:`faircode.stats.paired.paired_comparisons`: ``Δ = |gap_A| − |gap_B|`` (fairness;
negative = A closer to parity) or ``A − B`` (accuracy, balanced accuracy), its paired interval,
the test of ``Δ = 0`` that inverts it, the equivalence test at the metric's margin, the swap
test of exchangeable decisions, the verdict (:func:`faircode.stats.verdicts.effect_verdicts`), both
strategies' own values, the sizes and the design effect.  That is ``effects.csv`` at K = 1.
With training replicates each replicate's effects are combined into one estimate per row
(:func:`faircode.evaluate.combine.combine_effects`, ``effects_stability.csv``), the number
``effects.csv`` then carries (:mod:`faircode.evaluate.claims`).

Design decisions
----------------
* **Seeds by comparison, not by grid cell**: comparison ``c`` (its own seed key
  :attr:`~faircode.core.cells.Comparison.stream`, never its place in :data:`COMPARISONS`) of
  family ``m`` on attribute ``a`` draws from ``child_seed(master, Stream.EFFECTS, c, m, a)``,
  ``master`` the replicate's master seed (:func:`faircode.core.seeds.replicate_seed`), so
  replicate 0 (``effects.csv``) is the same whatever ``run.seeds`` is and no number depends on
  the worker count.
* **Units respected**: with ``dataset.unit`` the test rows' unit ids go to the engine (unit
  bootstrap, unit-level swap test, ``design_effect``), as for every other table.
* **One Benjamini-Hochberg family per audit and test, of its own** (:func:`effect_q_values`):
  every effect's ``p_value`` (the test of ``Δ = 0``) is one family, apart from the gap tables'
  (an effect is a different question from a gap); the equivalence p-values another, the swap
  p-values a third.  ``tpr_gap``'s effect is equal opportunity's -- the same distance, so the
  same ``Δ``, the same draws and the same p-values -- and is counted once: it is left out of
  ``m`` and takes ``equal_opportunity_diff``'s q (:data:`SAME_TEST`, each metric's
  ``same_value`` in :data:`faircode.core.metrics.METRIC_TABLE`).  ``significant`` is
  ``q_value < alpha`` *and* the interval excluding 0 (a test that inverts the interval at
  ``1 − alpha`` already implies the second; at another ``stats.confidence`` the interval still
  has the last word).
* **Margins** (``stats.effect_margin`` for the fairness effects, a change of distance from
  parity -- for disparate impact of ``|ratio − 1|`` --, ``stats.cost_margin`` for accuracy and
  balanced accuracy): ``equivalence_margin`` says which one a row was tested at.
* **Nothing uninformative is a number**: a comparison with a skipped cell (note
  :data:`NOT_RUN_NOTE`) or a degenerate one (``degenerate_decisions``) has NaN rows with that
  note, left out of the family; the group sizes are still given.
* **Training variance**: replicate ``k``'s effects pair the replicate's own decisions of both
  strategies on its own test rows (:func:`score_effects` at its master seed); replicate 0's are
  the evaluate step's, never repeated.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import COMPARISONS, ModelFamily, strategy_info
from faircode.core.config import StatsConfig
from faircode.core.errors import DataError
from faircode.core.metrics import table_of
from faircode.core.seeds import Stream, child_seed
from faircode.evaluate.score import CellResult
from faircode.stats.operating import DEGENERATE_NOTE
from faircode.stats.paired import (
    EFFECT_METRICS,
    PERFORMANCE_EFFECTS,
    Comparison,
    PairedDraws,
    interval_method,
    paired_comparisons,
)
from faircode.stats.resampling import benjamini_hochberg
from faircode.stats.verdicts import effect_verdicts

__all__ = [
    "COMPARISONS",
    "EFFECT_COLUMNS",
    "NOT_RUN_NOTE",
    "SAME_TEST",
    "ReplicateEffects",
    "comparison_code",
    "effect_margins",
    "effect_q_values",
    "score_effects",
    "unusable",
]

NOT_RUN_NOTE = "not_run"
"""The note of a comparison one of whose cells was skipped by the fit step."""

SAME_TEST: dict[str, str] = {m.name: m.same_value.value for m in table_of("binary")
                             if m.same_value is not None}
"""An effect whose test is another's (same Δ, same draws): counted once, through its twin."""

KEYS = ("strategy", "reference", "model", "protected_attribute", "metric")
EFFECT_COLUMNS: tuple[str, ...] = (
    "audit", *KEYS, "value", "ci_low", "ci_high", "ci_method", "p_value", "q_value",
    "significant", "verdict", "equivalence_margin", "equivalence_p_value",
    "equivalence_q_value", "swap_p_value", "swap_q_value", "gap_strategy", "gap_reference",
    "n_disadvantaged", "n_advantaged", "n_units", "design_effect", "note",
)
"""Columns of ``effects.csv`` (one row per comparison x model x attribute x effect metric)."""

_FAMILY_COLUMNS = ("q_value", "significant", "verdict", "equivalence_q_value", "swap_q_value")
"""The columns :func:`effect_q_values` adds (the rest come from the engine)."""


def effect_margins(stats: StatsConfig) -> dict[str, float]:
    """Each effect metric's equivalence margin: ``cost_margin`` for accuracy and balanced
    accuracy, ``effect_margin`` for every fairness effect."""
    return {m: stats.cost_margin if m in PERFORMANCE_EFFECTS else stats.effect_margin
            for m in EFFECT_METRICS}


def comparison_code(strategy: str, reference: str) -> str:
    """``S3-S2`` for ``in_processing`` against ``unawareness_proxy_removal``."""
    return f"{strategy_info(strategy).code}-{strategy_info(reference).code}"


@dataclass(frozen=True, slots=True)
class ReplicateEffects:
    """One replicate's effect rows (``effects.csv`` columns, its own q-values) and, when kept,
    the paired draws of each comparison x model x attribute block of rows (None where the
    block is NaN), in row order; ``seconds`` the time the effects took."""

    replicate: int
    seed: int
    table: pd.DataFrame
    draws: tuple[PairedDraws | None, ...] = ()
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.draws and len(self.draws) * len(EFFECT_METRICS) != len(self.table):
            raise ValueError(f"ReplicateEffects: draws: expected one per block of "
                             f"{len(EFFECT_METRICS)} rows ({len(self.table)} rows), got "
                             f"{len(self.draws)}")


def unusable(a: CellResult | None, b: CellResult | None) -> str:
    """Why a comparison of cells ``a`` and ``b`` has no effect ("" when it has one)."""
    if a is None or b is None or a.skipped or b.skipped or a.decided is None \
            or b.decided is None:
        return NOT_RUN_NOTE
    return DEGENERATE_NOTE if a.degenerate or b.degenerate else ""


def score_effects(
    data: PreparedAudit,
    results: Sequence[CellResult],
    *,
    seed: int,
    stats: StatsConfig,
    replicate: int = 0,
    keep_draws: bool = False,
) -> ReplicateEffects:
    """Every paired effect of one replicate's scored cells on ``data``'s test rows.

    ``results`` are the replicate's cells (any order), scored on ``data`` (for a replicate, its
    own test rows); ``seed`` its master seed.  ``keep_draws`` keeps each block's paired draws
    for :func:`combine`.  q-values are the replicate's own family (:func:`effect_q_values`).
    """
    started = time.perf_counter()
    test = data.test_index
    units = None if data.unit is None else np.asarray(data.unit)[test]
    n_units = len(test) if units is None else int(np.unique(units).size)
    cells = {(str(r.strategy), str(r.family)): r for r in results}
    families = [f for f in ModelFamily if any(k[1] == f.value for k in cells)]
    margins = effect_margins(stats)
    labels: list[dict[str, str]] = []
    notes: list[str] = []
    masks: list[np.ndarray] = []
    todo: list[Comparison] = []
    for comparison in COMPARISONS:
        strategy, reference = comparison.strategy, comparison.reference
        for family in families:
            m = list(ModelFamily).index(family)
            a, b = cells.get((strategy.value, family.value)), cells.get((reference.value,
                                                                          family.value))
            why = unusable(a, b)
            for k, attribute in enumerate(data.manifest.protected_attributes):
                mask = np.asarray(data.disadvantaged[attribute.name][test], dtype=bool)
                labels.append({"strategy": strategy.value, "reference": reference.value,
                               "model": family.value, "protected_attribute": attribute.name})
                notes.append(why)
                masks.append(mask)
                if why:
                    continue
                assert a is not None and b is not None and a.decided and b.decided
                if not np.array_equal(a.decided.y_fav, b.decided.y_fav):
                    raise DataError(f"{data.manifest.name}: {strategy.value} and "
                                    f"{reference.value} ({family.value}) were scored on "
                                    "different test rows")
                todo.append(Comparison(a.decided.y_fav, a.decided.yhat_fav, b.decided.yhat_fav,
                                       mask, child_seed(seed, Stream.EFFECTS, comparison.stream,
                                                        m, k), units))
    done = iter(paired_comparisons(todo, n_resamples=stats.n_resamples,
                                   n_permutations=stats.n_permutations,
                                   confidence=stats.confidence, margins=margins))
    rows: list[dict[str, Any]] = []
    blocks: list[PairedDraws | None] = []
    for label, why, mask in zip(labels, notes, masks, strict=True):
        if why:
            rows += _nan_rows(label, why, mask=mask, n_units=n_units)
            blocks.append(None)
            continue
        effects, draws = next(done)
        rows += [{**label, "metric": e.metric, "value": e.value, "ci_low": e.ci_low,
                  "ci_high": e.ci_high, "ci_method": e.ci_method, "p_value": e.p_value,
                  "equivalence_margin": margins[e.metric],
                  "equivalence_p_value": e.equivalence_p_value,
                  "swap_p_value": e.swap_p_value, "gap_strategy": e.gap_a,
                  "gap_reference": e.gap_b, "n_disadvantaged": e.n_disadvantaged,
                  "n_advantaged": e.n_advantaged, "n_units": e.n_units,
                  "design_effect": e.design_effect, "note": e.note} for e in effects]
        blocks.append(draws)
    frame = pd.DataFrame(rows, columns=[c for c in EFFECT_COLUMNS
                                        if c not in ("audit", *_FAMILY_COLUMNS)])
    frame.insert(0, "audit", data.manifest.name)
    table = effect_q_values(frame.reindex(columns=list(EFFECT_COLUMNS)), alpha=stats.alpha)
    return ReplicateEffects(replicate, seed, table, tuple(blocks) if keep_draws else (),
                            time.perf_counter() - started)


def _nan_rows(label: dict[str, str], note: str, *, mask: np.ndarray,
              n_units: int) -> list[dict[str, Any]]:
    """One block of undefined effects: NaN numbers, the group sizes, ``note``."""
    nan = float("nan")
    return [{**label, "metric": metric, "value": nan, "ci_low": nan, "ci_high": nan,
             "ci_method": interval_method(metric), "p_value": nan, "equivalence_margin": nan,
             "equivalence_p_value": nan, "swap_p_value": nan, "gap_strategy": nan,
             "gap_reference": nan, "n_disadvantaged": int(mask.sum()),
             "n_advantaged": int((~mask).sum()), "n_units": n_units, "design_effect": nan,
             "note": note} for metric in EFFECT_METRICS]


def effect_q_values(table: pd.DataFrame, *, alpha: float) -> pd.DataFrame:
    """A copy of ``table`` with each test's BH q-values, ``significant`` and ``verdict``.

    Each of ``p_value``, ``equivalence_p_value`` and ``swap_p_value`` is its own family: every
    non-NaN p whose metric is not in :data:`SAME_TEST`; such a metric takes its twin's q (same
    strategy, reference, model and attribute).  ``significant`` is ``q_value < alpha`` with an
    interval excluding 0; ``verdict`` is :func:`faircode.stats.verdicts.effect_verdicts`
    (equivalent: ``equivalence_q_value < alpha``; informative: a defined value without the
    notes of a skipped or degenerate cell).
    """
    out = table.copy()
    for column, q_column in (("p_value", "q_value"), ("equivalence_p_value",
                                                       "equivalence_q_value"),
                             ("swap_p_value", "swap_q_value")):
        if column in out:  # at K > 1 the swap test is replicate 0's (rep0_swap_*), kept as is
            out[q_column] = _family_q(out, column)
    low, high = out["ci_low"].to_numpy(dtype=float), out["ci_high"].to_numpy(dtype=float)
    q = out["q_value"].to_numpy(dtype=float)
    out["significant"] = (np.nan_to_num(q, nan=1.0) < alpha) & ((low > 0) | (high < 0))
    notes = out["note"].fillna("").astype(str)
    blocked = notes.str.contains(DEGENERATE_NOTE) | notes.str.contains(NOT_RUN_NOTE)
    equivalence_q = out.get("equivalence_q_value", pd.Series(np.nan, index=out.index))
    out["verdict"] = effect_verdicts(
        low, high, significant=out["significant"].to_numpy(dtype=bool),
        equivalent=np.nan_to_num(equivalence_q.to_numpy(dtype=float), nan=1.0) < alpha,
        informative=out["value"].notna().to_numpy() & ~blocked.to_numpy())
    return out


def _family_q(table: pd.DataFrame, column: str) -> np.ndarray:
    """BH q of ``column`` over the table, :data:`SAME_TEST` metrics through their twin."""
    metric = table["metric"].to_numpy(dtype=str)
    own = ~np.isin(metric, list(SAME_TEST))
    q = np.full(len(table), np.nan)
    q[own] = benjamini_hochberg(table[column].to_numpy(dtype=float)[own])
    block = [tuple(row) for row in table.loc[:, list(KEYS[:-1])].itertuples(index=False)]
    lookup = {(b, m): v for b, m, v in zip(block, metric, q, strict=True)}
    for i in np.flatnonzero(~own):
        q[i] = lookup.get((block[i], SAME_TEST[metric[i]]), np.nan)
    return q
