"""Calibration by group: observed outcome rate against score, per group, and the gap at equal score.

Wherever decisions come with a score — a deployed tool's 1–10 decile, a model's predicted
probability — the COMPAS debate's second view applies: *calibration within groups* (Dieterich et
al. 2016, the vendor's rebuttal; Flores et al. 2016; Chouldechova 2017; Kleinberg et al. 2017).
At equal score, is the outcome as frequent in one group as in the other?  ProPublica's view
(error-rate balance, :mod:`faircode.stats.groups`) and this one cannot both hold when base rates
differ, so an audit shows both.

* :func:`calibration_table` — per group and score bin: rows, label-1 rows, mean score, observed
  label-1 rate and its Wilson interval (a reliability diagram in numbers).
* :func:`calibration_gap` — one signed number per attribute with a stratified-bootstrap interval
  and a within-bin permutation test.
* :func:`faircode.stats.calibration_regression.calibration_regression` — a bin-free check by
  logistic regression.

Design decisions
----------------
* **Orientation: the score predicts label 1**, the target's label 1 (COMPAS: re-arrest, which
  the decile predicts; a model: its ``P(y = 1)``); the observed rate is the label-1 rate,
  favourable or not.  ``gap > 0`` means that at equal score the disadvantaged group has label 1
  *more* often than the advantaged group: the score under-states its label-1 rate relative to
  the advantaged group.  With ``favourable: 0`` (label 1 unfavourable, COMPAS) a *negative* gap
  puts the disadvantaged group at a disadvantage (scored riskier than the advantaged group at
  the same observed rate); with ``favourable: 1`` a positive one does.  Multiply by −1 when
  ``favourable`` is 1 to read it in the fairness table's convention (negative = worse off).
* **Two scales, declared, not guessed** (:data:`SCALES`).  ``ordinal``: an integer scale (deciles,
  points); one bin per distinct value, so "equal score" is exact.  ``probability``: scores in
  [0, 1]; ``binning="quantile"`` (default: bin edges at the pooled scores' quantiles, so every bin
  holds about the same number of rows and the tails, where model probabilities are sparse, are
  not left with a handful of rows each) or ``"uniform"`` (fixed width ``1/n_bins``, the classic
  reliability diagram; thin tails).  Edges are computed once on the pooled rows of the compared
  groups, so both groups share every bin; tied quantile edges are merged (fewer bins, noted).
* **The gap** is the within-bin outcome difference, averaged over bins with Mantel–Haenszel
  weights: ``gap = Σ_k w_k (x_Dk / n_Dk − x_Ak / n_Ak) / Σ_k w_k``,
  ``w_k = n_Dk · n_Ak / (n_Dk + n_Ak)`` (the common risk difference of Greenland & Robins 1985).
  A bin without rows of both groups has weight 0 (dropped, and counted).  Weights proportional
  to the bin's size would let a bin with 2 rows of one group and 2,000 of the other weigh as
  much as a balanced bin, and such bins are common at the tails (a model's probabilities, the
  COMPAS deciles 9–10 of Caucasian defendants).  On calibrated synthetic scores with little
  overlap at the tails (``bench/calibration_weights.py``: 20 seeds, n = 20,000, 10 quantile bins)
  ``gap − score_gap`` had standard deviation 0.025 (largest 0.061) with size weights and 0.010
  (largest 0.025) with MH weights.  When the within-bin difference is the same in every bin
  both weightings estimate it.  For an ordinal scale the
  gap is the difference at exactly equal score.  For probabilities the groups' mean scores may
  differ inside a bin; ``score_gap`` (the same average of ``s̄_Dk − s̄_Ak``) reports how much, so
  the reader can tell a calibration difference from bin resolution (more bins shrink it).
* **Interval**: stratified bootstrap at count level — each group's (bin, label) cell counts
  drawn multinomially at the group's own size (resampling rows within groups), the gap
  recomputed per resample over the bins both groups still have, percentile interval
  (:func:`faircode.stats.resampling.percentile_interval`).  **Test**: group labels permuted
  within each bin (the bin's label-1 count split by a hypergeometric draw at the disadvantaged
  group's bin size, exact and at count level), two-sided on ``|gap|``
  (:func:`faircode.stats.resampling.permutation_p_value`).
  Seeds: ``child_seed(seed, 0)`` bootstrap, ``child_seed(seed, 1)`` permutation.
* **Repeated units**: the table's intervals are deflated by the closed-form design effect of
  :func:`faircode.stats.groups.design_effects`; the gap's bootstrap resamples whole units' parts
  within each group (a unit with rows in both groups is split into its two parts); the permutation
  test still permutes rows and says so in the note (``permutation_rows_independent``), as the AUC
  of :mod:`faircode.stats.performance` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe
from faircode.core.seeds import child_seed
from faircode.stats import clusters, resampling
from faircode.stats._metric_defs import ratio
from faircode.stats.groups import group_masks
from faircode.stats.score_table import CountBins, bin_sums, count_bins, table_from_rows
from faircode.stats.units import CountedTypes, UnitHistogram, design_effects_of_sums, ratio_sums

__all__ = [
    "BINNINGS",
    "CALIBRATION_COLUMNS",
    "SCALES",
    "BinCounts",
    "Binning",
    "CalibrationGap",
    "Scale",
    "ScoreBins",
    "calibration_from_counts",
    "calibration_gap",
    "calibration_table",
    "gap_from_counts",
    "score_bins",
]

Scale = Literal["ordinal", "probability"]
SCALES: tuple[str, ...] = get_args(Scale)
Binning = Literal["quantile", "uniform"]
BINNINGS: tuple[str, ...] = get_args(Binning)
_ROWS_NOTE = "permutation_rows_independent"

CALIBRATION_COLUMNS: tuple[str, ...] = (
    "row_set", "protected_attribute", "group", "bin", "bin_low", "bin_high", "n", "positives",
    "mean_score", "observed_rate", "ci_low", "ci_high", "design_effect", "note",
)
"""Columns of the calibration table (one row per row set x attribute x group x score bin)."""


@dataclass(frozen=True, slots=True)
class ScoreBins:
    """Score bins: ``index`` (bin per row), labels and bounds; ``note`` names merged edges."""

    index: NDArray[np.int64]
    labels: tuple[str, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    note: str = ""

    def __post_init__(self) -> None:
        k = len(self.labels)
        if k < 1 or len(self.low) != k or len(self.high) != k:
            raise ValueError("ScoreBins: expected at least one bin, one low and high per label")
        index = self.index
        if index.ndim != 1 or (index.size and not 0 <= index.min() <= index.max() < k):
            raise ValueError(f"ScoreBins: index: expected a 1-D array of bins in [0, {k})")

    @property
    def n_bins(self) -> int:
        """Number of bins."""
        return len(self.labels)


def _check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(choices)}, got {describe(value)}")


def _as_score(score: ArrayLike, scale: str) -> NDArray[np.float64]:
    """Validate scores: finite, 1-D; integer-valued (ordinal) or in [0, 1] (probability)."""
    _check_choice("scale", scale, SCALES)
    s = np.asarray(score)
    if s.ndim != 1 or not (np.issubdtype(s.dtype, np.number) or s.dtype == np.bool_):
        raise ValueError(f"score: expected a 1-D numeric array, got ndim={s.ndim} dtype {s.dtype}")
    s = s.astype(np.float64)
    bad = ~np.isfinite(s)
    if scale == "ordinal":
        bad |= s != np.round(s)
        expected = "a finite integer value (scale ordinal)"
    else:
        bad |= (s < 0.0) | (s > 1.0)
        expected = "a probability in [0, 1] (scale probability)"
    if bad.any():
        where = int(np.flatnonzero(bad)[0])
        raise ValueError(f"score[{where}]: expected {expected}, got {describe(s[where].item())}")
    return s


def score_bins(
    score: ArrayLike,
    *,
    scale: Scale,
    binning: Binning = "quantile",
    n_bins: int = 10,
) -> ScoreBins:
    """Bin scores: one bin per value (ordinal) or ``n_bins`` quantile/uniform bins (probability).

    Probability bins are ``[e_k, e_k+1)``, the last one closed; quantile edges are numpy's
    default (linear) quantiles of ``score``, tied edges merged (noted ``tied_edges_merged:<m>``).
    ``binning`` and ``n_bins`` are ignored for an ordinal scale.  The bins are those of the
    score's table (:func:`faircode.stats.score_table.count_bins`), what a streamed log bins by.
    """
    s = _as_score(score, scale)
    if s.size == 0:
        raise ValueError("score: expected at least one score, got an empty array")
    if scale != "ordinal":
        _check_choice("binning", binning, BINNINGS)
        checks.check_positive_int("n_bins", n_bins)
    bins = count_bins(table_from_rows(s, np.zeros(s.size, dtype=np.int64), 1), scale=scale,
                      binning=binning, n_bins=n_bins)
    return ScoreBins(bins.index(s), bins.labels, bins.low, bins.high, bins.note)


def _prepare(
    y_true: ArrayLike, score: ArrayLike, masks: Mapping[str, NDArray[np.bool_]], scale: Scale,
    binning: Binning, n_bins: int,
) -> tuple[NDArray[np.int8], NDArray[np.float64], CountBins, NDArray[np.bool_]]:
    """Validate, and bin the scores of the rows in any group."""
    y = checks.as_binary("y_true", y_true)
    s = _as_score(score, scale)
    checks.check_lengths(y_true=y, score=s)
    used = np.zeros(y.size, dtype=bool)
    for mask in masks.values():
        used |= mask
    if not used.any():
        raise ValueError("groups: expected at least one row in a group, got none")
    if scale != "ordinal":
        _check_choice("binning", binning, BINNINGS)
        checks.check_positive_int("n_bins", n_bins)
    bins = count_bins(table_from_rows(s[used], np.zeros(int(used.sum()), dtype=np.int64), 1),
                      scale=scale, binning=binning, n_bins=n_bins)
    return y, s, bins, used


@dataclass(frozen=True, slots=True)
class BinCounts:
    """One group's rows per score bin: ``rows`` ``(k, 2)`` (label 0, label 1), the exact score
    sum per bin ``(k,)``, and (repeated units) the histogram of its units' parts over
    ``2 * bin + label`` (``2k`` slots), read block by block."""

    rows: NDArray[np.int64]
    score_sum: NDArray[np.float64]
    parts: CountedTypes | None = None


def _group_bins(y: NDArray[np.int8], s: NDArray[np.float64], mask: NDArray[np.bool_],
                bins: CountBins, inverse: NDArray[np.int64] | None) -> BinCounts:
    """A group's :class:`BinCounts` from its rows."""
    table = table_from_rows(s[mask], y[mask], 2)
    rows, _ = bin_sums(table, bins, np.eye(2, dtype=np.int64))
    _, sums = bin_sums(table, bins, np.ones((2, 1), dtype=np.int64))
    parts = None
    if inverse is not None:
        slot = 2 * bins.index(s[mask]) + y[mask]
        parts = UnitHistogram.from_rows(inverse[mask], slot, 2 * bins.n_bins)
    return BinCounts(rows, sums[:, 0], parts)


