"""Coverage of row-level and cluster bootstrap intervals on synthetic clustered data.

Run from the repository root:

    .venv/bin/python bench/cluster_coverage.py [--quick] [--replicates 1000] [--resamples 1000]
                                               [--units 300] [--seed 0]

Model (one replicate): each of two groups has ``--units`` units; a unit has 1-5 rows (uniform)
and a random effect ``u ~ N(0, sigma^2)`` shared by its rows; every row of a unit in group ``g``
is decided positive independently with probability ``expit(alpha_g + u)``.  The group attribute
is constant within a unit.  Labels play no part in the parity gap, so every row has ``y = 0``.
The estimand is the population parity gap ``E[expit(alpha_d + u)] - E[expit(alpha_a + u)]``
(unit size is independent of ``u``, so this is the row-level rate difference), computed by
200-point Gauss-Hermite quadrature.  ``sigma`` sets the within-unit correlation; the table gives
its latent-scale intra-class correlation ``sigma^2 / (sigma^2 + pi^2 / 3)``.

Per replicate: the 95 % percentile interval of the parity gap from the row bootstrap
(:func:`faircode.stats.resampling.bootstrap_counts`, each group's rows resampled at its size) and
from the
cluster bootstrap (:func:`faircode.stats.clusters.cluster_bootstrap_counts`, units resampled), their
design effect (:func:`faircode.stats.clusters.design_effect`); in the null scenario (equal alphas)
also
the two-sided permutation p-value with rows exchanged
(:func:`faircode.stats.resampling.permute_counts`)
and with units exchanged (:func:`faircode.stats.clusters.cluster_permute_counts`).  Coverage is the
share
of replicates whose interval contains the true gap; its Monte-Carlo standard error is
``sqrt(c (1 - c) / R)``.  Replicate ``r`` of scenario ``k`` draws from
``child_seed(seed, k, r)``.  ``--quick`` runs R = 200, B = 400.  Everything printed is measured
in this run.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.special import expit

from faircode.core.seeds import child_seed
from faircode.stats import clusters, resampling

SCENARIOS: tuple[tuple[float, float, float], ...] = (
    # (sigma, alpha_d, alpha_a)
    (0.0, 0.0, -0.4),
    (1.0, 0.0, -0.4),
    (2.0, 0.0, -0.4),
    (3.0, 0.0, -0.4),
    (2.0, -0.2, -0.2),  # null: no gap, for the permutation tests' size
)
MAX_SIZE = 5


def true_rate(alpha: float, sigma: float) -> float:
    """E[expit(alpha + u)], u ~ N(0, sigma^2), by Gauss-Hermite quadrature."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(200)
    return float(np.sum(weights * expit(alpha + sigma * nodes)) / np.sum(weights))


def draw_units(
    rng: np.random.Generator, units: int, sigma: float, alphas: tuple[float, float]
) -> np.ndarray:
    """Per-unit counts ``(2 * units, 2, 4)``: group 0 units first; cells TN (ŷ=0) and FP (ŷ=1)."""
    sizes = rng.integers(1, MAX_SIZE + 1, size=(2, units))
    effect = rng.normal(0.0, sigma, size=(2, units))
    p = expit(np.asarray(alphas)[:, None] + effect)
    positives = rng.binomial(sizes, p)
    counts = np.zeros((2, units, 2, 4), dtype=np.int64)
    for g in (0, 1):
        counts[g, :, g, 0] = sizes[g] - positives[g]
        counts[g, :, g, 1] = positives[g]
    return counts.reshape(2 * units, 2, 4)


def parity_gap(counts: np.ndarray) -> np.ndarray:
    """Positive-rate difference (group 0 minus group 1) of ``(..., 2, 4)`` counts."""
    rate = (counts[..., 1] + counts[..., 3]) / counts.sum(axis=-1)
    return rate[..., 0] - rate[..., 1]


