"""What K = 5 split-mode replicates change: the residual floor's width, the stars, German S4.

Run from the repository root (the machine is shared: ``nice``):

    PYTHONPATH=$PWD FAIRCODE_DATA_MIRROR=... nice python bench/effects_k5.py
        [--audits german_credit_lending compas] [--jobs 2] [--resamples 2000] [--out DIR]
        [--reuse]

For each audit it runs the grid twice through the library (``faircode run``'s steps: prepare,
fit, evaluate, write), at K = 1 and at K = 5 in split mode (``run.seeds: 5``,
``run.seed_mode: split``, the paper state), at B = P = ``--resamples``, timing the fit and the
evaluate step apart, and renders each results folder with ``write_report``.  It prints:

1. the residual floor (S3/S4 vs S2, demographic parity) per audit x attribute x model at K = 1:
   the paired effect and its interval (``effects.csv``) beside the conservative interval
   arithmetic the report used before (each strategy's own CI mapped to ``|gap|``, then
   ``[lo_m − hi_2, hi_m − lo_2]``), and the width ratio paired / conservative; and at K = 5
   the K-replicate estimate's interval width over the same conservative width;
2. every paper-table cell (gap) and effects-table cell (Δ |DP|, Δ accuracy) whose verdict's
   star differs between K = 1 and K = 5 (the CSVs' verdicts, shown by the report), and the
   counts per audit;
3. the German S4 cells before (K = 1: replicate 0, its CI, its verdict) and after (K = 5: the
   K-replicate estimate, its interval and verdict, the between-replicate SD);
4. the evaluate step's seconds (``run.json`` ``seconds``) and the wall time of fit and evaluate.

The stars are each audit's own Benjamini-Hochberg q (``q_value``), as in the report; the
benchmark-wide q (``q_benchmark``) rides along as the report's robustness column.
Results go to ``--out`` (default: a temporary folder, removed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import prepare
from faircode.core.config import BenchmarkConfig
from faircode.evaluate.write import write_audit
from faircode.pipeline.run import evaluate, fit
from faircode.provenance.state import provenance
from faircode.report.analysis import abs_bounds, benchmark_family
from faircode.report.build import write_report
from faircode.report.effects import shown_effects, shown_gaps
from faircode.report.inputs import load_results, strategy_code

DP = "demographic_parity_diff"
S2 = "unawareness_proxy_removal"
SHORT = {"logistic_regression": "LR", "random_forest": "RF", "gradient_boosting": "GB"}


def run(audits: list[str], *, seeds: int, out: Path, jobs: int, resamples: int) -> dict:
    """Fit, evaluate and write every audit at ``seeds`` replicates; the seconds of each step."""
    config = BenchmarkConfig(jobs=jobs).with_params({
        "stats.n_resamples": resamples, "stats.n_permutations": resamples, "run.seeds": seeds,
        "run.seed_mode": "split" if seeds > 1 else "model"
    })
    seconds = {}
    for name in audits:
        data = prepare(load_audit(load_manifest(Path("audits") / name / "audit.yaml")))
        t0 = time.perf_counter()
        predictions = fit(data, config=config)
        t1 = time.perf_counter()
        results = evaluate(data, predictions, config=config)
        t2 = time.perf_counter()
        write_audit(data, results, config=config, out_dir=out, provenance_record=provenance())
        seconds[name] = {"fit": t1 - t0, "evaluate": t2 - t1, "recorded": results.seconds}
    write_report(out)
    return seconds


def _marks(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The paper table's (gaps) and the effects' shown rows with their stars."""
    inputs = load_results(folder)
    alpha = 0.05
    q = benchmark_family(inputs.fairness, inputs.intersectional,
                         deployed=inputs.deployed.fairness.iloc[0:0],
                         calibration_gap=inputs.deployed.calibration_gap.iloc[0:0]).fairness
    gaps = shown_gaps(inputs.fairness.assign(q_benchmark=q), metric=DP, alpha=alpha)
    return gaps, shown_effects(inputs, alpha=alpha)


