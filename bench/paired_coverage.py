"""Coverage of paired effect intervals on synthetic paired audits with a known truth.

Run from the repository root (the machine is shared: ``nice``):

    PYTHONPATH=$PWD nice python bench/paired_coverage.py [--audits 1000] [--resamples 1000]
                                                        [--seed 0] [--quick]

Workload: two groups of ``n`` rows each (``n`` = 40 and 400), base rate 0.5 in both.  The
reference B has TPR 0.80 / FPR 0.40 in the advantaged group; the mitigated A has TPR
``0.80 + δ`` / FPR ``0.40 − δ`` there, so A's accuracy and balanced accuracy differ from B's by
exactly ``δ``.  Each strategy X's disadvantaged group has its TPR shifted by ``1.5·g_X`` and its
FPR by ``0.5·g_X`` (``g_X`` for both in the "equal TPR and FPR gaps" scenario, where equalized
odds is a maximum of two tied gaps), so X's parity gap is ``g_X``, its TPR gap ``1.5·g_X``, and the
true effect on each distance is the difference of the absolute gaps (column ``true``).  A's and
B's decisions on a row are coupled: ``P(ŷ_A = ŷ_B = 1) = λ·min(p_A, p_B) + (1 − λ)·p_A·p_B`` with
``λ`` = 0.7 (a mitigation changes a minority of decisions).  Scenarios ``(g_B, g_A, δ)``: equal
gaps (A and B exchangeable: the swap test's null), effects of ±0.05 and −0.3, A reaching parity
from −0.10 and from −0.05, both at parity, both near zero, A overshooting parity.

Each audit draws both groups' 8 joint cells (a multinomial of ``n`` rows), ``--resamples`` paired
bootstrap draws (the engine's draw: each group's joint cells resampled at its size) and, per
effect, the 95 % intervals

* ``pct``: the percentile interval of the paired draws of ``Δ``,
* ``box0``: the paired signed box with the sums at 95 % and no expansion (the bare idea),
* ``shipped``: :func:`faircode.stats.paired.box_interval` as
  :func:`faircode.stats.paired.paired_effects` uses it (sums at
  :data:`faircode.stats.paired.NUISANCE_CONFIDENCE`, both expanded for ``n`` rows; for accuracy and
  balanced accuracy the expanded percentile interval),
* ``cons``: the residual floor's conservative interval arithmetic on the two strategies' own
  closed-form intervals (:func:`faircode.report.analysis.abs_bounds` of each, then
  ``[lo_A − hi_B, hi_A − lo_B]``; fairness metrics only),

the mean width of ``shipped`` over that of ``cons`` and the swap test's rejection rate at 0.05
(``P`` = ``--resamples``; its size in the equal-gaps rows, its power elsewhere).  Coverage is
the share of audits whose interval contains the truth among audits where the effect is defined
(Monte-Carlo s.e. about 0.007 at 1,000 audits).  Scenario ``k`` at size ``j`` draws from
``child_seed(seed, j, k)``.  ``--quick``: 200 audits x 200 resamples.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from faircode.core.seeds import child_seed
from faircode.report.analysis import abs_bounds
from faircode.stats import _metric_defs as defs
from faircode.stats import paired, resampling

CONFIDENCE = 0.95
LAMBDA = 0.7
BASE = 0.5
SIZES = (40, 400)
SHOWN = ("demographic_parity_diff", "equal_opportunity_diff", "equalized_odds_diff",
         "predictive_parity_diff", "accuracy", "balanced_accuracy")
SHORT = ("DP", "EO", "EOdds", "PP", "acc", "bacc")
METHODS = ("pct", "box0", "shipped", "cons")
SCENARIOS: tuple[tuple[str, float, float, float, float], ...] = (
    # (name, g_B, g_A, δ accuracy, TPR shift per unit gap; the FPR shift is 2 − it)
    ("equal gaps (null)", -0.10, -0.10, 0.0, 1.5),
    ("+0.05", -0.10, -0.15, 0.05, 1.5),
    ("-0.05", -0.10, -0.05, -0.05, 1.5),
    ("-0.3", -0.35, -0.05, -0.30, 1.5),
    ("reaches parity from -0.10", -0.10, 0.0, -0.05, 1.5),
    ("reaches parity from -0.05", -0.05, 0.0, -0.05, 1.5),
    ("reaches parity, TPR = FPR gap", -0.10, 0.0, -0.05, 1.0),
    ("both at parity", 0.0, 0.0, 0.0, 1.5),
    ("both near zero", -0.02, 0.01, 0.0, 1.5),
    ("overshoots parity", -0.10, 0.05, 0.0, 1.5),
)
CHUNK = 100


def joint_probabilities(g_b: float, g_a: float, delta: float, tpr_share: float) -> np.ndarray:
    """Cell probabilities ``(2 groups, 8 joint cells)`` of one scenario."""
    out = np.zeros((2, 8))
    for group, shift in ((0, 1.0), (1, 0.0)):
        for y, base in ((0, 1 - BASE), (1, BASE)):
            weight = shift * (tpr_share if y else 2.0 - tpr_share)
            rate_b = (0.80 if y else 0.40) + weight * g_b
            rate_a = (0.80 + delta if y else 0.40 - delta) + weight * g_a
            both = LAMBDA * min(rate_a, rate_b) + (1 - LAMBDA) * rate_a * rate_b
            cells = {(1, 1): both, (1, 0): rate_a - both, (0, 1): rate_b - both,
                     (0, 0): 1 - rate_a - rate_b + both}
            for (a, b), p in cells.items():
                out[group, 4 * y + 2 * a + b] = base * p
    assert np.all(out >= -1e-12) and np.allclose(out.sum(axis=1), 1.0)
    return np.clip(out, 0.0, None)


def truth(probabilities: np.ndarray) -> np.ndarray:
    """True effect of every metric: the statistic at the expected counts (ratios of sums).

    The probabilities have at most 12 decimals, so scaled by 1e12 they are exact integer counts.
    """
    joint = np.rint(probabilities * 1e12).astype(np.int64)
    counts_a, counts_b = paired.marginal_counts(joint)
    return paired.distance(paired.components(counts_a)) - paired.distance(
        paired.components(counts_b))


def conservative(counts: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of a strategy's distance from parity from its shipped closed-form interval."""
    d, a = counts[..., 0, :], counts[..., 1, :]
    low, high = defs.closed_form_interval(metric, d, a, confidence=CONFIDENCE)
    parity = 1.0 if metric == "disparate_impact_ratio" else 0.0
    return abs_bounds(low - parity, high - parity)


