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
* :func:`calibration_regression` — a bin-free check by logistic regression.

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
from faircode.stats.groups import design_effects, group_masks

__all__ = [
    "BINNINGS",
    "CALIBRATION_COLUMNS",
    "SCALES",
    "Binning",
    "CalibrationGap",
    "CalibrationRegression",
    "Scale",
    "ScoreBins",
    "calibration_gap",
    "calibration_regression",
    "calibration_table",
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
    ``binning`` and ``n_bins`` are ignored for an ordinal scale.
    """
    s = _as_score(score, scale)
    if s.size == 0:
        raise ValueError("score: expected at least one score, got an empty array")
    if scale == "ordinal":
        values, index = np.unique(s, return_inverse=True)
        labels = tuple(str(int(v)) for v in values)
        bounds = tuple(float(v) for v in values)
        return ScoreBins(index.reshape(-1).astype(np.int64), labels, bounds, bounds)
    _check_choice("binning", binning, BINNINGS)
    checks.check_positive_int("n_bins", n_bins)
    if binning == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    else:
        edges = np.quantile(s, np.linspace(0.0, 1.0, n_bins + 1))
    unique = np.unique(edges)
    if unique.size == 1:  # every score equal: one bin
        unique = np.array([unique[0], unique[0]])
    merged = edges.size - unique.size
    index = np.clip(np.searchsorted(unique, s, side="right") - 1, 0, unique.size - 2)
    low, high = tuple(float(e) for e in unique[:-1]), tuple(float(e) for e in unique[1:])
    labels = tuple(f"[{a:.3g}, {b:.3g}{']' if k == len(low) - 1 else ')'}"
                   for k, (a, b) in enumerate(zip(low, high, strict=True)))
    note = f"tied_edges_merged:{merged}" if merged and binning == "quantile" else ""
    return ScoreBins(index.astype(np.int64), labels, low, high, note)


def _prepare(
    y_true: ArrayLike, score: ArrayLike, masks: Mapping[str, NDArray[np.bool_]], scale: Scale,
    binning: Binning, n_bins: int,
) -> tuple[NDArray[np.int8], NDArray[np.float64], ScoreBins, NDArray[np.bool_]]:
    """Validate, and bin the scores of the rows in any group (other rows get bin 0, unused)."""
    y = checks.as_binary("y_true", y_true)
    s = _as_score(score, scale)
    checks.check_lengths(y_true=y, score=s)
    used = np.zeros(y.size, dtype=bool)
    for mask in masks.values():
        used |= mask
    if not used.any():
        raise ValueError("groups: expected at least one row in a group, got none")
    bins = score_bins(s[used], scale=scale, binning=binning, n_bins=n_bins)
    index = np.zeros(y.size, dtype=np.int64)
    index[used] = bins.index
    full = ScoreBins(index, bins.labels, bins.low, bins.high, bins.note)
    return y, s, full, used


def _bin_sums(
    bins: NDArray[np.int64], k: int, mask: NDArray[np.bool_], *weights: NDArray[np.float64]
) -> tuple[NDArray[np.float64], ...]:
    """Row counts per bin of the masked rows, then the per-bin sums of each ``weights``."""
    b = bins[mask]
    return (np.bincount(b, minlength=k).astype(np.float64),
            *(np.asarray(np.bincount(b, weights=w[mask], minlength=k), dtype=np.float64)
              for w in weights))


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
    k = bins.n_bins
    inverse = clusters.repeated_units(units, y.size)
    y_f = y.astype(np.float64)
    rows = []
    for name, mask in masks.items():
        n, pos, score_sum = _bin_sums(bins.index, k, mask, y_f, s)
        deff = np.ones(k)
        if inverse is not None:
            n_units = int(inverse.max()) + 1
            flat = inverse[mask] * k + bins.index[mask]
            m_u = np.bincount(flat, minlength=n_units * k).reshape(n_units, k)
            x_u = np.bincount(flat, weights=y_f[mask], minlength=n_units * k).reshape(n_units, k)
            deff = design_effects(x_u, m_u)
        factor = np.where(np.isfinite(deff) & (deff > 1.0), deff, 1.0)
        low, high = resampling.wilson_interval(pos / factor, n / factor, confidence=confidence)
        rate, mean = ratio(pos, n), ratio(score_sum, n)
        for b in range(k):
            note = ";".join(x for x in ("empty_bin" if n[b] == 0 else "", bins.note) if x)
            rows.append((row_set, protected_attribute, name, bins.labels[b], bins.low[b],
                         bins.high[b], int(n[b]), int(pos[b]), mean[b], rate[b], low[b], high[b],
                         float(deff[b]), note))
    return pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS))


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
    checks.check_positive_int("n_resamples", n_resamples)
    checks.check_positive_int("n_permutations", n_permutations)
    checks.check_confidence(confidence)
    masks = _two_groups(disadvantaged, advantaged)
    y, s, bins, _ = _prepare(y_true, score, masks, scale, binning, n_bins)
    k, y_f = bins.n_bins, y.astype(np.float64)
    n_d, x_d, s_d = _bin_sums(bins.index, k, masks["disadvantaged"], y_f, s)
    n_a, x_a, s_a = _bin_sums(bins.index, k, masks["advantaged"], y_f, s)
    both = (n_d > 0) & (n_a > 0)
    value = float(_gap(x_d, n_d, x_a, n_a))
    size_d, size_a = int(n_d.sum()), int(n_a.sum())
    if np.isnan(value):
        nan = float("nan")
        why = "no_bin_with_both_groups" if size_d and size_a else "empty_group"
        return CalibrationGap(nan, nan, nan, nan, nan, 0, k, size_d, size_a, why)
    score_gap = float(_gap(s_d, n_d, s_a, n_a))
    inverse = clusters.repeated_units(units, y.size)
    rng = np.random.default_rng(child_seed(seed, 0))
    cells = 2 * bins.index + y
    boot = [_resample_group(cells, mask, inverse, k, n_resamples, rng)
            for mask in (masks["disadvantaged"], masks["advantaged"])]
    samples = _gap(boot[0][1], boot[0][0], boot[1][1], boot[1][0])
    low, high = resampling.percentile_interval(samples, confidence=confidence)
    rng = np.random.default_rng(child_seed(seed, 1))
    pos, neg = (x_d + x_a)[both].astype(np.int64), (n_d + n_a - x_d - x_a)[both].astype(np.int64)
    perm_x_d = rng.hypergeometric(pos, neg, n_d[both].astype(np.int64),
                                  size=(n_permutations, int(both.sum())))
    permuted = _gap(perm_x_d, n_d[both], pos - perm_x_d, n_a[both])
    p_value = resampling.permutation_p_value(value, permuted)
    notes = [bins.note, _ROWS_NOTE if inverse is not None else ""]
    return CalibrationGap(value, low, high, p_value, score_gap, int(both.sum()),
                          int(k - both.sum()), size_d, size_a, ";".join(n for n in notes if n))


def _resample_group(
    cells: NDArray[np.int64], mask: NDArray[np.bool_], inverse: NDArray[np.int64] | None,
    k: int, n_resamples: int, rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bootstrap one group's per-bin rows and label-1 rows, two ``(B, k)`` arrays.

    Rows: one multinomial over the group's (bin, label) cells at its size.  Repeated units:
    the group's unit parts are drawn with replacement (a multinomial over distinct parts).
    """
    if inverse is None:
        counts = np.bincount(cells[mask], minlength=2 * k)
        total = int(counts.sum())
        draws = rng.multinomial(total, counts / total, size=n_resamples).astype(np.float64)
    else:
        n_units = int(inverse.max()) + 1
        parts = np.bincount(inverse[mask] * 2 * k + cells[mask], minlength=n_units * 2 * k)
        parts = parts.reshape(n_units, 2 * k)
        parts = parts[parts.sum(axis=1) > 0]
        types, multiplicity = np.unique(parts, axis=0, return_counts=True)
        picks = rng.multinomial(parts.shape[0], multiplicity / parts.shape[0], size=n_resamples)
        draws = (picks @ types).astype(np.float64)
    return draws[:, 0::2] + draws[:, 1::2], draws[:, 1::2]


@dataclass(frozen=True, slots=True)
class CalibrationRegression:
    """Logistic calibration check ``logit P(y=1) = b0 + b1·z + b2·D + b3·z·D``.

    ``z`` is the centred score (ordinal) or centred ``logit(score)`` (probability), ``D`` the
    disadvantaged indicator.  ``group_*`` is ``b2`` (the log-odds difference at the mean score),
    ``interaction_*`` is ``b3`` (a different slope), ``joint_p`` the Wald test of ``b2 = b3 = 0``
    (one calibration curve for both groups).  Standard errors are cluster-robust by unit when
    units repeat.
    """

    group_coef: float
    group_se: float
    group_p: float
    interaction_coef: float
    interaction_se: float
    interaction_p: float
    joint_p: float
    n: int
    note: str


def calibration_regression(
    y_true: ArrayLike,
    score: ArrayLike,
    disadvantaged: ArrayLike,
    advantaged: ArrayLike | None = None,
    *,
    scale: Scale,
    units: ArrayLike | None = None,
) -> CalibrationRegression:
    """Fit the logistic calibration check (:class:`CalibrationRegression`) with statsmodels.

    A bin-free complement to :func:`calibration_gap`: it separates a shift of the calibration
    curve (``group``) from a change of its slope (``interaction``), at the price of assuming the
    curve is linear in log-odds.  A fit that fails (e.g. perfect separation) gives NaN and
    note ``fit_failed``.
    """
    import statsmodels.api as sm  # heavy import, only for this check

    masks = _two_groups(disadvantaged, advantaged)
    y, s = checks.as_binary("y_true", y_true), _as_score(score, scale)
    checks.check_lengths(y_true=y, score=s, disadvantaged=masks["disadvantaged"])
    used = masks["disadvantaged"] | masks["advantaged"]
    z = s if scale == "ordinal" else np.log(np.clip(s, 1e-6, 1 - 1e-6) / np.clip(1 - s, 1e-6, 1))
    z, d, y_used = z[used] - z[used].mean(), masks["disadvantaged"][used].astype(float), y[used]
    exog = np.column_stack([np.ones(z.size), z, d, z * d])
    inverse = clusters.repeated_units(units, y.size)
    kwargs: dict[str, object] = {}
    if inverse is not None:
        kwargs = {"cov_type": "cluster", "cov_kwds": {"groups": inverse[used]}}
    nan = float("nan")
    try:
        fit = sm.Logit(y_used, exog).fit(disp=0, **kwargs)
        joint = fit.wald_test(np.array([[0, 0, 1, 0], [0, 0, 0, 1]]), scalar=True)
    except Exception:  # separation, singular design: report, do not crash an audit
        return CalibrationRegression(nan, nan, nan, nan, nan, nan, nan, int(used.sum()),
                                     "fit_failed")
    params, bse, pvalues = (np.asarray(a, dtype=float) for a in (fit.params, fit.bse, fit.pvalues))
    return CalibrationRegression(
        float(params[2]), float(bse[2]), float(pvalues[2]), float(params[3]), float(bse[3]),
        float(pvalues[3]), float(np.asarray(joint.pvalue)), int(used.sum()),
        "clustered_by_unit" if inverse is not None else "",
    )
