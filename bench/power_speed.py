"""Minimum detectable gaps before and after the batched rewrite: time per comparison, cell, audit.

Run from the repository root (the committed ``results/`` give the real counts; ``--fit`` needs
the raw file in a mirror, e.g. ``FAIRCODE_DATA_MIRROR=/work/shared/datasets``):

    PYTHONPATH=$PWD .venv/bin/python bench/power_speed.py [--fit german_credit_lending]
        [--profile]

Every count vector is a committed row's (recovered as in ``bench/power_committed.py``).  *Before*
is the frozen implementation (``tests/power_reference.py``) called once per row, as
``evaluate`` calls ``detectable_gap``; *after, per row* is the new ``detectable_gap`` called the
same way (what ``evaluate`` gets without any change); *after, batched* is one
:func:`faircode.stats.power.detectable_gaps` call for all the rows.  Everything runs once, in this
process (warmed up by one call each); the ratios compare timings taken side by side.

* per comparison: each metric's committed rows (at most 12 per metric for *before*).
* per cell: the ``baseline``/``logistic_regression`` cell of every audit, all its rows (eight
  metrics x attributes + intersectional pairs), and its equalized-odds rows alone.
* per audit: every committed row of the audit in one batched call (after only).
* ``--fit AUDIT``: the S0 logistic-regression cell fitted here, then ``score_cell``
  timed with ``detectable_gap`` from the frozen module and from the new one (its
  ``seconds.statistics``), and with ``--profile`` the cProfile top lines of both.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from faircode.stats import power

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import power_reference as reference  # noqa: E402  (tests/power_reference.py, frozen)
from power_committed import audit_rows  # noqa: E402  (bench/power_committed.py)


def seconds(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def one_by_one(module: object, metrics: list[str], d: np.ndarray, a: np.ndarray,
               values: np.ndarray) -> Callable[[], object]:
    gap = module.detectable_gap  # type: ignore[attr-defined]
    return lambda: [gap(m, d[i], a[i], value=values[i], alpha=0.05, power=0.8)
                    for i, m in enumerate(metrics)]


def batched(metrics: list[str], d: np.ndarray, a: np.ndarray,
            values: np.ndarray) -> Callable[[], object]:
    return lambda: power.detectable_gaps(metrics, d, a, values=values, alpha=0.05, power=0.8)


def line(label: str, rows: int, before: float | None, per_row: float, batch: float) -> str:
    ms = 1e3
    text = f"{label:<34} rows {rows:>4}  "
    if before is not None:
        text += f"before {before * ms:8.1f} ms  "
    text += f"after per row {per_row * ms:7.1f} ms  batched {batch * ms:6.1f} ms"
    if before is not None:
        text += f"  speed-up {before / per_row:5.1f}x / {before / batch:6.1f}x"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--fit", default=None, help="an audit whose S0 LR cell to score")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    audits = {}
    for folder in sorted(p for p in args.results.iterdir() if (p / "fairness.csv").is_file()):
        table, metrics, d, a, _ = audit_rows(folder)
        audits[folder.name] = (table, np.array(metrics), d, a)
    warm = next(iter(audits.values()))
    for module in (reference, power):  # imports, scipy's first calls
        one_by_one(module, list(warm[1][:1]), warm[2], warm[3], warm[0]["value"].to_numpy())()

    print("per comparison (committed rows of all audits; before on at most 12 per metric)")
    for metric in power.POWER_METRICS:
        picked = [(t, d[m == metric], a[m == metric]) for t, m, d, a in audits.values()]
        d = np.concatenate([p[1] for p in picked])
        a = np.concatenate([p[2] for p in picked])
        values = np.concatenate([p[0]["value"].to_numpy()[m == metric]
                                 for p, (_, m, _, _) in zip(picked, audits.values(),
                                                            strict=True)])
        if not len(d):
            continue
        names = [metric] * len(d)
        few = slice(0, 12)
        before = seconds(one_by_one(reference, names[few], d[few], a[few], values[few]))
        per_row = seconds(one_by_one(power, names[few], d[few], a[few], values[few]))
        batch = seconds(batched(names, d, a, values))
        n_few = min(12, len(d))
        print(f"  {metric:<28} before {before / n_few * 1e3:6.2f} ms  after per row "
              f"{per_row / n_few * 1e3:6.2f} ms  batched {batch / len(d) * 1e3:6.3f} ms "
              f"per comparison ({len(d)} rows in one call)")

    print("per cell (baseline / logistic_regression: all rows; then its equalized-odds rows)")
    totals = np.zeros(3)
    for audit, (table, kinds, d, a) in audits.items():
        cell = ((table["strategy"] == "baseline")
                & (table["model"] == "logistic_regression")).to_numpy()
        eodds = cell & (kinds == "equalized_odds_diff")
        for label, rows in ((audit, cell), (f"  {audit} EO", eodds)):
            names, values = list(kinds[rows]), table["value"].to_numpy()[rows]
            timings = (seconds(one_by_one(reference, names, d[rows], a[rows], values)),
                       seconds(one_by_one(power, names, d[rows], a[rows], values)),
                       seconds(batched(names, d[rows], a[rows], values)))
            print(line(label, int(rows.sum()), *timings))
            if label == audit:
                totals += timings
    print(line("all audits' cells", 0, *totals))

    print("per audit (every committed row, one batched call)")
    for audit, (table, kinds, d, a) in audits.items():
        batch = seconds(batched(list(kinds), d, a, table["value"].to_numpy()))
        print(f"  {audit:<24} rows {len(d):>4}  batched {batch * 1e3:6.1f} ms")
    if args.fit:
        score_cell(args.fit, profile=args.profile)


def score_cell(audit: str, *, profile: bool) -> None:
    """Time the evaluate step's cell scorer on a freshly fitted S0 LR cell: minimum detectable
    gaps one call per row with the frozen reference (before) and batched (after)."""
    from faircode.audit.data import load_audit
    from faircode.audit.decision import resolve_rule
    from faircode.audit.manifest import load_manifest
    from faircode.audit.prepared import prepare
    from faircode.core.cells import ModelFamily, Strategy
    from faircode.core.config import BenchmarkConfig
    from faircode.evaluate import score
    from faircode.grid.fit import fit_cell

    manifest = load_manifest(ROOT / "audits" / audit / "audit.yaml")
    mirrors = [Path(p) for p in os.environ.get("FAIRCODE_DATA_MIRROR", "").split(os.pathsep) if p]
    found = [m / audit / manifest.dataset.path.name for m in mirrors
             if (m / audit / manifest.dataset.path.name).is_file()]
    path = found[0] if found else manifest.dataset.path
    data = prepare(load_audit(manifest, path=path))
    config = BenchmarkConfig(jobs=1)
    cell = fit_cell(data, Strategy.BASELINE, ModelFamily.LOGISTIC_REGRESSION,
                    mitigation=config.mitigation, seed=manifest.random_state,
                    train=data.train_index, test=data.test_index, perturbed=data.perturbed,
                    keep_train_scores=True)
    rule = resolve_rule(manifest.decision, default_threshold=config.models.decision_threshold)

    def run() -> score.CellResult:
        return score.score_cell(data, cell, rule=rule, stats=config.stats,
                                degenerate=config.degenerate)

    def per_row(metrics, counts_d, counts_a, *, values, alpha, power):  # type: ignore[no-untyped-def]
        found = [reference.detectable_gap(m, d, a, value=v, alpha=alpha, power=power)
                 for m, d, a, v in zip(metrics, counts_d, counts_a, values, strict=True)]
        return (np.array([f.mde for f in found]), np.array([f.powered for f in found]),
                np.array([f.note for f in found]))

    run()  # warm-up
    print(f"score_cell, {audit} S0 logistic_regression "
          f"({len(manifest.protected_attributes)} attributes), seconds.statistics:")
    batched_gaps = score.detectable_gaps
    for label, solver in (("before", per_row), ("after", batched_gaps)):
        score.detectable_gaps = solver  # type: ignore[assignment]
        result = run()
        print(f"  {label:<7} {result.seconds.statistics * 1e3:7.1f} ms  "
              f"({len(result.fairness.values)} fairness + {len(result.intersectional.values)} "
              f"intersectional rows)")
        if profile:
            profiler = cProfile.Profile()
            profiler.enable()
            run()
            profiler.disable()
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(8)
            print("\n".join(out.getvalue().strip().splitlines()[:20]))
    score.detectable_gaps = batched_gaps


if __name__ == "__main__":
    main()
