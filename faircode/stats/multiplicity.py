"""Model multiplicity: the models as accurate as the best, their gaps, and whether a less
discriminatory alternative of equal accuracy is shown.

Black, Raghavan & Barocas ("Model multiplicity: opportunities, concerns, and solutions", FAccT
2022): many models of (nearly) equal accuracy give the same people different decisions and the
groups different gaps, so a *less discriminatory alternative* of equal accuracy -- the standard
of US disparate-impact law -- may exist beside the model a developer picked.  Given the test
decisions of every fitted model of an audit (:mod:`faircode.evaluate.arbitrariness` collects
them: every strategy x family x training replicate sharing the test rows, and every bagged
member), this module answers on rows that did not pick the models:

1. the test rows are split in two halves (:func:`held_out_split`, stratified on the label, by
   unit where units repeat); on the **selection half** each model's accuracy and parity gap
   (:func:`model_scores`) define **the set**: the informative models (decisions not degenerate,
   :func:`faircode.stats.operating.is_degenerate`'s rule) whose accuracy is within the tolerance
   of the best one's (:func:`within_tolerance`); its gaps' range is reported;
2. the most accurate model of the set (the **incumbent**) and the set's model closest to parity
   (the **alternative**) are picked there;
3. on the **held-out half** the two are compared as paired decisions on the same rows
   (:func:`faircode.stats.paired.paired_comparison`, the paired effects' engine): the change in
   distance from parity ``Δ = |gap_alt| − |gap_inc|`` with its interval and the test of
   ``Δ = 0``, and the change in accuracy with its equivalence test at ``±tolerance`` (two
   one-sided tests by interval inclusion).  A less discriminatory alternative of equal accuracy
   is **shown** where ``Δ``'s interval lies below 0 and its test rejects, *and* the accuracy
   difference is shown to lie inside the tolerance (the caller applies both at its family's
   level: :func:`alternative_shown`).

Design decisions
----------------
* **Selection and test on disjoint rows.**  The alternative is the set's least-gap model *on the
  selection half*: a minimum over many noisy gaps is biased towards 0 (the winner's curse), so
  testing it on the rows that chose it would find an alternative where none exists.  Given the
  selection half, the held-out rows are an independent sample and the paired test holds its
  level (``bench/multiplicity_size.py``: the size where every model of the set has the same
  gap, the power where one has none).
* **An intersection-union test.**  "Fairer" and "as accurate" must both be shown; each test at
  level alpha, the claim needs both, so its size is at most alpha without adjustment.  A failed
  equivalence test (too few rows to show accuracy within ``±tolerance``) is no evidence that the
  alternative is less accurate: the claim is then not shown, and the row says which part failed.
* **Degenerate models are no alternative**: a model that decides (almost) everyone alike has a
  gap near 0 and the majority class's accuracy; it serves no decision, so it is left out of the
  set by the benchmark's own rule.
* **The gap is the parity gap** (:data:`GAP`, the report's metric by default): the test is of
  one metric, named in every row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.config import DegenerateConfig
from faircode.core.errors import describe
from faircode.core.metrics import Metric
from faircode.stats._paired_counts import PERFORMANCE_EFFECTS
from faircode.stats.paired import EffectResult, paired_comparison

__all__ = ["ACCURACY", "GAP", "AlternativeTest", "ModelScores", "alternative_shown",
           "alternative_test", "held_out_split", "model_scores", "within_tolerance"]

GAP = Metric.DEMOGRAPHIC_PARITY
"""The gap the set's models are compared on."""
ACCURACY = PERFORMANCE_EFFECTS[0]
"""The paired engine's name of the accuracy effect."""

Floats = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ModelScores:
    """Each model's accuracy, parity gap (disadvantaged minus advantaged selection rate),
    selection rate and balanced accuracy on some rows, and whether its decisions are informative
    (not degenerate)."""

    accuracy: Floats
    gap: Floats
    selection_rate: Floats
    balanced_accuracy: Floats
    informative: NDArray[np.bool_]


