"""Intersectional audit of two protected attributes: the DD-vs-AA gap and the interaction.

The four cells are DD (disadvantaged on both attributes), DA, AD and AA; each cell's rate is its
favourable-decision rate (decisions already oriented by :func:`faircode.stats.metrics.orient`).

Design decisions
----------------
* ``gap = rate_dd − rate_aa`` keeps its Newcombe hybrid score interval and its permutation
  p-value, which shuffles the cell label among the DD and AA rows only: it compares DD with AA
  and says nothing about whether the two attributes *interact*.  With independent rows that
  p-value is exact (:mod:`faircode.stats.exact`: DD's favourable count is hypergeometric).
* The interaction is the contrast ``rate_dd − rate_da − rate_ad + rate_aa`` (0 when the two
  attributes' effects on the rate add up).  Its interval is the MOVER-Wilson interval of that
  linear contrast (the four-cell generalisation of Newcombe's method), which does not collapse
  when cells have rates near 0 as a bootstrap of such cells does.  Its test is a parametric
  bootstrap under the additive null: the cell rates are projected onto ``interaction = 0`` by
  weighted least squares (weights ``n_cell``, clipped to [0, 1]), binomial cell counts are drawn
  from them ``n_permutations`` times and ``p = (1 + #{|I*| ≥ |I|}) / (1 + P)``.  A permutation
  test cannot be exact here: the null "no interaction" still allows both main effects, so no
  relabelling of rows leaves the null distribution unchanged.
* The old ``superadditive`` flag (``|gap| > |gap_a| + |gap_b|`` on point estimates) is gone: it
  fired in a third of audits with no effect at all.  The grid flags ``interaction_significant``
  only when the interaction's q-value in the audit's Benjamini–Hochberg family is below alpha.
* Seeds: the interaction's null simulation uses ``child_seed(seed, 2)`` (stream ``1`` drove
  the gap's Monte-Carlo permutation before it was exact); nothing else is random without
  repeated units.
* Repeated units (``units=``; see :mod:`faircode.stats.metrics` for the method and its evidence):
  the
  gap's p-value exchanges the DD/AA label between units (``child_seed(seed, 3)``); its
  ``design_effect`` is the cluster- over row-bootstrap variance of the gap (``child_seed(seed,
  4)`` and ``(seed, 5)``) and its Newcombe interval is taken at effective counts (divided by
  ``max(1, design_effect)``).  The interaction likewise: its own design effect (streams ``6`` and
  ``7``, units resampled within their four-cell patterns) deflates the four cells for the MOVER
  interval and for the null simulation (at the rounded effective sizes).  Without repeats
  ``design_effect`` is 1.0 (rows are the independent units) and nothing else changes.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe
from faircode.core.seeds import child_seed
from faircode.stats import _metric_defs as defs
from faircode.stats import clusters, exact, resampling
from faircode.stats.resampling import TIE_RTOL

INTERACTION_WEIGHTS: tuple[float, float, float, float] = (1.0, -1.0, -1.0, 1.0)
"""Weights of the cells (dd, da, ad, aa) in the interaction contrast."""


@dataclass(frozen=True, slots=True)
class IntersectionalResult:
    """DD-vs-AA gap and the DD·DA·AD·AA interaction contrast of one pair of attributes."""

    gap: float
    ci_low: float
    ci_high: float
    p_value: float
    interaction: float
    interaction_ci_low: float
    interaction_ci_high: float
    interaction_p_value: float
    gap_a: float
    gap_b: float
    n_dd: int
    n_da: int
    n_ad: int
    n_aa: int
    rate_dd: float
    rate_da: float
    rate_ad: float
    rate_aa: float
    note: str
    design_effect: float = 1.0

    def __post_init__(self) -> None:
        for name in ("n_dd", "n_da", "n_ad", "n_aa"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(
                    f"IntersectionalResult: {name}: expected a non-negative int, "
                    f"got {describe(value)}"
                )
        if np.isnan(self.gap) and not np.isnan(self.p_value):
            raise ValueError("IntersectionalResult: p_value must be NaN when gap is NaN")
        if np.isnan(self.interaction) and not np.isnan(self.interaction_p_value):
            raise ValueError(
                "IntersectionalResult: interaction_p_value must be NaN when interaction is NaN"
            )


def intersectional_gap(
    y_pred: ArrayLike,
    disadvantaged_a: ArrayLike,
    disadvantaged_b: ArrayLike,
    *,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    seed: int | np.random.SeedSequence,
    units: ArrayLike | None = None,
    n_resamples: int = 2000,
) -> IntersectionalResult:
    """Compare the four cells' favourable-decision rates of two attributes.

    ``y_pred`` must already be oriented (1 = favourable).  ``gap_a``/``gap_b`` are each
    attribute's demographic-parity gap over all rows.  If any cell is empty the gap, the
    interaction, their CIs and p-values are NaN with note ``empty_intersectional_cell``.
    Both intervals are closed-form; ``n_resamples`` is only used with repeated ``units`` (one id
    per row), for the design effects (module docstring).
    """
    yhat = checks.as_binary("y_pred", y_pred)
    mask_a = checks.as_mask("disadvantaged_a", disadvantaged_a)
    mask_b = checks.as_mask("disadvantaged_b", disadvantaged_b)
    checks.check_lengths(y_pred=yhat, disadvantaged_a=mask_a, disadvantaged_b=mask_b)
    groups = _cell_counts(yhat, mask_a, mask_b)
    inverse = clusters.repeated_units(units, yhat.size)
    four = pair = None
    if inverse is not None:
        # cell index per row: 0 dd, 1 da, 2 ad, 3 aa (y = 0 throughout: ŷ in the TN/FP cells)
        cell_of = (2 * (~mask_a) + (~mask_b)).astype(np.int64)
        zeros = np.zeros(yhat.size, dtype=np.int64)
        four = clusters.unit_types(clusters.unit_counts(zeros, yhat, cell_of, inverse,
                                                        n_groups=4))
        pair = clusters.unit_types(clusters.unit_counts(
            zeros, yhat, np.select([cell_of == 0, cell_of == 3], [0, 1], -1), inverse,
            n_groups=2))
    return intersectional_from_counts(groups, four, pair, n_permutations=n_permutations,
                                      confidence=confidence, seed=seed, n_resamples=n_resamples)


def intersectional_from_counts(
    groups: dict[str, defs.Counts],
    four: clusters.UnitTypes | None,
    pair: clusters.UnitTypes | None,
    *,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    seed: int | np.random.SeedSequence,
    n_resamples: int = 2000,
) -> IntersectionalResult:
    """:func:`intersectional_gap` from the four cells' counts (``dd, da, ad, aa``: favourable
    decisions in FP, the others in TN) and, when some unit repeats, the units' four-cell and
    DD-vs-AA types (else both None)."""
    checks.check_positive_int("n_permutations", n_permutations)
    checks.check_confidence(confidence)
    dd, da, ad, aa = (np.asarray(groups[k], dtype=np.int64) for k in ("dd", "da", "ad", "aa"))
    groups = {"dd": dd, "da": da, "ad": ad, "aa": aa}
    described: dict[str, Any] = {
        "gap_a": float(defs.dp(dd + da, ad + aa)), "gap_b": float(defs.dp(dd + ad, da + aa)),
        **{f"n_{k}": int(c.sum()) for k, c in groups.items()},
        **{f"rate_{k}": float(defs.positive_rate(c)) for k, c in groups.items()},
    }
    if min(int(c.sum()) for c in groups.values()) == 0:
        nan = float("nan")
        return IntersectionalResult(
            gap=nan, ci_low=nan, ci_high=nan, p_value=nan, interaction=nan,
            interaction_ci_low=nan, interaction_ci_high=nan, interaction_p_value=nan,
            **described, note="empty_intersectional_cell",
            design_effect=1.0 if four is None else nan,
        )
    gap = float(defs.dp(dd, aa))
    if four is None or pair is None:
        tests = _row_tests(groups, gap, n_permutations=n_permutations, confidence=confidence,
                           seed=seed)
    else:
        checks.check_positive_int("n_resamples", n_resamples)
        tests = _unit_tests(four, pair, groups, gap, n_permutations=n_permutations,
                            n_resamples=n_resamples, confidence=confidence, seed=seed)
    return IntersectionalResult(gap=gap, **tests, **described)


def _cell_counts(
    yhat: NDArray[np.int8], mask_a: NDArray[np.bool_], mask_b: NDArray[np.bool_]
) -> dict[str, defs.Counts]:
    """The cells dd, da, ad, aa as confusion counts: ŷ in the (TN, FP) cells of y = 0 rows."""

    def cell(mask: NDArray[np.bool_]) -> defs.Counts:
        positives = int(yhat[mask].sum())
        return np.array([int(mask.sum()) - positives, positives, 0, 0], dtype=np.int64)

    return {"dd": cell(mask_a & mask_b), "da": cell(mask_a & ~mask_b),
            "ad": cell(~mask_a & mask_b), "aa": cell(~mask_a & ~mask_b)}


def _successes_trials(
    groups: dict[str, defs.Counts],
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Favourable decisions and rows of the four cells, in (dd, da, ad, aa) order."""
    x = np.array([c[defs.FP] for c in groups.values()], dtype=np.int64)
    n = np.array([c.sum() for c in groups.values()], dtype=np.int64)
    return x, n