def calibration_table(
    y_true: ArrayLike,
    score: ArrayLike,
    groups: Mapping[str, ArrayLike] | ArrayLike,
    *,
    scale: Scale,
    protected_attribute: str,
    row_set: str,
    binning: Binning = "quantile",
    n_bins: int = 10,
    units: ArrayLike | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Return the binned calibration of every group, the long table of :data:`CALIBRATION_COLUMNS`.

    One row per group × bin (bins shared by all groups, :func:`score_bins` on the pooled rows of
    the groups); a group with no row in a bin has ``n = 0``, NaN rate and note ``empty_bin``.
    ``observed_rate`` is the label-1 rate, its interval Wilson's (at effective counts when
    ``units`` repeat, as in :mod:`faircode.stats.groups`).
    """
    checks.check_confidence(confidence)
    y0 = checks.as_binary("y_true", y_true)
    masks = group_masks(groups, y0.size)
    y, s, bins, _ = _prepare(y0, score, masks, scale, binning, n_bins)
    inverse = clusters.repeated_units(units, y.size)
    counted = {name: _group_bins(y, s, mask, bins, inverse) for name, mask in masks.items()}
    return calibration_from_counts(bins, counted, protected_attribute=protected_attribute,
                                   row_set=row_set, confidence=confidence)


def calibration_from_counts(
    bins: CountBins,
    groups: Mapping[str, BinCounts],
    *,
    protected_attribute: str,
    row_set: str,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """:func:`calibration_table` from the bins and each group's :class:`BinCounts`."""
    checks.check_confidence(confidence)
    k = bins.n_bins
    rows = []
    for name, counted in groups.items():
        n = counted.rows.sum(axis=1).astype(np.float64)
        pos = counted.rows[:, 1].astype(np.float64)
        deff = np.ones(k)
        if counted.parts is not None:
            deff = _bin_design_effects(counted.parts, k)
        factor = np.where(np.isfinite(deff) & (deff > 1.0), deff, 1.0)
        low, high = resampling.wilson_interval(pos / factor, n / factor, confidence=confidence)
        rate, mean = ratio(pos, n), ratio(counted.score_sum, n)
        for b in range(k):
            note = ";".join(x for x in ("empty_bin" if n[b] == 0 else "", bins.note) if x)
            rows.append((row_set, protected_attribute, name, bins.labels[b], bins.low[b],
                         bins.high[b], int(n[b]), int(pos[b]), mean[b], rate[b], low[b], high[b],
                         float(deff[b]), note))
    return pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS))


