"""Coverage and width of paired effect intervals, and the size of their tests, with a known truth.

Run from the repository root (the machine is shared: ``nice``):

    PYTHONPATH=$PWD nice python bench/paired_coverage.py [--audits 1000] [--resamples 1000]
        [--seed 0] [--quick] [--units-audits 300] [--smooth-share 0.99 ...]

Workload (rows): two groups of ``n`` rows each (``n`` = 40, 400 and 2000), base rate 0.5 in
both.  The reference B has TPR 0.80 / FPR 0.40 in the advantaged group; the mitigated A has TPR
``0.80 + δ`` / FPR ``0.40 − δ`` there, so A's accuracy and balanced accuracy differ from B's by
exactly ``δ``.  Each strategy X's disadvantaged group has its TPR shifted by ``1.5·g_X`` and its
FPR by ``0.5·g_X`` (``g_X`` for both in the "TPR = FPR gap" scenario, where equalized odds is a
maximum of two tied gaps), so X's parity gap is ``g_X`` and the true effect on each distance is
the difference of the absolute gaps (column ``true``).  A's and B's decisions on a row are
coupled: ``P(ŷ_A = ŷ_B = 1) = λ·min(p_A, p_B) + (1 − λ)·p_A·p_B`` with ``λ`` = 0.7.  Scenarios
``(g_B, g_A, δ)``: equal gaps (A and B exchangeable), a mirrored gap (``g_A = −g_B``: ``Δ = 0``
but A's decisions are not B's), effects of ±0.05 and −0.3, A reaching parity, A near parity on
either side (±0.03) and at −0.06, both at parity, both near zero, A overshooting parity.

Workload (units): the same scenarios at ``n`` = 200 units per group, each unit of 1-3 rows
(uniform), its rows sharing a latent draw that shifts their label probability by ±0.2 and their
decision probabilities by ±0.1 (so rows of a unit are correlated; every marginal rate, hence the
truth, is the rows' workload's), scored by the engine's unit path
(:func:`faircode.stats.paired.paired_draws` with ``units``: the cluster bootstrap).

Per audit, from one set of ``--resamples`` paired bootstrap draws (the engine's draw), every
effect's 95 % interval by

* ``pct``: the percentile interval of the paired draws of ``Δ``,
* ``bca``: the BCa interval of the same draws (bias from the share of draws below the estimate,
  acceleration from the count-level jackknife: delete one row of each joint cell, or one unit
  of each unit type),
* ``box``: the paired signed box alone at the shipped levels (sums at 99 %, differences at 95 %,
  both expanded for the smaller group: the interval of faircode 0.3),
* ``shipped``: :class:`faircode.stats._paired_interval.PairedInterval` as the engine uses it (the
  expanded percentile interval where at least ``--smooth-share`` of the draws lie on the
  estimate's linear piece, else the box; accuracy and balanced accuracy always the former),

the mean width of ``shipped`` and of ``box`` over ``bca``, the rejection rate at 0.05 of the
shipped test of ``Δ = 0`` (its p-value inverts the shipped interval: its size where the truth is
0, its power elsewhere) and of the swap test (exchangeable decisions; ``P`` = ``--resamples``),
and the rejection rate of the equivalence test at the margin 0.05 (``|Δ| ≥ 0.05``; its size
where the truth is ±0.05).  Coverage is the share of audits whose interval contains the truth
among audits where the effect is defined (Monte-Carlo s.e. about 0.007 at 1,000 audits).
Scenario ``k`` at size ``j`` draws from ``child_seed(seed, j, k)`` (units: ``(seed, 9, k)``).
``--quick``: 200 audits x 200 resamples, 60 unit audits.  Several ``--smooth-share`` values
print one table each (the choice of the threshold).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import special

from faircode.core.seeds import child_seed
from faircode.stats import paired, resampling
from faircode.stats._paired_draws import Comparison, prepare
from faircode.stats._paired_interval import PairedInterval, SortedDraws

CONFIDENCE = 0.95
MARGIN = 0.05
LAMBDA = 0.7
BASE = 0.5
SIZES = (40, 400, 2000)
UNITS_N = 200
SHOWN = ("demographic_parity_diff", "equal_opportunity_diff", "equalized_odds_diff",
         "predictive_parity_diff", "accuracy", "balanced_accuracy")
SHORT = ("DP", "EO", "EOdds", "PP", "acc", "bacc")
METHODS = ("pct", "bca", "box", "shipped")
SCENARIOS: tuple[tuple[str, float, float, float, float], ...] = (
    # (name, g_B, g_A, δ accuracy, TPR shift per unit gap; the FPR shift is 2 − it)
    ("equal gaps (Δ = 0)", -0.10, -0.10, 0.0, 1.5),
    ("mirrored gap (Δ = 0)", -0.10, 0.10, 0.0, 1.5),
    ("+0.05", -0.10, -0.15, 0.05, 1.5),
    ("-0.05", -0.10, -0.05, -0.05, 1.5),
    ("-0.3", -0.35, -0.05, -0.30, 1.5),
    ("reaches parity from -0.10", -0.10, 0.0, -0.05, 1.5),
    ("reaches parity, TPR = FPR gap", -0.10, 0.0, -0.05, 1.0),
    ("near parity, -0.03", -0.10, -0.03, -0.02, 1.5),
    ("near parity, +0.03", -0.10, 0.03, -0.02, 1.5),
    ("near parity, -0.06", -0.10, -0.06, -0.02, 1.5),
    ("both at parity", 0.0, 0.0, 0.0, 1.5),
    ("both near zero", -0.02, 0.01, 0.0, 1.5),
    ("overshoots parity", -0.10, 0.05, 0.0, 1.5),
)
CHUNK = 100


def joint_probabilities(g_b: float, g_a: float, delta: float, tpr_share: float) -> np.ndarray:
    """Cell probabilities ``(2 groups, 2 labels, 4 decision pairs)`` of one scenario."""
    out = np.zeros((2, 2, 4))
    for group, shift in ((0, 1.0), (1, 0.0)):
        for y in (0, 1):
            weight = shift * (tpr_share if y else 2.0 - tpr_share)
            rate_b = (0.80 if y else 0.40) + weight * g_b
            rate_a = (0.80 + delta if y else 0.40 - delta) + weight * g_a
            out[group, y] = coupled(rate_a, rate_b)
    return out


def coupled(rate_a: float | np.ndarray, rate_b: float | np.ndarray) -> np.ndarray:
    """Probabilities of ``(ŷ_A, ŷ_B)`` in cell order ``2·a + b`` (last axis)."""
    both = LAMBDA * np.minimum(rate_a, rate_b) + (1 - LAMBDA) * rate_a * rate_b
    cells = np.stack([1 - rate_a - rate_b + both, rate_b - both, rate_a - both, both], -1)
    assert np.all(cells >= -1e-12)
    return np.clip(cells, 0.0, None)


def cells_of(p: np.ndarray) -> np.ndarray:
    """``(2, 8)`` joint-cell probabilities (index ``4y + 2a + b``) with base rate 0.5."""
    return np.concatenate([(1 - BASE) * p[:, 0], BASE * p[:, 1]], axis=-1)


def truth(probabilities: np.ndarray) -> np.ndarray:
    """True effect of every metric: the statistic at the expected counts (ratios of sums).

    The probabilities have at most 12 decimals, so scaled by 1e12 they are exact integer counts.
    """
    joint = np.rint(probabilities * 1e12).astype(np.int64)
    counts_a, counts_b = paired.marginal_counts(joint)
    return paired.distance(paired.components(counts_a)) - paired.distance(
        paired.components(counts_b))


def effect(joint: np.ndarray) -> np.ndarray:
    """``Δ`` of every metric from joint counts ``(..., 2, 8)``: shape ``(..., M)``."""
    counts_a, counts_b = paired.marginal_counts(joint)
    with np.errstate(invalid="ignore", divide="ignore"):
        return paired.distance(paired.components(counts_a)) - paired.distance(
            paired.components(counts_b))


def bca(delta: np.ndarray, estimate: np.ndarray, jack: np.ndarray, weight: np.ndarray
        ) -> np.ndarray:
    """BCa intervals ``(..., M, 2)`` from draws ``(..., M, B)``, estimates ``(..., M)`` and the
    jackknife values ``(..., J, M)`` with their weights ``(..., J)`` (units deleted of each
    kind)."""
    finite = np.isfinite(delta)
    below = ((delta < estimate[..., None]) & finite).sum(-1) + 0.5 * (
        (delta == estimate[..., None]) & finite).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        z0 = special.ndtri(np.clip(below / finite.sum(-1), 1e-6, 1 - 1e-6))
        w = np.where(np.isfinite(jack), weight[..., None], 0.0)
        mean = (w * np.nan_to_num(jack)).sum(-2) / w.sum(-2)
        dev = np.where(w > 0, mean[..., None, :] - np.nan_to_num(jack), 0.0)
        acc = (w * dev**3).sum(-2) / (6.0 * ((w * dev**2).sum(-2)) ** 1.5)
    acc = np.nan_to_num(acc)
    z = special.ndtri(np.array([(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2]))
    level = special.ndtr(z0[..., None] + (z0[..., None] + z) / (1 - acc[..., None] * (
        z0[..., None] + z)))
    ordered = SortedDraws.of(delta)
    return np.stack([ordered.quantile(level[..., 0]), ordered.quantile(level[..., 1])], -1)


def row_jackknife(joint: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Delete-one-row jackknife of joint counts ``(A, 2, 8)``: values ``(A, 16, M)``, weights."""
    eye = np.eye(16, dtype=np.int64).reshape(16, 2, 8)
    deleted = joint[:, None] - eye[None]
    values = np.where((joint.reshape(-1, 16) > 0)[..., None], effect(deleted), np.nan)
    return values, joint.reshape(-1, 16).astype(np.float64)


