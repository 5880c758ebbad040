"""Which stars survive training replicates: K = 1 (replicate 0 alone) against the K shown.

Reads a results folder produced at K > 1 (the paper state) and compares, for every audit, the
cells of the paper table's metric that replicate 0 alone would star (``significant``: the audit's
own q below alpha, on an informative cell -- exactly what a K = 1 run of the same split and seed
stars) with the stars the report shows (``star``: replicate 0's star that also survives the
pooled interval, the sign of every replicate and their definedness).  A K = 1 run is replicate 0
(``run.seed_mode`` split and model both keep replicate 0 on the manifest's split and seed), so
this is the K = 1 paper table against the K = 5 one without a second run.

    .venv/bin/python bench/stars_by_k.py [RESULTS] [--metric demographic_parity_diff]
        [--show AUDIT:STRATEGY_CODE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

UNINFORMATIVE = "uninformative"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", type=Path, default=Path("results"))
    parser.add_argument("--metric", default="demographic_parity_diff")
    parser.add_argument("--show", action="append", default=[],
                        help="AUDIT:CODE, e.g. german_credit_lending:S4: print those cells")
    args = parser.parse_args()
    summary = pd.read_csv(args.results / "summary.csv", keep_default_na=False,
                          na_values=["NaN", ""])
    rows = summary[summary["metric"] == args.metric].copy()
    note = rows["note"].fillna("").astype(str)
    rows["k1_star"] = rows["significant"].astype(bool) & ~note.str.contains(UNINFORMATIVE)
    rows["shown_star"] = rows["star"].astype(bool)
    replicates = {}
    for audit in rows["audit"].unique():
        run = json.loads((args.results / audit / "run.json").read_text())
        replicates[audit] = run.get("training_variance", {}).get("replicates", 1)
    print(f"{args.metric}: stars of replicate 0 alone (K = 1) vs stars shown at K replicates")
    print(f"{'audit':<26}{'K':>3}{'cells':>7}{'K=1 *':>7}{'K *':>6}{'lost':>6}{'gained':>8}")
    totals = [0, 0, 0, 0, 0]
    for audit, group in rows.groupby("audit", sort=False):
        lost = int((group["k1_star"] & ~group["shown_star"]).sum())
        gained = int((~group["k1_star"] & group["shown_star"]).sum())
        counts = [len(group), int(group["k1_star"].sum()), int(group["shown_star"].sum()),
                  lost, gained]
        totals = [t + c for t, c in zip(totals, counts, strict=True)]
        print(f"{audit:<26}{replicates[audit]:>3}" + "".join(
            f"{c:>{w}}" for c, w in zip(counts, (7, 7, 6, 6, 8), strict=True)))
    print(f"{'all':<26}{'':>3}" + "".join(
        f"{c:>{w}}" for c, w in zip(totals, (7, 7, 6, 6, 8), strict=True)))
    for spec in args.show:
        audit, _, code = spec.partition(":")
        cells = rows[(rows["audit"] == audit) & (rows["strategy_code"] == code)]
        print(f"\n{audit} {code} ({args.metric}): replicate 0 [CI] q -> shown [pooled CI]")
        for r in cells.itertuples():
            print(f"  {r.model:<20}{r.protected_attribute:<12}{r.value:+.3f} "
                  f"[{r.ci_low:+.3f}, {r.ci_high:+.3f}] q {r.q_value:.3g}"
                  f"{'*' if r.k1_star else ' '} -> {r.shown_value:+.3f} "
                  f"[{r.shown_ci_low:+.3f}, {r.shown_ci_high:+.3f}]{'*' if r.shown_star else ''}")


if __name__ == "__main__":
    main()
