"""``faircode audit``: audit a practitioner's own model from a predictions file.

The file (CSV, compressed CSV or parquet) holds a key column joining it to the audit's rows and
the model's decision and/or score columns, read in chunks
(:class:`faircode.audit.predictions_file.PredictionsReader`: joined on the key, never on row
order; a missing, duplicated or unknown key, a non-binary decision or a score outside its scale
is one line naming the file, the column and an example value, exit 2, nothing written).  The
model is scored exactly like an audit's deployed system on every row, from its counts
(:func:`faircode.evaluate.streamed.audit_predictions`: the tables of
:func:`faircode.evaluate.deployed.score_given`) and written as ``<out>/<audit>/`` -- the same
tables, a ``run.json`` naming the file and its sha256 -- so ``faircode track --results <out>``
logs it to MLflow like any run.  ``AUDIT`` may instead be a decision log's declaration
(:mod:`faircode.audit.logs`): the log is streamed (or sharded on ``--scheduler``) and audited
as its system on every row (:func:`faircode.evaluate.streamed.audit_log`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_audit"]


def _cmd_audit(args: argparse.Namespace) -> int:
    from faircode.audit.data import load_audit
    from faircode.audit.logs import is_log_declaration
    from faircode.audit.manifest import load_manifest
    from faircode.audit.predictions_file import JOIN_ROWS, PredictionsReader
    from faircode.core.config import Params, load_params
    from faircode.core.errors import ConfigError
    from faircode.core.provenance import provenance
    from faircode.evaluate.streamed import audit_predictions
    from faircode.evaluate.write import write_audit

    params = load_params(Path(args.params)) if args.params else Params()
    overrides = {k: getattr(args, k) for k in ("n_resamples", "n_permutations")}
    config = params.config.replace(**{k: v for k, v in overrides.items() if v is not None})
    given = Path(args.audit)
    if given.suffix in (".yaml", ".yml") and is_log_declaration(given):
        return _audit_log(args, given, config)
    missing = [flag for flag, value in (("--predictions", args.predictions),
                                        ("--key", args.key)) if value is None]
    if missing:
        raise ConfigError(f"faircode audit {args.audit}: {' and '.join(missing)}: expected a "
                          "value with an audit's manifest (a log declaration needs neither), "
                          "got nothing")
    manifest = load_manifest(given if given.suffix in (".yaml", ".yml")
                             else Path(args.audits) / args.audit / "audit.yaml")
    data = load_audit(manifest, key=args.key)
    assert data.keys is not None  # load_audit with a key returns them
    found = PredictionsReader(Path(args.predictions), key=args.key, rows=data.keys,
                              decision=args.decision, score=args.score, scale=args.scale,
                              allow_partial=args.allow_partial,
                              chunk_rows=args.chunk_rows or JOIN_ROWS)
    results = audit_predictions(data, found, name=args.name, threshold=config.decision_threshold,
                                stats=config.stats, degenerate=config.degenerate)
    rows = len(data.y) - found.n_missing
    record: dict[str, Any] = {"predictions": {
        "path": str(found.path), "sha256": found.sha256, "key": found.key,
        "decision": found.decision, "score": found.score, "scale": found.scale,
        "rows": rows, "outside_audit": found.n_outside, "missing": found.n_missing}}
    folder = write_audit(data, results, config=config, out_dir=Path(args.out),
                         provenance_record=provenance(), extra=record)
    print(f"{manifest.name}: {args.name} on {rows:,} rows; wrote {folder}")
    return 0


def _audit_log(args: argparse.Namespace, declaration: Path, config: Any) -> int:
    """``faircode audit LOG.yaml``: a decision log with its own groups, streamed."""
    from faircode.audit.logs import load_log
    from faircode.core.provenance import provenance
    from faircode.evaluate.streamed import audit_log
    from faircode.evaluate.write import write_audit

    manifest = load_log(declaration)
    client = None
    if args.scheduler:
        from faircode.grid.dask_reduce import connect

        client = connect(args.scheduler)
    try:
        record, results = audit_log(manifest, stats=config.stats, degenerate=config.degenerate,
                                    chunk_rows=args.chunk_rows or 1_000_000,
                                    in_memory=args.in_memory, client=client)
    finally:
        if client is not None:
            client.close()
    extra = {"log": {"declaration": str(declaration), "path": str(manifest.dataset.path),
                     "sha256": record.sha256, "rows": record.n_rows,
                     "decided_1": record.flagged}}
    folder = write_audit(record, results, config=config, out_dir=Path(args.out),
                         provenance_record=provenance(), extra=extra)
    print(f"{manifest.name}: {record.system.name} on {record.n_rows:,} rows; wrote {folder}")
    return 0


def add_audit(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``faircode audit``."""
    parser = subparsers.add_parser(
        "audit", parents=[common], help="audit your own model's decisions from a predictions file",
        epilog="example:\n  faircode audit compas_two_years --predictions my_model.csv --key id "
               "--decision flagged --score risk --scale probability --name my_model",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("audit", metavar="AUDIT",
                        help="the audit whose rows the file joins, or a decision log's "
                             "declaration (LOG.yaml: the log carries its own groups)")
    parser.add_argument("--predictions", help="CSV (.csv, .csv.gz/.bz2/.xz/.zst) or parquet file")
    parser.add_argument("--key",
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
    parser.add_argument("--chunk-rows", type=int,
                        help="rows read at a time (memory does not grow with the file; default "
                             "10^6 for a log, 2^18 for a predictions file)")
    parser.add_argument("--in-memory", action="store_true",
                        help="a log: read every row first, count them at once (a check of the "
                             "streamed counts; same tables)")
    parser.add_argument("--scheduler", help="a log in Parquet: count its shards on this Dask "
                                            "scheduler (tcp://host:8786)")
    parser.set_defaults(handler=_cmd_audit)
