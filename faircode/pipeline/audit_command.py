"""``faircode audit``: audit a practitioner's own model from a predictions file.

The file (CSV or parquet) holds a key column naming the audit's rows and the model's decision
and/or score columns (:func:`faircode.audit.predictions_file.read_predictions`: joined on the
key, never on row order; a missing, duplicated or unknown key, a non-binary decision or a score
outside its scale is one line naming the file, the column and an example value, exit 2, nothing
written).  The model is scored exactly like an audit's deployed system
(:func:`faircode.evaluate.deployed.score_given`) and written as ``<out>/<audit>/`` -- the same
tables, a ``run.json`` naming the file and its sha256 -- so ``faircode report --results <out>``
renders it and ``faircode track --results <out>`` logs it to MLflow like any run.

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
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from faircode.core.errors import DataError, FaircodeError, describe
from faircode.pipeline._args import EXIT_OK, HELP, example, mirrors, obtain

if TYPE_CHECKING:
    from faircode.audit.data import AuditData
    from faircode.audit.manifest import Manifest
    from faircode.audit.predictions_file import ExternalPredictions

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


def audited_rows(data: AuditData, found: ExternalPredictions, *, rows: str,
                 allow_partial: bool) -> tuple[np.ndarray, int, int]:
    """(the audited row positions, how many of the file's rows are training rows, how many
    audited rows the file misses); raises :class:`DataError` for a missing held-out row."""
    in_train = np.isin(found.positions, data.train_index)
    n_train = int(in_train.sum())
    if rows == "all":
        return found.positions, n_train, found.n_missing
    positions = found.positions[~in_train]
    covered = np.isin(data.test_index, positions)
    if not allow_partial and not covered.all():
        assert data.keys is not None
        first = data.keys.kept[int(data.test_index[~covered][0])]
        raise DataError(f"{found.path}: column {found.key!r} (key): expected a row for each of "
                        f"the audit's {data.test_index.size:,} held-out rows, got none for "
                        f"{int((~covered).sum()):,} of them, first {describe(first)} "
                        "(--allow-partial audits the covered ones)")
    return positions, n_train, int((~covered).sum())


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
    from faircode.report.given import given_lines

    params = load_params(Path(args.params)) if args.params else Params()
    overrides = {k: getattr(args, k) for k in ("n_resamples", "n_permutations")}
    config = params.config.replace(**{k: v for k, v in overrides.items() if v is not None})
    given = Path(args.audit)
    manifest = load_manifest(given if given.suffix in (".yaml", ".yml")
                             else Path(args.audits) / args.audit / "audit.yaml")
    check_replaceable(Path(args.out) / manifest.name, audit=manifest.name, kind="predictions")
    raw_key, file_key = row_identity(manifest, args.key)
    obtain(manifest, mirrors())
    data = load_audit(manifest, key=raw_key, by_position=raw_key is None)
    assert data.keys is not None  # load_audit with a key returns them
    found = read_predictions(Path(args.predictions), key=file_key, rows=data.keys,
                             decision=args.decision, score=args.score, scale=args.scale,
                             allow_partial=args.allow_partial or args.rows == "held-out")
    positions, n_train, n_missing = audited_rows(data, found, rows=args.rows,
                                                 allow_partial=args.allow_partial)
    _warn(found, data, rows=args.rows, n_train=n_train, audited=positions.size)
    results = score_given(prepare(data), name=args.name, decision=_take(found.decision, found,
                                                                        positions),
                          score=_take(found.score, found, positions), scale=found.scale,
                          positions=positions, threshold=config.decision_threshold,
                          stats=config.stats, degenerate=config.degenerate,
                          row_set="test" if args.rows == "held-out" else "all",
                          verdicts=config.verdicts)
    record: dict[str, Any] = {"predictions": {
        "path": str(found.path), "sha256": found.sha256, "key": found.key,
        "row_id": data.keys.column if raw_key is not None else "position",
        "decision": found.decision_column, "score": found.score_column, "scale": found.scale,
        "rows_audited": args.rows.replace("-", "_"), "rows": int(positions.size),
        "training_rows_in_file": n_train, "outside_audit": found.n_outside,
        "missing": n_missing}}
    folder = write_audit(data, results, config=config, out_dir=Path(args.out),
                         provenance_record=provenance(), extra=record)
    where = "held-out" if args.rows == "held-out" else "audit"
    print(f"{manifest.name}: {args.name} on {positions.size:,} {where} rows; wrote {folder}")
    print("\n".join(f"  {line}" for line in given_lines(results.fairness, results.performance)))
    print(f"  report: faircode report {manifest.name} --results {args.out}")
    return EXIT_OK


def _take(values: np.ndarray | None, found: ExternalPredictions,
          positions: np.ndarray) -> np.ndarray | None:
    """``values`` (aligned with ``found.positions``) at the audited ``positions``."""
    return None if values is None else values[np.isin(found.positions, positions)]


def _warn(found: ExternalPredictions, data: AuditData, *, rows: str, n_train: int,
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
                             "its manifest path")
    parser.add_argument("--predictions", required=True, help="CSV or parquet file")
    parser.add_argument("--key", help="the file's column naming each row (default: the "
                                      "manifest's dataset.row_id column); see the description")
    parser.add_argument("--decision", help="column of 0/1 decisions (1 = label 1 predicted)")
    parser.add_argument("--score", help="column of scores (higher = label 1 more likely)")
    parser.add_argument("--scale", choices=("probability", "ordinal"),
                        help="the score's scale (required with --score)")
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
    parser.add_argument("--n-resamples", type=int, help="bootstrap resamples per CI (2000)")
    parser.add_argument("--n-permutations", type=int, help="permutations per p-value (2000)")
    parser.set_defaults(handler=_cmd_audit)
