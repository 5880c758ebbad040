"""Wall time of the whole grid as one queue, against its lower bound, and where it goes.

Run from the repository root after `faircode data fetch`:

    .venv/bin/python bench/grid.py [AUDIT ...] [--n-resamples B] [--n-permutations P]
        [--jobs N] [--order longest|grid] [--dask]

Default audits: the five original ones (benefits_denial, compas, german_credit_lending,
healthcare_readmission, insurance_denial).  As `faircode run` does, every audit is loaded and
prepared, every cell of every audit is fitted in ONE queue (faircode.grid.scheduler, longest
expected
first on one pool), then each audit is evaluated.  Printed:

* per audit: rows, the sum of its cells' seconds, its longest cell, and the share of cell time
  spent fitting, predicting, computing statistics and counterfactual flip rates;
* the fit queue's wall time against the lower bound max(longest cell, total cell seconds /
  workers) and their ratio (target <= 1.15), the evaluate wall time, the total;
* peak memory: this process's and the largest child's maxrss;
* the ordering effect, replayed from the measured cell seconds (greedy list scheduling on the
  same workers): this queue longest first, one queue in grid order, and audits one after another
  each in its own pool (the previous executor), as makespans and ratios to the bound.

`--order grid` dispatches in grid order, audit after audit (the ordering effect); `--dask` then
runs the same queue again through a LocalCluster of N single-threaded worker processes on
127.0.0.1 and prints the Dask / local wall ratio (the Dask overhead).  Timings are of one run on
a shared machine: compare ratios within one invocation, not absolute seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import time
from pathlib import Path

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import PreparedAudit, prepare
from faircode.core.cells import grid_cells
from faircode.core.config import BenchmarkConfig, ExecutionConfig
from faircode.core.errors import DataUnavailableError
from faircode.grid import scheduler
from faircode.grid.fit import fit_audits
from faircode.grid.predictions import AuditPredictions
from faircode.grid.scheduler import Finished
from faircode.pipeline.cli import resolve_manifests
from faircode.pipeline.run import evaluate

ORIGINAL = ("benefits_denial", "compas", "german_credit_lending", "healthcare_readmission",
            "insurance_denial")


def fit_queue(datas: list[PreparedAudit], *, config: BenchmarkConfig,
              execution: ExecutionConfig,
              ) -> tuple[float, list[Finished], int, list[AuditPredictions]]:
    """Fit every cell in one queue; return the wall seconds, the finished tasks, the workers."""
    finished: list[Finished] = []
    workers = [0]

    def started(tasks: object, n: int) -> None:
        workers[0] = n

    start = time.perf_counter()
    predictions = fit_audits(datas, config=config, execution=execution, on_start=started,
                             on_cell_done=finished.append)
    return time.perf_counter() - start, finished, workers[0], predictions


def makespan(seconds: list[float], workers: int) -> float:
    """Wall time of greedy list scheduling: each task, in order, to the first free worker."""
    free = [0.0] * max(workers, 1)
    for s in seconds:
        free.sort()
        free[0] += s
    return max(free)


def replay(finished: list[Finished], workers: int) -> dict[str, float]:
    """Makespans of three dispatch policies over the measured cell seconds."""
    by_cost = sorted(finished, key=lambda f: -f.task.cost)  # what the cost model dispatched
    audits = list(dict.fromkeys(f.task.audit for f in sorted(
        finished, key=lambda f: f.task.audit)))
    cells = grid_cells()
    grid = sorted(finished, key=lambda f: (audits.index(f.task.audit),
                                           cells.index(f.task.key[:2])))  # type: ignore[arg-type]
    per_audit = sum(makespan([f.seconds for f in grid if f.task.audit == a], workers)
                    for a in audits)  # the previous executor: grid order, one pool per audit
    return {"one queue, longest expected first": makespan([f.seconds for f in by_cost], workers),
            "one queue, grid order": makespan([f.seconds for f in grid], workers),
            "audit after audit, pool per audit": per_audit}


def bound(finished: list[Finished], workers: int) -> float:
    """max(longest cell, total cell seconds / workers)."""
    seconds = [f.seconds for f in finished]
    return max(max(seconds, default=0.0), sum(seconds) / max(workers, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audits", nargs="*", default=list(ORIGINAL))
    parser.add_argument("--n-resamples", type=int, default=2000)
    parser.add_argument("--n-permutations", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--order", choices=("longest", "grid"), default="longest",
                        help="dispatch longest expected first (default) or in grid order")
    parser.add_argument("--dask", action="store_true",
                        help="also run the queue on a LocalCluster and print the overhead")
    args = parser.parse_args()
    config = BenchmarkConfig().with_params({
        "stats.n_resamples": args.n_resamples, "stats.n_permutations": args.n_permutations
    })
    if args.jobs:
        config = dataclasses.replace(config, jobs=args.jobs)
    if args.order == "grid":
        scheduler.dispatch_order = list  # type: ignore[assignment]
    print(f"B = {config.stats.n_resamples}, P = {config.stats.n_permutations}, "
          f"jobs = {config.jobs}, "
          f"order = {args.order}")
    t0 = time.perf_counter()
    datas: list[PreparedAudit] = []
    for path in resolve_manifests(Path("audits"), args.audits):
        manifest = load_manifest(path)
        try:
            datas.append(prepare(load_audit(manifest)))
        except DataUnavailableError as exc:
            print(f"{manifest.name:<24}skipped: {exc}")
    load = time.perf_counter() - t0
    wall, finished, workers, predictions = fit_queue(datas, config=config,
                                                     execution=ExecutionConfig())
    t1 = time.perf_counter()
    results = [evaluate(d, p, config=config) for d, p in zip(datas, predictions,
                                                                   strict=True)]
    evaluate = time.perf_counter() - t1

    print(f"{'audit':<24}{'rows':>8}{'cell s':>9}{'longest':>9}{'fit':>8}{'predict':>9}"
          f"{'stats':>8}{'cf':>7}")
    for data, result in zip(datas, results, strict=True):
        cells = result.cells
        total = {k: sum(c.seconds.as_dict().get(k, 0.0) for c in cells)
                 for k in ("fit", "predict", "statistics", "counterfactual")}
        cell_time = sum(total.values()) or 1.0
        share = {k: 100 * v / cell_time for k, v in total.items()}
        mine = [f.seconds for f in finished if f.task.audit == data.manifest.name]
        print(f"{data.manifest.name:<24}{len(data.y):>8}{sum(mine):>9.1f}{max(mine):>9.1f}"
              f"{share['fit']:>7.1f}%{share['predict']:>8.1f}%{share['statistics']:>7.2f}%"
              f"{share['counterfactual']:>6.2f}%")
    low = bound(finished, workers)
    longest = max(finished, key=lambda f: f.seconds)
    print(f"fit queue: {len(finished)} cells of {len(datas)} audits on {workers} workers: wall "
          f"{wall:.1f} s; lower bound {low:.1f} s (longest cell {longest.seconds:.1f} s "
          f"{longest.task.audit} {'/'.join(map(str, longest.task.key))}, total "
          f"{sum(f.seconds for f in finished):.1f} s / {workers}); ratio {wall / low:.3f} "
          f"(target <= 1.15)")
    print(f"load + prepare {load:.1f} s, evaluate {evaluate:.1f} s, total "
          f"{load + wall + evaluate:.1f} s")
    parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak memory: parent {parent:.0f} MiB, largest child {child:.0f} MiB")
    for policy, span in replay(finished, workers).items():
        print(f"replayed {policy:<36} {span:8.1f} s  ({span / low:.3f} x bound)")
    print("cells (audit, key, expected s, measured s): " + "; ".join(
        f"{f.task.audit} {'/'.join(map(str, f.task.key))} {f.task.cost:.1f} {f.seconds:.1f}"
        for f in finished))

    if args.dask:
        from distributed import LocalCluster

        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          host="127.0.0.1", dashboard_address=None) as cluster:
            execution = ExecutionConfig(backend="dask", scheduler=cluster.scheduler_address)
            dask_wall, dask_finished, _, _ = fit_queue(datas, config=config,
                                                       execution=execution)
        print(f"dask: wall {dask_wall:.1f} s vs local {wall:.1f} s: ratio "
              f"{dask_wall / wall:.3f}; its lower bound {bound(dask_finished, workers):.1f} s")


if __name__ == "__main__":
    main()
