"""Wall time of one comparison's paired effects: count-level, so independent of the row count.

Run from the repository root:

    PYTHONPATH=$PWD python bench/paired_speed.py [--resamples 2000] [--repeats 7]

Workload: a synthetic test set of ``n`` rows (1,000 and 50,000), 35 % disadvantaged, labels at
0.45, a reference decision vector B and a mitigated A that re-decides a fifth of B's rows; with
``units`` the rows come in units of two.  Timed: :func:`faircode.stats.paired.paired_effects` (all
ten effects: B = P = ``--resamples`` paired bootstrap draws and swaps, intervals, p-values;
with units also the row bootstrap of the design effect), best and median of ``--repeats`` runs
after one warm-up, and the row-level reference bootstrap of one effect for scale.  Then one
replicate's effects as the evaluate step computes them: 36 comparisons (6 comparisons x 3
families x 2 attributes, insurance's grid) of 1,000 rows, through
:func:`faircode.stats.paired.paired_comparisons` (the intervals and tests inverted for all of
them at once) where the engine has it, else one :func:`paired_effects` call each (faircode 0.3,
whose p-value was the swap test's alone).  Run it on two trees (``PYTHONPATH``) for a
before/after ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from faircode.stats import paired

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from reference import reference_paired_bootstrap


def audit(n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Labels, decisions of A and B, and the group mask of ``n`` synthetic rows."""
    y = (rng.random(n) < 0.45).astype(np.int64)
    dis = rng.random(n) < 0.35
    b = (rng.random(n) < np.where(dis, 0.3, 0.5) + 0.2 * y).astype(np.int64)
    a = np.where(rng.random(n) < 0.8, b, (rng.random(n) < 0.45).astype(np.int64))
    return y, a, b, dis


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Best and median wall time of ``repeats`` calls after one warm-up."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main() -> None:
    """Time every workload and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    b = args.resamples
    print(f"# paired_effects, B = P = {b}, {args.repeats} repeats\n")
    print("| rows | units | best (s) | median (s) |")
    print("|---:|---|---:|---:|")
    for n in (1_000, 50_000):
        y, a, ref, dis = audit(n, rng)
        for units in (None, np.arange(n) // 2):
            run = partial(paired.paired_effects, y, a, ref, dis, units=units, seed=1,
                          n_resamples=b, n_permutations=b)
            best, median = timed(run, args.repeats)
            label = "none" if units is None else f"{n // 2} of 2 rows"
            print(f"| {n} | {label} | {best:.4f} | {median:.4f} |")
    inputs = [audit(1_000, np.random.default_rng(k)) for k in range(36)]
    batched = getattr(paired, "paired_comparisons", None)

    def replicate() -> object:
        if batched is not None:
            return batched([paired.Comparison(y, a, ref, dis, k)
                            for k, (y, a, ref, dis) in enumerate(inputs)],
                           n_resamples=b, n_permutations=b)
        return [paired.paired_effects(y, a, ref, dis, seed=k, n_resamples=b, n_permutations=b)
                for k, (y, a, ref, dis) in enumerate(inputs)]

    best, median = timed(replicate, max(1, args.repeats // 2))
    print(f"\none replicate's effects, 36 comparisons of 1000 rows "
          f"({'batched' if batched else 'one call each'}): best {best:.3f} s, "
          f"median {median:.3f} s")
    y, a, ref, dis = audit(1_000, rng)
    t0 = time.perf_counter()
    reference_paired_bootstrap("demographic_parity_diff", y, a, ref, dis, n_resamples=b,
                               rng=np.random.default_rng(0))
    print(f"\nrow-level reference bootstrap of one effect, 1000 rows: "
          f"{time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
