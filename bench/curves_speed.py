"""Operating-point curves: time on 50,000 rows x 19 thresholds, and a real cell against evaluate.

Run from the repository root (``--fit`` needs the raw file in a mirror, e.g.
``FAIRCODE_DATA_MIRROR=/work/shared/datasets``):

    PYTHONPATH=$PWD .venv/bin/python bench/curves_speed.py [--rows 50000]
        [--fit german_credit_lending]

Synthetic part: ``--rows`` scored rows (seed 20261129; scores uniform, labels Bernoulli(score),
three attributes of 30 / 50 / 10 % disadvantaged), the default grid (0.05 … 0.95), B = 2000:
the time of :func:`faircode.stats.curves.curve_counts` and of the whole table
(:func:`faircode.stats.curves.operating_curves`), without units and with units of 3 rows each (the
per-threshold cluster bootstrap of accuracy).  One run each, after one warm-up.

``--fit AUDIT``: the S0 logistic-regression cell is fitted as the grid does, scored by
``evaluate._score_cell`` (the main table), and its curve computed from the same test scores
with the cell's own seed streams; the rows at the audit's declared threshold are compared with
the main table's fairness, performance and operating-point rows, bit for bit.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from faircode.stats.curves import DEFAULT_THRESHOLDS, curve_counts, operating_curves

ROOT = Path(__file__).resolve().parents[1]


def synthetic(rows: int) -> None:
    rng = np.random.default_rng(20261129)
    scores = rng.uniform(size=rows)
    y = (rng.uniform(size=rows) < scores).astype(np.int8)
    groups = {name: rng.uniform(size=rows) < share
              for name, share in (("a", 0.3), ("b", 0.5), ("c", 0.1))}
    units = np.arange(rows) // 3
    operating_curves(scores, y, groups, favourable=1, performance_seed=1, decision_seed=2)
    t0 = time.perf_counter()
    curve_counts(scores, y, groups, favourable=1)
    t1 = time.perf_counter()
    frame = operating_curves(scores, y, groups, favourable=1, performance_seed=1,
                             decision_seed=2)
    t2 = time.perf_counter()
    operating_curves(scores, y, groups, favourable=1, performance_seed=1, decision_seed=2,
                     units=units)
    t3 = time.perf_counter()
    print(f"{rows} rows, {len(DEFAULT_THRESHOLDS)} thresholds, {len(groups)} attributes, "
          f"B = 2000: {len(frame)} curve rows")
    print(f"  curve_counts (the one sorted pass)        {1e3 * (t1 - t0):7.1f} ms")
    print(f"  operating_curves                          {1e3 * (t2 - t1):7.1f} ms")
    print(f"  operating_curves, units of 3 rows         {1e3 * (t3 - t2):7.1f} ms")


def real_cell(audit: str) -> None:
    """The curve of one fitted cell at its declared threshold against evaluate's rows."""
    from faircode.audit.data import load_audit
    from faircode.audit.decision import decision_cutoff, resolve_rule
    from faircode.audit.manifest import load_manifest
    from faircode.audit.prepared import prepare
    from faircode.core.cells import ModelFamily, Strategy
    from faircode.core.config import BenchmarkConfig
    from faircode.core.seeds import Stream, child_seed
    from faircode.evaluate.score import score_cell
    from faircode.grid.fit import fit_cell

    manifest = load_manifest(ROOT / "audits" / audit / "audit.yaml")
    mirrors = [Path(p) for p in os.environ.get("FAIRCODE_DATA_MIRROR", "").split(os.pathsep) if p]
    found = [m / audit / manifest.dataset.path.name for m in mirrors
             if (m / audit / manifest.dataset.path.name).is_file()]
    data = prepare(load_audit(manifest, path=found[0] if found else manifest.dataset.path))
    config = BenchmarkConfig(jobs=1)
    cell = fit_cell(data, Strategy.BASELINE, ModelFamily.LOGISTIC_REGRESSION,
                    mitigation=config.mitigation, seed=manifest.random_state,
                    train=data.train_index, test=data.test_index, perturbed=data.perturbed,
                    keep_train_scores=True)
    rule = resolve_rule(manifest.decision, default_threshold=config.models.decision_threshold)
    result = score_cell(data, cell, rule=rule, stats=config.stats, degenerate=config.degenerate)
    cutoff = decision_cutoff(rule, train_scores=cell.train_score,
                             train_labels=data.y[data.train_index])
    test, master = data.test_index, manifest.random_state
    s, m = list(Strategy).index(Strategy.BASELINE), 0
    assert cell.test_score is not None
    thresholds = sorted({*DEFAULT_THRESHOLDS, cutoff.value})
    t0 = time.perf_counter()
    curve = operating_curves(
        cell.test_score, data.y[test],
        {a.name: data.disadvantaged[a.name][test] for a in manifest.protected_attributes},
        thresholds=thresholds, favourable=manifest.target.favourable,
        inclusive=cutoff.inclusive, confidence=config.stats.confidence,
        n_resamples=config.stats.n_resamples,
        performance_seed=child_seed(master, Stream.PERFORMANCE, s, m),
        decision_seed=child_seed(master, Stream.DECISIONS, s, m),
        units=None if data.unit is None else data.unit[test])
    seconds = time.perf_counter() - t0
    main = pd.DataFrame([*result.fairness.records(), *result.performance.records()]).fillna(
        {"protected_attribute": ""})
    at = curve[curve["threshold"] == cutoff.value]
    merged = at.merge(main, on=["protected_attribute", "metric"], suffixes=("", "_main"))
    same = np.ones(len(merged), dtype=bool)
    for column in ("value", "ci_low", "ci_high"):
        a, b = merged[column].to_numpy(float), merged[f"{column}_main"].to_numpy(float)
        same &= (a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))
    print(f"{audit} S0 logistic_regression: {len(data.test_index)} test rows, "
          f"{len(thresholds)} thresholds ({rule.rule}, declared cutoff {cutoff.value:g}, "
          f"inclusive {cutoff.inclusive}): curve in {1e3 * seconds:.1f} ms")
    print(f"  at the declared cutoff: {int(same.sum())} of {len(merged)} rows (value, ci_low, "
          f"ci_high) equal evaluate's, bit for bit")
    first = manifest.protected_attributes[0].name
    shown = curve[(curve["metric"].isin(["demographic_parity_diff", "accuracy"]))
                  & (curve["protected_attribute"].isin(["", first]))]
    print(shown.loc[:, ["threshold", "protected_attribute", "metric", "value", "ci_low",
                        "ci_high", "note"]].to_string(index=False, float_format="%.4f"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--fit", default=None)
    args = parser.parse_args()
    synthetic(args.rows)
    if args.fit:
        real_cell(args.fit)


if __name__ == "__main__":
    main()
