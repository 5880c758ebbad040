"""What a mitigation buys: the paired effects of every comparison of strategies, per audit.

From the scored cells of one replicate (their oriented test decisions,
:attr:`faircode.evaluate.score.CellResult.decided`), :func:`score_effects` computes, for every
model family x protected attribute x effect metric
(:data:`faircode.stats.paired.EFFECT_METRICS`: the eight fairness metrics, then accuracy and
balanced accuracy), the paired effect of each comparison of :data:`COMPARISONS` -- every
mitigated strategy against S0 (S1-S4 vs S0) and the residual floor, S3 and S4 against S2 --
with :func:`faircode.stats.paired.paired_comparison`: ``Δ = |gap_A| − |gap_B|`` (fairness;
negative = A closer to parity) or ``A − B`` (accuracy), the paired signed box interval, the
swap test's p-value, both strategies' own values, the sizes and the design effect.  That is
``effects.csv`` at K = 1.  With training replicates each replicate's effects are combined into
one estimate per row (:func:`faircode.evaluate.combine.combine_effects`,
``effects_stability.csv``), the number ``effects.csv`` then carries
(:mod:`faircode.evaluate.claims`).

Design decisions
----------------
* **Seeds by comparison, not by grid cell**: comparison ``c`` (index in :data:`COMPARISONS`) of
  family ``m`` on attribute ``a`` draws from ``child_seed(master, Stream.EFFECTS, c, m, a)``,
  ``master`` the replicate's master seed (:func:`faircode.core.seeds.replicate_seed`), so
  replicate 0 (``effects.csv``) is the same whatever ``run.seeds`` is and no number depends on
  the worker count.
* **Units respected**: with ``dataset.unit`` the test rows' unit ids go to the engine (unit
  bootstrap, unit-level swap test, ``design_effect``), as for every other table.
* **One Benjamini-Hochberg family per audit, of its own** (:func:`effect_q_values`): every
  effect's swap-test p-value, apart from the gap tables' family (an effect is a different
  question from a gap).  ``tpr_gap``'s effect is equal opportunity's -- the same distance, so
  the same ``Δ``, the same swap draws and the same p-value -- and is counted once: it is left
  out of ``m`` and takes ``equal_opportunity_diff``'s q.  The other metrics of one comparison
  test the same exchangeability null with different statistics; each is counted (conservative).
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
from faircode.core.cells import STRATEGY_CODES, ModelFamily, Strategy
from faircode.core.config import StatsConfig
from faircode.core.errors import DataError
from faircode.core.seeds import Stream, child_seed
from faircode.evaluate.score import CellResult
from faircode.stats.operating import DEGENERATE_NOTE
from faircode.stats.paired import (
    EFFECT_METRICS,
    PairedDraws,
    interval_method,
    paired_comparison,
)
from faircode.stats.resampling import benjamini_hochberg

__all__ = [
    "COMPARISONS",
    "EFFECT_COLUMNS",
    "NOT_RUN_NOTE",
    "SAME_TEST",
    "ReplicateEffects",
    "comparison_code",
    "effect_q_values",
    "score_effects",
]

S = Strategy
COMPARISONS: tuple[tuple[Strategy, Strategy], ...] = (
    (S.UNAWARENESS, S.BASELINE), (S.UNAWARENESS_PROXY_REMOVAL, S.BASELINE),
    (S.IN_PROCESSING, S.BASELINE), (S.POST_PROCESSING, S.BASELINE),
    (S.IN_PROCESSING, S.UNAWARENESS_PROXY_REMOVAL),
    (S.POST_PROCESSING, S.UNAWARENESS_PROXY_REMOVAL),
)
"""``(strategy, reference)`` in result (and seed-key) order: S1-S4 vs S0, then S3, S4 vs S2."""

NOT_RUN_NOTE = "not_run"
"""The note of a comparison one of whose cells was skipped by the fit step."""

SAME_TEST: dict[str, str] = {"tpr_gap": "equal_opportunity_diff"}
"""An effect whose test is another's (same Δ, same draws): counted once, through its twin."""

KEYS = ("strategy", "reference", "model", "protected_attribute", "metric")
EFFECT_COLUMNS: tuple[str, ...] = (
    "audit", *KEYS, "value", "ci_low", "ci_high", "ci_method", "p_value", "q_value",
    "significant", "gap_strategy", "gap_reference", "n_disadvantaged", "n_advantaged",
    "n_units", "design_effect", "note",
)
"""Columns of ``effects.csv`` (one row per comparison x model x attribute x effect metric)."""

