"""Operating-point curves: every fairness metric and accuracy of a scored cell at many thresholds.

A deterministic cell (S0–S2) decides ``ŷ = 1`` when ``score > t`` (the ``threshold`` rule of
:mod:`faircode.audit.decision`; ``inclusive=True`` gives ``score >= t``, the form of
``top_fraction``'s cutoff).  :func:`curve_counts` gives, at every threshold of a grid, each
protected attribute's two groups' confusion counts, and :func:`operating_curves` the tidy table of
the eight fairness metrics (per attribute) and accuracy, balanced accuracy and selection rate
(overall), each with its interval, from the stored scores alone: no refit, no experiment.

Design decisions
----------------
* **One count-level pass.**  The scores are sorted once; for every (attribute, group, label)
  class a cumulative count along the sorted order gives, by one ``searchsorted`` per threshold,
  how many of its rows are decided 0 at that threshold.  Cost ``O(n log n + T · classes)``; no
  loop over rows, none over thresholds for the counts.  Ties at a threshold follow the rule
  exactly (``score == t`` is 0 unless ``inclusive``).
* **The main table's numbers, exactly.**  Group counts are oriented by the manifest's favourable
  label as ``evaluate`` does (:func:`faircode.stats.metrics.orient`: for a favourable-0 target the
  raw cell ``2y + ŷ`` becomes ``3 − (2y + ŷ)``), and every value and closed-form interval is the
  main table's own function (:func:`faircode.stats.metrics.metric_values`,
  ``_metric_defs.closed_form_interval``; accuracy, balanced accuracy and selection rate on the
  raw counts), vectorised over thresholds: at any threshold they equal :func:`fairness_metrics`,
  :func:`performance_metrics` and :func:`operating_point_metrics` on that threshold's decisions,
  bit for bit (``tests/test_curves.py``), n/a notes included.
* **Bootstrap intervals from the main table's streams.**  Accuracy (``performance_metrics``) and
  balanced accuracy / selection rate (``operating_point_metrics``) have percentile bootstrap
  intervals there, so here too: at each threshold a count-level bootstrap drawn from the same
  child seeds (``performance_seed``, ``decision_seed``: pass the cell's ``Stream.PERFORMANCE``
  and ``Stream.DECISIONS`` seeds), which reproduces the main table's interval at its declared
  threshold and uses common random numbers along the curve (smooth bands).  The loop is over the
  ``T`` thresholds, each vectorised over the resamples (~1 ms per threshold at B = 2000).
* **Repeated units** (``units=``): accuracy's bootstrap resamples units at every threshold, as
  the main table does (``O(n)`` per threshold).  The fairness intervals take the design effects
  of the *declared* operating point (``design_effects``, from the main table) along the whole
  curve, rather than a cluster bootstrap per threshold, and say so in ``note``
  (:data:`DEFF_NOTE`); without ``design_effects`` they are row-level intervals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe
from faircode.core.seeds import child_seed
from faircode.stats import _metric_defs as defs
from faircode.stats import clusters, resampling

__all__ = [
    "CURVE_COLUMNS",
    "DEFAULT_THRESHOLDS",
    "DEFF_NOTE",
    "OVERALL_METRICS",
    "CurveCounts",
    "curve_counts",
    "operating_curves",
]

DEFAULT_THRESHOLDS: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(1, 20))
"""0.05, 0.10, …, 0.95: the decimal values exactly (so 0.5 is the float the config holds)."""

OVERALL_METRICS: tuple[str, ...] = ("accuracy", "balanced_accuracy", "selection_rate")
"""Whole-test-set metrics of a curve (``protected_attribute`` empty), in output order."""

CURVE_COLUMNS: tuple[str, ...] = (
    "threshold", "protected_attribute", "metric", "value", "ci_low", "ci_high", "ci_method",
    "n_disadvantaged", "n_advantaged", "n", "note",
)
"""Columns of :func:`operating_curves` (one row per threshold x attribute x metric)."""

DEFF_NOTE = "design_effect_at_operating_point"
"""Note of a fairness row whose interval used the declared operating point's design effect."""

_INSUFFICIENT, _DI_UNDEFINED = "insufficient_data", "undefined_advantaged_rate_zero"


