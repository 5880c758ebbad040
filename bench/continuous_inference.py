"""Size of the regression gaps' permutation tests and coverage of their intervals (synthetic).

Run from the repository root:

    .venv/bin/python bench/continuous_inference.py [--nulls 2000] [--replicates 1000]

Settings shaped like the regression audits (docs/statistics.md, "Regression audits"):

* ``wages``: log-normal pay, 120 disadvantaged and 200 advantaged rows (CPS 1985's groups are
  245 and 289; professors' 39 and 358);
* ``model``: a model's predictions of a log-normal outcome with group-dependent error (its
  error gap, worst group's error and residual gap);
* ``clusters``: 94 units (instructors) of 1-9 rows (courses), a unit effect, the attribute
  constant within each unit (teaching ratings' design): unit bootstrap and unit permutation;
* ``strata``: five strata whose levels shift the outcome and whose group mix differs (education
  and pay), a constant gap within every stratum: the within-strata gap
  (:func:`faircode.stats.continuous_strata.strata_mean_gap`).

Under the null (no gap: one distribution for both groups, or no gap within strata) each test is
run ``--nulls`` times at ``--permutations`` permutations and rejected at 5 %; under a gap each
95 % interval is computed ``--replicates`` times at ``--resamples`` resamples and checked to hold
the true value (population quantities in closed form).  Seeds: ``SeedSequence(20261206,
spawn_key=(setting, replicate))``.  Prints one markdown table (the one quoted in
docs/statistics.md).  ``--ks`` instead compares the KS distance's shipped bounds with the
percentile and basic bootstraps of the same draws (docs/statistics.md: why the bounds).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy import stats as sps

from faircode.core.metrics import metric_info
from faircode.stats.continuous import group_gaps
from faircode.stats.continuous_strata import strata_mean_gap

MASTER = 20261206
Draw = Callable[[np.random.Generator, bool], "Data"]


@dataclass(frozen=True)
class Data:
    """One simulated audit and the true values of its metrics (under the alternative)."""

    values: np.ndarray
    disadvantaged: np.ndarray
    truth: np.ndarray | None = None
    units: np.ndarray | None = None
    strata: np.ndarray | None = None
    true: dict[str, float] | None = None


def _lognormal_truth(mu: tuple[float, float], sigma: tuple[float, float]) -> dict[str, float]:
    (md, ma), (sd, sa) = mu, sigma
    z = {q: sps.norm.ppf(q) for q in (0.1, 0.5, 0.9)}
    grid = np.linspace(min(md, ma) - 8 * max(sd, sa), max(md, ma) + 8 * max(sd, sa), 400_001)
    ks = float(np.abs(sps.norm.cdf((grid - md) / sd) - sps.norm.cdf((grid - ma) / sa)).max())
    mean_d, mean_a = math.exp(md + sd ** 2 / 2), math.exp(ma + sa ** 2 / 2)
    return {"mean_difference": mean_d - mean_a, "mean_ratio": mean_d / mean_a,
            **{f"q{round(100 * q)}_gap": math.exp(md + sd * z[q]) - math.exp(ma + sa * z[q])
               for q in z}, "ks_distance": ks}


def wages(rng: np.random.Generator, gap: bool) -> Data:
    """Log-normal pay: 120 and 200 rows; under the gap the disadvantaged earn ~18 % less."""
    mu, sigma = ((2.0, 2.2), (0.5, 0.55)) if gap else ((2.1, 2.1), (0.52, 0.52))
    values = np.concatenate([np.exp(rng.normal(mu[0], sigma[0], 120)),
                             np.exp(rng.normal(mu[1], sigma[1], 200))])
    return Data(values, np.arange(320) < 120, true=_lognormal_truth(mu, sigma))


def _abs_normal_mean(bias: float, sd: float) -> float:
    return sd * math.sqrt(2 / math.pi) * math.exp(-bias ** 2 / (2 * sd ** 2)) \
        + bias * (1 - 2 * sps.norm.cdf(-bias / sd))


def model(rng: np.random.Generator, gap: bool) -> Data:
    """Predictions ``ŷ = y + e``, ``e ~ N(b_g, s_g)``: under the gap the disadvantaged group's
    predictions are worse and biased upwards."""
    (bd, sd), (ba, sa) = ((0.3, 1.2), (0.0, 1.0)) if gap else ((0.1, 1.0), (0.1, 1.0))
    y = np.exp(rng.normal(2.1, 0.5, 320))
    d = np.arange(320) < 120
    pred = y + np.where(d, rng.normal(bd, sd, 320), rng.normal(ba, sa, 320))
    mae_d, mae_a = _abs_normal_mean(bd, sd), _abs_normal_mean(ba, sa)
    return Data(pred, d, truth=y, true={"mae_gap": mae_d - mae_a,
                                        "bounded_group_loss": max(mae_d, mae_a),
                                        "residual_gap": -(bd - ba)})


def clusters(rng: np.random.Generator, gap: bool) -> Data:
    """94 units of 1-9 rows, unit effect sd 0.3, row noise sd 0.5, attribute constant per unit;
    under the gap the disadvantaged units' rows are 0.15 lower."""
    sizes = rng.integers(1, 10, 94)
    unit = np.repeat(np.arange(94), sizes)
    d_unit = rng.random(94) < 0.42
    delta = -0.15 if gap else 0.0
    values = 4.0 + delta * d_unit[unit] + rng.normal(0, 0.3, 94)[unit] \
        + rng.normal(0, 0.5, unit.size)
    scale = math.sqrt(0.3 ** 2 + 0.5 ** 2)
    true = {"mean_difference": delta, **{f"q{q}_gap": delta for q in (10, 50, 90)},
            "ks_distance": 2 * sps.norm.cdf(abs(delta) / (2 * scale)) - 1}
    return Data(values, d_unit[unit], units=unit, true=true)


