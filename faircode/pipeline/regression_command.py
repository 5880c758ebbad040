"""The command line's regression audits: ``faircode validate``'s summary, ``faircode run`` and
``faircode audit --prediction`` of a ``task: regression`` manifest.

The binary commands' shapes, with a number per row: ``validate`` prints the rows after each
step, the outcome's units, transform and declared margin, and each group's size and mean (on a
log outcome also in the original units: the published figures); ``run`` fits the S0-S3
regression grid, evaluates and writes each audit
(:func:`faircode.evaluate.regression_kind.run_regression`); ``audit --prediction`` scores a
model's predicted number per row, read from a file and joined on a key
(:func:`faircode.evaluate.regression_given.audit_prediction_file`), beside the observed outcome,
with the same tables.  Each prints the observed mean gap of every attribute with its verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faircode.audit.regression_data import RegressionData
    from faircode.core.config import BenchmarkConfig

__all__ = ["audit_regression", "gap_lines", "regression_summary_lines", "run_regression_audits"]


def regression_summary_lines(data: RegressionData) -> list[str]:
    """``faircode validate``'s summary of a regression audit (no row-level values)."""
    import numpy as np

    m = data.manifest
    target = m.target
    lines = [f"{m.name}: {m.title}  (sha256 {data.sha256[:12]}...)"]
    lines += [f"  {step:<66} {n:>9,} rows" for step, n in data.steps]
    lines.append(f"  outcome {target.column} ({target.units}), analysed as "
                 f"{target.scale_units}: mean {data.y.mean():.4g}, sd {data.y.std(ddof=1):.4g}; "
                 f"margin {target.margin.describe()} = {data.margin:.4g}")
    for attribute in m.protected_attributes:
        dis = data.disadvantaged[attribute.name]
        for group, mask in (("disadvantaged", dis), ("advantaged", ~dis)):
            raw = f" ({data.raw_y[mask].mean():.4g} {target.units})" if target.log_scale else ""
            lines.append(f"  {attribute.name:<16} {group:<14} {int(mask.sum()):>9,} rows  mean "
                         f"{data.y[mask].mean():.4g}{raw}")
    lines.append(f"  train {len(data.train_index):,} / test {len(data.test_index):,} rows")
    for stratum in m.strata:
        lines.append(f"  stratum {stratum.name} ({', '.join(stratum.columns)}): "
                     f"{int(data.strata[stratum.name].max()) + 1} levels")
    if data.unit is not None:
        sizes = np.bincount(data.unit)
        lines.append(f"  units ({m.unit}): {sizes.size:,}, at most {int(sizes.max())} rows each")
    return lines


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def gap_lines(folder: Path) -> list[str]:
    """The observed outcome's mean gap per attribute in a written regression folder."""
    import pandas as pd

    from faircode.core.layout import table_path
    from faircode.core.metrics import Metric

    gaps = pd.read_csv(table_path(folder, "regression_gaps"))
    rows = gaps[(gaps["strategy"] == "observed")
                & (gaps["metric"] == Metric.MEAN_DIFFERENCE.value)]
    given = gaps[(gaps["strategy"] == "deployed")
                 & (gaps["metric"] == Metric.MEAN_DIFFERENCE.value)]
    out = []
    for label, part in (("observed", rows), ("model", given)):
        for row in part.to_dict("records"):
            value, low, high, q = (float(str(row[c])) for c in ("value", "ci_low", "ci_high",
                                                                 "q_value"))
            shown = "n/a" if math.isnan(value) else (
                f"{_fmt(value)} [{_fmt(low)}, {_fmt(high)}] {row['value_units']}")
            out.append(f"  {label} {row['model']} {row['protected_attribute']}: mean gap "
                       f"{shown}, q {q:.3g}, {row['verdict']}")
    return out


def run_regression_audits(paths: Iterable[Path], *, config: BenchmarkConfig, out: Path,
                          provenance_record: Mapping[str, Any],
                          on_error: Callable[[str, BaseException], None]) -> list[Path]:
    """Fit, evaluate and write every regression manifest of ``paths`` into ``out``; one
    audit's failure is ``on_error`` and loses none of the others."""
    from faircode.evaluate.regression_kind import run_regression

    written = []
    for path in paths:
        try:
            folder = run_regression(path, config=config, out_dir=out,
                                    provenance_record=provenance_record)
        except Exception as exc:  # one audit's failure must not lose the others
            on_error(path.parent.name, exc)
            continue
        written.append(folder)
        print(f"{folder.name}: wrote {folder}")
        print("\n".join(gap_lines(folder)))
    return written


def audit_regression(args: Any, manifest_path: Path, config: BenchmarkConfig) -> int:
    """``faircode audit AUDIT --prediction COLUMN``: a model's predicted numbers of a regression
    audit's rows, from ``--predictions`` joined on ``--key`` (module docstring)."""
    from faircode.audit.regression_manifest import load_regression_manifest
    from faircode.core.errors import ConfigError
    from faircode.evaluate.regression_given import audit_prediction_file
    from faircode.pipeline._args import EXIT_OK, mirrors, obtain
    from faircode.provenance.state import provenance

    if args.predictions is None or args.prediction is None:
        got = "neither" if args.predictions is None and args.prediction is None else "one"
        raise ConfigError(f"faircode audit {args.audit}: --predictions and --prediction: "
                          "expected a file and its column of predicted numbers (a regression "
                          f"audit), got {got}")
    manifest = load_regression_manifest(manifest_path)
    obtain(manifest, mirrors())
    folder, rows = audit_prediction_file(
        manifest, Path(args.predictions), key=args.key, column=args.prediction,
        name=args.name, held_out=args.rows == "held-out", allow_partial=args.allow_partial,
        config=config, out=Path(args.out), provenance_record=provenance())
    where = "held-out" if args.rows == "held-out" else "audit"
    print(f"{folder.name}: {args.name} on {rows:,} {where} rows; wrote {folder}")
    print("\n".join(gap_lines(folder)))
    print(f"  report: faircode report {folder.name} --results {args.out}")
    return EXIT_OK