def _rate(num: Floats, den: Floats) -> Floats:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def model_scores(decisions: ArrayLike, y_true: ArrayLike, disadvantaged: ArrayLike, *,
                 degenerate: DegenerateConfig) -> ModelScores:
    """The :class:`ModelScores` of ``decisions`` (``(M, n)`` 0/1, oriented: 1 = favourable) on
    rows with oriented labels ``y_true`` and the 0/1 ``disadvantaged`` mask (vectorised over the
    models)."""
    d = np.asarray(decisions)
    if d.ndim != 2 or not np.isin(d, (0, 1)).all():
        raise ValueError(f"decisions: expected a (models, rows) array of 0/1, got "
                         f"{describe(decisions)}")
    y = checks.as_binary("y_true", y_true).astype(bool)
    mask = checks.as_binary("disadvantaged", disadvantaged).astype(bool)
    checks.check_lengths(y_true=y, disadvantaged=mask)
    if d.shape[1] != y.size:
        raise ValueError(f"decisions: expected {y.size} rows per model, got {d.shape[1]}")
    dec = d.astype(bool)
    n = float(y.size)
    accuracy = _rate((dec == y).sum(axis=1).astype(float), np.full(len(d), n))
    selection = _rate(dec.sum(axis=1).astype(float), np.full(len(d), n))
    gap = (_rate(dec[:, mask].sum(axis=1).astype(float), np.full(len(d), float(mask.sum())))
           - _rate(dec[:, ~mask].sum(axis=1).astype(float), np.full(len(d), float((~mask).sum()))))
    tpr = _rate((dec & y).sum(axis=1).astype(float), np.full(len(d), float(y.sum())))
    tnr = _rate((~dec & ~y).sum(axis=1).astype(float), np.full(len(d), float((~y).sum())))
    balanced = (tpr + tnr) / 2.0
    informative = (np.isfinite(selection) & np.isfinite(balanced)
                   & (selection >= degenerate.min_selection_rate)
                   & (selection <= degenerate.max_selection_rate)
                   & (np.abs(balanced - 0.5) > degenerate.balanced_accuracy_margin))
    return ModelScores(accuracy, gap, selection, balanced, informative)


def within_tolerance(scores: ModelScores, *, tolerance: float) -> NDArray[np.bool_]:
    """The set: the informative models whose accuracy is at least the best informative model's
    minus ``tolerance`` (none without an informative model)."""
    ok = scores.informative & np.isfinite(scores.accuracy)
    if not ok.any():
        return ok
    return ok & (scores.accuracy >= scores.accuracy[ok].max() - tolerance)