def intervals(draws_a: np.ndarray, draws_b: np.ndarray, est_a: np.ndarray, est_b: np.ndarray,
              n_units: np.ndarray, jack: tuple[np.ndarray, np.ndarray], shares: list[float]
              ) -> dict[str, np.ndarray]:
    """Every method's interval ``(audits, M, 2)``, the tests' p-values and the smooth share."""
    out: dict[str, np.ndarray] = {}
    box = PairedInterval(draws_a, draws_b, est_a, est_b, n_units=n_units, box_only=True,
                         nuisance_ratio=0.2)  # faircode 0.3's interval: 99 % sums
    out["box"] = np.stack(box.bounds(CONFIDENCE), -1)
    tail = (1 - CONFIDENCE) / 2
    out["pct"] = np.stack(box.delta.bounds(np.full(box.smooth.shape, 1 - 2 * tail)), -1)
    estimate = paired.distance(est_a) - paired.distance(est_b)
    out["bca"] = bca(np.moveaxis(paired.distance(np.moveaxis(draws_a, -1, 0)) - paired.distance(
        np.moveaxis(draws_b, -1, 0)), 0, -1), estimate, *jack)
    for share in shares:
        family = PairedInterval(draws_a, draws_b, est_a, est_b, n_units=n_units,
                                smooth_share=share)
        out[f"shipped@{share}"] = np.stack(family.bounds(CONFIDENCE), -1)
        out[f"p@{share}"] = family.p_value(confidence=CONFIDENCE)
        out[f"eq@{share}"] = family.equivalence_p_value(margin=MARGIN)
        out[f"smooth@{share}"] = family.smooth.astype(np.float64)
    out["defined"] = np.isfinite(estimate)
    return out