@dataclass(frozen=True, slots=True)
class CurveCounts:
    """Confusion counts of one scored cell at every threshold of a grid.

    ``groups`` ``(T, A, 2, 4)``: per threshold and attribute, the disadvantaged (``[..., 0, :]``)
    and advantaged group's ``(TN, FP, FN, TP)``, oriented (1 = favourable); ``overall``
    ``(T, 4)``: every row's counts on the raw labels and decisions (as ``performance.csv``).
    """

    thresholds: NDArray[np.float64]
    attributes: tuple[str, ...]
    groups: NDArray[np.int64]
    overall: NDArray[np.int64]
    inclusive: bool

    def __post_init__(self) -> None:
        t, a = self.thresholds.shape[0], len(self.attributes)
        if self.groups.shape != (t, a, 2, 4) or self.overall.shape != (t, 4):
            raise ValueError(f"CurveCounts: expected groups {(t, a, 2, 4)} and overall {(t, 4)}, "
                             f"got {self.groups.shape} and {self.overall.shape}")


def curve_counts(
    scores: ArrayLike,
    y_true: ArrayLike,
    groups: Mapping[str, ArrayLike],
    *,
    thresholds: ArrayLike = DEFAULT_THRESHOLDS,
    favourable: int,
    inclusive: bool = False,
) -> CurveCounts:
    """Count every attribute's groups' confusion cells at every threshold in one sorted pass.

    Parameters
    ----------
    scores
        One finite score per test row (P(ŷ = 1) of an S0–S2 cell).
    y_true
        The raw 0/1 labels (not oriented).
    groups
        Attribute name -> boolean disadvantaged mask, one entry per row.
    thresholds
        The grid; any order, finite.  ``ŷ = 1`` when ``score > t`` (``>=`` if ``inclusive``).
    favourable
        The manifest's favourable label (0 or 1); the group counts are oriented by it.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or not np.all(np.isfinite(s)):
        raise ValueError(f"scores: expected a 1-D array of finite floats, got {describe(scores)}")
    y = checks.as_binary("y_true", y_true)
    checks.check_lengths(scores=s, y_true=y)
    t = np.asarray(thresholds, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)):
        raise ValueError(f"thresholds: expected a non-empty 1-D array of finite floats, "
                         f"got {describe(thresholds)}")
    if isinstance(favourable, bool) or favourable not in (0, 1):
        raise ValueError(f"favourable: expected 0 or 1, got {describe(favourable)}")
    names = tuple(groups)
    masks = [checks.as_mask(name, groups[name]) for name in names]
    for name, mask in zip(names, masks, strict=True):
        checks.check_lengths(scores=s, **{name: mask})
    # classes: (attribute, group, label) for the groups, then label alone for the overall counts
    member = [m if g == 0 else ~m for m in masks for g in (0, 1)] + [np.ones(s.size, bool)]
    classes = np.stack([keep & (y == label) for keep in member for label in (0, 1)])
    order = np.argsort(s, kind="stable")
    cumulative = np.zeros((classes.shape[0], s.size + 1), dtype=np.int64)
    np.cumsum(classes[:, order], axis=1, out=cumulative[:, 1:])
    decided_0 = np.searchsorted(s[order], t, side="left" if inclusive else "right")
    zero = cumulative[:, decided_0].T  # (T, classes): rows decided 0, per class
    one = cumulative[:, -1][None, :] - zero
    cells = np.stack([zero[:, 0::2], one[:, 0::2], zero[:, 1::2], one[:, 1::2]], axis=-1)
    raw_groups = cells[:, :-1].reshape(t.size, len(names), 2, 4)  # raw cell 2y + ŷ
    oriented = raw_groups if favourable == 1 else raw_groups[..., ::-1]
    return CurveCounts(t, names, np.ascontiguousarray(oriented), cells[:, -1], bool(inclusive))


def operating_curves(
    scores: ArrayLike,
    y_true: ArrayLike,
    groups: Mapping[str, ArrayLike],
    *,
    thresholds: ArrayLike = DEFAULT_THRESHOLDS,
    favourable: int,
    inclusive: bool = False,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    performance_seed: int | np.random.SeedSequence,
    decision_seed: int | np.random.SeedSequence,
    units: ArrayLike | None = None,
    design_effects: Mapping[str, Mapping[str, float]] | None = None,
) -> pd.DataFrame:
    """Return the tidy curve table (:data:`CURVE_COLUMNS`) of one scored cell.

    Fairness rows come first (attributes, then thresholds in the given order, then
    :data:`~faircode.stats.metrics.FAIRNESS_METRICS` order), then the overall rows (thresholds, then
    :data:`OVERALL_METRICS`).  Arguments as in
    :func:`curve_counts`, plus the main table's ``confidence`` and ``n_resamples``, the two seeds
    of its bootstrap streams, ``units`` (one id per row) and ``design_effects`` (attribute ->
    metric -> the declared operating point's ``design_effect``); see the module docstring.
    """
    checks.check_confidence(confidence)
    checks.check_positive_int("n_resamples", n_resamples)
    counts = curve_counts(scores, y_true, groups, thresholds=thresholds, favourable=favourable,
                          inclusive=inclusive)
    frames = [_fairness_rows(counts, a, confidence=confidence,
                             design_effects=None if design_effects is None
                             else design_effects.get(name))
              for a, name in enumerate(counts.attributes)]
    frames.append(_overall_rows(counts, scores, y_true, confidence=confidence,
                                n_resamples=n_resamples, performance_seed=performance_seed,
                                decision_seed=decision_seed, units=units))
    return pd.concat(frames, ignore_index=True).reindex(columns=list(CURVE_COLUMNS))


def _fairness_rows(
    counts: CurveCounts, a: int, *, confidence: float,
    design_effects: Mapping[str, float] | None,
) -> pd.DataFrame:
    """The eight fairness metrics of attribute ``a`` at every threshold (main-table rules)."""
    d, adv = counts.groups[:, a, 0], counts.groups[:, a, 1]
    columns: dict[str, list[NDArray[np.generic]]] = {
        k: [] for k in ("value", "ci_low", "ci_high", "n_disadvantaged", "n_advantaged", "note")}
    for metric in defs.FAIRNESS_METRICS:
        spec = defs.SPECS[metric]
        smallest = np.min([np.minimum(d[:, list(s)].sum(-1), adv[:, list(s)].sum(-1))
                           for s in spec.subsets], axis=0)
        union = sorted({cell for subset in spec.subsets for cell in subset})
        with np.errstate(divide="ignore", invalid="ignore"):
            value = spec.value(d, adv)
        factor = _deflation(metric, design_effects)
        if factor == 1.0:
            low, high = defs.closed_form_interval(metric, d, adv, confidence=confidence)
        else:  # the declared point's effective sizes (Kish), as the main table deflates
            low, high = defs.closed_form_interval(metric, d / factor, adv / factor,
                                                  confidence=confidence)
        undefined = (smallest == 0) | np.isnan(value)
        note = np.where(smallest == 0, _INSUFFICIENT, np.where(undefined, _DI_UNDEFINED, ""))
        if spec.components:  # a magnitude: the main table names the larger component
            note = np.where(undefined, note, defs.larger_component(metric, d, adv))
        if design_effects is not None:
            joined = np.char.add(note, np.where(note == "", DEFF_NOTE, ";" + DEFF_NOTE))
            note = np.where(undefined, note, joined)
        for key, column in (("value", value), ("ci_low", low), ("ci_high", high)):
            columns[key].append(np.where(undefined, np.nan, column))
        columns["n_disadvantaged"].append(d[:, union].sum(-1))
        columns["n_advantaged"].append(adv[:, union].sum(-1))
        columns["note"].append(note.astype(str))
    k, t = len(defs.FAIRNESS_METRICS), counts.thresholds.size
    methods = [defs.SPECS[m].interval.value for m in defs.FAIRNESS_METRICS]
    frame = pd.DataFrame({"threshold": np.repeat(counts.thresholds, k),
                          "protected_attribute": counts.attributes[a],
                          "metric": np.tile(np.array(defs.FAIRNESS_METRICS), t),
                          "ci_method": np.tile(methods, t),
                          **{key: np.stack(parts, axis=1).ravel()
                             for key, parts in columns.items()}})
    frame["n"] = frame["n_disadvantaged"] + frame["n_advantaged"]
    return frame


def _deflation(metric: str, design_effects: Mapping[str, float] | None) -> float:
    """The main table's deflation factor of ``metric`` from the declared point's effects."""
    if design_effects is None:
        return 1.0
    components = defs.SPECS[metric].components
    if components:  # a magnitude: by the larger of its components' effects
        return max(clusters.deflation(design_effects[c]) for c in components)
    return clusters.deflation(design_effects[metric])


def _selection(c: NDArray[np.int64]) -> NDArray[np.float64]:
    """Share decided 1 (as :func:`faircode.stats.operating.operating_point_metrics`)."""
    return defs.ratio(c[..., defs.FP] + c[..., defs.TP], c.sum(axis=-1))


def _balanced(c: NDArray[np.int64]) -> NDArray[np.float64]:
    """Mean of TPR and TNR (as :func:`faircode.stats.operating.operating_point_metrics`)."""
    tpr = defs.ratio(c[..., defs.TP], c[..., defs.TP] + c[..., defs.FN])
    tnr = defs.ratio(c[..., defs.TN], c[..., defs.TN] + c[..., defs.FP])
    return (tpr + tnr) / 2.0


def _overall_rows(
    counts: CurveCounts, scores: ArrayLike, y_true: ArrayLike, *, confidence: float,
    n_resamples: int, performance_seed: int | np.random.SeedSequence,
    decision_seed: int | np.random.SeedSequence, units: ArrayLike | None,
) -> pd.DataFrame:
    """Accuracy, balanced accuracy and selection rate with the main table's bootstrap CIs."""
    y = checks.as_binary("y_true", y_true)
    n = int(y.size)
    inverse = clusters.repeated_units(units, n)
    score = np.asarray(scores, dtype=np.float64)
    fns = {"accuracy": defs.accuracy, "balanced_accuracy": _balanced,
           "selection_rate": _selection}
    rows: list[dict[str, object]] = []
    for i, threshold in enumerate(counts.thresholds):
        c = counts.overall[i]
        draws = {}
        if n:
            rng = np.random.default_rng(child_seed(decision_seed, 0))
            boot = resampling.bootstrap_counts(c, n_resamples=n_resamples, rng=rng)
            draws["balanced_accuracy"] = draws["selection_rate"] = boot
            draws["accuracy"] = _accuracy_draws(c, y, score, float(threshold), inverse,
                                                inclusive=counts.inclusive,
                                                n_resamples=n_resamples, seed=performance_seed)
        for metric in OVERALL_METRICS:
            value = float(fns[metric](c))
            method = ("cluster_percentile_bootstrap" if metric == "accuracy"
                      and inverse is not None else "percentile_bootstrap")
            if np.isnan(value) or not n:
                low = high = float("nan")
                note = _INSUFFICIENT
            else:
                low, high = resampling.percentile_interval(fns[metric](draws[metric]),
                                                      confidence=confidence)
                note = ""
            rows.append({"threshold": float(threshold), "protected_attribute": "",
                         "metric": metric, "value": value, "ci_low": low, "ci_high": high,
                         "ci_method": method, "n": n, "note": note})
    frame = pd.DataFrame(rows)
    frame["n_disadvantaged"] = frame["n_advantaged"] = pd.array([pd.NA] * len(frame), "Int64")
    return frame


def _accuracy_draws(
    counts: NDArray[np.int64], y: NDArray[np.int8], score: NDArray[np.float64], threshold: float,
    inverse: NDArray[np.int64] | None, *, inclusive: bool, n_resamples: int,
    seed: int | np.random.SeedSequence,
) -> NDArray[np.int64]:
    """Bootstrap counts behind accuracy's interval: :func:`performance_metrics`' own draws."""
    if inverse is None:
        rng = np.random.default_rng(child_seed(seed, 0))
        return resampling.bootstrap_counts(counts, n_resamples=n_resamples, rng=rng)
    yhat = (score >= threshold if inclusive else score > threshold).astype(np.int8)
    rng = np.random.default_rng(child_seed(seed, 0, 1))
    types = _unit_types(y, yhat, inverse)
    return clusters.cluster_bootstrap_counts(types, n_resamples=n_resamples, rng=rng)[:, 0]


def _unit_types(
    y: NDArray[np.int8], yhat: NDArray[np.int8], inverse: NDArray[np.int64]
) -> clusters.UnitTypes:
    """``clusters.unit_types(clusters.unit_counts(y, yhat, 0, inverse, n_groups=1))``, faster.

    Each unit's four counts are packed into one integer whose order is the rows' lexicographic
    order, so a 1-D ``np.unique`` gives the same distinct rows, order and multiplicities as the
    row-wise one (``tests/test_curves.py``); it falls back when the packing could overflow.
    """
    n_units = int(inverse.max()) + 1
    per_unit = np.bincount(inverse * 4 + 2 * y + yhat, minlength=n_units * 4).reshape(-1, 4)
    base = int(per_unit.max()) + 1
    if base**4 >= 2**62:
        return clusters.unit_types(per_unit[:, None, :])
    key = ((per_unit[:, 0] * base + per_unit[:, 1]) * base + per_unit[:, 2]) * base \
        + per_unit[:, 3]
    _, first, multiplicity = np.unique(key, return_index=True, return_counts=True)
    distinct = per_unit[first].astype(np.int64)[:, None, :]
    return clusters.UnitTypes(distinct, multiplicity.astype(np.int64),
                              np.ones(len(first), dtype=np.int64))