def held_out_split(y_true: ArrayLike, *, seed: int | np.random.SeedSequence,
                   units: ArrayLike | None = None) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Split rows into (selection, held-out) halves, sorted positions: within each label (units:
    within each unit's "has a label-1 row" pattern) a seeded permutation, its first half (rounded
    down) selects; every row of a unit falls in one half."""
    y = checks.as_binary("y_true", y_true).astype(np.int64)
    rng = np.random.default_rng(seed)
    if units is None:
        ids, inverse = np.arange(y.size), np.arange(y.size)
    else:
        ids, inverse = np.unique(np.asarray(units), return_inverse=True)
        inverse = inverse.reshape(-1)
        checks.check_lengths(y_true=y, units=inverse)
    stratum = np.zeros(len(ids), dtype=np.int64)
    np.maximum.at(stratum, inverse, y)
    select_unit = np.zeros(len(ids), dtype=bool)
    for s in (0, 1):
        members = np.flatnonzero(stratum == s)
        chosen = rng.permutation(members)[: members.size // 2]
        select_unit[chosen] = True
    select = select_unit[inverse]
    return np.flatnonzero(select), np.flatnonzero(~select)


@dataclass(frozen=True, slots=True)
class AlternativeTest:
    """The set of one attribute and its test (module docstring).

    ``incumbent``/``alternative`` index the models (-1: none); ``gap_min``/``gap_max`` span the
    set's gaps on the selection half; ``gap_effect`` is ``Δ = |gap_alt| − |gap_inc|`` on the
    held-out half and ``accuracy_effect`` the accuracy difference with its equivalence test at
    ``±tolerance`` (None without a distinct alternative); ``note`` why there is no test.
    """

    selection: ModelScores
    held_out: ModelScores
    in_set: NDArray[np.bool_]
    incumbent: int
    alternative: int
    gap_min: float
    gap_max: float
    gap_effect: EffectResult | None
    accuracy_effect: EffectResult | None
    note: str


def _pick(scores: ModelScores, in_set: NDArray[np.bool_]) -> tuple[int, int]:
    """(incumbent, alternative): the set's most accurate model and its model closest to parity
    (ties: the more accurate, then the first)."""
    members = np.flatnonzero(in_set)
    accuracy, distance = scores.accuracy[members], np.abs(scores.gap[members])
    incumbent = int(members[np.lexsort((members, -accuracy))[0]])
    alternative = int(members[np.lexsort((members, -accuracy, distance))[0]])
    return incumbent, alternative


def alternative_test(
    decisions: ArrayLike,
    y_true: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    select: ArrayLike,
    held_out: ArrayLike,
    tolerance: float,
    margin: float,
    degenerate: DegenerateConfig,
    seed: int | np.random.SeedSequence,
    units: ArrayLike | None = None,
    n_resamples: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
) -> AlternativeTest:
    """The set of ``decisions`` (``(M, n)`` 0/1, oriented) on the ``select`` rows and the paired
    test of its alternative against its incumbent on the ``held_out`` rows (module docstring);
    ``margin`` is the gap effect's equivalence margin, ``seed`` the paired test's, ``units`` one
    id per row."""
    d = np.asarray(decisions)
    y = checks.as_binary("y_true", y_true)
    mask = checks.as_binary("disadvantaged", disadvantaged).astype(bool)
    sel, held = np.asarray(select, dtype=np.int64), np.asarray(held_out, dtype=np.int64)
    scores = model_scores(d[:, sel], y[sel], mask[sel], degenerate=degenerate)
    later = model_scores(d[:, held], y[held], mask[held], degenerate=degenerate)
    in_set = within_tolerance(scores, tolerance=tolerance)
    if not in_set.any():
        return AlternativeTest(scores, later, in_set, -1, -1, np.nan, np.nan, None, None,
                               "no informative model")
    gaps = scores.gap[in_set]
    incumbent, alternative = _pick(scores, in_set)
    span = (float(gaps.min()), float(gaps.max()))
    if alternative == incumbent:
        return AlternativeTest(scores, later, in_set, incumbent, -1, *span, None, None,
                               "the most accurate model is the set's closest to parity")
    effects, _ = paired_comparison(
        y[held], d[alternative, held], d[incumbent, held], mask[held], seed=seed,
        units=None if units is None else np.asarray(units)[held], n_resamples=n_resamples,
        n_permutations=n_permutations, confidence=confidence,
        margins={GAP.value: margin, ACCURACY: tolerance})
    by_metric = {e.metric: e for e in effects}
    return AlternativeTest(scores, later, in_set, incumbent, alternative, *span,
                           by_metric[GAP.value], by_metric[ACCURACY], "")


def alternative_shown(gap_q: ArrayLike, gap_high: ArrayLike, accuracy_q: ArrayLike, *,
                      alpha: float) -> NDArray[np.bool_]:
    """Whether a less discriminatory alternative of equal accuracy is shown: the gap effect's
    test rejects at ``alpha`` (its q, or p for one test) with the interval wholly below 0, and
    the accuracy equivalence test rejects (NaN: not shown)."""
    q_gap, high, q_acc = (np.asarray(x, dtype=np.float64) for x in (gap_q, gap_high, accuracy_q))
    return (np.nan_to_num(q_gap, nan=1.0) < alpha) & (np.nan_to_num(high, nan=1.0) < 0.0) & (
        np.nan_to_num(q_acc, nan=1.0) < alpha)
