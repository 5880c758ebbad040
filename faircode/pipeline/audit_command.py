"""``faircode audit``: audit a practitioner's own model from a predictions file.

The file (CSV, compressed CSV or parquet) holds a key column naming the audit's rows and the
model's decision and/or score columns, read in chunks
(:class:`faircode.audit.predictions_file.PredictionsReader`: joined on the key, never on row
order; a missing, duplicated or unknown key, a non-binary decision or a score outside its scale
is one line naming the file, the column and an example value, exit 2, nothing written).  The
model is scored exactly like an audit's deployed system, from its counts
(:func:`faircode.evaluate.streamed.audit_predictions`: the tables of
:func:`faircode.evaluate.deployed.score_given`, memory bounded whatever the file's size) and
written as ``<out>/<audit>/`` -- the same tables, a ``run.json`` naming the file and its sha256
-- so ``faircode report --results <out>`` renders it and ``faircode track --results <out>`` logs
it to MLflow like any run.  ``AUDIT`` may instead be a decision log's declaration
(:mod:`faircode.audit.logs`): the log is streamed (or sharded on ``--scheduler``) and audited
as its system on every row (:func:`faircode.evaluate.streamed.audit_log`).

Design decisions
----------------
* **What names a row.**  ``--key`` names the file's key column.  The raw side is the manifest's
  ``dataset.row_id`` when it declares one -- a key column of the raw file, or ``position``: the
  row's 0-based position among the sha256-pinned raw file's data rows, for a raw file without a
  key column (German credit) -- else the raw column of the same name as ``--key``.
* **Held-out rows by default** (``--rows held-out``): the rows of the audit's own split that the
  grid and the deployed system are scored on (the manifest's ``test_size`` and
  ``random_state``), so the numbers sit beside S0-S4's on the same people, and a model trained
  on the audit's training rows is not scored on them.  The file may cover every row: its rows
  the audit trains on are not audited and a warning says how many.  ``--rows all`` audits every
  row of the audit, with a warning when the file covers training rows (a model fitted on them
  reads better than it is).  Every audited row must be covered unless ``--allow-partial``.
* **The numbers it wrote, printed** (:func:`faircode.report.given.given_lines`): per attribute
  the parity gap with its interval, the audit's own q, whether it is significant and powered
  (the minimum detectable gap), and the error-rate gaps, so the command answers without opening
  a file; the report of its folder opens on the same lines.
* **Nothing of another kind is replaced.**  ``--name`` is a safe name
  (:mod:`faircode.core.names`), and ``<out>/<audit>/`` is checked before anything is read: a
  folder of the grid's results (or any folder faircode did not write as a ``faircode audit``) is
  refused, never replaced (:func:`faircode.evaluate.write.check_replaceable`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from faircode.core.config import MAX_CHUNK_ROWS, MAX_DRAWS
from faircode.core.errors import DataError, FaircodeError, describe
from faircode.pipeline._args import (
    EXIT_OK,
    HELP,
    STATS_FLAGS,
    example,
    mirrors,
    obtain,
    with_flags,
)

if TYPE_CHECKING:
    from faircode.audit.data import AuditData
    from faircode.audit.manifest import Manifest
    from faircode.audit.predictions_file import PredictionsReader

__all__ = ["ROW_SETS", "add_audit", "audited_rows", "row_identity"]

ROW_SETS = ("held-out", "all")
"""``--rows``: the audit's held-out test rows (default), or every row of the audit."""


def row_identity(manifest: Manifest, key: str | None) -> tuple[str | None, str]:
    """(the raw file's key column, None for the row position; the predictions file's column)."""
    declared = manifest.dataset.row_id
    if key is None and declared is not None and declared.column is not None:
        return declared.column, declared.column
    if key is None:
        raw = Path(manifest.dataset.declared_path).name
        how = (f"the column holding each row's position in {raw} (its dataset.row_id: "
               "position, 0 = the first data row)" if declared is not None else
               f"a column naming each row, in the file and in {raw}; a raw file without one "
               "can declare dataset.row_id: position (its rows' 0-based positions) in "
               f"{manifest.file}")
        raise FaircodeError(f"faircode audit: --key: expected {how}, got nothing")
    if declared is None:
        return key, key
    return declared.column, key