def row_chunk(joint: np.ndarray, resamples: int, rng: np.random.Generator, shares: list[float]
              ) -> dict[str, np.ndarray]:
    """Every method's results for row-level joint counts ``(audits, 2, 8)``."""
    n = joint.sum(axis=-1)
    boot = rng.multinomial(n, joint / n[..., None], size=(resamples, *n.shape))
    counts_a, counts_b = paired.marginal_counts(boot)  # (B, audits, 2, 4)
    with np.errstate(invalid="ignore", divide="ignore"):
        comp_a = np.moveaxis(paired.components(counts_a), 0, -1)
        comp_b = np.moveaxis(paired.components(counts_b), 0, -1)
        obs_a, obs_b = paired.marginal_counts(joint)
        est_a, est_b = paired.components(obs_a), paired.components(obs_b)
    out = intervals(comp_a, comp_b, est_a, est_b, n.min(axis=-1), row_jackknife(joint), shares)
    swapped = paired.swap_draws(joint, n_permutations=resamples, rng=rng)  # (P, audits, 2, 8)
    out["swap"] = swap_p(effect(joint), effect(swapped))
    return out


def swap_p(observed: np.ndarray, permuted: np.ndarray) -> np.ndarray:
    """The swap test's p-values ``(audits, M)`` from permuted effects ``(P, audits, M)``."""
    hits = (np.abs(permuted) >= np.abs(observed) * (1 - resampling.TIE_RTOL)).sum(axis=0)
    return (1.0 + hits) / (1.0 + permuted.shape[0])


