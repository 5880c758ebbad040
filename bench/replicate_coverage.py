"""Coverage of the K-replicate interval and the size of the equivalence test, by simulation.

Run from the repository root (the machine is shared: ``nice``):

    PYTHONPATH=$PWD nice python bench/replicate_coverage.py [--datasets 2000] [--seed 0]
        [--quick]

Each synthetic audit is a finite dataset ``D`` of ``N`` rows drawn from a population: two groups
(the disadvantaged share ``π``), a label ``y ~ Bernoulli(b_g)``, a decision score ``u ~ U(0, 1)``
and a training feature ``v ~ N(0, 1)``.  A *fit* of the pipeline on a training set decides
``ŷ = 1{u < c_{g,y}}`` with cutoffs ``c_{g,y} = c0_{g,y} + λ·v̄_{train,g} + τ·ε_g``: ``λ`` makes the
model depend on which rows it was trained on, ``τ`` on its seed (``ε ~ N(0, 1)`` per fit and
group).  So every metric of a fit is known in the population (selection rate
``b·c_{g,1} + (1 − b)·c_{g,0}``, TPR ``c_{g,1}``, FPR ``c_{g,0}``), and the estimand of a
K-replicate estimate -- ``θ(D)``, the expected population gap of the fits on ``D`` over splits
and seeds (:mod:`faircode.stats.replicates`) -- is exact for the differences (linear in the cutoffs;
a stratified training set's mean of ``v`` averages to ``D``'s) and Monte-Carlo (2,000 draws of the
split and seed noise) for the log ratio.

Each of ``--datasets`` audits draws ``D``, then K = 5 replicates as ``run.seeds: 5`` does: in
``split`` mode each replicate draws its own stratified 20 % test split (``model`` mode: replicate
0's for all) and its own seed, decides the test rows and scores them with the shipped
closed-form intervals (:func:`faircode.stats._metric_defs.closed_form_interval`).  Intervals
compared for the estimand, at 95 %:

* ``shipped``: :func:`faircode.stats.replicates.replicate_evidence` then
  :func:`faircode.stats.verdicts.gap_claims` / ``max_abs_claims`` -- what ``fairness.csv`` now
  reports at K > 1 (``θ̄ ± t_ν·√(s_b²/K + f·w̄)``, ``ν = (K − 1)·V/(s_b²/K)``);
* ``t(K−1)``: the same variance with ``t_{K−1}`` (the issue's form);
* ``naive``: ``θ̄ ± t_{K−1}·s_b/√K`` (the textbook random-effects interval, no dataset term);
* ``pooled``: the v0.3 interval, the percentile interval of the K × 200 pooled bootstrap draws
  (demographic parity only);
* ``K=1``: replicate 0's own closed-form interval (what a K = 1 run reports), for ``θ(D)``.

Then the equivalence test's size: the true gap is exactly at the margin (``δ = 0.05``, the ratio
0.8, equalized odds with one component at ``δ``), and the share of audits whose verdict would be
``parity`` (TOST p < 0.05, one test, no family) must stay at or below 0.05, for K = 5 and K = 1.
Monte-Carlo s.e. at 2,000 audits: 0.005 for coverage near 0.95 and for a size near 0.05.

A third table compares degrees of freedom in a normal model of the design (400,000 draws per
row: ``θ_k = u + e_k``, the dataset term ``u ~ N(0, f·w)`` shared by the K replicates,
``e_k ~ N(0, (1 − f)·w + v)``, ``w`` known): Welch-Satterthwaite ``(K − 1)·(V/B)²``, the shipped
``(K − 1)·V/B`` and ``K − 1``, by the equivalence test's size at the margin and 95 % coverage,
for training variance ``v`` from 0 to 10 ``w``.

``--quick`` runs 300 audits; ``--only coverage``, ``--only size`` or ``--only df`` one table.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from faircode.stats import _metric_defs as defs
from faircode.stats.replicates import replicate_evidence
from faircode.stats.verdicts import (
    Margins,
    gap_claims,
    interval_evidence,
    max_abs_claims,
)

K = 5
F = 0.2
CONFIDENCE = 0.95
ALPHA = 0.05
MARGINS = Margins()
CHUNK = 100
SIGNED = ("demographic_parity_diff", "disparate_impact_ratio", "tpr_gap", "fpr_gap")
SHOWN = (*SIGNED, "equalized_odds_diff")


@dataclass(frozen=True)
class Scenario:
    """One population and fitting process (module docstring)."""

    name: str
    n: int
    share: float = 0.4
    base: tuple[float, float] = (0.35, 0.45)  # favourable label rate: (D, A)
    tpr: tuple[float, float] = (0.65, 0.75)
    fpr: tuple[float, float] = (0.20, 0.25)
    lam: float = 0.0
    tau: float = 0.0
    mode: str = "split"
    metrics: tuple[str, ...] = field(default=SHOWN)


COVERAGE = (
    Scenario("split noise only, N = 5,000", 5000),
    Scenario("split noise only, model mode", 5000, mode="model", tau=0.02),
    Scenario("refit variance (tau 0.02, lambda 0.02)", 5000, lam=0.02, tau=0.02),
    Scenario("refit variance, large (tau 0.05)", 5000, lam=0.02, tau=0.05),
    Scenario("refit dominates, N = 40,000 (tau 0.03)", 40000, tau=0.03),
    Scenario("small N = 650, split noise", 650, share=0.3),
    Scenario("small N = 650, refit (tau 0.03)", 650, share=0.3, lam=0.05, tau=0.03),
    Scenario("small N = 1,000, refit (tau 0.05)", 1000, share=0.3, tau=0.05),
    Scenario("at parity, refit (tau 0.02)", 3000, tpr=(0.7, 0.7), fpr=(0.2, 0.2),
             base=(0.4, 0.4), tau=0.02),
    Scenario("rare decisions (FPR 0.01 / 0.03)", 5000, tpr=(0.10, 0.15), fpr=(0.01, 0.03),
             tau=0.004),
)

SIZE = (
    Scenario("DP at +0.05, N = 10,000, refit", 10000, base=(0.4, 0.4), tpr=(0.75, 0.70),
             fpr=(0.25, 0.20), tau=0.01, metrics=("demographic_parity_diff",)),
    Scenario("DP at +0.05, N = 40,000, refit", 40000, base=(0.4, 0.4), tpr=(0.75, 0.70),
             fpr=(0.25, 0.20), tau=0.01, metrics=("demographic_parity_diff",)),
    Scenario("DP at -0.05, N = 40,000, split only", 40000, base=(0.4, 0.4),
             tpr=(0.70, 0.75), fpr=(0.20, 0.25), metrics=("demographic_parity_diff",)),
    Scenario("DI at 0.8, N = 40,000, split only", 40000, base=(0.4, 0.4), tpr=(0.56, 0.70),
             fpr=(0.16, 0.20), metrics=("disparate_impact_ratio",)),
    Scenario("EOdds at 0.05, N = 40,000, split only", 40000, base=(0.4, 0.4),
             tpr=(0.75, 0.70), fpr=(0.20, 0.20), metrics=("equalized_odds_diff",)),
)


def population(c: np.ndarray, base: np.ndarray) -> dict[str, np.ndarray]:
    """Population metrics from cutoffs ``c[..., g, y]`` (g: 0 = D, 1 = A)."""
    rate = base * c[..., 1] + (1 - base) * c[..., 0]
    tpr = c[..., 0, 1] - c[..., 1, 1]
    fpr = c[..., 0, 0] - c[..., 1, 0]
    return {"demographic_parity_diff": rate[..., 0] - rate[..., 1],
            "disparate_impact_ratio": rate[..., 0] / rate[..., 1],
            "tpr_gap": tpr, "fpr_gap": fpr,
            "equalized_odds_diff": np.maximum(np.abs(tpr), np.abs(fpr))}


def cutoffs(s: Scenario) -> np.ndarray:
    """``c0[g, y]`` from the scenario's TPR and FPR (g: 0 = D, 1 = A)."""
    return np.array([[s.fpr[0], s.tpr[0]], [s.fpr[1], s.tpr[1]]])