def _row_tests(
    groups: dict[str, defs.Counts], gap: float, *, n_permutations: int, confidence: float,
    seed: int | np.random.SeedSequence,
) -> dict[str, Any]:
    """Rows independent: the gap's Newcombe interval and permutation test, the interaction's."""
    dd, aa = groups["dd"], groups["aa"]
    low, high = resampling.newcombe_interval(
        dd[defs.FP], dd.sum(), aa[defs.FP], aa.sum(), confidence=confidence
    )
    x, n = _successes_trials(groups)
    interaction, i_low, i_high, i_p = interaction_test(
        x, n, n_simulations=n_permutations, confidence=confidence, seed=child_seed(seed, 2),
    )
    return {
        "ci_low": float(low), "ci_high": float(high),
        "p_value": max(exact.P_FLOOR, exact.rate_tail(
            (defs.TN, defs.FP), (defs.FP,), dd, aa, threshold=abs(gap) * (1.0 - TIE_RTOL),
            statistic=defs.dp)),
        "interaction": interaction, "interaction_ci_low": i_low, "interaction_ci_high": i_high,
        "interaction_p_value": i_p, "note": "", "design_effect": 1.0,
    }


def _unit_tests(
    four: clusters.UnitTypes, pair: clusters.UnitTypes, groups: dict[str, defs.Counts],
    gap: float, *, n_permutations: int, n_resamples: int, confidence: float,
    seed: int | np.random.SeedSequence,
) -> dict[str, Any]:
    """Repeated units: the gap's and the interaction's tests at unit level (module docstring)."""
    gap_tests = _unit_gap_tests(pair, groups["dd"], groups["aa"], gap,
                                n_permutations=n_permutations, n_resamples=n_resamples,
                                confidence=confidence, seed=seed)
    return gap_tests | _unit_interaction_tests(
        four, groups, n_permutations=n_permutations, n_resamples=n_resamples,
        confidence=confidence, seed=seed,
    ) | {"note": clusters.cluster_permutation_note(pair)}