def comparison_code(strategy: str, reference: str) -> str:
    """``S3-S2`` for ``in_processing`` against ``unawareness_proxy_removal``."""
    return f"{STRATEGY_CODES[Strategy(strategy)]}-{STRATEGY_CODES[Strategy(reference)]}"


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


def _unusable(a: CellResult | None, b: CellResult | None) -> str:
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
    rows: list[dict[str, Any]] = []
    blocks: list[PairedDraws | None] = []
    for c, (strategy, reference) in enumerate(COMPARISONS):
        for family in families:
            m = list(ModelFamily).index(family)
            a, b = cells.get((strategy.value, family.value)), cells.get((reference.value,
                                                                          family.value))
            why = _unusable(a, b)
            for k, attribute in enumerate(data.manifest.protected_attributes):
                mask = np.asarray(data.disadvantaged[attribute.name][test], dtype=bool)
                label = {"strategy": strategy.value, "reference": reference.value,
                         "model": family.value, "protected_attribute": attribute.name}
                if why:
                    rows += _nan_rows(label, why, mask=mask, n_units=n_units)
                    blocks.append(None)
                    continue
                assert a is not None and b is not None and a.decided and b.decided
                if not np.array_equal(a.decided.y_fav, b.decided.y_fav):
                    raise DataError(f"{data.manifest.name}: {strategy.value} and "
                                    f"{reference.value} ({family.value}) were scored on "
                                    "different test rows")
                effects, draws = paired_comparison(
                    a.decided.y_fav, a.decided.yhat_fav, b.decided.yhat_fav, mask,
                    seed=child_seed(seed, Stream.EFFECTS, c, m, k), units=units,
                    n_resamples=stats.n_resamples, n_permutations=stats.n_permutations,
                    confidence=stats.confidence)
                rows += [{**label, "metric": e.metric, "value": e.value, "ci_low": e.ci_low,
                          "ci_high": e.ci_high, "ci_method": e.ci_method,
                          "p_value": e.p_value, "gap_strategy": e.gap_a,
                          "gap_reference": e.gap_b, "n_disadvantaged": e.n_disadvantaged,
                          "n_advantaged": e.n_advantaged, "n_units": e.n_units,
                          "design_effect": e.design_effect, "note": e.note} for e in effects]
                blocks.append(draws)
    frame = pd.DataFrame(rows, columns=[c for c in EFFECT_COLUMNS
                                        if c not in ("audit", "q_value", "significant")])
    frame.insert(0, "audit", data.manifest.name)
    table = effect_q_values(frame.reindex(columns=list(EFFECT_COLUMNS)), alpha=stats.alpha)
    return ReplicateEffects(replicate, seed, table, tuple(blocks) if keep_draws else (),
                            time.perf_counter() - started)


def _nan_rows(label: dict[str, str], note: str, *, mask: np.ndarray,
              n_units: int) -> list[dict[str, Any]]:
    """One block of undefined effects: NaN numbers, the group sizes, ``note``."""
    nan = float("nan")
    return [{**label, "metric": metric, "value": nan, "ci_low": nan, "ci_high": nan,
             "ci_method": interval_method(metric), "p_value": nan, "gap_strategy": nan,
             "gap_reference": nan, "n_disadvantaged": int(mask.sum()),
             "n_advantaged": int((~mask).sum()), "n_units": n_units, "design_effect": nan,
             "note": note} for metric in EFFECT_METRICS]


def effect_q_values(table: pd.DataFrame, *, alpha: float) -> pd.DataFrame:
    """A copy of ``table`` with the family's BH ``q_value`` and ``significant`` (q < alpha).

    The family is every non-NaN ``p_value`` whose metric is not in :data:`SAME_TEST`; such a
    metric takes its twin's q (same strategy, reference, model and attribute).
    """
    out = table.copy()
    metric = out["metric"].to_numpy(dtype=str)
    own = ~np.isin(metric, list(SAME_TEST))
    q = np.full(len(out), np.nan)
    q[own] = benjamini_hochberg(out["p_value"].to_numpy(dtype=float)[own])
    block = [tuple(row) for row in out.loc[:, list(KEYS[:-1])].itertuples(index=False)]
    lookup = {(b, m): v for b, m, v in zip(block, metric, q, strict=True)}
    for i in np.flatnonzero(~own):
        q[i] = lookup.get((block[i], SAME_TEST[metric[i]]), np.nan)
    out["q_value"] = q
    out["significant"] = np.nan_to_num(q, nan=1.0) < alpha
    return out