def _bin_design_effects(parts: CountedTypes, k: int) -> NDArray[np.float64]:
    """Per bin, the design effect of the label-1 rate over the units' parts (exact sums, block
    by block)."""
    sums = np.zeros((5, k), dtype=object)
    start = 0
    for v in parts.blocks():
        sums = sums + ratio_sums(v[:, 1::2], v[:, 0::2] + v[:, 1::2],
                                 parts.multiplicity[start:start + v.shape[0]])
        start += v.shape[0]
    return design_effects_of_sums(sums)


@dataclass(frozen=True, slots=True)
class CalibrationGap:
    """The within-bin label-1 rate difference, disadvantaged minus advantaged, with CI and test.

    ``score_gap`` is the same weighted average of the within-bin mean-score differences (0 on an
    ordinal scale); ``bins_compared``/``bins_dropped`` count the bins with / without both groups.
    """

    value: float
    ci_low: float
    ci_high: float
    p_value: float
    score_gap: float
    bins_compared: int
    bins_dropped: int
    n_disadvantaged: int
    n_advantaged: int
    note: str

    def __post_init__(self) -> None:
        if np.isnan(self.value) and not np.isnan(self.p_value):
            raise ValueError("CalibrationGap: p_value must be NaN when value is NaN")
        if not np.isnan(self.p_value) and not 0.0 < self.p_value <= 1.0:
            raise ValueError(
                f"CalibrationGap: p_value: expected (0, 1], got {describe(self.p_value)}"
            )