def audited_rows(data: AuditData, found: PredictionsReader, covered: np.ndarray, *, rows: str,
                 allow_partial: bool) -> tuple[int, int, int]:
    """(how many rows are audited, how many of the file's rows are training rows, how many
    audited rows the file misses) from ``covered`` (per audit row: the file has it); raises
    :class:`DataError` for a missing held-out row."""
    n_train = int(covered[data.train_index].sum())
    if rows == "all":
        return int(covered.sum()), n_train, found.n_missing
    held = covered[data.test_index]
    if not allow_partial and not held.all():
        assert data.keys is not None
        first = data.keys.kept[int(data.test_index[~held][0])]
        raise DataError(f"{found.path}: column {found.key!r} (key): expected a row for each of "
                        f"the audit's {data.test_index.size:,} held-out rows, got none for "
                        f"{int((~held).sum()):,} of them, first {describe(first)} "
                        "(--allow-partial audits the covered ones)")
    return int(held.sum()), n_train, int((~held).sum())


def _cmd_audit(args: argparse.Namespace) -> int:
    from faircode.core.names import check_name

    check_name(args.name, where="faircode audit: --name")  # a row label, a run name
    from faircode.audit.data import load_audit
    from faircode.audit.logs import is_log_declaration
    from faircode.audit.manifest import load_manifest
    from faircode.audit.predictions_file import JOIN_ROWS, PredictionsReader
    from faircode.core.config import Params, load_params
    from faircode.core.errors import ConfigError
    from faircode.evaluate.streamed import audit_predictions
    from faircode.evaluate.write import PREDICTIONS, check_replaceable, write_audit
    from faircode.provenance.state import provenance
    from faircode.report.given import given_lines

    params = load_params(Path(args.params)) if args.params else Params()
    config = with_flags(params.config, args, STATS_FLAGS, command="faircode audit")
    if args.chunk_rows is not None and not 1 <= args.chunk_rows <= MAX_CHUNK_ROWS:
        raise ConfigError(f"faircode audit: --chunk-rows: expected an integer in [1, "
                          f"{MAX_CHUNK_ROWS:,}] (the limit on work), got "
                          f"{describe(args.chunk_rows)}")
    given = Path(args.audit)
    if given.suffix in (".yaml", ".yml") and is_log_declaration(given):
        return _audit_log(args, given, config)
    path = given if given.suffix in (".yaml", ".yml") else Path(args.audits) / args.audit \
        / "audit.yaml"
    if args.prediction is not None or _is_regression(path):  # a number per row, not a decision
        from faircode.pipeline.regression_command import audit_regression

        return audit_regression(args, path, config)
    if args.predictions is None:
        raise ConfigError(f"faircode audit {args.audit}: --predictions: expected a file with an "
                          "audit's manifest (a log declaration needs none), got nothing")
    manifest = load_manifest(given if given.suffix in (".yaml", ".yml")
                             else Path(args.audits) / args.audit / "audit.yaml")
    check_replaceable(Path(args.out) / manifest.name, audit=manifest.name, kind=PREDICTIONS)
    raw_key, file_key = row_identity(manifest, args.key)
    obtain(manifest, mirrors())
    data = load_audit(manifest, key=raw_key, by_position=raw_key is None)
    assert data.keys is not None  # load_audit with a key returns them
    keys = dataclasses.replace(data.keys, column=file_key)  # the file's name for those keys
    found = PredictionsReader(Path(args.predictions), key=file_key, rows=keys,
                              decision=args.decision, score=args.score, scale=args.scale,
                              allow_partial=args.allow_partial or args.rows == "held-out",
                              chunk_rows=args.chunk_rows or JOIN_ROWS)
    held_out = args.rows == "held-out"
    streamed = audit_predictions(data, found, name=args.name,
                                 threshold=config.models.decision_threshold, stats=config.stats,
                                 degenerate=config.degenerate, verdicts=config.verdicts,
                                 audited=data.test_index if held_out else None)
    results = streamed.results
    audited, n_train, n_missing = audited_rows(data, found, streamed.covered, rows=args.rows,
                                               allow_partial=args.allow_partial)
    _warn(found, data, rows=args.rows, n_train=n_train, audited=audited)
    record: dict[str, Any] = {"predictions": {
        "path": str(found.path), "sha256": found.sha256, "key": found.key,
        "row_id": data.keys.column if raw_key is not None else "position",
        "decision": found.decision, "score": found.score, "scale": found.scale,
        "rows_audited": args.rows.replace("-", "_"), "rows": audited,
        "training_rows_in_file": n_train, "outside_audit": found.n_outside,
        "missing": n_missing}}
    folder = write_audit(data, results, config=config, out_dir=Path(args.out),
                         provenance_record=provenance(), extra=record)
    where = "held-out" if held_out else "audit"
    print(f"{manifest.name}: {args.name} on {audited:,} {where} rows; wrote {folder}")
    print("\n".join(f"  {line}" for line in given_lines(results.fairness, results.performance)))
    print(f"  report: faircode report {manifest.name} --results {args.out}")
    return EXIT_OK


