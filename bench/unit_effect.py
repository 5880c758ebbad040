"""How much repeated people change an audit: fit once, evaluate with and without the unit path.

    PYTHONPATH=$PWD python bench/unit_effect.py compas --n-resamples 200 --n-permutations 200 \\
        --out /tmp/wiring

writes ``<out>-units/<audit>/`` (the grid as shipped: the manifest's ``dataset.unit`` is used) and
``<out>-rows/<audit>/`` (the same predictions evaluated with the unit path disabled, i.e. every
row treated as an independent person), then prints the design effect of the demographic-parity
gap per strategy (median over models and attributes) and the fairness and intersectional rows
whose ``significant`` flag differs between the two.  ``bench/compare_results.py`` compares the
two folders further.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import prepare
from faircode.core.config import BenchmarkConfig
from faircode.evaluate.write import write_audit
from faircode.pipeline.run import evaluate, fit
from faircode.provenance.state import provenance


def main() -> None:
    """Fit one audit's grid, evaluate it twice, write both result folders, print the effect."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audit")
    parser.add_argument("--audits", default="audits")
    parser.add_argument("--n-resamples", type=int, default=200)
    parser.add_argument("--n-permutations", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/unit-effect"))
    args = parser.parse_args()
    config = BenchmarkConfig(jobs=args.jobs).with_params({
        "stats.n_resamples": args.n_resamples, "stats.n_permutations": args.n_permutations
    })
    data = load_audit(load_manifest(Path(args.audits) / args.audit / "audit.yaml"))
    prepared = prepare(data)
    if prepared.unit is None:
        raise SystemExit(f"{args.audit}: declares no dataset.unit")
    predictions = fit(prepared, config=config)
    record = provenance()
    results = {}
    for name, audit in (("units", prepared), ("rows", dataclasses.replace(prepared, unit=None))):
        results[name] = evaluate(audit, predictions, config=config)
        folder = write_audit(audit, results[name], config=config,
                             out_dir=Path(f"{args.out}-{name}"), provenance_record=record)
        print(f"wrote {folder}")
    units, rows = results["units"].fairness, results["rows"].fairness
    test_units = prepared.unit[prepared.test_index]
    print(f"test rows {test_units.size}, units {len(set(test_units.tolist()))}")
    parity = units[units["metric"] == "demographic_parity_diff"]
    print("design effect of demographic_parity_diff per strategy (min / median / max over "
          "models and attributes):")
    for strategy, group in parity.groupby("strategy", sort=False):
        d = group["design_effect"]
        print(f"  {strategy:<28} {d.min():.3f} / {d.median():.3f} / {d.max():.3f}")
    print("design effect per metric (median, max):")
    for metric, group in units.groupby("metric", sort=False):
        print(f"  {metric:<26} {group['design_effect'].median():.3f} "
              f"{group['design_effect'].max():.3f}")
    changed = units["significant"].to_numpy() != rows["significant"].to_numpy()
    print(f"fairness rows whose significance changed: {int(changed.sum())} of {len(units)} "
          f"(lost {int((changed & rows['significant'].to_numpy()).sum())}, gained "
          f"{int((changed & units['significant'].to_numpy()).sum())})")
    own = ~units["metric"].isin(["disparate_impact_ratio", "tpr_gap"]).to_numpy()
    print(f"  of which own tests (not SAME_NULL twins): {int((changed & own).sum())} of "
          f"{int(own.sum())}")
    for _, r in units[changed].iterrows():
        twin = rows.loc[r.name]
        print(f"    {r.strategy} {r.model} {r.protected_attribute} {r.metric}: p {twin.p_value:.4f}"
              f" -> {r.p_value:.4f}, q {twin.q_value:.4f} -> {r.q_value:.4f}, deff "
              f"{r.design_effect:.3f}")
    pu, pr = results["units"].performance, results["rows"].performance
    acc = pu["metric"] == "accuracy"
    width = (pu["ci_high"] - pu["ci_low"])[acc].to_numpy() / (pr["ci_high"] - pr["ci_low"])[
        acc].to_numpy()
    print(f"accuracy CI width ratio units/rows: min {width.min():.3f} max {width.max():.3f}")
    iu, ir = results["units"].intersectional, results["rows"].intersectional
    if len(iu):
        print(f"intersectional gap significance changed: "
              f"{int((iu['significant'] != ir['significant']).sum())} of {len(iu)}; interaction "
              f"{int((iu['interaction_significant'] != ir['interaction_significant']).sum())}")


if __name__ == "__main__":
    main()
