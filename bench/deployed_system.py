"""The compas_two_years deployed system through both of faircode's paths, counted and timed.

Run from the repository root after `faircode data fetch compas_two_years`:

    .venv/bin/python bench/deployed_system.py [--repeats 5]

Prints, in order:

1. The manifest's ``system:`` block as loaded (``faircode.audit.data.load_audit``): its rule,
   selection rate and score range on the audit's rows, and the warnings.
2. The system's per-race table on every row of the audit (:mod:`faircode.stats.groups`) against
   ProPublica's published Black and White truth tables, count for count.
3. The predictions-file path: the tool's own decision (``score_text`` not Low) and decile,
   keyed on ``id``, written for every row of the raw file in a shuffled order as CSV and as
   parquet to a temporary folder, read back with
   :func:`faircode.audit.predictions_file.read_predictions` and compared array for array with
   the manifest path (rows the audit drops are counted as outside).
4. Wall time (median of ``--repeats``) of ``load_audit`` without the block, with it, with it
   and the ``id`` key, and of ``read_predictions`` on each file.

It reads only the columns it names (never ``name``, ``first``, ``last`` or ``dob``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.predictions_file import read_predictions
from faircode.stats.groups import format_group_table, group_table

MANIFEST = Path("audits/compas_two_years/audit.yaml")
PUBLISHED = {"African-American": (990, 805, 532, 1369), "Caucasian": (1139, 349, 461, 505)}


def _median_seconds(work: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    manifest = load_manifest(MANIFEST)
    assert manifest.system is not None
    data = load_audit(manifest, key="id")
    system, keys = data.system, data.keys
    assert system is not None and system.score is not None and keys is not None
    print(f"1. system {system.name} ({system.title}): decision 1 = {system.rule}")
    print(f"   selection rate {system.decision.mean():.4f} ({int(system.decision.sum()):,} of "
          f"{system.decision.size:,} rows); score {manifest.system.score.column} "
          f"({system.scale}) {system.score.min():g} to {system.score.max():g}; warnings: "
          f"{len(data.warnings)}")

    race = data.disadvantaged["race"]
    table = group_table(data.y, system.decision, {"African-American": race, "Caucasian": ~race},
                        protected_attribute="race", row_set="all")
    print("2. per-race table of the loaded system, every row of the audit:")
    print(format_group_table(table))
    for name, counts in PUBLISHED.items():
        row = table[(table["group"] == name) & (table["metric"] == "fpr")].iloc[0]
        ours = tuple(int(row[c]) for c in ("TN", "FP", "FN", "TP"))
        print(f"   {name:<17} {ours} published {counts}: "
              f"{'equal' if ours == counts else 'DIFFERENT'}")

    raw = pd.read_csv(manifest.dataset.path, usecols=["id", "score_text", "decile_score"])
    raw["flagged"] = (raw["score_text"] != "Low").astype(int)
    shuffled = raw.sample(frac=1.0, random_state=11)[["id", "flagged", "decile_score"]]
    with tempfile.TemporaryDirectory() as folder:
        files = {"csv": Path(folder) / "tool.csv", "parquet": Path(folder) / "tool.parquet"}
        shuffled.to_csv(files["csv"], index=False)
        shuffled.to_parquet(files["parquet"], index=False)
        print(f"3. predictions files: {len(shuffled):,} rows (every row of the raw file, "
              "shuffled), key id")
        read = {}
        for kind, path in files.items():
            got = read_predictions(path, key="id", rows=keys, decision="flagged",
                                   score="decile_score", scale="ordinal")
            assert got.decision is not None and got.score is not None
            same = (np.array_equal(got.positions, np.arange(keys.kept.size))
                    and np.array_equal(got.decision, system.decision)
                    and np.array_equal(got.score, system.score))
            print(f"   {kind:<8} covered {got.positions.size:,} audit rows, outside "
                  f"{got.n_outside:,}, missing {got.n_missing}; decision and score equal to "
                  f"the manifest path: {same}")
            read[kind] = got
        plain = replace(manifest, system=None)
        print(f"4. median wall time over {args.repeats} runs:")
        for label, work in (
            ("load_audit, no system block", lambda: load_audit(plain)),
            ("load_audit, with the system", lambda: load_audit(manifest)),
            ("load_audit, system and key id", lambda: load_audit(manifest, key="id")),
            *((f"read_predictions, {kind}", lambda p=path: read_predictions(
                p, key="id", rows=keys, decision="flagged", score="decile_score",
                scale="ordinal")) for kind, path in files.items()),
        ):
            print(f"   {label:<32} {_median_seconds(work, args.repeats) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