def simulate(s: Scenario, datasets: int, rng: np.random.Generator) -> dict[str, dict]:
    """Run ``datasets`` audits of scenario ``s``; return per metric the hits of each interval
    and the parity verdicts."""
    n_d = round(s.share * s.n)
    sizes = np.array([n_d, s.n - n_d])
    n_test = np.round(F * sizes).astype(int)
    base = np.array(s.base)
    c0 = cutoffs(s)
    out: dict[str, dict[str, list[np.ndarray]]] = {m: {} for m in s.metrics}
    for start in range(0, datasets, CHUNK):
        r = min(CHUNK, datasets - start)
        group = np.repeat([0, 1], sizes)
        y = (rng.random((r, s.n)) < base[group]).astype(np.int64)
        u = rng.random((r, s.n))
        v = rng.normal(size=(r, s.n))
        v_mean = np.stack([v[:, group == g].mean(axis=1) for g in (0, 1)], axis=1)
        counts = np.zeros((r, K, 2, 4), dtype=np.int64)
        train_dev = np.zeros((r, K, 2))
        fixed = None
        for k in range(K):
            if s.mode == "model" and fixed is not None:
                test = fixed
            else:
                keys = rng.random((r, s.n)) + 2.0 * group  # stratified by group
                order = np.argsort(keys, axis=1)
                test = np.zeros((r, s.n), dtype=bool)
                offsets = np.concatenate([[0], np.cumsum(sizes)])
                for g in (0, 1):
                    pick = order[:, offsets[g]:offsets[g] + n_test[g]]
                    np.put_along_axis(test, pick, True, axis=1)
                fixed = test
            for g in (0, 1):
                rows = group == g
                train_mean = np.where(~test[:, rows], v[:, rows], 0).sum(1) / (
                    sizes[g] - n_test[g])
                train_dev[:, k, g] = train_mean - v_mean[:, g]
            eps = rng.normal(size=(r, 2))
            c = c0[None] + (s.lam * (v_mean + train_dev[:, k]) + s.tau * eps)[:, :, None]
            c = np.clip(c, 0.0, 1.0)
            decide = u < c[np.arange(r)[:, None], group[None, :], y]
            cell = 2 * y + decide
            for g in (0, 1):
                mask = test & (group == g)[None, :]
                for j in range(4):
                    counts[:, k, g, j] = (mask & (cell == j)).sum(axis=1)
        truth = _estimand(s, c0, base, v_mean, sizes, rng)
        for metric in s.metrics:
            for name, hit in _hits(s, metric, counts, truth[metric], rng).items():
                out[metric].setdefault(name, []).append(hit)
    return {m: {k: np.concatenate(v) for k, v in d.items()} for m, d in out.items()}


