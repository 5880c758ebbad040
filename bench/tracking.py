"""Benchmark: how long ``faircode track`` takes to log a five-audit state (~1,500 child runs).

The tables are synthetic but realistic: each audit's rows are the rows of a real small run
(``faircode run german_credit_lending insurance_denial --n-resamples 100 --n-permutations 100
--out TEMPLATE``), replicated per strategy x model cell to ``--attributes`` attributes, their
pairs and ``--axes`` counterfactual axes x 2 channels.  Defaults: 5 audits x 15 cells x
(4 attributes + 6 pairs + 5 axes x 2) = 1,500 children.

It logs into a fresh embedded SQLite store (what ``dvc repro`` uses by default; WAL journaling,
``--no-wal`` for SQLite's default rollback journal) or into ``--tracking-uri`` (a running
``mlflow server``; a new experiment each time), once batched (``log_batch``; ``--workers``
threads, default 1 on SQLite and 2 over HTTP) and, for a ratio, ``--naive-sample`` children the
naive way (one call per metric/param/tag; 0 skips it).  Then it times the second, unchanged
sync.  ``--no-child-inputs`` leaves out each child's dataset input (one store call per child) to
measure its share.  ``--change AUDIT ...`` then syncs a copy in which one number of every row of
those audits' tables differs (a sweep value that changes only them: the other audits' children
are shared with the first state's, :mod:`faircode.record._shared`) and times it against the
first sync.  Timings are of one run on whatever the machine is doing; quote the ratios.

Usage: ``PYTHONPATH=. python bench/tracking.py --template /tmp/tracking-results``, or
``--results results`` to sync a real results folder (the paper state: 1,066 children);
``--fsync-each`` for SQLite's fsync per commit (the sync's default before issue 34); ``--results
results --change benefits_denial compas german_credit_lending insurance_denial bias_madlibs``
for a ``models.decision_threshold`` sweep value of the paper state (306 of 1,066 children differ).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.core.digests import folder_digests
from faircode.evaluate.tables import COUNTERFACTUAL_COLUMNS
from faircode.record.tracking import collect_children, sync_results

AUDITS = ("benefits_denial", "compas", "german_credit_lending", "healthcare_readmission",
          "insurance_denial")


def build(template: Path, out: Path, *, attributes: int, axes: int, seed: int) -> None:
    """Write five audits replicating ``template``'s real rows (see the module docstring)."""
    rng = np.random.default_rng(seed)
    source = next(p for p in sorted(template.iterdir())
                  if (p / "intersectional.csv").is_file()
                  and len(pd.read_csv(p / "intersectional.csv")))
    fair = pd.read_csv(source / "fairness.csv", dtype=str, keep_default_na=False)
    first = fair[fair["protected_attribute"] == fair["protected_attribute"].iat[0]]
    inter = pd.read_csv(source / "intersectional.csv", dtype=str, keep_default_na=False)
    inter = inter.drop_duplicates(["strategy", "model"])
    perf = pd.read_csv(source / "performance.csv", dtype=str, keep_default_na=False)
    cells = perf[["strategy", "model"]].drop_duplicates()
    names = [f"attr{i}" for i in range(attributes)]
    for audit in AUDITS:
        folder = out / audit
        folder.mkdir(parents=True)
        fairness = pd.concat([first.assign(protected_attribute=a) for a in names])
        pairs = pd.concat([inter.iloc[:0], *(inter.assign(attribute_a=a, attribute_b=b)
                                             for a, b in itertools.combinations(names, 2))])
        numbers = COUNTERFACTUAL_COLUMNS[6:-1]
        cf = pd.DataFrame([
            {"strategy": s, "model": m, "axis": f"axis{k}", "kind": kind, "columns": "c",
             **dict(zip(numbers, rng.uniform(size=len(numbers)), strict=True)),
             "note": ""}
            for s, m in cells.itertuples(index=False) for k in range(axes)
            for kind in ("explicit", "proxy")], columns=list(COUNTERFACTUAL_COLUMNS[1:]))
        for name, frame in (("fairness", fairness), ("performance", perf),
                            ("intersectional", pairs), ("counterfactual", cf)):
            frame.assign(audit=audit).to_csv(folder / f"{name}.csv", index=False)
        run = (source / "run.json").read_text().replace(f'"{source.name}"', f'"{audit}"')
        (folder / "run.json").write_text(run)


def perturb(results: Path, out: Path, audits: list[str]) -> None:
    """Copy ``results`` to ``out`` with one number of every row of ``audits``' tables changed
    (each row's first decimal cell, by 1e-9) and their ``run.json`` recording the new files."""
    shutil.copytree(results, out)
    for audit in audits:
        folder = out / audit
        if not (folder / "run.json").is_file():
            raise SystemExit(f"--change {audit}: {folder} holds no run.json")
        for path in sorted(folder.glob("*.csv")):
            with path.open(newline="") as handle:
                rows = list(csv.reader(handle))
            for row in rows[1:]:
                at = next((i for i, cell in enumerate(row) if _decimal(cell)), None)
                if at is not None:
                    row[at] = repr(float(row[at]) + 1e-9)
            with path.open("w", newline="") as handle:
                csv.writer(handle, lineterminator="\n").writerows(rows)
        run = json.loads((folder / "run.json").read_text())
        if "files" in run:
            run["files"] = folder_digests(folder)
        (folder / "run.json").write_text(json.dumps(run, indent=2) + "\n")


