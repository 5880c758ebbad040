"""How many of the shipped audits' S0–S4 parity comparisons are powered at a given gap.

Run from the repository root (raw data fetched, e.g. with FAIRCODE_DATA_MIRROR set):

    PYTHONPATH=$PWD .venv/bin/python bench/power_audits.py [--gap 0.10] [--alpha 0.05]
        [--power 0.8] [--fit german_credit_lending insurance_denial compas]
        [--sizes benefits_denial healthcare_readmission] [--check-results DIR]

``--fit`` audits: every strategy x model cell is fitted and predicted exactly as the grid does
(same seeds, default :class:`~faircode.core.config.BenchmarkConfig`), the test rows' confusion
counts
per protected attribute give each rate metric's MDE
(:func:`faircode.stats.power.minimum_detectable_gap`),
and a comparison counts as powered at ``--gap`` when its MDE is at most ``--gap``.  With
``--check-results DIR`` (a ``faircode run`` output folder) the demographic-parity gaps computed
from these counts are compared with the grid's ``fairness.csv`` — same decisions, same numbers.

``--sizes`` audits are not fitted: the test split's group sizes and labels give the
denominators of demographic parity / accuracy (all rows), TPR (``y = 1`` rows) and FPR
(``y = 0`` rows), with the base rate set to 0.5, where a rate's variance and hence its MDE is
largest — an upper bound that holds for any model; predictive parity (denominator = the
model's favourable decisions) is not bounded this way and is left out.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.core.cells import ModelFamily, Strategy
from faircode.core.config import BenchmarkConfig
from faircode.core.seeds import Stream, child_seed
from faircode.grid.strategies import fit_strategy, supports_constraint
from faircode.stats.power import minimum_detectable_gap
from faircode.stats.resampling import confusion_counts

RATE_METRICS = ("demographic_parity_diff", "equal_opportunity_diff", "fpr_gap",
                "equalized_odds_diff", "predictive_parity_diff", "accuracy_equality_diff")
ROOT = Path(__file__).resolve().parents[1]


def fitted_counts(audit: str, config: BenchmarkConfig) -> pd.DataFrame:
    """One row per (strategy, model, attribute) with both groups' test confusion counts."""
    data = load_audit(load_manifest(ROOT / "audits" / audit / "audit.yaml"))
    manifest = data.manifest
    first = manifest.protected_attributes[0].name
    train, test = data.train_index, data.test_index
    rows = []
    for strategy, family in itertools.product(Strategy, ModelFamily):
        if not supports_constraint(strategy, config.mitigation.constraint):
            continue
        s, m = list(Strategy).index(strategy), list(ModelFamily).index(family)
        fitted = fit_strategy(strategy, family, X=data.X.iloc[train], y=data.y[train],
                              sensitive=data.disadvantaged[first][train], manifest=manifest,
                              config=config)
        seed = int(child_seed(manifest.random_state, Stream.PREDICTION, s, m).generate_state(1)[0])
        y_pred, _ = fitted.predict(data.X.iloc[test], sensitive=data.disadvantaged[first][test],
                                   random_state=seed)
        y_test = data.y[test]
        for attribute in manifest.protected_attributes:
            mask = np.asarray(data.disadvantaged[attribute.name][test], dtype=bool)
            rows.append({"strategy": strategy.value, "model": family.value,
                         "protected_attribute": attribute.name,
                         "d": confusion_counts(y_test[mask], y_pred[mask]),
                         "a": confusion_counts(y_test[~mask], y_pred[~mask])})
    return pd.DataFrame(rows)


def size_counts(audit: str) -> pd.DataFrame:
    """Per attribute, counts whose every rate is 0.5 on the test split's group/label sizes."""
    data = load_audit(load_manifest(ROOT / "audits" / audit / "audit.yaml"))
    y_test = np.asarray(data.y[data.test_index])
    rows = []
    for attribute in data.manifest.protected_attributes:
        mask = np.asarray(data.disadvantaged[attribute.name][data.test_index], dtype=bool)

        def half(y: np.ndarray) -> np.ndarray:
            # y = 0 rows split TN/FP, y = 1 rows split FN/TP: every rate (but precision) is 1/2
            neg, pos = int(np.sum(y == 0)), int(np.sum(y == 1))
            return np.array([neg - neg // 2, neg // 2, pos - pos // 2, pos // 2])

        rows.append({"strategy": "any", "model": "any", "protected_attribute": attribute.name,
                     "d": half(y_test[mask]), "a": half(y_test[~mask])})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gap", type=float, default=0.10)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--power", type=float, default=0.8)
    parser.add_argument("--fit", nargs="*", default=["german_credit_lending", "insurance_denial",
                                                     "compas"])
    parser.add_argument("--sizes", nargs="*", default=["benefits_denial",
                                                       "healthcare_readmission"])
    parser.add_argument("--check-results", type=Path, default=None)
    args = parser.parse_args(argv)
    config = BenchmarkConfig(jobs=1)
    print(f"gap={args.gap} alpha={args.alpha} power={args.power} (MDE with continuity "
          f"correction); cells = strategy x model x attribute")
    for audit, fit in [(a, True) for a in args.fit] + [(a, False) for a in args.sizes]:
        frame = fitted_counts(audit, config) if fit else size_counts(audit)
        d, a = np.stack(frame["d"].to_numpy()), np.stack(frame["a"].to_numpy())
        metrics = RATE_METRICS if fit else tuple(m for m in RATE_METRICS
                                                 if m != "predictive_parity_diff")
        if fit and args.check_results is not None:
            grid = pd.read_csv(args.check_results / audit / "fairness.csv")
            grid = grid[grid["metric"] == "demographic_parity_diff"]
            ours = (d[:, [1, 3]].sum(1) / d.sum(1)) - (a[:, [1, 3]].sum(1) / a.sum(1))
            merged = frame.assign(ours=ours).merge(
                grid, on=["strategy", "model", "protected_attribute"])
            worst = float(np.max(np.abs(merged["ours"] - merged["value"])))
            print(f"{audit}: {len(merged)} demographic-parity gaps match the grid's "
                  f"fairness.csv to {worst:.1e}")
        for attribute, part in frame.groupby("protected_attribute", sort=False):
            idx = part.index.to_numpy()
            n_d, n_a = int(d[idx[0]].sum()), int(a[idx[0]].sum())
            cells = []
            for metric in metrics:
                mde, note = minimum_detectable_gap(metric, d[idx], a[idx], alpha=args.alpha,
                                                   power=args.power)
                powered = int(np.sum(np.nan_to_num(mde, nan=np.inf) <= args.gap))
                na = int(np.sum(note != ""))
                finite = mde[np.isfinite(mde)]
                span = (f"{finite.min():.3f}-{finite.max():.3f}" if finite.size else "n/a")
                cells.append(f"{metric.removesuffix('_diff')} {powered}/{len(idx)}"
                             f"{f' ({na} n/a)' if na else ''} [mde {span}]")
            kind = "fitted" if fit else "sizes, base 0.5 bound"
            print(f"{audit} {attribute} (test {n_d}/{n_a}, {kind}):")
            for cell in cells:
                print(f"    {cell}")


if __name__ == "__main__":
    main()