def unit_audit(spec: tuple[str, float, float, float, float], rng: np.random.Generator
               ) -> Comparison:
    """One clustered audit: ``UNITS_N`` units per group of 1-3 rows with a shared latent."""
    p = joint_probabilities(*spec[1:])
    sizes = rng.integers(1, 4, size=2 * UNITS_N)
    unit = np.repeat(np.arange(2 * UNITS_N), sizes)
    group = (unit >= UNITS_N).astype(np.int64)
    latent = np.repeat(rng.choice([-1.0, 1.0], size=2 * UNITS_N), sizes)
    y = (rng.random(unit.size) < BASE + 0.2 * latent).astype(np.int64)
    dec_latent = np.repeat(rng.choice([-1.0, 1.0], size=2 * UNITS_N), sizes)
    rates = np.empty((unit.size, 4))
    for g in (0, 1):
        for label in (0, 1):
            rows = (group == g) & (y == label)
            marg_a = p[g, label, 2] + p[g, label, 3]
            marg_b = p[g, label, 1] + p[g, label, 3]
            rates[rows] = coupled(np.clip(marg_a + 0.1 * dec_latent[rows], 0.01, 0.99),
                                  np.clip(marg_b + 0.1 * dec_latent[rows], 0.01, 0.99))
    pick = (rng.random(unit.size)[:, None] > np.cumsum(rates, axis=1)).sum(axis=1)
    pick = np.minimum(pick, 3)
    return Comparison(y, pick >> 1, pick & 1, group == 0, int(rng.integers(2**31)), unit)


def unit_jackknife(comparisons: list[Comparison]) -> tuple[np.ndarray, np.ndarray]:
    """Delete-one-unit jackknife over each audit's unit types, padded to one width."""
    values, weights = [], []
    for c in comparisons:
        joint, types = prepare(c)
        assert types is not None
        values.append(effect(joint[None] - types.counts))
        weights.append(types.multiplicity.astype(np.float64))
    width = max(v.shape[0] for v in values)
    jack = np.full((len(values), width, values[0].shape[-1]), np.nan)
    weight = np.zeros((len(values), width))
    for i, (v, w) in enumerate(zip(values, weights, strict=True)):
        jack[i, : v.shape[0]], weight[i, : w.size] = v, w
    return jack, weight


def unit_results(spec: tuple[str, float, float, float, float], *, audits: int, resamples: int,
                 rng: np.random.Generator, shares: list[float]) -> dict[str, np.ndarray]:
    """Every method's results on ``audits`` clustered audits (engine draws with units)."""
    comparisons = [unit_audit(spec, rng) for _ in range(audits)]
    draws = [paired.paired_draws(c.y_true, c.y_pred_a, c.y_pred_b, c.disadvantaged,
                                 seed=c.seed, units=c.units, n_resamples=resamples)
             for c in comparisons]
    def stacked(name: str) -> np.ndarray:
        return np.stack([getattr(d, name) for d in draws])

    out = intervals(stacked("draws_a"), stacked("draws_b"), stacked("estimate_a"),
                    stacked("estimate_b"), np.array([d.n_units for d in draws]),
                    unit_jackknife(comparisons), shares)
    swaps = []
    for c in comparisons:
        joint, types = prepare(c)
        swapped = paired.swap_draws(joint, n_permutations=resamples,
                                    rng=np.random.default_rng(child_seed(c.seed, 1)), types=types)
        swaps.append(swap_p(effect(joint)[None], effect(swapped)[:, None])[0])
    out["swap"] = np.stack(swaps)
    return out