def _estimand(s: Scenario, c0: np.ndarray, base: np.ndarray, v_mean: np.ndarray,
              sizes: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """θ(D) of every metric: the expected population value over splits and seeds."""
    centre = c0[None] + (s.lam * v_mean)[:, :, None]
    lin = population(centre, base)
    truth = {m: lin[m] for m in ("demographic_parity_diff", "tpr_gap", "fpr_gap")}
    truth["equalized_odds_diff"] = np.maximum(np.abs(lin["tpr_gap"]), np.abs(lin["fpr_gap"]))
    draws = 2000
    sd_train = s.lam * np.sqrt(F / (1 - F) / sizes)  # a stratified training mean's spread
    noise = rng.normal(size=(draws, 1, 2)) * np.sqrt(sd_train ** 2 + s.tau ** 2)
    c = np.clip(centre[None] + noise[..., None], 0.0, 1.0)
    truth["disparate_impact_ratio"] = np.exp(np.log(population(c, base)[
        "disparate_impact_ratio"]).mean(axis=0))
    return truth


def _replicate_rows(metric: str, counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each replicate's value and closed-form interval, shape ``(r, K)``."""
    d, a = counts[..., 0, :], counts[..., 1, :]
    with np.errstate(all="ignore"):
        value = defs.metric_values(metric, d, a)
        low, high = defs.closed_form_interval(metric, d, a, confidence=CONFIDENCE)
    return value, low, high


def _hits(s: Scenario, metric: str, counts: np.ndarray, truth: np.ndarray,
          rng: np.random.Generator) -> dict[str, np.ndarray]:
    many, one, extra = _claims_mode(metric, counts, 1.0 if s.mode == "model" else F)
    hits = {"shipped": (many.ci_low <= truth) & (truth <= many.ci_high),
            "K=1": (one.ci_low <= truth) & (truth <= one.ci_high),
            "parity K=5": many.p_equivalence < ALPHA,
            "parity K=1": one.p_equivalence < ALPHA}
    if extra is not None:
        combined, _ = extra
        ev = combined.evidence
        log = metric == "disparate_impact_ratio"
        target = np.log(truth) if log else truth
        n = combined.n_informative
        t = sps.t.ppf(0.975, np.maximum(n - 1, 1))
        se_hi, se_lo = ev.se_high, ev.se_low
        hits["t(K-1)"] = (ev.estimate - t * se_lo <= target) & (target <= ev.estimate + t * se_hi)
        half = t * combined.sd_between / np.sqrt(n)
        hits["naive"] = np.abs(ev.estimate - target) <= half
        if metric == "demographic_parity_diff":
            hits["pooled"] = _pooled_hits(counts, truth, rng)
    return hits


def _claims_mode(metric: str, counts: np.ndarray, fraction: float) -> tuple:
    """(K-replicate claims, replicate-0 claims, the combination behind a signed metric's)."""
    if metric == "equalized_odds_diff":
        parts = [_replicate_rows(m, counts) for m in ("tpr_gap", "fpr_gap")]
        many = [replicate_evidence(m, *p, np.isfinite(p[0]), fraction=fraction,
                                   confidence=CONFIDENCE).evidence
                for m, p in zip(("tpr_gap", "fpr_gap"), parts, strict=True)]
        one = [interval_evidence(m, p[0][:, 0], p[1][:, 0], p[2][:, 0], confidence=CONFIDENCE)
               for m, p in zip(("tpr_gap", "fpr_gap"), parts, strict=True)]
        return (max_abs_claims(*many, confidence=CONFIDENCE, alpha=ALPHA, margins=MARGINS),
                max_abs_claims(*one, confidence=CONFIDENCE, alpha=ALPHA, margins=MARGINS), None)
    value, low, high = _replicate_rows(metric, counts)
    combined = replicate_evidence(metric, value, low, high, np.isfinite(value),
                                  fraction=fraction, confidence=CONFIDENCE)
    one = interval_evidence(metric, value[:, 0], low[:, 0], high[:, 0], confidence=CONFIDENCE)
    many = gap_claims(metric, combined.evidence, confidence=CONFIDENCE, alpha=ALPHA,
                      margins=MARGINS)
    return many, gap_claims(metric, one, confidence=CONFIDENCE, alpha=ALPHA,
                            margins=MARGINS), (combined, value)


def _pooled_hits(counts: np.ndarray, truth: np.ndarray, rng: np.random.Generator,
                 draws: int = 200) -> np.ndarray:
    """The v0.3 pooled-mixture percentile interval of demographic parity covers ``truth``."""
    n = counts.sum(axis=-1)  # (r, K, 2)
    x = counts[..., 1] + counts[..., 3]
    with np.errstate(all="ignore"):
        p = np.where(n > 0, x / np.maximum(n, 1), 0.0)
    boot = rng.binomial(n[..., None], p[..., None], size=(*n.shape, draws)) / np.maximum(
        n[..., None], 1)
    gap = (boot[:, :, 0] - boot[:, :, 1]).reshape(len(truth), -1)
    low, high = np.quantile(gap, [0.025, 0.975], axis=1)
    return (low <= truth) & (truth <= high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=("coverage", "size", "df"), default=None,
                        help="run one of the two tables")
    args = parser.parse_args()
    datasets = 300 if args.quick else args.datasets
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    columns = ("shipped", "t(K-1)", "naive", "pooled", "K=1")
    print(f"Coverage of 95 % intervals for theta(D), {datasets} audits per scenario, K = {K}, "
          f"test fraction {F}")
    print(f"{'scenario':<42}{'metric':<25}" + "".join(f"{c:>9}" for c in columns))
    for s in COVERAGE if args.only in (None, "coverage") else ():
        result = simulate(s, datasets, rng)
        for metric in s.metrics:
            row = result[metric]
            cells = "".join(f"{row[c].mean():>9.3f}" if c in row else f"{'':>9}"
                            for c in columns)
            print(f"{s.name:<42}{metric:<25}{cells}")
    print(f"\nSize of the equivalence test at the margin (share of 'parity' verdicts; must be "
          f"<= {ALPHA})")
    print(f"{'scenario':<42}{'metric':<25}{'K=5':>9}{'K=1':>9}{'covers':>9}")
    for s in SIZE if args.only in (None, "size") else ():
        result = simulate(s, datasets, rng)
        for metric in s.metrics:
            row = result[metric]
            print(f"{s.name:<42}{metric:<25}{row['parity K=5'].mean():>9.3f}"
                  f"{row['parity K=1'].mean():>9.3f}{row['shipped'].mean():>9.3f}")
    if args.only in (None, "df"):
        degrees_of_freedom(rng, draws=40_000 if args.quick else 400_000)
    print(f"\n{time.perf_counter() - started:.0f} s")


def degrees_of_freedom(rng: np.random.Generator, *, draws: int) -> None:
    """The third table (module docstring): size and coverage by the choice of ν."""
    print("\nDegrees of freedom in a normal model (K = 5, f = 0.2, w = 1): equivalence size "
          "at the margin / 95 % coverage")
    choices = ("Satterthwaite (K-1)(V/B)^2", "shipped (K-1)V/B", "K-1")
    print(f"{'v / w':<8}" + "".join(f"{c:>30}" for c in choices))
    for v in (0.0, 0.3, 1.0, 3.0, 10.0):
        theta = rng.normal(0, np.sqrt(F), (draws, 1)) + rng.normal(
            0, np.sqrt(1 - F + v), (draws, K))
        mean, between = theta.mean(axis=1), theta.var(axis=1, ddof=1) / K
        total = between + F
        cells = []
        for nu in ((K - 1) * (total / between) ** 2, (K - 1) * total / between,
                   np.full(draws, K - 1.0)):
            size = np.mean(mean + sps.t.ppf(1 - ALPHA, nu) * np.sqrt(total) < 0)
            cover = np.mean(np.abs(mean) <= sps.t.ppf(0.975, nu) * np.sqrt(total))
            cells.append(f"{size:.4f} / {cover:.4f}")
        print(f"{v:<8g}" + "".join(f"{c:>30}" for c in cells))


if __name__ == "__main__":
    main()