def _unit_gap_tests(
    pair: clusters.UnitTypes, dd: defs.Counts, aa: defs.Counts, gap: float, *,
    n_permutations: int, n_resamples: int, confidence: float,
    seed: int | np.random.SeedSequence,
) -> dict[str, Any]:
    """The gap's unit permutation test (stream 3), design effect (4, 5) and deflated interval."""
    rng = np.random.default_rng(child_seed(seed, 3))
    perm_d, perm_a = clusters.cluster_permute_counts(
        pair, strata=((defs.TN, defs.FP),), n_permutations=n_permutations, rng=rng
    )
    p_value = resampling.permutation_p_value(abs(gap), defs.dp(perm_d, perm_a))
    deff = _design_effect(pair, lambda c: defs.dp(c[:, 0], c[:, 1]), n_resamples, seed, 4)
    f = clusters.deflation(deff)
    low, high = resampling.newcombe_interval(
        dd[defs.FP] / f, dd.sum() / f, aa[defs.FP] / f, aa.sum() / f, confidence=confidence
    )
    return {"ci_low": float(low), "ci_high": float(high), "p_value": p_value,
            "design_effect": deff}


def _unit_interaction_tests(
    four: clusters.UnitTypes, groups: dict[str, defs.Counts], *, n_permutations: int,
    n_resamples: int, confidence: float, seed: int | np.random.SeedSequence,
) -> dict[str, Any]:
    """The interaction's design effect (streams 6, 7) and its test at the deflated cell sizes."""
    weights = np.asarray(INTERACTION_WEIGHTS)
    i_f = clusters.deflation(_design_effect(
        four, lambda c: defs.positive_rate(c) @ weights, n_resamples, seed, 6))
    x, n = _successes_trials(groups)
    _, i_low, i_high, i_p = interaction_test(
        x / i_f, n / i_f, n_simulations=n_permutations, confidence=confidence,
        seed=child_seed(seed, 2),
    )
    # the observed contrast from the undeflated counts
    interaction = float(np.round(defs.positive_rate(np.stack(list(groups.values()))) @ weights,
                                 12)) + 0.0
    return {"interaction": interaction, "interaction_ci_low": i_low,
            "interaction_ci_high": i_high, "interaction_p_value": i_p}