def _cell(row: pd.Series) -> str:
    star = "*" if bool(row["mark"]) else " "
    return (f"{row['value']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]{star} "
            f"{row['verdict']}")


def floor_widths(one: Path, five: Path) -> None:
    """Section 1: the residual floor, paired vs conservative."""
    print("1. Residual floor (demographic parity, |S_m| - |S2|): paired vs conservative")
    print(f"{'audit':24} {'attr':6} {'model':3} {'S':3} {'paired K=1':24} {'conservative':24} "
          f"{'ratio':>6} {'K=5 estimate':24} {'ratio':>6}")
    ratios = []
    for audit_dir in sorted(p for p in one.iterdir() if (p / "effects.csv").is_file()):
        fair = pd.read_csv(audit_dir / "fairness.csv")
        fair = fair[fair["metric"] == DP].set_index(["strategy", "model", "protected_attribute"])
        eff = pd.read_csv(audit_dir / "effects.csv")
        eff = eff[(eff["reference"] == S2) & (eff["metric"] == DP)]
        pooled = pd.read_csv(five / audit_dir.name / "effects_stability.csv").set_index(
            ["strategy", "reference", "model", "protected_attribute", "metric"])
        for r in eff.itertuples():
            m = fair.loc[(r.strategy, r.model, r.protected_attribute)]
            b = fair.loc[(S2, r.model, r.protected_attribute)]
            lo_m, hi_m = abs_bounds(np.array([m.ci_low]), np.array([m.ci_high]))
            lo_b, hi_b = abs_bounds(np.array([b.ci_low]), np.array([b.ci_high]))
            cons = (float(lo_m[0] - hi_b[0]), float(hi_m[0] - lo_b[0]))
            p5 = pooled.loc[(r.strategy, S2, r.model, r.protected_attribute, DP)]
            ratio = (r.ci_high - r.ci_low) / (cons[1] - cons[0])
            ratio5 = (p5["ci_high"] - p5["ci_low"]) / (cons[1] - cons[0])
            ratios.append((audit_dir.name, ratio, ratio5))
            paired_text = f"{r.value:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]"
            cons_text = f"[{cons[0]:+.3f}, {cons[1]:+.3f}]"
            pooled_text = (f"{p5['value']:+.3f} [{p5['ci_low']:+.3f}, "
                           f"{p5['ci_high']:+.3f}]")
            print(f"{audit_dir.name:24} {r.protected_attribute[:6]:6} {SHORT[r.model]:3} "
                  f"{strategy_code(r.strategy):3} {paired_text:24} {cons_text:24} "
                  f"{ratio:6.2f} {pooled_text:24} {ratio5:6.2f}")
    frame = pd.DataFrame(ratios, columns=["audit", "k1", "k5"])
    for audit, g in frame.groupby("audit"):
        print(f"   {audit}: width ratio paired/conservative K=1 median {g['k1'].median():.2f} "
              f"(range {g['k1'].min():.2f}-{g['k1'].max():.2f}); K=5 estimate/conservative "
              f"median {g['k5'].median():.2f} (range {g['k5'].min():.2f}-{g['k5'].max():.2f})")