def tally(results: list[dict[str, np.ndarray]], true: np.ndarray, shares: list[float]
          ) -> dict[str, np.ndarray]:
    """Coverage, mean width, rejection rates per metric over chunks of results."""
    ok = np.concatenate([r["defined"] for r in results])
    count = ok.sum(0)
    out: dict[str, np.ndarray] = {}
    names = [*METHODS[:3], *(f"shipped@{s}" for s in shares)]
    for name in names:
        iv = np.concatenate([r[name] for r in results])
        lo, hi = iv[..., 0], iv[..., 1]
        hit = ok & (lo <= true + 1e-12) & (true - 1e-12 <= hi)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = hit.sum(0) / count
            out[f"w:{name}"] = np.where(ok, hi - lo, 0.0).sum(0) / count
    for name in ("swap", *(f"p@{s}" for s in shares), *(f"eq@{s}" for s in shares),
                 *(f"smooth@{s}" for s in shares)):
        values = np.concatenate([r[name] for r in results])
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = ((values <= 0.05) if not name.startswith("smooth") else values > 0.5
                         ).__and__(ok).sum(0) / count
    out["true"] = true
    return out


def rows_scenario(n: int, spec: tuple[str, float, float, float, float], *, audits: int,
                  resamples: int, rng: np.random.Generator, shares: list[float]
                  ) -> dict[str, np.ndarray]:
    """Tallies of one row-level scenario at ``n`` rows per group."""
    p = cells_of(joint_probabilities(*spec[1:]))
    chunks = []
    for first in range(0, audits, CHUNK):
        joint = rng.multinomial(n, p, size=(min(CHUNK, audits - first), 2)).astype(np.int64)
        chunks.append(row_chunk(joint, resamples, rng, shares))
    return tally(chunks, truth(p), shares)