def _design_effect(
    types: clusters.UnitTypes,
    statistic: Any,
    n_resamples: int,
    seed: int | np.random.SeedSequence,
    key: int,
) -> float:
    """Cluster-bootstrap (``child_seed(seed, key)``) over row-bootstrap (``key + 1``) variance."""
    rng = np.random.default_rng(child_seed(seed, key))
    cluster = statistic(clusters.cluster_bootstrap_counts(types, n_resamples=n_resamples, rng=rng))
    rng = np.random.default_rng(child_seed(seed, key + 1))
    pooled = types.pooled()
    row = np.stack([resampling.bootstrap_counts(pooled[g], n_resamples=n_resamples, rng=rng)
                    for g in range(types.n_groups)], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return clusters.design_effect(cluster, statistic(row))


def interaction_test(
    successes: ArrayLike,
    trials: ArrayLike,
    *,
    n_simulations: int,
    confidence: float,
    seed: int | np.random.SeedSequence,
) -> tuple[float, float, float, float]:
    """Return the interaction contrast of cells (dd, da, ad, aa), its MOVER CI and null p-value.

    The p-value is the parametric bootstrap under the additive null described in the module
    docstring; every cell must be non-empty.
    """
    x = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    w = np.asarray(INTERACTION_WEIGHTS)
    rates = x / n
    # rationals that cancel exactly leave ~1e-17 after float arithmetic: round at 1e-12 so that
    # such a zero is a zero, and a simulated contrast equal to the observed one is a tie
    observed = float(np.round(w @ rates, 12)) + 0.0
    low, high = resampling.mover_interval(x, n, INTERACTION_WEIGHTS, confidence=confidence)
    # weighted least-squares projection onto w·r = 0 with weights n: r0 = r − λ w / n
    null_rates = np.clip(rates - observed / float(np.sum(1.0 / n)) * w / n, 0.0, 1.0)
    rng = np.random.default_rng(seed)
    # effective (design-effect-deflated) sizes may be fractional: simulate at the rounded size
    sizes = np.maximum(np.rint(n), 1.0)
    draws = rng.binomial(sizes.astype(np.int64), null_rates, size=(n_simulations, 4))
    simulated = np.round((draws / sizes) @ w, 12)
    return observed, float(low), float(high), resampling.permutation_p_value(observed, simulated)
