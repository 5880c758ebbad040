"""Where each audit's cells decide: selection-rate and F1 ranges, degenerate cells, parity gaps.

Run from the repository root after `faircode data fetch`:

    .venv/bin/python bench/operating_point.py AUDIT [--rule threshold|base_rate|top_fraction]
        [--fraction F] [--max-iter N] [--n-resamples B] [--n-permutations P] [--jobs N]
        [--families FAMILY ...] [--strategies S ...] [--out DIR]

Without ``--rule`` the audit's own operating point is used (its manifest's ``decision`` block,
else the global threshold); ``--rule`` overrides it, so before/after can be compared on one
split.  ``--max-iter`` lowers ExponentiatedGradient's budget (S3) where a full run is too slow
for a quick check, and ``--families`` restricts the grid to some model families (e.g. only
``logistic_regression`` on a ~100k-row audit on a busy machine) and ``--strategies`` to some
strategies; the output says which budget, families and strategies were used.  A partial grid's
q-values are adjusted over its own tests only.  Prints, across the audit's cells, the
range of the selection rate and of F1, the degenerate cells, and the demographic-parity gap with
its CI per strategy x model for the first protected attribute; with ``--out`` the result tables
and run.json are written too.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from faircode.benchmark import _assemble, _run_cell, provenance, run_audit, write_audit
from faircode.cli import resolve_manifests
from faircode.config import BenchmarkConfig
from faircode.counterfactual import perturb_test_rows
from faircode.data import load_audit
from faircode.decision import DecisionRule
from faircode.manifest import load_manifest
from faircode.models import ModelFamily
from faircode.strategies import STRATEGY_CODES, Strategy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audit")
    parser.add_argument("--rule", choices=("threshold", "base_rate", "top_fraction"))
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--fraction", type=float, default=None)
    parser.add_argument("--max-iter", type=int, default=50)
    parser.add_argument("--n-resamples", type=int, default=200)
    parser.add_argument("--n-permutations", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--families", nargs="+", choices=[f.value for f in ModelFamily])
    parser.add_argument("--strategies", nargs="+", choices=[s.value for s in Strategy])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    config = BenchmarkConfig(n_resamples=args.n_resamples, n_permutations=args.n_permutations,
                             max_iter=args.max_iter, jobs=args.jobs)
    manifest = load_manifest(resolve_manifests(Path("audits"), [args.audit])[0])
    if args.rule is not None:
        rule = DecisionRule(args.rule, threshold=args.threshold if args.rule == "threshold"
                            else None, fraction=args.fraction)
        manifest = dataclasses.replace(manifest, decision=rule)
    data = load_audit(manifest)
    start = time.perf_counter()
    if args.families or args.strategies or config.jobs == 1:
        # cell by cell, each reported as it ends (the same cells and seeds as run_audit's)
        perturbed = perturb_test_rows(data)
        families = args.families or [f.value for f in ModelFamily]
        strategies = args.strategies or [s.value for s in Strategy]
        cells = []
        for strategy in (s for s in Strategy if s.value in strategies):
            for family in ModelFamily:
                if family.value in families:
                    cell = _run_cell(data, strategy, family, perturbed, config)
                    cells.append(cell)
                    f1 = next((r["value"] for r in cell.performance if r["metric"] == "f1"),
                              float("nan"))
                    print(f"  done {STRATEGY_CODES[strategy]} {family.value}: "
                          f"selection {cell.decision.get('selection_rate', float('nan')):.4f}, "
                          f"F1 {f1:.4f}, "
                          f"degenerate {cell.degenerate}, fit {cell.seconds.get('fit', 0):.0f} s",
                          file=sys.stderr, flush=True)
        results = _assemble(data, cells, config)
    else:
        results = run_audit(data, config=config)
    wall = time.perf_counter() - start
    if args.out is not None:
        write_audit(data, results, config=config, out_dir=args.out,
                    provenance_record=provenance())
    perf = results.performance
    rule_text = manifest.decision.as_dict() if manifest.decision else (
        f"threshold {config.decision_threshold} (global)")
    print(f"{manifest.name}: rule {rule_text}; B = {config.n_resamples}, "
          f"P = {config.n_permutations}, S3 max_iter = {config.max_iter}, jobs = {config.jobs}, "
          f"families {' '.join(args.families) if args.families else 'all'}, "
          f"strategies {' '.join(args.strategies) if args.strategies else 'all'}; "
          f"grid wall time {wall:.0f} s")
    for metric in ("selection_rate", "f1", "balanced_accuracy", "accuracy"):
        whole = perf["protected_attribute"].fillna("") == ""
        values = perf[(perf["metric"] == metric) & whole]["value"]
        print(f"  {metric:<18} range across cells {values.min():.4f} - {values.max():.4f}")
    base = perf[perf["metric"] == "majority_baseline_accuracy"]["value"].iloc[0]
    print(f"  majority-class baseline accuracy {base:.4f}")
    degenerate = [f"{STRATEGY_CODES[c.strategy]} {c.family.value}" for c in results.cells
                  if c.degenerate]
    print(f"  degenerate cells: {', '.join(degenerate) if degenerate else 'none'}")
    first = manifest.protected_attributes[0].name
    fair = results.fairness
    for attribute in [a.name for a in manifest.protected_attributes]:
        rows = fair[(fair["metric"] == "demographic_parity_diff")
                    & (fair["protected_attribute"] == attribute)]
        mark = " (S3/S4's sensitive feature)" if attribute == first else ""
        print(f"  demographic parity gap, {attribute}{mark}:")
        for row in rows.itertuples():
            code = STRATEGY_CODES[Strategy(row.strategy)]
            print(f"    {code} {row.model:<20} {row.value:+.4f} [{row.ci_low:+.4f}, "
                  f"{row.ci_high:+.4f}] q {row.q_value:.3g} {row.note}")
    for cell in results.cells:
        code = STRATEGY_CODES[cell.strategy]
        objective = cell.decision.get("objective", "")
        cutoff = cell.decision.get("cutoff")
        where = f"cutoff {cutoff:.4f}" if cutoff is not None else objective
        print(f"  {code} {cell.family.value:<20} selection {cell.decision['selection_rate']:.4f}"
              f"  {where}  fit {cell.seconds['fit']:.0f} s")


if __name__ == "__main__":
    main()
