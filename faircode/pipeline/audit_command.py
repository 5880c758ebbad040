"""``faircode audit``: audit a practitioner's own model from a predictions file.

The file (CSV or parquet) holds a key column joining it to the audit's rows and the model's
decision and/or score columns (:func:`faircode.audit.predictions_file.read_predictions`: joined
on the key, never on row order; a missing, duplicated or unknown key, a non-binary decision or
a score outside its scale is one line naming the file, the column and an example value, exit 2,
nothing written).  The model is scored exactly like an audit's deployed system on every row
(:func:`faircode.evaluate.deployed.score_given`) and written as ``<out>/<audit>/`` -- the same
tables, a ``run.json`` naming the file and its sha256 -- so ``faircode track --results <out>``
logs it to MLflow like any run.  ``--name`` is a safe name (:mod:`faircode.core.names`), and
``<out>/<audit>/`` is checked before anything is read: a folder of the grid's results (or any
folder faircode did not write as a ``faircode audit``) is refused, never replaced
(:func:`faircode.evaluate.write.check_replaceable`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_audit"]


def _cmd_audit(args: argparse.Namespace) -> int:
    from faircode.core.names import check_name

    check_name(args.name, where="faircode audit: --name")  # a row label, a run name
    from faircode.audit.data import load_audit
    from faircode.audit.manifest import load_manifest
    from faircode.audit.predictions_file import read_predictions
    from faircode.audit.prepared import prepare
    from faircode.core.config import Params, load_params
    from faircode.core.provenance import provenance
    from faircode.evaluate.deployed import score_given
    from faircode.evaluate.write import check_replaceable, write_audit

    params = load_params(Path(args.params)) if args.params else Params()
    overrides = {k: getattr(args, k) for k in ("n_resamples", "n_permutations")}
    config = params.config.replace(**{k: v for k, v in overrides.items() if v is not None})
    given = Path(args.audit)
    manifest = load_manifest(given if given.suffix in (".yaml", ".yml")
                             else Path(args.audits) / args.audit / "audit.yaml")
    check_replaceable(Path(args.out) / manifest.name, audit=manifest.name, kind="predictions")
    data = load_audit(manifest, key=args.key)
    assert data.keys is not None  # load_audit with a key returns them
    found = read_predictions(Path(args.predictions), key=args.key, rows=data.keys,
                             decision=args.decision, score=args.score, scale=args.scale,
                             allow_partial=args.allow_partial)
    results = score_given(prepare(data), name=args.name, decision=found.decision,
                          score=found.score, scale=found.scale, positions=found.positions,
                          threshold=config.decision_threshold, stats=config.stats,
                          degenerate=config.degenerate)
    record: dict[str, Any] = {"predictions": {
        "path": str(found.path), "sha256": found.sha256, "key": found.key,
        "decision": found.decision_column, "score": found.score_column, "scale": found.scale,
        "rows": int(found.positions.size), "outside_audit": found.n_outside,
        "missing": found.n_missing}}
    folder = write_audit(data, results, config=config, out_dir=Path(args.out),
                         provenance_record=provenance(), extra=record)
    print(f"{manifest.name}: {args.name} on {found.positions.size:,} rows; wrote {folder}")
    return 0


def add_audit(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``faircode audit``."""
    parser = subparsers.add_parser(
        "audit", parents=[common], help="audit your own model's decisions from a predictions file",
        epilog="example:\n  faircode audit compas_two_years --predictions my_model.csv --key id "
               "--decision flagged --score risk --scale probability --name my_model",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("audit", metavar="AUDIT", help="the audit whose rows the file joins")
    parser.add_argument("--predictions", required=True, help="CSV or parquet file")
    parser.add_argument("--key", required=True,
                        help="column of the file and of the audit's raw data that joins them")
    parser.add_argument("--decision", help="column of 0/1 decisions (1 = label 1 predicted)")
    parser.add_argument("--score", help="column of scores (higher = label 1 more likely)")
    parser.add_argument("--scale", choices=("probability", "ordinal"),
                        help="the score's scale (required with --score)")
    parser.add_argument("--name", default="model", help="the model's name in every table")
    parser.add_argument("--allow-partial", action="store_true",
                        help="audit only the rows the file covers (default: every audit row "
                             "must be there)")
    parser.add_argument("--out", default="results-external",
                        help="results folder (default: results-external)")
    parser.add_argument("--params", help="params.yaml to take stats.* and models.* from")
    parser.add_argument("--n-resamples", type=int, help="bootstrap resamples per CI (2000)")
    parser.add_argument("--n-permutations", type=int, help="permutations per p-value (2000)")
    parser.set_defaults(handler=_cmd_audit)
