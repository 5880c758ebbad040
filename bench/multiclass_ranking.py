"""Size of the multi-class and ranking tests, coverage of their intervals, on simulated data.

Run from the repository root:

    .venv/bin/python bench/multiclass_ranking.py [--replicates 2000] [--resamples 400]

Each setting draws ``--replicates`` data sets (the cheap multi-class nulls at least 10,000, the
FA*IR rankings 20,000) and prints how often each test rejects at 5 % under its null (type-I
error; Monte-Carlo s.e. about 0.005 at 2,000, 0.002 at 10,000) and how often each 95 % interval
or band holds the truth (coverage; s.e. about 0.005):

* **multi-class** (:mod:`faircode.stats.multiclass`): BankWages' shape -- 216 and 258 rows over
  three classes of shares 6 / 77 / 17 % (one rare class, as custodial jobs) -- and its test
  split's 43 and 52 rows, both groups drawn from the same shares (null): the joint exact test,
  the per-class exact mid-p tests, Newcombe's interval of each class's share gap (truth 0) and
  Wilson's of each share; then a gap (the disadvantaged group 12 points more in the middle
  class, 10 fewer in the last): Newcombe's coverage of the true gaps.
* **ranking** (:mod:`faircode.stats.ranking`): ``n`` rows, 40 % protected, scores normal with
  the protected group's shifted down by ``shift`` (0: the null).  The exposure test's size at
  ``shift = 0``; at ``shift`` 0.5 (and 1.0) the coverage of the exposure ratio's interval
  (truth: the ratio of the groups' expected exposures at this ``n``, by numerical integration)
  and of the top-k share band, simultaneously over every ``k`` from ``k_min`` (50 rows or 10 %)
  to ``n`` (truth: the population share among the top ``k / n``).
* **FA*IR** (:func:`faircode.stats.ranking.fair_test`): rankings of ``k`` positions each
  protected with probability ``p`` independently (the paper's fair ranking), tested at the
  adjusted ``alpha_c``; printed beside the exact failure probability the adjustment targets.

Seeds: ``SeedSequence(20261206, spawn_key=(setting, replicate))``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from faircode.stats.multiclass import class_gaps, joint_test
from faircode.stats.ranking import (
    adjusted_alpha,
    band_points,
    default_k_min,
    fair_table,
    rank_views,
)

MASTER = 20261206
SHARES = np.array([0.06, 0.77, 0.17])
"""BankWages-like class shares (custodial, admin, manage)."""
GAP_SHARES = np.array([0.04, 0.89, 0.07])
"""The disadvantaged group's shares in the gap setting (+12 admin, -10 manage points)."""


def _rng(setting: int, replicate: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(MASTER, spawn_key=(setting, replicate)))


def multiclass_null(replicates: int, *, sizes: tuple[int, int], setting: int = 0) -> dict:
    """Rejection rates of the joint and per-class tests and coverage of the intervals of the
    share gaps (truth 0) and the shares, both groups drawn from :data:`SHARES`."""
    joint = 0
    per_class = np.zeros(3)
    gap_cover = np.zeros(3)
    share_cover = np.zeros(3)
    defined = np.zeros(3)
    for r in range(replicates):
        rng = _rng(setting, r)
        table = np.stack([rng.multinomial(sizes[0], SHARES), rng.multinomial(sizes[1], SHARES)])
        joint += joint_test(table, n_permutations=200, seed=r).p_value < 0.05
        gaps = class_gaps(table, confidence=0.95)
        ok = np.isfinite(gaps.p_value)
        defined += ok
        per_class += ok & (gaps.p_value < 0.05)
        gap_cover += (gaps.gap_low <= 0) & (0 <= gaps.gap_high)
        share_cover += (gaps.share_low[0] <= SHARES) & (SHARES <= gaps.share_high[0])
    return {"joint": joint / replicates, "per_class": per_class / defined,
            "gap_coverage": gap_cover / replicates, "share_coverage": share_cover / replicates}


def multiclass_gap(replicates: int, *, sizes: tuple[int, int], setting: int = 1) -> dict:
    """Coverage of Newcombe's interval of each class's true share gap, and the joint test's
    power, the disadvantaged group drawn from :data:`GAP_SHARES`."""
    truth = GAP_SHARES - SHARES
    cover = np.zeros(3)
    power = 0
    for r in range(replicates):
        rng = _rng(setting, r)
        table = np.stack([rng.multinomial(sizes[0], GAP_SHARES),
                          rng.multinomial(sizes[1], SHARES)])
        gaps = class_gaps(table, confidence=0.95)
        cover += (gaps.gap_low <= truth) & (truth <= gaps.gap_high)
        power += joint_test(table, n_permutations=200, seed=r).p_value < 0.05
    return {"gap_coverage": cover / replicates, "power": power / replicates}