def chunk_results(joint: np.ndarray, resamples: int, rng: np.random.Generator
                  ) -> dict[str, np.ndarray]:
    """Intervals ``(audits, M, 2)`` of every method for joint counts ``(audits, 2, 8)``."""
    n = joint.sum(axis=-1)
    boot = rng.multinomial(n, joint / n[..., None], size=(resamples, *n.shape))
    counts_a, counts_b = paired.marginal_counts(boot)  # (B, audits, 2, 4)
    comp_a, comp_b = paired.components(counts_a), paired.components(counts_b)
    delta = paired.distance(comp_a) - paired.distance(comp_b)  # (B, audits, M)
    comp_a, comp_b = np.moveaxis(comp_a, 0, -1), np.moveaxis(comp_b, 0, -1)
    tail = (1 - CONFIDENCE) / 2
    out: dict[str, np.ndarray] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out["pct"] = np.moveaxis(np.nanquantile(delta, [tail, 1 - tail], axis=0), 0, -1)
    out["box0"] = np.stack(paired.box_interval(comp_a, comp_b, confidence=CONFIDENCE,
                                               nuisance=CONFIDENCE), -1)
    out["shipped"] = np.stack(paired.box_interval(comp_a, comp_b, confidence=CONFIDENCE,
                                                  n_units=int(n.min())), -1)
    obs_a, obs_b = paired.marginal_counts(joint)
    cons = np.full(out["shipped"].shape, np.nan)
    for k, metric in enumerate(defs.FAIRNESS_METRICS):
        lo_a, hi_a = conservative(obs_a, metric)
        lo_b, hi_b = conservative(obs_b, metric)
        cons[:, k, 0], cons[:, k, 1] = lo_a - hi_b, hi_a - lo_b
    out["cons"] = cons
    observed = (paired.distance(paired.components(obs_a))
                - paired.distance(paired.components(obs_b)))
    out["defined"] = np.isfinite(observed)
    swapped = paired.swap_draws(joint, n_permutations=resamples, rng=rng)  # (P, audits, 2, 8)
    sw_a, sw_b = paired.marginal_counts(swapped)
    perm = paired.distance(paired.components(sw_a)) - paired.distance(paired.components(sw_b))
    hits = (np.abs(perm) >= np.abs(observed) * (1 - resampling.TIE_RTOL)).sum(axis=0)
    out["p_value"] = (1.0 + hits) / (1.0 + resamples)
    return out