def star_changes(one: Path, five: Path) -> None:
    """Section 2: which stars K = 5 takes away (or gives)."""
    print("\n2. Stars: K = 1 -> K = 5 (split mode)")
    (g1, e1), (g5, e5) = _marks(one), _marks(five)
    keys_g = ["audit", "protected_attribute", "model", "strategy"]
    keys_e = ["audit", "protected_attribute", "model", "strategy", "reference", "metric"]
    e1 = e1[e1["metric"].isin([DP, "accuracy"])]
    e5 = e5[e5["metric"].isin([DP, "accuracy"])]
    for label, a, b, keys in (("paper table (gap)", g1, g5, keys_g),
                              ("effects table", e1, e5, keys_e)):
        both = a.merge(b, on=keys, suffixes=("_1", "_5"))
        lost = both[both["mark_1"].astype(bool) & ~both["mark_5"].astype(bool)]
        gained = both[~both["mark_1"].astype(bool) & both["mark_5"].astype(bool)]
        for audit, g in both.groupby("audit"):
            n1 = int(g["mark_1"].astype(bool).sum())
            n5 = int(g["mark_5"].astype(bool).sum())
            print(f"   {label}, {audit}: {len(g)} cells, starred {n1} -> {n5}; lost "
                  f"{int((lost['audit'] == audit).sum())}, gained "
                  f"{int((gained['audit'] == audit).sum())}")
        for kind, rows in (("lost", lost), ("gained", gained)):
            for r in rows.itertuples():
                what = f"{strategy_code(r.strategy)}" + (
                    f"-{strategy_code(r.reference)} {r.metric}" if "reference" in keys else "")
                print(f"     {kind}: {r.audit} {r.protected_attribute} {SHORT[r.model]} {what}: "
                      f"{r.value_1:+.3f} [{r.ci_low_1:+.3f}, {r.ci_high_1:+.3f}] -> "
                      f"{r.value_5:+.3f} [{r.ci_low_5:+.3f}, {r.ci_high_5:+.3f}] "
                      f"{r.verdict_5}")


def german_s4(one: Path, five: Path) -> None:
    """Section 3: the German S4 cells before and after."""
    print("\n3. German credit, S4 (post-processing): K = 1 -> K = 5")
    (g1, e1), (g5, e5) = _marks(one), _marks(five)
    audit = "german_credit_lending"
    for label, a, b, extra in (("gap", g1, g5, {}),
                               ("S4-S0 Δ|DP|", e1, e5, {"reference": "baseline", "metric": DP}),
                               ("S4-S2 Δ|DP|", e1, e5, {"reference": S2, "metric": DP}),
                               ("S4-S0 Δacc", e1, e5, {"reference": "baseline",
                                                       "metric": "accuracy"})):
        sel_a = a[(a["audit"] == audit) & (a["strategy"] == "post_processing")]
        sel_b = b[(b["audit"] == audit) & (b["strategy"] == "post_processing")]
        for k, v in extra.items():
            sel_a, sel_b = sel_a[sel_a[k] == v], sel_b[sel_b[k] == v]
        for (_, r1), (_, r5) in zip(sel_a.iterrows(), sel_b.iterrows(), strict=True):
            print(f"   {label:12} {r1['protected_attribute']} {SHORT[r1['model']]}: "
                  f"{_cell(r1)}  ->  {_cell(r5)}")


def timings(seconds: dict[int, dict], five: Path) -> None:
    """Section 4: where the time went."""
    print("\n4. Seconds (fit and evaluate wall time; run.json seconds of the evaluate step)")
    for k, per in seconds.items():
        for audit, s in per.items():
            rec = ", ".join(f"{key} {v:.2f}" for key, v in s["recorded"].items())
            share = s["evaluate"] / (s["fit"] + s["evaluate"])
            print(f"   K={k} {audit:24} fit {s['fit']:7.1f}  evaluate {s['evaluate']:5.1f} "
                  f"({share:.1%} of fit+evaluate); {rec}")
    for audit in seconds[5]:
        run = json.loads((five / audit / "run.json").read_text())
        print(f"   K=5 {audit}: run.json training_variance = {run['training_variance']['note']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", nargs="+", default=["german_credit_lending", "compas"])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--reuse", action="store_true",
                        help="analyse the runs already in --out (k1/, k5/, seconds.json)")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="effects_k5_"))
    try:
        if args.reuse:
            seconds = {int(k): v for k, v in json.loads(
                (root / "seconds.json").read_text()).items()}
        else:
            seconds = {k: run(args.audits, seeds=k, out=root / f"k{k}", jobs=args.jobs,
                              resamples=args.resamples) for k in (1, 5)}
            (root / "seconds.json").write_text(json.dumps(seconds))
        print(f"audits {', '.join(args.audits)}; B = P = {args.resamples}; jobs {args.jobs}; "
              "K = 5 in split mode\n")
        floor_widths(root / "k1", root / "k5")
        star_changes(root / "k1", root / "k5")
        german_s4(root / "k1", root / "k5")
        timings(seconds, root / "k5")
    finally:
        if args.out is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