def strata(rng: np.random.Generator, gap: bool) -> Data:
    """Five strata shifting the outcome by 0.4 each, the disadvantaged share 15-55 % rising
    with them; under the gap the disadvantaged rows are 0.2 lower in every stratum."""
    level = rng.integers(0, 5, 600)
    d = rng.random(600) < 0.15 + 0.1 * level
    delta = -0.2 if gap else 0.0
    values = 2.0 + 0.4 * level + delta * d + rng.normal(0, 0.6, 600)
    return Data(values, d, strata=level, true={"strata_mean_gap": delta})


SETTINGS: dict[str, Draw] = {"wages": wages, "model": model, "clusters": clusters,
                             "strata": strata}


def results(data: Data, *, resamples: int, permutations: int, seed: int) -> dict[str, tuple[
        float, float, float]]:
    """Every metric's ``(p, low, high)`` on ``data``."""
    if data.strata is not None:
        gap = strata_mean_gap(data.values, data.disadvantaged, data.strata,
                              n_resamples=resamples, n_permutations=permutations, seed=seed)
        return {"strata_mean_gap": (gap.p_value, gap.ci_low, gap.ci_high)}
    gaps = group_gaps(data.values, data.disadvantaged, truth=data.truth, units=data.units,
                      n_resamples=resamples, n_permutations=permutations, seed=seed)
    return {g.metric: (g.p_value, g.ci_low, g.ci_high) for g in gaps.gaps}


def run(nulls: int, replicates: int, resamples: int, permutations: int) -> None:
    print(f"nulls {nulls} at {permutations} permutations; replicates {replicates} at "
          f"{resamples} resamples")
    print("| setting | metric | rejection rate at 5 % (null) | coverage of the 95 % interval |")
    print("|---|---|---|---|")
    for s, (name, draw) in enumerate(SETTINGS.items()):
        started = time.perf_counter()
        rejected: dict[str, int] = {}
        covered: dict[str, int] = {}
        for r in range(nulls):
            seed = np.random.SeedSequence(MASTER, spawn_key=(s, 0, r))
            found = results(draw(np.random.default_rng(seed), False), resamples=10,
                            permutations=permutations, seed=r)
            for metric, (p, _, _) in found.items():
                rejected[metric] = rejected.get(metric, 0) + int(p <= 0.05)
        for r in range(replicates):
            seed = np.random.SeedSequence(MASTER, spawn_key=(s, 1, r))
            data = draw(np.random.default_rng(seed), True)
            found = results(data, resamples=resamples, permutations=10, seed=r)
            for metric, (_, low, high) in found.items():
                if data.true is not None and metric in data.true:
                    covered[metric] = covered.get(metric, 0) + int(
                        low <= data.true[metric] <= high)
        for metric in dict.fromkeys([*rejected, *covered]):
            size = (f"{rejected[metric] / nulls:.4f}" if metric in rejected
                    and not _twin(metric) else "(its twin's test)")
            cover = f"{covered[metric] / replicates:.4f}" if metric in covered else "-"
            print(f"| {name} | {metric} | {size} | {cover} |", flush=True)
        print(f"<!-- {name}: {time.perf_counter() - started:.0f} s -->", flush=True)


def ks_methods(replicates: int, resamples: int) -> None:
    """``--ks``: the coverage of three intervals of the KS distance under the gap of each
    setting with one (the percentile and basic bootstraps of the same draws, and the shipped
    bounds, ``faircode.stats.continuous_ks``)."""
    from faircode.core.seeds import child_seed
    from faircode.stats._continuous_engine import bootstrap_weights, draw, sample

    print(f"replicates {replicates} at {resamples} resamples: coverage of the KS distance")
    print("| setting | percentile bootstrap | basic bootstrap | shipped bounds |")
    print("|---|---|---|---|")
    for s_index, (name, make) in enumerate(SETTINGS.items()):
        if name in ("model", "strata"):
            continue
        hits = np.zeros(3)
        for r in range(replicates):
            data = make(np.random.default_rng(np.random.SeedSequence(
                MASTER, spawn_key=(s_index, 2, r))), True)
            rows = sample(data.values, data.disadvantaged, None, data.units)
            weights = partial(bootstrap_weights, rows.design.unit, rows.design.strata)
            drawn = draw(rows, resamples, {"ks"}, weights,
                         np.random.default_rng(child_seed(r, 0)))
            ks = np.asarray(drawn["ks"])
            gap = next(g for g in group_gaps(data.values, data.disadvantaged, units=data.units,
                                             n_resamples=resamples, n_permutations=5,
                                             seed=r).gaps if g.metric == "ks_distance")
            low, high = np.quantile(ks, [0.025, 0.975])
            true = (data.true or {})["ks_distance"]
            hits += [low <= true <= high, 2 * gap.value - high <= true <= 2 * gap.value - low,
                     gap.ci_low <= true <= gap.ci_high]
        print(f"| {name} | " + " | ".join(f"{h / replicates:.4f}" for h in hits) + " |",
              flush=True)


def _twin(metric: str) -> bool:
    """A metric that reports its twin's test (``same_null``: no size of its own)."""
    try:
        return metric_info(metric).same_null is not None
    except ValueError:  # the within-strata gap: a test of its own
        return False


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nulls", type=int, default=2000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--permutations", type=int, default=200)
    parser.add_argument("--ks", action="store_true",
                        help="compare the KS distance's intervals instead (coverage only)")
    args = parser.parse_args()
    if args.ks:
        ks_methods(args.replicates, args.resamples)
    else:
        run(args.nulls, args.replicates, args.resamples, args.permutations)
