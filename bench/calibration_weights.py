"""How the bin weights of the calibration gap behave on calibrated scores (a quick check).

Run from the repository root:

    .venv/bin/python bench/calibration_weights.py [--seeds 20]

For each seed it draws ``n = 20,000`` rows, half disadvantaged, with calibrated probabilities
(``y ~ Bernoulli(s)``) whose distribution differs by group (``Beta(5, 2)`` against ``Beta(2, 5)``:
little overlap at the tails), bins them in 10 pooled-quantile bins and computes the within-bin
rate difference averaged with two weightings: the bin's size ``n_D + n_A`` and the
Mantel–Haenszel weight ``n_D · n_A / (n_D + n_A)`` (:mod:`faircode.stats.calibration`).  Under
calibration each gap should equal its ``score_gap`` (the same average of the within-bin mean
score differences); it prints the spread of ``gap − score_gap`` over the seeds.  It backs the
weighting paragraph of :mod:`faircode.stats.calibration`'s docstring.
"""

from __future__ import annotations

import argparse

import numpy as np

from faircode.stats.calibration import calibration_table


def _gaps(table, weight: str) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(observed-rate gap, score gap) of one calibration table under ``weight``."""
    d = table[table["group"] == "D"].reset_index(drop=True)
    a = table[table["group"] == "A"].reset_index(drop=True)
    n_d, n_a = d["n"].to_numpy(float), a["n"].to_numpy(float)
    both = (n_d > 0) & (n_a > 0)
    w = np.where(both, n_d + n_a if weight == "size" else n_d * n_a / np.maximum(n_d + n_a, 1), 0)
    rate = np.nan_to_num(d["observed_rate"].to_numpy() - a["observed_rate"].to_numpy())
    score = np.nan_to_num(d["mean_score"].to_numpy() - a["mean_score"].to_numpy())
    return float((w * rate).sum() / w.sum()), float((w * score).sum() / w.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    n = 20_000
    errors: dict[str, list[float]] = {"size": [], "mantel_haenszel": []}
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        d = rng.random(n) < 0.5
        s = np.where(d, rng.beta(5, 2, n), rng.beta(2, 5, n))
        y = (rng.random(n) < s).astype(int)
        table = calibration_table(y, s, {"D": d, "A": ~d}, scale="probability",
                                  protected_attribute="x", row_set="synthetic")
        for weight in errors:
            gap, score_gap = _gaps(table, "size" if weight == "size" else "mh")
            errors[weight].append(gap - score_gap)
    print(f"calibrated scores, n = {n:,}, 10 quantile bins, {args.seeds} seeds: gap - score_gap")
    for weight, values in errors.items():
        v = np.asarray(values)
        print(f"  {weight:<16} sd {v.std(ddof=1):.4f}  max |.| {np.abs(v).max():.4f}"
              f"  mean {v.mean():+.4f}")


if __name__ == "__main__":
    main()
