"""Recompute every committed ``mde``/``powered``/``mde_note`` with the batched MDE and compare bits.

Run from the repository root (no data needed, only the committed ``results/``):

    PYTHONPATH=$PWD .venv/bin/python bench/power_committed.py [--results results] [--reference]

The committed tables do not store confusion counts, but they determine them: per (cell,
attribute) the fairness rows give each group's size, ``y = 1``, ``y = 0`` and ``ŷ = 1`` counts
(``n_disadvantaged``/``n_advantaged`` of demographic parity, TPR, FPR and predictive parity), which
leaves one unknown per group, the true positives; every candidate pair is checked against the
eight committed metric values (bit for bit, :func:`faircode.stats.metrics.metric_values`)
and the pair
that reproduces all of them is the cell's counts.  Intersectional rows give their DD and AA
counts directly (``n``, ``rate``).  With a design effect above 1 the counts are deflated per row
as ``evaluate`` does.  Every row's MDE is then recomputed by one
:func:`faircode.stats.power.detectable_gaps` call per audit and compared with the CSV (which prints
floats with their shortest exact repr, so equal text is equal bits).  ``--reference`` also runs
the frozen one-at-a-time implementation (``tests/power_reference.py``; slow, ~50 ms per
equalized-odds row).  ``--naive`` runs that frozen code once per metric on all of an audit's rows
(plain array batching, where numpy squares by ``x * x``): the rows it changes, and by how much,
are what batching without :func:`faircode.stats.power._square` would have changed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from faircode.stats import clusters
from faircode.stats.metrics import FAIRNESS_METRICS, metric_values
from faircode.stats.power import detectable_gaps

ROOT = Path(__file__).resolve().parents[1]
KEYS = ["strategy", "model", "protected_attribute"]


def recover(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """The (TN, FP, FN, TP) counts of both groups that reproduce the eight committed values."""
    by = rows.set_index("metric")
    values: dict[str, float] = {str(k): float(v) for k, v in by["value"].items()}
    n_dis, n_adv = by["n_disadvantaged"].to_dict(), by["n_advantaged"].to_dict()
    sizes = {m: (int(n_dis[m]), int(n_adv[m]))
             for m in ("demographic_parity_diff", "tpr_gap", "fpr_gap", "predictive_parity_diff")}
    (n_d, n_a), (y1_d, y1_a), (y0_d, y0_a), (h_d, h_a) = sizes.values()
    if n_d != y1_d + y0_d or n_a != y1_a + y0_a:
        return None
    tp_d = np.arange(max(0, h_d - y0_d), min(y1_d, h_d) + 1)
    tp_a = np.arange(max(0, h_a - y0_a), min(y1_a, h_a) + 1)
    if tp_d.size * tp_a.size > 20_000_000:  # too many candidates: reported as not recovered
        return None
    pairs_d, pairs_a = (grid.ravel() for grid in np.meshgrid(tp_d, tp_a, indexing="ij"))

    def cells(tp: np.ndarray, y1: int, y0: int, h: int) -> np.ndarray:
        fp = h - tp
        return np.stack([y0 - fp, fp, y1 - tp, tp], axis=-1)

    d, a = cells(pairs_d, y1_d, y0_d, h_d), cells(pairs_a, y1_a, y0_a, h_a)
    keep = np.ones(len(d), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for metric in FAIRNESS_METRICS:
            want = values[metric]
            got = metric_values(metric, d, a)
            keep &= (got == want) | (np.isnan(got) & np.isnan(want))
    if not keep.any():
        return None
    first = int(np.flatnonzero(keep)[0])
    return d[first], a[first]


def deflated(counts: np.ndarray, design_effect: float) -> np.ndarray:
    factor = clusters.deflation(design_effect)
    return counts if factor == 1.0 else np.rint(counts / factor).astype(np.int64)


def rate_counts(n: int, rate: float) -> np.ndarray:
    positives = round(rate * n) if n else 0
    return np.array([n - positives, positives, 0, 0], dtype=np.int64)


def audit_rows(folder: Path) -> tuple[pd.DataFrame, list[str], np.ndarray, np.ndarray, int]:
    """Every fairness and intersectional row with its (deflated) counts; unrecovered cells."""
    fairness = pd.read_csv(folder / "fairness.csv", keep_default_na=False,
                           na_values=[""], dtype={"mde_note": str})
    records, metrics, ds, as_ = [], [], [], []
    missing = 0
    for _, rows in fairness.groupby(KEYS, sort=False):
        found = recover(rows)
        if found is None:
            missing += 1
            continue
        for _, row in rows.iterrows():
            records.append(row[["strategy", "model", "mde", "powered", "mde_note",
                                "value"]].to_dict())
            metrics.append(row["metric"])
            ds.append(deflated(found[0], row["design_effect"]))
            as_.append(deflated(found[1], row["design_effect"]))
    inter_file = folder / "intersectional.csv"
    inter = pd.read_csv(inter_file, keep_default_na=False, na_values=[""],
                        dtype={"mde_note": str}) if inter_file.is_file() else pd.DataFrame()
    for _, row in inter.iterrows():
        records.append({"strategy": row["strategy"], "model": row["model"],
                        "mde": row["mde"], "powered": row["powered"],
                        "mde_note": row["mde_note"], "value": row["gap"]})
        metrics.append("demographic_parity_diff")
        ds.append(deflated(rate_counts(int(row["n_dd"]), float(row["rate_dd"])),
                           row["design_effect"]))
        as_.append(deflated(rate_counts(int(row["n_aa"]), float(row["rate_aa"])),
                            row["design_effect"]))
    table = pd.DataFrame(records)
    empty = np.zeros((0, 4), dtype=np.int64)
    return (table, metrics, np.array(ds, dtype=np.int64) if ds else empty,
            np.array(as_, dtype=np.int64) if as_ else empty, missing)


def compare(table: pd.DataFrame, mde: np.ndarray, reached: np.ndarray, note: np.ndarray) -> int:
    """Rows whose mde (bits), powered or note differ from the committed ones."""
    want = table["mde"].to_numpy(dtype=np.float64)
    same_mde = (want.view(np.int64) == mde.view(np.int64)) | (np.isnan(want) & np.isnan(mde))
    same = (same_mde & (table["powered"].astype(bool).to_numpy() == reached)
            & (table["mde_note"].astype(object).fillna("").to_numpy() == note))
    return int((~same).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--reference", action="store_true",
                        help="also run the frozen one-at-a-time implementation (slow)")
    parser.add_argument("--naive", action="store_true",
                        help="also batch the frozen implementation per metric (array path)")
    args = parser.parse_args()
    if args.reference or args.naive:
        sys.path.insert(0, str(ROOT / "tests"))
        from power_reference import detectable_gap as reference_gap
        from power_reference import minimum_detectable_gap as reference_mde
        from power_reference import powered as reference_powered
    total = changed = unrecovered = naive_total = 0
    for folder in sorted(p for p in args.results.iterdir() if (p / "fairness.csv").is_file()):
        config = pd.read_json(folder / "run.json", typ="series")["config"]
        table, metrics, d, a, missing = audit_rows(folder)
        unrecovered += missing
        if not len(table):
            continue
        t0 = time.perf_counter()
        mde, reached, note = detectable_gaps(metrics, d, a, values=table["value"].to_numpy(),
                                             alpha=config["alpha"], power=config["power"])
        seconds = time.perf_counter() - t0
        differ = compare(table, mde, reached, note)
        line = (f"{folder.name:<24} rows {len(table):>4}  cells not recovered {missing}  "
                f"batched differ {differ}  ({seconds * 1e3:.0f} ms)")
        if args.reference:
            found = [reference_gap(m, d[i], a[i], value=table["value"].iloc[i],
                                   alpha=config["alpha"], power=config["power"])
                     for i, m in enumerate(metrics)]
            ref_differ = compare(table, np.array([f.mde for f in found]),
                                 np.array([f.powered for f in found]),
                                 np.array([f.note for f in found]))
            line += f"  reference differ {ref_differ}"
        if args.naive:
            names = np.array(metrics)
            naive = np.full(len(table), np.nan)
            naive_note = np.full(len(table), "", dtype="<U32")
            naive_reached = np.zeros(len(table), dtype=bool)
            for metric in dict.fromkeys(metrics):
                rows = names == metric
                naive[rows], naive_note[rows] = reference_mde(metric, d[rows], a[rows],
                                                              alpha=config["alpha"],
                                                              power=config["power"])
                naive_reached[rows] = reference_powered(
                    metric, table["value"].to_numpy()[rows], naive[rows])
            naive_differ = compare(table, naive, naive_reached, naive_note)
            delta = np.nanmax(np.abs(naive - table["mde"].to_numpy(dtype=np.float64)),
                              initial=0.0)
            line += f"  naive batching differ {naive_differ} (max |dmde| {delta:.2g})"
            naive_total += naive_differ
        print(line, flush=True)
        total, changed = total + len(table), changed + differ
    print(f"all audits: {total} rows, {changed} differ from the committed mde/powered/mde_note "
          f"(bits); {unrecovered} (cell, attribute) groups whose counts were not recovered"
          + (f"; naive batching: {naive_total} differ" if args.naive else ""))


if __name__ == "__main__":
    main()