def _decimal(cell: str) -> bool:
    try:
        return "." in cell and np.isfinite(float(cell))
    except ValueError:
        return False


def changed(results: Path, out: Path, audits: list[str], options: dict[str, Any],
            first: float) -> None:
    """Sync a copy of ``results`` with ``audits`` changed (:func:`perturb`); print its time
    against the first sync's ``first`` seconds."""
    perturb(results, out, audits)
    done = sync_results(out, **options)
    print(f"changed state ({', '.join(audits)}): {done.seconds:.1f}s = "
          f"{done.seconds / first:.2f}x the first sync, {done.children_logged} of "
          f"{done.children_total} children logged, {done.children_shared} shared with the "
          "first state's parent")


def naive(uri: str, results: Path, sample: int, experiment: str) -> float:
    """Seconds per child when every metric, param and tag is its own call."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment_id = client.create_experiment(experiment)
    children = collect_children(results)[0][:sample]
    started = time.perf_counter()
    for child in children:
        run_id = client.create_run(experiment_id, run_name=child.name).info.run_id
        for key, value in child.tags.items():
            client.set_tag(run_id, key, value)
        for key, text in child.params.items():
            client.log_param(run_id, key, text)
        for key, number in child.metrics.items():
            client.log_metric(run_id, key, number)
        client.set_terminated(run_id)
    return (time.perf_counter() - started) / len(children)


def main(argv: list[str]) -> int:
    """Build the tables, time the batched sync, the unchanged re-sync and the naive sample."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", default="/tmp/tracking-results")
    parser.add_argument("--attributes", type=int, default=4)
    parser.add_argument("--axes", type=int, default=5)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--tracking-uri", default=None, help="a running server (default: a "
                        "fresh SQLite store)")
    parser.add_argument("--no-wal", action="store_true", help="SQLite's rollback journal")
    parser.add_argument("--no-child-inputs", action="store_true",
                        help="no dataset input per child (one store call less per child)")
    parser.add_argument("--fsync-each", action="store_true",
                        help="SQLite: an fsync per commit (the default before issue 34)")
    parser.add_argument("--results", type=Path, default=None,
                        help="sync this results folder (e.g. the committed results/) instead "
                             "of the synthetic five audits")
    parser.add_argument("--change", nargs="+", default=[], metavar="AUDIT",
                        help="then sync a copy with one number of every row of these audits' "
                             "tables changed (a sweep value changing only them)")
    parser.add_argument("--naive-sample", type=int, default=30)
    parser.add_argument("--seed", type=int, default=20261129)
    args = parser.parse_args(argv)
    for key in ("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "MLFLOW_DISABLE_TELEMETRY"):
        os.environ.setdefault(key, "true")  # as faircode track sets them
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    work = Path(tempfile.mkdtemp(prefix="bench-tracking-"))
    try:
        results = args.results or work / "results"
        if args.results is None:
            build(Path(args.template), results, attributes=args.attributes, axes=args.axes,
                  seed=args.seed)
        uri = args.tracking_uri or f"sqlite:///{work / 'mlflow.db'}"
        name = f"bench-{time.time_ns()}"
        started = time.perf_counter()
        from mlflow.tracking import MlflowClient  # import + schema creation, timed apart

        MlflowClient(tracking_uri=uri).search_experiments()
        setup = time.perf_counter() - started
        artifacts = None if args.tracking_uri else (work / "a").as_uri()
        options = {"tracking_uri": uri, "experiment": name, "workers": args.workers,
                   "sqlite_wal": not args.no_wal, "child_inputs": not args.no_child_inputs,
                   "fsync_each": args.fsync_each}
        first = sync_results(results, artifact_location=artifacts, **options)
        again = sync_results(results, **options)
        per_batch = first.seconds / first.children_logged
        print(f"children {first.children_logged}" + (f" of {args.results}" if args.results else
              f" (5 audits x 15 cells x ({args.attributes} attributes + "
              f"{args.attributes * (args.attributes - 1) // 2} pairs + {args.axes} axes x 2 "
              "channels))"))
        print(f"mlflow import + new store: {setup:.1f}s (once)")
        print(f"store {'server' if args.tracking_uri else 'sqlite'}"
              f"{' rollback journal' if args.no_wal else ''}"
              f"{', an fsync per commit' if args.fsync_each else ''}"
              f"{', no child dataset inputs' if args.no_child_inputs else ''}")
        print(f"first sync (batched, workers {args.workers or 'default'}): {first.seconds:.1f}s "
              f"= {1000 * per_batch:.0f} ms/child")
        print(f"second sync (unchanged): {again.seconds:.1f}s, status {again.status}")
        if args.change:
            changed(results, work / "changed", args.change, options, first.seconds)
        if args.naive_sample:
            per_naive = naive(uri, results, args.naive_sample, f"{name}-naive")
            print(f"naive (one call per value, {args.naive_sample} children): "
                  f"{1000 * per_naive:.0f} ms/child = {per_naive / per_batch:.1f}x the batched")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
