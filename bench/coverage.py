"""Coverage of faircode's 95 % intervals on synthetic audits with a known truth.

Run from the repository root:

    PYTHONPATH=$PWD python bench/coverage.py [--audits 1000] [--resamples 1000] [--seed 0] [--quick]

Workload: two groups of ``n`` rows each (``n`` in 25, 40, 150, 500), a true favourable base rate
``b`` in the disadvantaged group (0.3 or 0.5) and ``b + 0.1`` in the advantaged one, and a fixed
classifier (TPR 0.65 / FPR 0.20 for the disadvantaged group, 0.75 / 0.25 for the advantaged),
so every metric's true value is known from the cell probabilities.  Each of ``--audits`` synthetic
audits draws both groups' confusion counts (a multinomial of ``n`` rows, exactly what sampling the
rows gives) and computes, for every fairness metric,

* ``percentile``: the percentile bootstrap of ``--resamples`` resamples (the seed system's CI),
* ``shipped``: the interval :func:`faircode.stats.metrics.fairness_metrics` reports now
  (``ci_method``),
  on the same audits and, since it needs no resampling, on 20 times as many fresh audits
  (``shipped, 20x``: Monte-Carlo s.e. about 0.0015).

It also measures the intersectional interaction contrast (four cells of ``n`` rows, rates
0.30/0.40/0.35/0.50, interaction 0.05: bootstrap percentile vs MOVER-Wilson) and the flip rate
(``n`` = 1,500 changed rows, true rates 0.0005–0.002: bootstrap percentile vs Clopper–Pearson).

Coverage is the share of audits whose interval contains the truth, among audits where the metric is
defined (a subset can be empty at n = 25); the Monte-Carlo s.e. at 1,000 audits is about 0.007.
Everything is vectorised over audits and resamples.  ``--quick`` runs 200 audits x 200 resamples
on n = 40 only.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats as sps

from faircode.core.seeds import child_seed
from faircode.stats import _metric_defs as defs
from faircode.stats import resampling
from faircode.stats.intersectional import INTERACTION_WEIGHTS
from faircode.stats.metrics import FAIRNESS_METRICS

CONFIDENCE = 0.95
TAIL = (1.0 - CONFIDENCE) / 2.0


def cell_probabilities(base: float, tpr: float, fpr: float) -> np.ndarray:
    """Cell probabilities (TN, FP, FN, TP) of a group with this base rate and classifier."""
    return np.array([(1 - base) * (1 - fpr), (1 - base) * fpr, base * (1 - tpr), base * tpr])


def percentile(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-audit percentile interval of resamples of shape (B, audits), NaNs dropped."""
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = np.nanquantile(values, [TAIL, 1 - TAIL], axis=0)
    return low, high


def covered(low: np.ndarray, high: np.ndarray, truth: float, defined: np.ndarray) -> float:
    """Share of defined audits whose interval contains the truth."""
    ok = defined & np.isfinite(low) & np.isfinite(high)
    return float(np.mean((low[ok] <= truth + 1e-12) & (truth - 1e-12 <= high[ok])))


