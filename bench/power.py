"""Check the minimum detectable gaps of faircode.stats.power against faircode's own permutation
test.

Run from the repository root:

    PYTHONPATH=$PWD .venv/bin/python bench/power.py [--quick] [--audits 1000] [--permutations 500]
                                                   [--alpha 0.05] [--power 0.8] [--seed 0]

For each synthetic comparison (group sizes ``n_d``/``n_a`` and the advantaged group's rate) the
reported MDE is computed by :func:`faircode.stats.power.minimum_detectable_gap`, and ``--audits``
synthetic audits are drawn in which the disadvantaged rate sits at the MDE on its *harder* side
(the side whose detectable difference the MDE is).  Each audit's p-value comes from the engine
the grid uses: :func:`faircode.stats.resampling.permute_counts` (group labels permuted within the
metric's
strata, ``--permutations`` draws), the statistic from :func:`faircode.stats.metrics.metric_values`
(``|gap|``; ``|log ratio|`` for disparate impact; ``max(|TPR gap|, |FPR gap|)`` for equalized
odds) and :func:`faircode.stats.resampling.permutation_p_value`.  The printed ``power`` is the
share of
audits with ``p < alpha``; its Monte-Carlo s.e. is ``√(π(1−π)/audits)`` at ``π = --power``, and
``z`` is ``(power − π)/s.e.``.  For demographic parity (groups up to 1,000 rows together) the
table adds ``exact``, the power of the same test as ``P → ∞`` summed exactly (no Monte-Carlo
error; :func:`exact_power`) at the reported MDE, and ``mde_z``/``exact_z``, the plain
normal-approximation MDE (``continuity=False``) and the exact power there — how close the
z-approximation alone is to the permutation test's real power.

Sizes include the shipped audits' smallest test groups: german_credit_lending (200 test rows,
age ≈ 74 / 126, with ≈ 27 / 33 ``y = 0`` rows) and insurance_denial (267 test rows,
age ≈ 110 / 157) — test sizes are about 20 % of the group sizes ``faircode validate`` prints.

The draws within one audit are vectorised (all permutations at once); the loop is over the
simulated audits, each with its own child seed, so the numbers do not depend on the order.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
from scipy import stats as sps

from faircode.core.seeds import child_seed
from faircode.stats.metrics import metric_values
from faircode.stats.power import minimum_detectable_gap
from faircode.stats.resampling import permutation_p_value, permute_counts

# (n_d, n_a): the tiny, the shipped audits' smallest test subsets, then large
SIZES = ((10, 10), (20, 20), (27, 33), (50, 50), (74, 126), (110, 157), (300, 300), (1000, 2000))
RATES = (0.05, 0.2, 0.5, 0.7)
QUICK_SIZES = ((27, 33), (74, 126))
QUICK_RATES = (0.2, 0.7)
_ALL, _Y1, _Y0 = (0, 1, 2, 3), (2, 3), (0, 1)


def harder_side(base: float, mde: float) -> float:
    """The disadvantaged rate at the MDE on the side whose Cohen's h is smallest (inside [0, 1])."""
    phi = np.arcsin(np.sqrt(base))
    options = [p for p in (base + mde, base - mde) if 0.0 <= p <= 1.0]
    return min(options, key=lambda p: abs(2 * np.arcsin(np.sqrt(p)) - 2 * phi))