def print_table(table: list[tuple[str, str, dict[str, np.ndarray]]], share: float) -> None:
    """One smooth-share threshold's long table and its summary lines."""
    s = f"@{share}"
    print(f"\n## smooth share {share}: coverage (95 %), width over BCa, rejection at 0.05\n")
    print("| n | scenario | metric | true | pct | bca | box | shipped | box/bca | shipped/bca "
          "| smooth | Δ=0 test | swap test | equiv. |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, name, res in table:
        for metric in SHOWN:
            i = paired.EFFECT_METRICS.index(metric)
            cov = " | ".join(f"{res[m if m != 'shipped' else 'shipped' + s][i]:.3f}"
                             for m in METHODS)
            print(f"| {n} | {name} | {metric} | {res['true'][i]:+.3f} | {cov} "
                  f"| {res['w:box'][i] / res['w:bca'][i]:.2f} "
                  f"| {res['w:shipped' + s][i] / res['w:bca'][i]:.2f} "
                  f"| {res['smooth' + s][i]:.2f} | {res['p' + s][i]:.3f} "
                  f"| {res['swap'][i]:.3f} | {res['eq' + s][i]:.3f} |")
    idx = [paired.EFFECT_METRICS.index(m) for m in SHOWN]
    for method in (*METHODS[:3], "shipped" + s):
        low = min(float(np.nanmin(r[method][idx])) for _, _, r in table)
        print(f"lowest coverage, {method}: {low:.3f}")
    fair = [paired.EFFECT_METRICS.index(m) for m in SHOWN[:4]]
    for method in ("box", "shipped" + s):
        ratios = np.concatenate([r[f"w:{method}"][fair] / r["w:bca"][fair] for _, _, r in table])
        print(f"width over BCa, fairness effects, {method}: median {np.nanmedian(ratios):.2f}, "
              f"range {np.nanmin(ratios):.2f}-{np.nanmax(ratios):.2f}")
    nulls = [r for _, name, r in table if "Δ = 0" in name or name == "both at parity"]
    size = max(float(np.nanmax(r["p" + s][fair])) for r in nulls)
    swap = max(float(np.nanmax(r["swap"][fair])) for r in nulls)
    print(f"largest rejection rate of Δ = 0 where it holds: test {size:.3f}, swap test {swap:.3f}")
    print_summary(table, share)


def print_summary(table: list[tuple[str, str, dict[str, np.ndarray]]], share: float) -> None:
    """Per size, over every scenario's fairness effects (DP, EO, equalized odds, PP): lowest
    coverage per method, median (range) width over BCa, the tests' rejection rates."""
    s = f"@{share}"
    fair = [paired.EFFECT_METRICS.index(m) for m in SHOWN[:4]]
    print(f"\nsummary, fairness effects (smooth share {share}):\n")
    print("| rows per group | pct | BCa | 0.3 box | shipped | 0.3 box / BCa | shipped / BCa "
          "| Δ = 0 test where Δ = 0 | swap test, mirrored gap | equivalence at ±0.05 |")
    print("|---|---:|---:|---:|---:|---|---|---:|---|---:|")
    for n in dict.fromkeys(n for n, _, _ in table):
        rows = [(name, r) for m, name, r in table if m == n]

        def low(key: str, rows: list[tuple[str, dict[str, np.ndarray]]] = rows) -> float:
            return min(float(np.nanmin(r[key][fair])) for _, r in rows)

        def ratio(key: str, rows: list[tuple[str, dict[str, np.ndarray]]] = rows) -> str:
            v = np.concatenate([r[f"w:{key}"][fair] / r["w:bca"][fair] for _, r in rows])
            return f"{np.nanmedian(v):.2f} ({np.nanmin(v):.2f}-{np.nanmax(v):.2f})"

        nulls = [r for name, r in rows if "Δ = 0" in name or name == "both at parity"]
        size = max(float(np.nanmax(np.where(np.abs(r["true"][fair]) < 1e-9, r[f"p{s}"][fair],
                                            np.nan))) for r in nulls)
        mirrored = [r["swap"][fair] for name, r in rows if name.startswith("mirrored")]
        margin = [np.where(np.abs(np.abs(r["true"][fair]) - MARGIN) < 1e-9, r[f"eq{s}"][fair],
                           np.nan) for _, r in rows]
        print(f"| {n} | {low('pct'):.3f} | {low('bca'):.3f} | {low('box'):.3f} "
              f"| {low('shipped' + s):.3f} | {ratio('box')} | {ratio('shipped' + s)} "
              f"| ≤ {size:.3f} | {np.nanmin(mirrored):.3f}-{np.nanmax(mirrored):.3f} "
              f"| ≤ {np.nanmax(margin):.3f} |")


def main() -> None:
    """Run every scenario (rows at three sizes, then units) and print one table per threshold."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--units-audits", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smooth-share", type=float, nargs="+",
                        default=[paired.SMOOTH_SHARE])
    parser.add_argument("--quick", action="store_true", help="200 x 200, 60 unit audits")
    args = parser.parse_args()
    audits, resamples, unit_n = ((200, 200, 60) if args.quick else
                                 (args.audits, args.resamples, args.units_audits))
    shares = list(args.smooth_share)
    start = time.perf_counter()
    print(f"# paired effect intervals (95 %): {audits} audits x {resamples} resamples "
          f"(units: {unit_n} audits of {UNITS_N} units per group), lambda {LAMBDA}, "
          f"seed {args.seed}{' (quick)' if args.quick else ''}")
    table = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for j, n in enumerate(SIZES):
            for k, spec in enumerate(SCENARIOS):
                rng = np.random.default_rng(child_seed(args.seed, j, k))
                table.append((str(n), spec[0], rows_scenario(
                    n, spec, audits=audits, resamples=resamples, rng=rng, shares=shares)))
        for k, spec in enumerate(SCENARIOS):
            rng = np.random.default_rng(child_seed(args.seed, 9, k))
            res = unit_results(spec, audits=unit_n, resamples=resamples, rng=rng, shares=shares)
            p = cells_of(joint_probabilities(*spec[1:]))
            table.append((f"{UNITS_N} units", spec[0], tally([res], truth(p), shares)))
    for share in shares:
        print_table(table, share)
    print(f"\n(ran in {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