def defined_mask(metric: str, d: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Audits where ``metric`` is defined (no empty subset, finite value)."""
    spec = defs.SPECS[metric]
    empty = np.zeros(d.shape[0], bool)
    for subset in spec.subsets:
        empty |= (d[:, list(subset)].sum(1) == 0) | (a[:, list(subset)].sum(1) == 0)
    with np.errstate(all="ignore"):
        return np.isfinite(spec.value(d, a)) & ~empty


def fairness_rows(n: int, base: float, *, audits: int, resamples: int, rng: np.random.Generator
                  ) -> list[tuple[str, float, float, float, str, float]]:
    """(metric, percentile, shipped, shipped on 20x audits, shipped method, undefined share)."""
    p_d = cell_probabilities(base, 0.65, 0.20)
    p_a = cell_probabilities(base + 0.1, 0.75, 0.25)
    d = rng.multinomial(n, p_d, size=audits)
    a = rng.multinomial(n, p_a, size=audits)
    boot_d = rng.multinomial(n, d / n, size=(resamples, audits))
    boot_a = rng.multinomial(n, a / n, size=(resamples, audits))
    many_d = rng.multinomial(n, p_d, size=20 * audits)
    many_a = rng.multinomial(n, p_a, size=20 * audits)
    rows = []
    for metric in FAIRNESS_METRICS:
        spec = defs.SPECS[metric]
        truth = float(spec.value(p_d, p_a))  # type: ignore[arg-type]
        defined = defined_mask(metric, d, a)
        with np.errstate(all="ignore"):
            b_low, b_high = percentile(spec.value(boot_d, boot_a))
        s_low, s_high = defs.closed_form_interval(metric, d, a, confidence=CONFIDENCE)
        m_low, m_high = defs.closed_form_interval(metric, many_d, many_a, confidence=CONFIDENCE)
        rows.append((metric, covered(b_low, b_high, truth, defined),
                     covered(s_low, s_high, truth, defined),
                     covered(m_low, m_high, truth, defined_mask(metric, many_d, many_a)),
                     spec.interval.value, float(1 - defined.mean())))
    return rows


def interaction_row(n: int, *, audits: int, resamples: int, rng: np.random.Generator
                    ) -> tuple[float, float]:
    """Coverage of the interaction contrast: bootstrap percentile, MOVER-Wilson."""
    rates = np.array([0.30, 0.40, 0.35, 0.50])
    w = np.asarray(INTERACTION_WEIGHTS)
    truth = float(w @ rates)
    x = rng.binomial(n, rates, size=(audits, 4))
    boot = rng.binomial(n, x / n, size=(resamples, audits, 4)) / n @ w
    b_low, b_high = percentile(boot)
    m_low, m_high = resampling.mover_interval(x, np.full((audits, 4), n), INTERACTION_WEIGHTS,
                                         confidence=CONFIDENCE)
    everywhere = np.ones(audits, bool)
    return covered(b_low, b_high, truth, everywhere), covered(m_low, m_high, truth, everywhere)


def flip_row(rate: float, *, n: int, audits: int, resamples: int, rng: np.random.Generator
             ) -> tuple[float, float]:
    """Coverage of a flip rate: bootstrap percentile, Clopper–Pearson (exact)."""
    flips = rng.binomial(n, rate, size=audits)
    boot = rng.binomial(n, flips / n, size=(resamples, audits)) / n
    b_low, b_high = percentile(boot)
    # Clopper–Pearson limits as beta quantiles (what binomtest's "exact" computes)
    cp_low = np.where(flips > 0, sps.beta.ppf(TAIL, flips, n - flips + 1), 0.0)
    cp_high = np.where(flips < n, sps.beta.ppf(1 - TAIL, flips + 1, n - flips), 1.0)
    everywhere = np.ones(audits, bool)
    return covered(b_low, b_high, rate, everywhere), covered(cp_low, cp_high, rate, everywhere)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="200 audits x 200 resamples, n=40")
    args = parser.parse_args()
    audits, resamples = (200, 200) if args.quick else (args.audits, args.resamples)
    sizes = (40,) if args.quick else (25, 40, 150, 500)
    bases = (0.3,) if args.quick else (0.3, 0.5)
    start = time.perf_counter()
    print(f"# coverage of 95 % intervals: {audits} audits x {resamples} resamples, "
          f"seed {args.seed}{' (quick)' if args.quick else ''}\n")
    print("| rows per group | base rate | metric | percentile bootstrap | shipped | shipped, 20x "
          "| shipped method | undefined |")
    print("|---:|---:|---|---:|---:|---:|---|---:|")
    k = 0
    for n in sizes:
        for base in bases:
            rng = np.random.default_rng(child_seed(args.seed, 0, k))
            k += 1
            for metric, before, after, precise, method, undefined in fairness_rows(
                n, base, audits=audits, resamples=resamples, rng=rng
            ):
                print(f"| {n} | {base:.1f} | {metric} | {before:.3f} | {after:.3f} "
                      f"| {precise:.3f} | {method} | {undefined:.3f} |")
    print("\n| cell rows | interaction: percentile bootstrap | MOVER-Wilson |")
    print("|---:|---:|---:|")
    for j, n in enumerate(sizes):
        rng = np.random.default_rng(child_seed(args.seed, 1, j))
        before, after = interaction_row(n, audits=audits, resamples=resamples, rng=rng)
        print(f"| {n} | {before:.3f} | {after:.3f} |")
    print("\n| changed rows | true flip rate | percentile bootstrap | Clopper-Pearson |")
    print("|---:|---:|---:|---:|")
    for j, rate in enumerate((0.0005, 0.001, 0.002, 0.01)):
        rng = np.random.default_rng(child_seed(args.seed, 2, j))
        before, after = flip_row(rate, n=1500, audits=audits, resamples=resamples, rng=rng)
        print(f"| 1500 | {rate} | {before:.3f} | {after:.3f} |")
    print(f"\n(ran in {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
