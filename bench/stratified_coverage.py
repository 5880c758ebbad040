"""Coverage of the gap within strata's interval and size of its tests, on synthetic audits.

Run from the repository root:

    .venv/bin/python bench/stratified_coverage.py [--replicates 1000] [--permutations 200]

For each setting (strata sizes and rates like the two people's-decision audits: two large strata,
six mid-sized ones, forty thin ones with one group often absent) it draws ``--replicates`` audits
with a common risk difference ``delta`` in every stratum, computes
:func:`faircode.stats.stratified.stratified_gap` and prints how often the Sato 95 % interval holds
``delta``, and, where ``delta = 0``, how often the within-strata permutation test and the CMH test
reject at 5 %.  Seeds: ``SeedSequence(20260501, spawn_key=(setting, replicate))``.
"""

from __future__ import annotations

import argparse

import numpy as np

from faircode.stats.stratified import stratified_gap

# name -> (disadvantaged sizes, advantaged sizes, advantaged rates)
SETTINGS = {
    "2 strata, 1,200 rows per group each": ([1200, 1200], [1200, 1200], [0.08, 0.11]),
    "6 strata, 25-1,200 rows per group": ([130, 50, 30, 25, 40, 60], [1200, 390, 100, 50, 140, 130],
                                  [0.05, 0.10, 0.16, 0.11, 0.16, 0.29]),
    "40 thin strata, 0-120 rows per group": (None, None, None),
}


def _thin(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Forty strata like HMDA's credit-history cells: many tiny, a third with one group only."""
    n_a = rng.integers(0, 120, 40)
    n_d = np.where(rng.random(40) < 0.35, 0, rng.integers(1, 25, 40))
    return n_d, n_a, rng.uniform(0.05, 0.5, 40)


def run(replicates: int, permutations: int) -> None:
    print(f"replicates {replicates}, permutations {permutations}; coverage of the 95 % interval "
          "(Monte-Carlo s.e. about 0.007) and rejection at 5 % under delta = 0")
    for s, (name, (sizes_d, sizes_a, rates)) in enumerate(SETTINGS.items()):
        for delta in (0.0, -0.05):
            covered = perm = cmh = defined = 0
            for r in range(replicates):
                rng = np.random.default_rng(np.random.SeedSequence(20260501, spawn_key=(s, r)))
                if sizes_d is None:
                    n_d, n_a, p_a = _thin(rng)
                else:
                    n_d, n_a, p_a = np.array(sizes_d), np.array(sizes_a), np.array(rates)
                p_d = np.clip(p_a + delta, 0.0, 1.0)
                x_d, x_a = rng.binomial(n_d, p_d), rng.binomial(n_a, p_a)
                sizes, ones, k = np.r_[n_d, n_a], np.r_[x_d, x_a], len(n_d)
                yhat = np.concatenate([np.r_[np.ones(x), np.zeros(n - x)] for x, n in
                                       zip(ones, sizes, strict=True)]).astype(int)
                dis = np.repeat(np.r_[np.ones(k, bool), np.zeros(k, bool)], sizes)
                strata = np.repeat(np.r_[np.arange(k), np.arange(k)], sizes)
                gap = stratified_gap(yhat, dis, strata, n_permutations=permutations,
                                     seed=np.random.SeedSequence(1, spawn_key=(s, r)))
                if np.isnan(gap.value):
                    continue
                defined += 1
                covered += gap.ci_low <= delta <= gap.ci_high
                perm += gap.p_value < 0.05
                cmh += gap.cmh_p_value < 0.05
            line = f"  {name:<36} delta {delta:+.2f}: coverage {covered / defined:.3f}"
            if delta == 0.0:
                line += f", rejects: permutation {perm / defined:.3f}, CMH {cmh / defined:.3f}"
            print(line + f" ({defined} defined)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--permutations", type=int, default=200)
    args = parser.parse_args()
    run(args.replicates, args.permutations)


if __name__ == "__main__":
    main()