def replicate(
    rng: np.random.Generator, *, units: int, sigma: float, alphas: tuple[float, float],
    resamples: int, null: bool,
) -> tuple[tuple[float, float], tuple[float, float], float, float, float]:
    """Row CI, cluster CI, design effect, row and cluster p-values (NaN unless null)."""
    types = clusters.unit_types(draw_units(rng, units, sigma, alphas))
    pooled = types.pooled()
    row = parity_gap(np.stack(
        [resampling.bootstrap_counts(pooled[g], n_resamples=resamples, rng=rng)
         for g in (0, 1)], axis=1
    ))
    cluster = parity_gap(clusters.cluster_bootstrap_counts(types, n_resamples=resamples, rng=rng))
    row_ci = resampling.percentile_interval(row, confidence=0.95)
    cluster_ci = resampling.percentile_interval(cluster, confidence=0.95)
    deff = clusters.design_effect(cluster, row)
    p_row = p_cluster = float("nan")
    if null:
        observed = float(parity_gap(pooled))
        everything = ((0, 1, 2, 3),)
        perm_d, perm_a = resampling.permute_counts(
            pooled[0], pooled[1], strata=everything, n_permutations=resamples, rng=rng
        )
        p_row = resampling.permutation_p_value(observed, parity_gap(np.stack([perm_d, perm_a], 1)))
        perm_d, perm_a = clusters.cluster_permute_counts(
            types, strata=everything, n_permutations=resamples, rng=rng
        )
        p_cluster = resampling.permutation_p_value(
            observed, parity_gap(np.stack([perm_d, perm_a], 1)))
    return row_ci, cluster_ci, deff, p_row, p_cluster


def main() -> None:
    """Run every scenario and print the coverage table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--units", type=int, default=300, help="units per group")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="R = 200, B = 400")
    args = parser.parse_args()
    reps, b = (200, 400) if args.quick else (args.replicates, args.resamples)
    print(f"R = {reps} replicates, B = P = {b}, {args.units} units per group of 1-{MAX_SIZE} rows, "
          f"seed {args.seed}")
    header = (f"{'sigma':>5} {'ICC':>5} {'true gap':>9} | {'row cover':>9} {'cluster cover':>13} "
              f"{'MC se':>6} | {'row width':>9} {'cl. width':>9} {'deff':>5} | "
              f"{'row p<.05':>9} {'cl. p<.05':>9}")
    print(header)
    print("-" * len(header))
    for k, (sigma, alpha_d, alpha_a) in enumerate(SCENARIOS):
        truth = true_rate(alpha_d, sigma) - true_rate(alpha_a, sigma)
        null = alpha_d == alpha_a
        rows = [
            replicate(np.random.default_rng(child_seed(args.seed, k, r)), units=args.units,
                      sigma=sigma, alphas=(alpha_d, alpha_a), resamples=b, null=null)
            for r in range(reps)
        ]
        row_ci = np.array([r[0] for r in rows])
        cl_ci = np.array([r[1] for r in rows])
        row_cover = float(np.mean((row_ci[:, 0] <= truth) & (truth <= row_ci[:, 1])))
        cl_cover = float(np.mean((cl_ci[:, 0] <= truth) & (truth <= cl_ci[:, 1])))
        se = math.sqrt(0.95 * 0.05 / reps)
        deff = float(np.nanmean([r[2] for r in rows]))
        icc = sigma**2 / (sigma**2 + math.pi**2 / 3)
        rejections = "" if not null else (
            f"{np.mean(np.array([r[3] for r in rows]) < 0.05):>9.3f} "
            f"{np.mean(np.array([r[4] for r in rows]) < 0.05):>9.3f}"
        )
        print(f"{sigma:>5.1f} {icc:>5.2f} {truth:>+9.4f} | {row_cover:>9.3f} {cl_cover:>13.3f} "
              f"{se:>6.3f} | {np.mean(np.diff(row_ci)):>9.4f} {np.mean(np.diff(cl_ci)):>9.4f} "
              f"{deff:>5.2f} | {rejections}")


if __name__ == "__main__":
    main()