def _population(n: int, *, share: float, shift: float) -> tuple[float, np.ndarray]:
    """The true exposure ratio at ``n`` rows and the true top-k shares at ``k = 1..n``."""
    grid = np.linspace(-8.0, 8.0, 4001)
    step = grid[1] - grid[0]

    def above(s: np.ndarray) -> np.ndarray:  # P(another row scores above s)
        return share * stats.norm.sf(s + shift) + (1 - share) * stats.norm.sf(s)

    q = above(grid)
    ranks = np.arange(n)
    v = 1.0 / np.log2(ranks + 2.0)
    pmf = stats.binom.pmf(ranks[None, :], n - 1, q[:, None])
    seen = pmf @ v  # E[exposure | score] at n rows
    mine = (seen * stats.norm.pdf(grid + shift)).sum() * step
    other = (seen * stats.norm.pdf(grid)).sum() * step
    fractions = np.arange(1, n + 1) / n
    cuts = np.interp(-fractions, -q, grid)  # the score above which a fraction q lies
    top = share * stats.norm.sf(cuts + shift) / fractions
    return float(mine / other), top


def ranking_settings(replicates: int, *, n: int, resamples: int, setting: int,
                     shift: float = 0.5) -> dict:
    """The exposure test's size (shift 0), and the coverage of the exposure interval and of the
    top-k band at ``shift``."""
    share, k_min = 0.4, default_k_min(n)
    points = band_points(n, k_min=k_min)
    ratio, top = _population(n, share=share, shift=shift)
    rejects = covered = banded = 0
    for r in range(replicates):
        rng = _rng(setting, r)
        group = rng.random(n) < share
        noise = rng.normal(size=n)
        null, shifted = noise, noise - shift * group
        views = rank_views([null, shifted], [group], higher_first=True, fair_k=[1, 1],
                           confidence=0.95, alpha=0.05, n_resamples=resamples,
                           n_permutations=resamples, seed=r, k_min=k_min,
                           report=[points[:1], points])
        rejects += views[0][0].exposure.p_value < 0.05
        exposure, band = views[1][0].exposure, views[1][0].shares
        covered += exposure.ci_low <= ratio <= exposure.ci_high
        truth = top[points - 1]
        banded += bool(((band.band_low <= truth) & (truth <= band.band_high)).all())
    return {"exposure_size": rejects / replicates, "exposure_coverage": covered / replicates,
            "band_coverage": banded / replicates, "true_ratio": ratio, "k_min": k_min}


def fair_size(replicates: int, *, k: int, p: float, setting: int) -> dict:
    """FA*IR's rejection rate on fair rankings at the adjusted alpha, and the exact failure
    probability it targets."""
    alpha_c, fail = adjusted_alpha(k, p, 0.05)
    m = fair_table(k, p, alpha_c)
    rng = _rng(setting, 0)
    counts = np.cumsum(rng.random((replicates, k)) < p, axis=1)
    return {"size": float((counts < m).any(axis=1).mean()), "exact": fail,
            "alpha_adjusted": alpha_c}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=400)
    args = parser.parse_args()
    reps = args.replicates
    started = time.process_time()
    print(f"replicates {reps} (multi-class nulls {max(reps, 10_000)}, FA*IR "
          f"{max(reps, 20_000)}); rejection at 5 % under the null, coverage of 95 % intervals")
    for s, sizes in enumerate(((216, 258), (43, 52))):
        null = multiclass_null(max(reps, 10_000), sizes=sizes, setting=10 + s)
        gap = multiclass_gap(reps, sizes=sizes, setting=20 + s)
        print(f"multi-class, groups of {sizes[0]} and {sizes[1]} rows, shares "
              f"{SHARES.tolist()}: joint exact test {null['joint']:.4f}; per-class mid-p tests "
              f"{np.round(null['per_class'], 4).tolist()}; share-gap coverage (gap 0) "
              f"{np.round(null['gap_coverage'], 4).tolist()}; share coverage "
              f"{np.round(null['share_coverage'], 4).tolist()}; share-gap coverage (gap "
              f"{np.round(GAP_SHARES - SHARES, 2).tolist()}) "
              f"{np.round(gap['gap_coverage'], 4).tolist()}, joint power {gap['power']:.4f}")
    for s, (n, shift) in enumerate(((300, 0.5), (1000, 0.5), (300, 1.0))):
        found = ranking_settings(reps, n=n, resamples=args.resamples, setting=30 + s,
                                 shift=shift)
        print(f"ranking, {n} rows, 40 % protected: exposure test {found['exposure_size']:.4f} "
              f"(shift 0); at shift {shift} (true exposure ratio {found['true_ratio']:.4f}): "
              f"exposure interval coverage {found['exposure_coverage']:.4f}, top-k band "
              f"coverage over every k >= {found['k_min']} {found['band_coverage']:.4f} "
              f"({args.resamples} resamples)")
    for s, (k, p) in enumerate(((100, 0.3), (300, 0.5), (1000, 0.2))):
        found = fair_size(max(reps, 20_000), k=k, p=p, setting=40 + s)
        print(f"FA*IR, k {k}, p {p}: rejects {found['size']:.4f} of {max(reps, 20_000)} fair "
              f"rankings at alpha_c {found['alpha_adjusted']:.5f} (exact failure probability "
              f"{found['exact']:.4f})")
    print(f"CPU seconds: {time.process_time() - started:.0f}")


if __name__ == "__main__":
    main()