def _gap(x_d: NDArray, n_d: NDArray, x_a: NDArray, n_a: NDArray) -> NDArray[np.float64]:
    """Mantel–Haenszel average of the within-bin rate differences over the last axis."""
    both = (n_d > 0) & (n_a > 0)
    weight = np.where(both, ratio(n_d * n_a, n_d + n_a), 0.0)
    diff = np.where(both, ratio(x_d, n_d) - ratio(x_a, n_a), 0.0)
    return ratio((weight * diff).sum(axis=-1), weight.sum(axis=-1))


def _two_groups(
    disadvantaged: ArrayLike, advantaged: ArrayLike | None
) -> dict[str, NDArray[np.bool_]]:
    dis = checks.as_mask("disadvantaged", disadvantaged)
    adv = ~dis if advantaged is None else checks.as_mask("advantaged", advantaged)
    checks.check_lengths(disadvantaged=dis, advantaged=adv)
    if (dis & adv).any():
        raise ValueError("advantaged: expected no row in both groups, got "
                         f"{int((dis & adv).sum())} rows in both")
    return {"disadvantaged": dis, "advantaged": adv}


def calibration_gap(
    y_true: ArrayLike,
    score: ArrayLike,
    disadvantaged: ArrayLike,
    advantaged: ArrayLike | None = None,
    *,
    scale: Scale,
    seed: int | np.random.SeedSequence,
    binning: Binning = "quantile",
    n_bins: int = 10,
    n_resamples: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    units: ArrayLike | None = None,
) -> CalibrationGap:
    """Compute the calibration gap (module docstring) with its bootstrap CI and permutation p.

    ``advantaged`` defaults to every row not disadvantaged; rows in neither group are left out.
    """
    masks = _two_groups(disadvantaged, advantaged)
    y, s, bins, _ = _prepare(y_true, score, masks, scale, binning, n_bins)
    inverse = clusters.repeated_units(units, y.size)
    d, a = (_group_bins(y, s, masks[g], bins, inverse) for g in ("disadvantaged", "advantaged"))
    return gap_from_counts(bins, d, a, seed=seed, n_resamples=n_resamples,
                           n_permutations=n_permutations, confidence=confidence)