def simulated_power(
    metric: str,
    sizes_d: tuple[int, ...],
    sizes_a: tuple[int, ...],
    rates_d: tuple[float, ...],
    rates_a: tuple[float, ...],
    *,
    alpha: float,
    audits: int,
    permutations: int,
    seed: np.random.SeedSequence,
) -> float:
    """Share of simulated audits whose engine permutation p-value is below ``alpha``.

    One stratum (all rows, decisions in the FP cell) for a single rate; for equalized odds two
    strata, the ``y = 1`` rows (TPR) and the ``y = 0`` rows (FPR).
    """
    strata = (_Y1, _Y0) if len(sizes_d) == 2 else (_ALL,)
    hits = 0
    for i in range(audits):
        rng = np.random.default_rng(child_seed(seed, i))
        d = np.zeros(4, dtype=np.int64)
        a = np.zeros(4, dtype=np.int64)
        # stratum 0 positives go to TP (y = 1) or FP (single rate); stratum 1 to FP (y = 0)
        cells = ((2, 3), (0, 1)) if len(sizes_d) == 2 else ((0, 1),)
        for (neg, pos), n_d, n_a, p_d, p_a in zip(cells, sizes_d, sizes_a, rates_d, rates_a,
                                                  strict=True):
            k_d, k_a = rng.binomial(n_d, p_d), rng.binomial(n_a, p_a)
            d[[neg, pos]] = (n_d - k_d, k_d)
            a[[neg, pos]] = (n_a - k_a, k_a)
        perm_d, perm_a = permute_counts(d, a, strata=strata, n_permutations=permutations, rng=rng)
        observed = statistic(metric, d, a)
        permuted = statistic(metric, perm_d, perm_a)
        hits += permutation_p_value(float(observed), permuted) < alpha
    return hits / audits


def exact_power(n_d: int, n_a: int, p_d: float, p_a: float, *, alpha: float) -> float:
    """Power of the demographic-parity permutation test as ``P → ∞``, summed exactly.

    Given the pooled number of positives ``m`` the permutation null hands the disadvantaged
    group a hypergeometric count ``x``; the exact p-value of ``x`` is the null mass of every
    ``x'`` whose ``|gap|`` ties or exceeds it (same relative tie tolerance as the engine).  The
    power sums the binomial probability of every ``(k_d, k_a)`` whose p-value is below ``alpha``.
    """
    total = 0.0
    for m in range(n_d + n_a + 1):
        x = np.arange(max(0, m - n_a), min(n_d, m) + 1)
        null = sps.hypergeom.pmf(x, n_d + n_a, m, n_d)
        gap = np.abs(x / n_d - (m - x) / n_a)
        order = np.argsort(-gap, kind="stable")
        tail = np.cumsum(null[order])
        # ties: every x' with gap >= gap(x)·(1 − 1e-9) counts, so take the last tied position
        last = np.searchsorted(-gap[order], -gap[order] * (1 - 1e-9), side="right") - 1
        p_value = np.empty_like(null)
        p_value[order] = tail[last]
        rejected = x[p_value < alpha]
        total += float(np.sum(sps.binom.pmf(rejected, n_d, p_d)
                              * sps.binom.pmf(m - rejected, n_a, p_a)))
    return total


