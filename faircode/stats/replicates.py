"""One estimate and one interval from K training replicates: the dataset-aware random effects.

With ``run.seeds: K`` every cell is fitted K times (:mod:`faircode.evaluate.stability`); each
replicate ``k`` gives an estimate ``θ_k`` (a gap, an effect) with its own within-replicate
interval.  :func:`combine` turns the informative replicates into **one estimate, the mean
``θ̄``, with an interval for that mean** -- not the spread of one re-split.

The estimand and its variance
-----------------------------
The target is ``θ(D)``: the expected population gap of the models the pipeline fits on the
dataset ``D`` it has (the mean over splits and seeds).  Given ``D`` the K replicates are
independent, so ``Var(θ̄) = Var(E[θ̄ | D]) + E[Var(θ_k | D)] / K``:

* ``E[Var(θ_k | D)]`` is estimated by the between-replicate variance ``s_b²`` (``ddof = 1``):
  it holds the training randomness (seeds, refits on other training rows) *and* the part of
  the test-set noise that differs between the replicates' test sets;
* ``Var(E[θ̄ | D])`` is the part no re-split removes: the test rows all come from the one
  dataset.  Averaged over splits, every row of ``D`` is a test row equally often, so
  ``E[θ̄ | D]`` carries the sampling noise of a gap measured on all ``N`` rows (units), which
  is ``f`` times that of one test set of ``n = f·N`` rows: ``f·w̄``, with ``w̄`` the mean
  within-replicate variance and ``f`` the **sampling fraction**: ``n_test / N`` in
  ``split`` mode, and 1 in ``model`` mode, where every replicate shares the test set, so
  none of its noise averages out (``s_b²`` then holds the training randomness alone).

Hence ``V = s_b²/K + f·w̄`` and the interval ``θ̄ ± t_ν·√V``.  Only ``s_b²`` is estimated with
few degrees of freedom (``K − 1``); the within-replicate variance of a test set of hundreds of
rows is all but known.  ``t_{K−1}`` would over-cover where the dataset term dominates (0.98-0.99
in ``bench/replicate_coverage.py``), the normal under-cover where the training variance does.
Welch-Satterthwaite's ``ν = (K − 1)·(V / (s_b²/K))²`` interpolates, but with four degrees of
freedom in its estimated part it is liberal (a normal model of the design: equivalence-test size
0.051-0.054 at the margin, 95 % coverage 0.942-0.948), because a low draw of ``s_b²`` both narrows
``V`` and raises ``ν``.  The shipped ``ν = (K − 1)·V / (s_b²/K)`` lies between ``K − 1`` and
Satterthwaite's, with the same limits (``K − 1`` when the training variance dominates, the
normal when ``s_b² → 0``): size 0.043-0.049, coverage 0.951-0.960 in the same model, and in
the bench's row-level simulation (module ``bench/replicate_coverage.py``).

One-sided variances
-------------------
Each replicate's within-variance comes from its own interval (:func:`half_variances`: each half
over its normal quantile), once for the lower and once for the upper side, so a score interval's
asymmetry near rates of 0 or 1 survives the combination (a rate of 0 never gives a variance of
0), and any per-replicate interval -- a closed form, a paired bootstrap interval -- can feed it.

Replicates
----------
Only *informative* replicates enter (an undefined value or interval, degenerate decisions:
the caller decides).  A row with fewer than two informative replicates has no between-replicate
variance and is NaN; whether it has enough to be reported at all is the caller's rule
(``verdicts.min_informative_share``).  Replicate 0 is a replicate like the others.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe
from faircode.stats.verdicts import Evidence, from_interval, log_ratio_interval, scale_of

__all__ = ["Combined", "combine", "half_variances", "replicate_evidence", "required_informative",
           "sampling_fraction"]

Floats = NDArray[np.float64]


def half_variances(value: ArrayLike, low: ArrayLike, high: ArrayLike, *,
                   confidence: float) -> tuple[Floats, Floats]:
    """The lower and upper within-replicate variances of intervals at ``confidence``.

    ``((θ − low)/z)²`` and ``((high − θ)/z)²`` (:func:`faircode.stats.verdicts.from_interval`).
    """
    evidence = from_interval(value, low, high, confidence=confidence)
    return evidence.se_low ** 2, evidence.se_high ** 2


def sampling_fraction(*, seed_mode: str, n_test: int, n_total: int) -> float:
    """``f`` of the module docstring: 1 in ``model`` mode, ``n_test / n_total`` in ``split``."""
    if seed_mode == "model":
        return 1.0
    if seed_mode != "split":
        raise ValueError(f"seed_mode: expected model or split, got {describe(seed_mode)}")
    if not 0 < n_test <= n_total:
        raise ValueError(f"sampling_fraction: expected 0 < n_test <= n_total, got {n_test} "
                         f"and {n_total}")
    return n_test / n_total


def required_informative(seeds: int, share: float) -> int:
    """The informative replicates a cell needs: ``⌈share·K⌉`` (at least 1)."""
    checks.check_positive_int("seeds", seeds)
    return max(1, math.ceil(share * seeds - 1e-9))


@dataclass(frozen=True, slots=True)
class Combined:
    """The K-replicate estimate of every row: its :class:`Evidence` and descriptions.

    ``n_informative`` replicates entered; ``sd_between`` is their SD (``ddof = 1``),
    ``sd_within`` the root of their mean within-variance (both sides averaged).
    """

    evidence: Evidence
    n_informative: NDArray[np.int64]
    sd_between: Floats
    sd_within: Floats


def combine(estimate: ArrayLike, var_low: ArrayLike, var_high: ArrayLike,
            informative: ArrayLike, *, fraction: float) -> Combined:
    """Combine rows of K replicates, arrays of shape ``(rows, K)`` (module docstring).

    ``estimate`` on the test scale (a log ratio for disparate impact), ``var_low``/``var_high``
    each replicate's within-variances (:func:`half_variances`), ``informative`` which
    replicates enter; ``fraction`` the sampling fraction ``f``.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) \
            or not 0 < fraction <= 1:
        raise ValueError(f"combine: fraction: expected a number in (0, 1], got "
                         f"{describe(fraction)}")
    theta = np.asarray(estimate, dtype=np.float64)
    if theta.ndim != 2:
        raise ValueError(f"combine: estimate: expected shape (rows, K), got {theta.shape}")
    arrays = [np.asarray(a, dtype=np.float64) for a in (var_low, var_high)]
    ok = np.asarray(informative, dtype=bool)
    if any(a.shape != theta.shape for a in (*arrays, ok)):
        raise ValueError("combine: expected estimate, var_low, var_high and informative of "
                         f"one shape {theta.shape}")
    ok = ok & np.isfinite(theta) & np.isfinite(arrays[0]) & np.isfinite(arrays[1])
    n = ok.sum(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # rows without two replicates: NaN
        mean = np.nanmean(np.where(ok, theta, np.nan), axis=1)
        between = np.nanvar(np.where(ok, theta, np.nan), axis=1, ddof=1)
        within = [np.nanmean(np.where(ok, a, np.nan), axis=1) for a in arrays]
    enough = n >= 2
    between = np.where(enough, between, np.nan)
    share = between / np.where(enough, n, 1)
    se, df = [], []
    for w in within:
        total = share + fraction * w
        with np.errstate(divide="ignore", invalid="ignore"):
            nu = np.where(share > 0, (n - 1) * total / np.where(share > 0, share, 1.0),
                          np.inf)
        se.append(np.where(enough, np.sqrt(total), np.nan))
        df.append(np.where(enough, nu, np.nan))
    evidence = Evidence(np.where(enough, mean, np.nan), se[0], se[1], df[0], df[1])
    return Combined(evidence, n.astype(np.int64), np.sqrt(between),
                    np.sqrt((within[0] + within[1]) / 2.0))


def replicate_evidence(metric: str, value: ArrayLike, low: ArrayLike, high: ArrayLike,
                       informative: ArrayLike, *, fraction: float,
                       confidence: float) -> Combined:
    """:func:`combine` of one signed metric's replicate rows ``(rows, K)`` from their values and
    intervals at ``confidence`` (disparate impact on the log scale,
    :func:`faircode.stats.verdicts.log_ratio_interval`)."""
    if scale_of(metric) == "log_ratio":
        value, low, high = log_ratio_interval(value, low, high, confidence=confidence)
    var_low, var_high = half_variances(value, low, high, confidence=confidence)
    return combine(value, var_low, var_high, informative, fraction=fraction)
