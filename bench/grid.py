"""Wall time of the full S0-S4 x model grid per audit, and where it goes.

Run from the repository root after `faircode data fetch`:

    .venv/bin/python bench/grid.py [AUDIT ...] [--n-resamples B] [--n-permutations P] [--jobs N]

For each audit it prints the grid's wall time and, summed over the 15 cells, the share of cell
time spent fitting models, predicting, computing statistics (all CIs, p-values, intersectional
gaps) and counterfactual flip rates.  Target: statistics under 5 % at B = P = 2000.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from faircode.benchmark import run_audit
from faircode.cli import resolve_manifests
from faircode.config import BenchmarkConfig
from faircode.data import load_audit
from faircode.errors import DataUnavailableError
from faircode.manifest import load_manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audits", nargs="*")
    parser.add_argument("--n-resamples", type=int, default=2000)
    parser.add_argument("--n-permutations", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    config = BenchmarkConfig(n_resamples=args.n_resamples, n_permutations=args.n_permutations)
    if args.jobs:
        config = config.replace(jobs=args.jobs)
    paths = resolve_manifests(Path("audits"), args.audits)
    print(f"B = {config.n_resamples}, P = {config.n_permutations}, jobs = {config.jobs}")
    header = f"{'audit':<24}{'rows':>8}{'wall s':>9}{'fit':>8}{'predict':>9}{'stats':>8}{'cf':>7}"
    print(header)
    for path in paths:
        manifest = load_manifest(path)
        try:
            data = load_audit(manifest)
        except DataUnavailableError as exc:
            print(f"{manifest.name:<24}skipped: {exc}")
            continue
        start = time.perf_counter()
        results = run_audit(data, config=config)
        wall = time.perf_counter() - start
        total = {k: sum(c.seconds.get(k, 0.0) for c in results.cells)
                 for k in ("fit", "predict", "statistics", "counterfactual")}
        cell_time = sum(total.values()) or 1.0
        share = {k: 100 * v / cell_time for k, v in total.items()}
        print(f"{manifest.name:<24}{len(data.y):>8}{wall:>9.1f}{share['fit']:>7.1f}%"
              f"{share['predict']:>8.1f}%{share['statistics']:>7.2f}%"
              f"{share['counterfactual']:>6.2f}%", flush=True)


if __name__ == "__main__":
    main()