def gap_from_counts(
    bins: CountBins,
    disadvantaged: BinCounts,
    advantaged: BinCounts,
    *,
    seed: int | np.random.SeedSequence,
    n_resamples: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
) -> CalibrationGap:
    """:func:`calibration_gap` from the bins and the two groups' :class:`BinCounts` (with unit
    parts when some unit repeats: the bootstrap then resamples the units' parts)."""
    checks.check_positive_int("n_resamples", n_resamples)
    checks.check_positive_int("n_permutations", n_permutations)
    checks.check_confidence(confidence)
    k = bins.n_bins
    n_d, x_d = (disadvantaged.rows.sum(axis=1).astype(np.float64),
                disadvantaged.rows[:, 1].astype(np.float64))
    n_a, x_a = (advantaged.rows.sum(axis=1).astype(np.float64),
                advantaged.rows[:, 1].astype(np.float64))
    both = (n_d > 0) & (n_a > 0)
    value = float(_gap(x_d, n_d, x_a, n_a))
    size_d, size_a = int(n_d.sum()), int(n_a.sum())
    if np.isnan(value):
        nan = float("nan")
        why = "no_bin_with_both_groups" if size_d and size_a else "empty_group"
        return CalibrationGap(nan, nan, nan, nan, nan, 0, k, size_d, size_a, why)
    score_gap = float(_gap(disadvantaged.score_sum, n_d, advantaged.score_sum, n_a))
    rng = np.random.default_rng(child_seed(seed, 0))
    boot = [_resample_group(g, n_resamples, rng) for g in (disadvantaged, advantaged)]
    samples = _gap(boot[0][1], boot[0][0], boot[1][1], boot[1][0])
    low, high = resampling.percentile_interval(samples, confidence=confidence)
    rng = np.random.default_rng(child_seed(seed, 1))
    pos, neg = (x_d + x_a)[both].astype(np.int64), (n_d + n_a - x_d - x_a)[both].astype(np.int64)
    perm_x_d = rng.hypergeometric(pos, neg, n_d[both].astype(np.int64),
                                  size=(n_permutations, int(both.sum())))
    permuted = _gap(perm_x_d, n_d[both], pos - perm_x_d, n_a[both])
    p_value = resampling.permutation_p_value(value, permuted)
    clustered = disadvantaged.parts is not None
    notes = [bins.note, _ROWS_NOTE if clustered else ""]
    return CalibrationGap(value, low, high, p_value, score_gap, int(both.sum()),
                          int(k - both.sum()), size_d, size_a, ";".join(n for n in notes if n))


def _resample_group(
    group: BinCounts, n_resamples: int, rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bootstrap one group's per-bin rows and label-1 rows, two ``(B, k)`` arrays.

    Rows: one multinomial over the group's (bin, label) cells at its size.  Repeated units:
    the group's unit parts are drawn with replacement (a multinomial over distinct parts).
    """
    if group.parts is None:
        counts = group.rows.reshape(-1)  # (bin, label) interleaved: 2 * bin + label
        total = int(counts.sum())
        draws = rng.multinomial(total, counts / total, size=n_resamples).astype(np.float64)
    else:
        parts = group.parts
        multiplicity = parts.multiplicity
        n_units = int(multiplicity.sum())
        draws = np.concatenate([
            _drawn_sums(parts, rng.multinomial(n_units, multiplicity / n_units, size=k))
            for k in resampling.draw_blocks(n_resamples, multiplicity.size)])
    return draws[:, 0::2] + draws[:, 1::2], draws[:, 1::2]


def _drawn_sums(parts: CountedTypes, drawn: NDArray[np.int64]) -> NDArray[np.float64]:
    """``drawn @ vectors`` (draws x types times types x slots), the types read block by block
    (integer sums: the same whatever the blocks)."""
    total = np.zeros((drawn.shape[0], parts.n_slots), dtype=np.int64)
    start = 0
    for v in parts.blocks():
        total += drawn[:, start:start + v.shape[0]] @ v
        start += v.shape[0]
    return total.astype(np.float64)