def _is_regression(path: Path) -> bool:
    from faircode.audit.kinds import manifest_task_kind
    from faircode.core.kinds import REGRESSION

    return path.is_file() and manifest_task_kind(path) is REGRESSION


def _warn(found: PredictionsReader, data: AuditData, *, rows: str, n_train: int,
          audited: int) -> None:
    """The warning about the file's training rows (stderr), when it has any."""
    if not n_train:
        return
    audit = data.manifest.name
    if rows == "held-out":
        print(f"warning: {found.path}: {n_train:,} of its rows are rows {audit} trains on: not "
              f"audited; its {audited:,} held-out rows are (--rows all audits every row)",
              file=sys.stderr)
    else:
        print(f"warning: {found.path}: auditing every row, {n_train:,} of them rows {audit} "
              "trains on: a model fitted on them reads better there than on new people "
              f"(--rows held-out audits the {data.test_index.size:,} others only)",
              file=sys.stderr)


def _audit_log(args: argparse.Namespace, declaration: Path, config: Any) -> int:
    """``faircode audit LOG.yaml``: a decision log with its own groups, streamed."""
    from faircode.audit.logs import load_log
    from faircode.evaluate.streamed import audit_log
    from faircode.evaluate.write import check_replaceable, results_kind, write_audit
    from faircode.provenance.state import provenance

    manifest = load_log(declaration)
    check_replaceable(Path(args.out) / manifest.name, audit=manifest.name,  # before any read
                      kind=results_kind({"log": str(declaration)}))
    client = None
    if args.scheduler:
        from faircode.grid.dask_reduce import connect

        client = connect(args.scheduler)
    try:
        record, results = audit_log(manifest, stats=config.stats, degenerate=config.degenerate,
                                    verdicts=config.verdicts,
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
    """Register ``faircode audit`` (one AUDIT, so not the shared AUDIT ... positional)."""
    parser = subparsers.add_parser(
        "audit", help=HELP["audit"],
        description="Score your model's decisions (and/or scores) on an audit's rows with the "
                    "benchmark's statistics. The file's key column names each row: the raw "
                    "file's key column, or its row position where the manifest declares "
                    "dataset.row_id: position.",
        **example("faircode audit german_credit_lending --predictions my_model.csv --key row "
                  "--decision approve --name my_model"))
    parser.add_argument("--audits", default="audits", help="folder of <name>/audit.yaml")
    parser.add_argument("audit", metavar="AUDIT",
                        help="the audit whose rows the file names: its name (audits/<name>/) or "
                             "its manifest path; or a decision log's declaration (LOG.yaml: "
                             "the log carries its own groups)")
    parser.add_argument("--predictions",
                        help="CSV (.csv, .csv.gz/.bz2/.xz/.zst) or parquet file")
    parser.add_argument("--key", help="the file's column naming each row (default: the "
                                      "manifest's dataset.row_id column); see the description")
    parser.add_argument("--decision", help="column of 0/1 decisions (1 = label 1 predicted)")
    parser.add_argument("--score", help="column of scores (higher = label 1 more likely)")
    parser.add_argument("--scale", choices=("probability", "ordinal"),
                        help="the score's scale (required with --score)")
    parser.add_argument("--prediction", help="a regression audit's: column of predicted "
                                             "numbers (the outcome on its analysed scale)")
    parser.add_argument("--name", default="model", help="the model's name in every table")
    parser.add_argument("--rows", choices=ROW_SETS, default="held-out",
                        help="held-out: the audit's test rows, beside S0-S4 (default; the "
                             "file's training rows are not audited); all: every audit row")
    parser.add_argument("--allow-partial", action="store_true",
                        help="audit only the rows the file covers (default: every audited row "
                             "must be there)")
    parser.add_argument("--out", default="results-external",
                        help="results folder (default: results-external)")
    parser.add_argument("--params", help="params.yaml to take stats.* and models.* from")
    parser.add_argument("--n-resamples", type=int,
                        help=f"bootstrap resamples per CI (2000; 1 to {MAX_DRAWS:,})")
    parser.add_argument("--n-permutations", type=int,
                        help=f"permutations per p-value (2000; 1 to {MAX_DRAWS:,})")
    parser.add_argument("--chunk-rows", type=int,
                        help="rows read at a time (memory does not grow with the file; default "
                             f"10^6 for a log, 2^18 for a predictions file; 1 to "
                             f"{MAX_CHUNK_ROWS:,})")
    parser.add_argument("--in-memory", action="store_true",
                        help="a log: read every row first, count them at once (a check of the "
                             "streamed counts; same tables)")
    parser.add_argument("--scheduler", help="a log in Parquet: count its shards on this Dask "
                                            "scheduler (tcp://host:8786)")
    parser.set_defaults(handler=_cmd_audit)