def scenario(n: int, spec: tuple[str, float, float, float, float], *, audits: int,
             resamples: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Coverage of every method, width ratio and rejection rate per metric, and the truth."""
    p = joint_probabilities(*spec[1:])
    true = truth(p)
    m = len(paired.EFFECT_METRICS)
    hits = {k: np.zeros(m) for k in METHODS}
    widths = {k: np.zeros(m) for k in METHODS}
    count, rejected = np.zeros(m), np.zeros(m)
    for first in range(0, audits, CHUNK):
        joint = rng.multinomial(n, p, size=(min(CHUNK, audits - first), 2)).astype(np.int64)
        res = chunk_results(joint, resamples, rng)
        ok = res["defined"]
        count += ok.sum(0)
        rejected += (ok & (res["p_value"] < 0.05)).sum(0)
        for k in METHODS:
            lo, hi = res[k][..., 0], res[k][..., 1]
            hits[k] += (ok & (lo <= true + 1e-12) & (true - 1e-12 <= hi)).sum(0)
            widths[k] += np.where(ok, hi - lo, 0.0).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {k: hits[k] / count for k in METHODS}
        out["ratio"] = widths["shipped"] / widths["cons"]
    out["rejected"], out["true"] = rejected / count, true
    return out


def main() -> None:
    """Run every scenario at both sizes and print the long table, then the compact one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="200 audits x 200 resamples")
    args = parser.parse_args()
    audits, resamples = (200, 200) if args.quick else (args.audits, args.resamples)
    start = time.perf_counter()
    print(f"# paired effect intervals (95 %): {audits} audits x {resamples} resamples, "
          f"lambda {LAMBDA}, seed {args.seed}{' (quick)' if args.quick else ''}\n")
    print("| n | scenario | metric | true | pct | box0 | shipped | cons | width shipped/cons "
          "| swap p<.05 |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
    table = []
    for j, n in enumerate(SIZES):
        for k, spec in enumerate(SCENARIOS):
            rng = np.random.default_rng(child_seed(args.seed, j, k))
            res = scenario(n, spec, audits=audits, resamples=resamples, rng=rng)
            table.append((n, spec[0], res))
            for metric in SHOWN:
                i = paired.EFFECT_METRICS.index(metric)
                cells = " | ".join(f"{res[m][i]:.3f}" for m in METHODS)
                print(f"| {n} | {spec[0]} | {metric} | {res['true'][i]:+.3f} | {cells} "
                      f"| {res['ratio'][i]:.2f} | {res['rejected'][i]:.3f} |")
    print("\ncoverage, percentile / shipped (width shipped/cons for DP):")
    print("| n | scenario | " + " | ".join(SHORT) + " | DP width |")
    print("|---:|---|" + "---:|" * (len(SHORT) + 1))
    for n, name, res in table:
        idx = [paired.EFFECT_METRICS.index(m) for m in SHOWN]
        cells = " | ".join(f"{res['pct'][i]:.3f}/{res['shipped'][i]:.3f}" for i in idx)
        print(f"| {n} | {name} | {cells} | {res['ratio'][idx[0]]:.2f} |")
    for method in METHODS[:3]:
        low = min(float(np.nanmin([r[method][paired.EFFECT_METRICS.index(m)] for m in SHOWN]))
                  for _, _, r in table)
        print(f"lowest coverage, {method}: {low:.3f}")
    print(f"\n(ran in {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
