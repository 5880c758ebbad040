"""Which published numbers changed between two results folders (issue 9's closing note).

Run from the repository root, after ``faircode run`` wrote both folders:

    python bench/compare_results.py OLD_RESULTS NEW_RESULTS

For every audit in NEW_RESULTS, fairness rows are matched on (strategy, model, attribute, metric)
and counted when their sign (for disparate impact: their side of 1) or their ``significant`` flag
changed; it also counts equalized-odds rows whose interval contains 0 beside p < 0.01, flip-rate
rows with at least 100 changed rows and a zero-width interval, and the intersectional flags.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd


def main(old: Path, new: Path) -> None:
    for audit in sorted(p.name for p in new.iterdir() if p.is_dir()):
        if not all((root / audit / "fairness.csv").exists() for root in (old, new)):
            print(f"{audit}: no fairness.csv in both folders (unavailable audit?), skipped")
            continue
        fo = pd.read_csv(old / audit / "fairness.csv")
        fn = pd.read_csv(new / audit / "fairness.csv")
        merged = fo.merge(fn, on=["strategy", "model", "protected_attribute", "metric"],
                          suffixes=("_old", "_new"))
        print(f"{audit}: {len(merged)} fairness cells in both (new table {len(fn)} rows)")
        for metric, g in merged.groupby("metric"):
            centre = 1.0 if metric == "disparate_impact_ratio" else 0.0
            sign = int((np.sign(g.value_old - centre) != np.sign(g.value_new - centre)).sum())
            sig = int((g.significant_old != g.significant_new).sum())
            print(f"   {metric}: sign {sign}/{len(g)}, significance {sig}/{len(g)}")
        for label, frame in (("old", fo), ("new", fn)):
            eo = frame[frame.metric == "equalized_odds_diff"]
            bad = int(((eo.ci_low <= 0) & (eo.ci_high >= 0) & (eo.p_value < 0.01)).sum())
            print(f"   {label}: equalized odds with CI containing 0 and p < 0.01: {bad}/{len(eo)}")
        for label, root in (("old", old), ("new", new)):
            cf = pd.read_csv(root / audit / "counterfactual.csv")
            zero = int(((cf.n_changed >= 100) & (cf.ci_low == cf.ci_high)).sum())
            print(f"   {label}: flip-rate rows n >= 100 with zero-width CI: {zero}/{len(cf)}")
        io = pd.read_csv(old / audit / "intersectional.csv")
        inn = pd.read_csv(new / audit / "intersectional.csv")
        if len(inn):
            before = "superadditive" if "superadditive" in io else "interaction_significant"
            print(f"   intersectional rows {len(inn)}: old {before} {int(io[before].sum())}, "
                  f"new interaction_significant {int(inn.interaction_significant.sum())}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