def statistic(metric: str, d: np.ndarray, a: np.ndarray) -> np.ndarray:
    """The grid's permutation statistic: |gap|, or |log ratio| for disparate impact."""
    value = metric_values(metric, d, a)
    if metric == "disparate_impact_ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(np.log(value))
    return np.abs(value)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="two sizes x two rates")
    parser.add_argument("--audits", type=int, default=1000)
    parser.add_argument("--permutations", type=int, default=500)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--power", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.quick:
        args.audits = min(args.audits, 400)
        args.permutations = min(args.permutations, 200)
    sizes, rates = (QUICK_SIZES, QUICK_RATES) if args.quick else (SIZES, RATES)
    se = float(np.sqrt(args.power * (1 - args.power) / args.audits))
    print(f"alpha={args.alpha} power={args.power} audits={args.audits} "
          f"permutations={args.permutations} seed={args.seed} (Monte-Carlo s.e. {se:.3f})")
    print(f"{'metric':<24}{'n_d':>6}{'n_a':>6}{'p_a':>6}{'mde':>9}{'p_d':>8}{'power':>8}"
          f"{'z':>6}{'exact':>8}{'mde_z':>9}{'exact_z':>8}")
    row = 0
    for metric in ("demographic_parity_diff", "disparate_impact_ratio"):
        for (n_d, n_a), p_a in itertools.product(sizes, rates):
            k_a = round(p_a * n_a)  # the advantaged counts the MDE is computed from
            counts_a = np.array([n_a - k_a, k_a, 0, 0])
            counts_d = np.array([n_d, 0, 0, 0])
            mde, note = minimum_detectable_gap(metric, counts_d, counts_a, alpha=args.alpha,
                                               power=args.power, min_size=1)
            base = k_a / n_a
            row += 1
            if note:
                print(f"{metric:<24}{n_d:>6}{n_a:>6}{base:>6.2f}{'n/a':>9}  {note}")
                continue
            if metric == "disparate_impact_ratio":  # back to a rate on the harder side
                options = [p for p in (base * np.exp(mde), base * np.exp(-mde)) if p <= 1]
                p_d = min(options, key=lambda p: abs(np.arcsin(np.sqrt(p))
                                                     - np.arcsin(np.sqrt(base))))
            else:
                p_d = harder_side(base, float(mde))
            got = simulated_power(metric, (n_d,), (n_a,), (p_d,), (base,), alpha=args.alpha,
                                  audits=args.audits, permutations=args.permutations,
                                  seed=child_seed(args.seed, row))
            z = (got - args.power) / se
            exact = ""
            if metric == "demographic_parity_diff" and n_d + n_a <= 1000:
                plain, _ = minimum_detectable_gap(metric, counts_d, counts_a, alpha=args.alpha,
                                                  power=args.power, min_size=1, continuity=False)
                p_z = harder_side(base, float(plain))
                exact = (f"{exact_power(n_d, n_a, p_d, base, alpha=args.alpha):>8.3f}"
                         f"{float(plain):>9.4f}"
                         f"{exact_power(n_d, n_a, p_z, base, alpha=args.alpha):>8.3f}")
            print(f"{metric:<24}{n_d:>6}{n_a:>6}{base:>6.2f}{float(mde):>9.4f}{p_d:>8.4f}"
                  f"{got:>8.3f}{z:>6.1f}{exact}")
    # equalized odds: TPR on the y = 1 rows, FPR on the y = 0 rows; the gap in either component
    for (n_d, n_a), (tpr, fpr) in itertools.product(sizes, ((0.7, 0.3), (0.9, 0.1))):
        if n_d < 20:
            continue
        n_d1, n_a1 = n_d // 2, n_a // 2
        n_d0, n_a0 = n_d - n_d1, n_a - n_a1
        t_a, f_a = round(tpr * n_a1), round(fpr * n_a0)
        counts_a = np.array([n_a0 - f_a, f_a, n_a1 - t_a, t_a])
        counts_d = np.array([n_d0, 0, n_d1, 0])
        mde, note = minimum_detectable_gap("equalized_odds_diff", counts_d, counts_a,
                                           alpha=args.alpha, power=args.power, min_size=1)
        if note:
            print(f"{'equalized_odds_diff':<24}{n_d:>6}{n_a:>6}  tpr={tpr} fpr={fpr} n/a {note}")
            continue
        for component in ("tpr", "fpr"):
            row += 1
            base_t, base_f = t_a / n_a1, f_a / n_a0
            rate_t, rate_f = base_t, base_f
            # the carrying component moved by the MDE towards 0.5 (its harder side), other at 0
            if component == "tpr":
                rate_t = base_t - float(mde) if base_t > 0.5 else base_t + float(mde)
            else:
                rate_f = base_f + float(mde) if base_f < 0.5 else base_f - float(mde)
            if not (0 <= rate_t <= 1 and 0 <= rate_f <= 1):
                continue
            got = simulated_power("equalized_odds_diff", (n_d1, n_d0), (n_a1, n_a0),
                                  (rate_t, rate_f), (base_t, base_f), alpha=args.alpha,
                                  audits=args.audits, permutations=args.permutations,
                                  seed=child_seed(args.seed, row))
            z = (got - args.power) / se
            label = f"eodds[{component}] {tpr}/{fpr}"
            print(f"{label:<24}{n_d:>6}{n_a:>6}{base_t if component == 'tpr' else base_f:>6.2f}"
                  f"{float(mde):>9.4f}{rate_t if component == 'tpr' else rate_f:>8.4f}"
                  f"{got:>8.3f}{z:>6.1f}")


if __name__ == "__main__":
    main()
