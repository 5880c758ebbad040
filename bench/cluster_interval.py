"""Which clustered interval to report: deflated Newcombe vs the cluster-bootstrap percentile.

Same synthetic clustered audits as ``bench/cluster_coverage.py`` (two groups of units of 1-5 rows
sharing a random effect), at two sizes: ``--units`` per group (default 300) and a small audit
(40 units per group, ~120 rows).  For each replicate it computes the parity gap's

* row Newcombe interval (what faircode reports without units),
* cluster-bootstrap percentile interval (:func:`faircode.stats.clusters.cluster_bootstrap_counts`),
* Newcombe at design-effect-deflated effective sizes: every count divided by
  ``max(1, deff)``, ``deff`` = cluster-bootstrap variance / row-bootstrap variance of the gap
  (:func:`faircode.stats.clusters.design_effect`) — the method faircode reports with units,

and prints coverage of the true gap (by quadrature) and mean widths.
``PYTHONPATH=$PWD python bench/cluster_interval.py --quick`` (R = 200, B = 400).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from cluster_coverage import SCENARIOS, draw_units, parity_gap, true_rate

from faircode.core.seeds import child_seed
from faircode.stats import clusters, resampling


def replicate(
    rng: np.random.Generator, *, units: int, sigma: float, alphas: tuple[float, float],
    resamples: int,
) -> tuple[tuple[float, float], ...]:
    """Row Newcombe, cluster percentile and deflated Newcombe intervals of one audit."""
    types = clusters.unit_types(draw_units(rng, units, sigma, alphas))
    pooled = types.pooled()
    row = parity_gap(np.stack(
        [resampling.bootstrap_counts(pooled[g], n_resamples=resamples, rng=rng)
         for g in (0, 1)], axis=1
    ))
    cluster = parity_gap(clusters.cluster_bootstrap_counts(types, n_resamples=resamples, rng=rng))
    deff = clusters.design_effect(cluster, row)
    factor = deff if np.isfinite(deff) and deff > 1.0 else 1.0
    x, n = pooled[:, 1].astype(float), pooled.sum(axis=1).astype(float)
    newcombe = resampling.newcombe_interval(x[0], n[0], x[1], n[1], confidence=0.95)
    deflated = resampling.newcombe_interval(
        x[0] / factor, n[0] / factor, x[1] / factor, n[1] / factor, confidence=0.95
    )
    percentile = resampling.percentile_interval(cluster, confidence=0.95)
    return (
        (float(newcombe[0]), float(newcombe[1])), percentile,
        (float(deflated[0]), float(deflated[1])),
    )


def main() -> None:
    """Print coverage and widths of the three intervals per scenario and audit size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--units", type=int, default=300, help="units per group (large audit)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="R = 200, B = 400")
    args = parser.parse_args()
    reps, b = (200, 400) if args.quick else (args.replicates, args.resamples)
    print(f"R = {reps} replicates, B = {b}, seed {args.seed}; MC se of a 95 % coverage "
          f"{math.sqrt(0.95 * 0.05 / reps):.3f}")
    print(f"{'units':>5} {'sigma':>5} {'true gap':>9} | {'newcombe':>8} {'cl. pct':>8} "
          f"{'deflated':>8} | {'w newc':>7} {'w pct':>7} {'w defl':>7}")
    for size in (args.units, 40):
        for k, (sigma, alpha_d, alpha_a) in enumerate(SCENARIOS):
            truth = true_rate(alpha_d, sigma) - true_rate(alpha_a, sigma)
            rows = np.array([
                replicate(np.random.default_rng(child_seed(args.seed, size, k, r)),
                          units=size, sigma=sigma, alphas=(alpha_d, alpha_a), resamples=b)
                for r in range(reps)
            ])  # (R, 3, 2)
            cover = np.mean((rows[:, :, 0] <= truth) & (truth <= rows[:, :, 1]), axis=0)
            width = np.mean(rows[:, :, 1] - rows[:, :, 0], axis=0)
            print(f"{size:>5} {sigma:>5.1f} {truth:>+9.4f} | {cover[0]:>8.3f} {cover[1]:>8.3f} "
                  f"{cover[2]:>8.3f} | {width[0]:>7.4f} {width[1]:>7.4f} {width[2]:>7.4f}")


if __name__ == "__main__":
    main()
