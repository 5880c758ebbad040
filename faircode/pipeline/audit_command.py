"""``faircode audit``: audit decisions no one here trained -- a file of your own, or a model's
predictions on a benchmark audit's rows.

Three ways in, one set of tables, statistics and verdicts (the deployed system's, scored from
its counts: :mod:`faircode.evaluate.streamed`, memory bounded whatever the file's size):

* ``faircode audit FILE --group COL[=V,...] --label COL --decision COL [--score COL]``: a CSV
  or Parquet file that carries its own groups, label and decisions -- no manifest, no raw
  dataset, no benchmark split (:mod:`faircode.audit.log_columns`: unit, strata and the
  favourable label are options).  The options stand for a log declaration, which is saved as
  ``<out>/<name>.yaml`` beside the results folder: ``faircode audit <out>/<name>.yaml``
  repeats the audit.
* ``faircode audit LOG.yaml``: that declaration written by hand
  (:mod:`faircode.audit.log_declaration`), streamed, or sharded on ``--scheduler``.
* ``faircode audit AUDIT --predictions FILE``: a model's decisions on a benchmark audit's rows,
  read in chunks and joined on a key (:class:`faircode.audit.predictions_file.PredictionsReader`:
  never on row order; a missing, duplicated or unknown key, a non-binary decision or a score
  outside its scale is one line naming the file, the column and an example value, exit 2,
  nothing written), so the numbers sit beside S0-S4's on the same people.  A score (or a
  ``--rank`` column, 1 = the top, beside the decisions) also gives the ranking view
  (:mod:`faircode.evaluate.ranking`).  Of a multi-class audit (``task: multiclass``) the
  decision column holds a predicted class per row, audited beside the recorded classes into a
  multi-class run's tables (:mod:`faircode.pipeline.multiclass_command`).

Each writes ``<out>/<name>/`` -- the tables and a ``run.json`` naming the file and its sha256 --
so ``faircode report --results <out>`` renders it and ``faircode track --results <out>`` logs it
to MLflow like any run, and prints the numbers it wrote (:func:`faircode.report.given.
given_lines`): per attribute the parity gap with its interval, the audit's own q, whether it is
significant and powered, and the error-rate gaps.

Design decisions
----------------
* **What names a row** (an audit's rows): ``--key`` names the file's key column; without it the
  key is the one column that can be one (:func:`~faircode.audit.predictions_file.find_key`: the
  manifest's ``dataset.row_id`` column; else the file's one column the raw file also has and the
  audit does not read; for ``row_id: position`` its one column that is no output and no raw
  column), and the command says which.  The raw side is the manifest's ``dataset.row_id`` --
  a key column, or ``position``: the row's 0-based position among the sha256-pinned raw file's
  data rows (German credit) -- else the raw column of the same name.
* **Held-out rows by default** (``--rows held-out``): the audit's own split's test rows, so the
  numbers sit beside S0-S4's.  ``--rows all`` audits every covered row.  The warning about
  training rows is given only where the file follows the audit's split -- it covers every
  held-out row, so its other rows are the ones the benchmark's models train on; a file made on
  the user's own split covers both halves alike, and its missing held-out rows are an error
  that says so and names ``--rows all --allow-partial`` (or the file's own columns).
* **Nothing of another kind is replaced.**  ``--name`` is a safe name
  (:mod:`faircode.core.names`), and ``<out>/<name>/`` is checked before anything is read: a
  folder of the grid's results (or any folder faircode did not write as a ``faircode audit``) is
  refused, never replaced (:func:`faircode.evaluate.write.check_replaceable`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faircode.core.config import MAX_CHUNK_ROWS, MAX_DRAWS
from faircode.core.errors import ConfigError, describe
from faircode.pipeline._args import EXIT_OK, HELP, STATS_FLAGS, mirrors, obtain, with_flags
from faircode.pipeline.audit_rows import ROW_SETS, audited_rows, warn_training_rows

if TYPE_CHECKING:
    from faircode.audit.manifest import Manifest
    from faircode.audit.table_file import TableFile
    from faircode.core.config import BenchmarkConfig
    from faircode.evaluate.tables import AuditResults

__all__ = ["add_audit"]

_FILE_OPTIONS = (("group", "--group"), ("label", "--label"), ("unit", "--unit"),
                 ("stratum", "--stratum"))
"""The options that say what a decisions file's own columns are (``faircode audit FILE``)."""


def _identity(manifest: Manifest, table: TableFile, args: argparse.Namespace
              ) -> tuple[str | None, str]:
    """(the raw file's key column, None for the row position; the predictions file's column),
    the file's column found and announced when ``--key`` is not given."""
    from faircode.audit.predictions_file import find_key

    key = args.key
    if key is None:
        outputs = [c for c in (args.decision, args.score, args.rank) if c is not None]
        key, why = find_key(manifest, table, outputs=outputs)
        print(f"{manifest.name}: key column {key!r}: {why} (--key names another)")
    declared = manifest.dataset.row_id
    if declared is None:
        return key, key
    return declared.column, key


def _config(args: argparse.Namespace) -> BenchmarkConfig:
    from faircode.core.config import Params, load_params

    params = load_params(Path(args.params)) if args.params else Params()
    if args.chunk_rows is not None and not 1 <= args.chunk_rows <= MAX_CHUNK_ROWS:
        raise ConfigError(f"faircode audit: --chunk-rows: expected an integer in [1, "
                          f"{MAX_CHUNK_ROWS:,}] (the limit on work), got "
                          f"{describe(args.chunk_rows)}")
    return with_flags(params.config, args, STATS_FLAGS, command="faircode audit")


def _cmd_audit(args: argparse.Namespace) -> int:
    from faircode.core.memory import map_large_arrays

    map_large_arrays()  # every audit here streams a file: before Arrow is loaded (its pool)
    from faircode.audit.log_declaration import is_log_declaration
    from faircode.audit.table_file import CSV_SUFFIXES, PARQUET_SUFFIXES, table_suffix
    from faircode.core.names import check_name

    check_name(args.name, where="faircode audit: --name")  # a row label, a run name
    config = _config(args)
    given = Path(args.audit)
    own = table_suffix(given) in (*CSV_SUFFIXES, *PARQUET_SUFFIXES)
    log = given.suffix in (".yaml", ".yml") and is_log_declaration(given)
    if args.rank is not None and (own or log):
        raise ConfigError(f"faircode audit {args.audit}: --rank: expected a benchmark audit "
                          "with --predictions FILE, got a decisions file or a log declaration")
    if own:
        return _audit_file(args, given, config)
    for dest, flag in _FILE_OPTIONS:
        if getattr(args, dest):
            raise ConfigError(f"faircode audit {args.audit}: {flag}: expected a decisions file "
                              "(.csv, .parquet) as AUDIT, got an audit (its manifest names its "
                              "groups and label)")
    if log:
        from faircode.audit.log_declaration import load_log

        return _audit_log(args, load_log(given), config)
    return _audit_predictions(args, given, config)


def _audit_predictions(args: argparse.Namespace, given: Path, config: BenchmarkConfig) -> int:
    """``faircode audit AUDIT --predictions FILE``: a model's decisions on an audit's rows."""
    from faircode.audit.data import load_audit
    from faircode.audit.manifest import load_manifest
    from faircode.audit.predictions_file import JOIN_ROWS, PredictionsReader
    from faircode.audit.table_file import open_table
    from faircode.evaluate.streamed import audit_predictions
    from faircode.evaluate.write import PREDICTIONS, check_replaceable, write_audit
    from faircode.provenance.state import provenance

    path = given if given.suffix in (".yaml", ".yml") else Path(args.audits) / args.audit \
        / "audit.yaml"
    if args.prediction is not None or _is_regression(path):  # a number per row, not a decision
        from faircode.pipeline.regression_command import audit_regression

        return audit_regression(args, path, config)
    if args.predictions is None:
        raise ConfigError(f"faircode audit {args.audit}: --predictions: expected a file with an "
                          "audit's manifest (a log declaration or a decisions file needs none), "
                          "got nothing")
    manifest = load_manifest(path)
    classes = [str(c) for c in manifest.target.values or ()] \
        if manifest.target.method == "classes" else None
    if classes is not None and (args.score is not None or args.rank is not None):
        raise ConfigError(f"faircode audit {args.audit}: --score/--rank: expected a predicted "
                          f"class per row (--decision) for a multi-class audit, got a "
                          f"{'score' if args.score is not None else 'rank'} column")
    check_replaceable(Path(args.out) / manifest.name, audit=manifest.name, kind=PREDICTIONS)
    obtain(manifest, mirrors())
    raw_key, file_key = _identity(manifest, open_table(Path(args.predictions)), args)
    data = load_audit(manifest, key=raw_key, by_position=raw_key is None)
    assert data.keys is not None  # load_audit with a key returns them
    keys = dataclasses.replace(data.keys, column=file_key)  # the file's name for those keys
    found = PredictionsReader(Path(args.predictions), key=file_key, rows=keys,
                              decision=args.decision, score=args.score, scale=args.scale,
                              allow_partial=args.allow_partial or args.rows == "held-out",
                              chunk_rows=args.chunk_rows or JOIN_ROWS, rank=args.rank,
                              classes=classes)
    held_out = args.rows == "held-out"
    if classes is not None:
        from faircode.pipeline.multiclass_command import audit_classes

        return audit_classes(args, data, found, config, held_out=held_out)
    streamed = audit_predictions(data, found, name=args.name,
                                 threshold=config.models.decision_threshold, stats=config.stats,
                                 degenerate=config.degenerate, verdicts=config.verdicts,
                                 audited=data.test_index if held_out else None)
    audited, n_train, n_missing = audited_rows(data, found, streamed.covered, rows=args.rows,
                                               allow_partial=args.allow_partial)
    follows = bool(streamed.covered[data.test_index].all())
    if follows:
        warn_training_rows(found, data, rows=args.rows, n_train=n_train, audited=audited)
    record: dict[str, Any] = {"predictions": {
        "path": str(found.path), "sha256": found.sha256, "key": found.key,
        "row_id": data.keys.column if raw_key is not None else "position",
        "decision": found.decision, "score": found.score, "scale": found.scale,
        **({"rank": found.rank} if found.rank is not None else {}),
        "rows_audited": args.rows.replace("-", "_"), "rows": audited,
        "training_rows_in_file": n_train, "follows_split": follows,
        "outside_audit": found.n_outside, "missing": n_missing}}
    folder = write_audit(data, streamed.results, config=config, out_dir=Path(args.out),
                         provenance_record=provenance(), extra=record)
    where = "held-out" if held_out else "audit"
    _printed(f"{manifest.name}: {args.name} on {audited:,} {where} rows; wrote {folder}",
             streamed.results, out=args.out)
    return EXIT_OK


def _printed(first: str, results: AuditResults, *, out: str) -> None:
    """What the command prints: its line, the numbers it wrote, how to see the report."""
    from faircode.report.given import given_lines

    print(first)
    print("\n".join(f"  {line}" for line in given_lines(results.fairness,
                                                        results.performance)))
    print(f"  report: faircode report --results {out}")


def _is_regression(path: Path) -> bool:
    from faircode.audit.kinds import manifest_task_kind
    from faircode.core.kinds import REGRESSION

    return path.is_file() and manifest_task_kind(path) is REGRESSION


def _audit_file(args: argparse.Namespace, file: Path, config: BenchmarkConfig) -> int:
    """``faircode audit FILE --group ...``: a file with its own columns, declared by options;
    the declaration is saved beside the results folder for a repeatable audit."""
    import yaml

    from faircode.audit.log_columns import LogColumns
    from faircode.audit.log_declaration import load_log
    from faircode.audit.predictions_file import check_columns
    from faircode.audit.table_file import open_table
    from faircode.core.layout import GRID_RUN
    from faircode.core.names import check_name
    from faircode.evaluate.write import check_replaceable

    if args.predictions is not None:
        raise ConfigError(f"faircode audit {file}: --predictions: expected nothing (the file "
                          "holds the decisions), got " + describe(args.predictions))
    if args.prediction is not None:
        raise ConfigError(f"faircode audit {file}: --prediction: expected nothing (a decisions "
                          "file is audited by its 0/1 decisions; a regression audit's numbers "
                          "go with its manifest), got " + describe(args.prediction))
    if args.label is None or args.decision is None:
        missing = "--label" if args.label is None else "--decision"
        raise ConfigError(f"faircode audit {file}: {missing}: expected a column of it (a "
                          "decisions file names its label and decision columns), got nothing")
    columns = LogColumns(groups=tuple(args.group or ()), label=args.label,
                         decision=args.decision, score=args.score, scale=args.scale,
                         unit=args.unit, strata=tuple(args.stratum or ()),
                         favourable=args.favourable, name=args.name, seed=args.seed)
    audit = args.audit_name or _stem(file)
    check_name(audit, where="faircode audit: --audit-name")
    out = Path(args.out)
    doc = columns.declaration(audit=audit, log=os.path.relpath(file.resolve(), out.resolve()))
    table = open_table(file)
    check_columns(table, columns.wanted())
    check_replaceable(out / audit, audit=audit, kind=GRID_RUN)  # an --out that is a file too
    out.mkdir(parents=True, exist_ok=True)
    declaration = out / f"{audit}.yaml"
    staged = declaration.with_name(f".{declaration.name}.tmp")
    staged.write_text("# written by faircode audit FILE --group ... (its options); `faircode "
                      "audit` of this file repeats the audit\n"
                      + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True),
                      encoding="utf-8")
    os.replace(staged, declaration)
    return _audit_log(args, load_log(declaration), config, saved=declaration)


def _stem(file: Path) -> str:
    """The results folder's name from the file's: ``loans-2024.csv.gz`` -> ``loans-2024``."""
    from faircode.audit.table_file import table_suffix

    suffix = table_suffix(file) or ""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", file.name[:len(file.name) - len(suffix)]) or "decisions"


def _audit_log(args: argparse.Namespace, manifest: Manifest, config: BenchmarkConfig, *,
               saved: Path | None = None) -> int:
    """A decision log with its own groups (a declaration, or a file's options), streamed."""
    from faircode.audit.table_file import ROWS
    from faircode.core.layout import GRID_RUN
    from faircode.evaluate.streamed import audit_log
    from faircode.evaluate.write import check_replaceable, write_audit
    from faircode.provenance.state import provenance

    # refused before anything is read (a log's run.json has no kind: the grid's)
    check_replaceable(Path(args.out) / manifest.name, audit=manifest.name, kind=GRID_RUN)
    client = None
    if args.scheduler:
        from faircode.grid.dask_reduce import connect

        client = connect(args.scheduler)
    try:
        record, results = audit_log(manifest, stats=config.stats, degenerate=config.degenerate,
                                    verdicts=config.verdicts,
                                    chunk_rows=args.chunk_rows or ROWS,
                                    in_memory=args.in_memory, client=client)
    finally:
        if client is not None:
            client.close()
    extra = {"log": {"declaration": str(manifest.file), "path": str(manifest.dataset.path),
                     "sha256": record.sha256, "rows": record.n_rows,
                     "decided_1": record.flagged}}
    folder = write_audit(record, results, config=config, out_dir=Path(args.out),
                         provenance_record=provenance(), extra=extra)
    _printed(f"{manifest.name}: {record.system.name} on {record.n_rows:,} rows; wrote {folder}",
             results, out=args.out)
    if saved is not None:
        print(f"  declaration: {saved} (faircode audit {saved} repeats this audit)")
    return EXIT_OK


_EPILOG = """\
example, a file with its own groups, label and decisions (no manifest; saves <out>/<name>.yaml):
  faircode audit holdout.csv --group 'age<30' --label class=good \\
      --decision approve --score p_good --scale probability \\
      --name my_model

example, the same audit declared in YAML, for a repeatable one (faircode audit holdout.yaml):
  name: holdout                  # the results folder; log.path is relative to this file
  log: {path: holdout.csv}
  target: {column: class, method: isin, values: [good], favourable: 1}
  system: {name: my_model, decision: {column: approve, binary: true},
           score: {column: p_good, scale: probability}}
  protected_attributes: [{name: age, type: numeric_threshold, column: age, threshold: 30,
                          disadvantaged: below}]

example, a model's decisions on a benchmark audit's rows (the key column found when unambiguous):
  faircode audit compas_two_years --predictions deciles.csv \\
      --decision high_risk --score decile_score --scale ordinal \\
      --rows all --name compas_deciles
"""


def add_audit(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``faircode audit`` (one AUDIT, so not the shared AUDIT ... positional)."""
    parser = subparsers.add_parser(
        "audit", help=HELP["audit"], epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Score decisions no one here trained with the benchmark's tables, "
                    "statistics and verdicts: a CSV/Parquet file that carries its own groups, "
                    "label and decisions (FILE --group ... --label ... --decision ...), its "
                    "YAML declaration (LOG.yaml), or a model's predictions on a benchmark "
                    "audit's rows (AUDIT --predictions FILE, joined on a key column).")
    parser.add_argument("--audits", default="audits", help="folder of <name>/audit.yaml")
    parser.add_argument("audit", metavar="FILE|LOG.yaml|AUDIT",
                        help="a decisions file (.csv, .csv.gz/.bz2/.xz/.zst, .parquet) with "
                             "--group/--label/--decision; a log declaration (LOG.yaml); or a "
                             "benchmark audit (audits/<name>/ or its manifest) with --predictions")
    own = parser.add_argument_group("a decisions file's own columns (FILE)")
    own.add_argument("--group", action="append", metavar="COL[=V,...]",
                     help="a protected group: COL=V[,V...] (these values disadvantaged), "
                          "COL<X or COL>=X (numeric), COL (1/true disadvantaged); repeatable")
    own.add_argument("--label", metavar="COL[=V,...]",
                     help="the observed outcome: COL 0/1, or COL=V[,V...] / COL>=X for label 1")
    own.add_argument("--favourable", type=int, choices=(0, 1), default=1,
                     help="which label is the favourable outcome (default 1)")
    own.add_argument("--unit", metavar="COL", help="rows of one COL value are one unit "
                                                   "(clustered intervals)")
    own.add_argument("--stratum", action="append", metavar="COL[,COL...]",
                     help="a legitimate factor: the parity gap also within its levels; "
                          "repeatable")
    own.add_argument("--seed", type=int, default=42, help="the audit's master seed (42)")
    own.add_argument("--audit-name", help="the results folder's name (default: the file's)")
    rows = parser.add_argument_group("a benchmark audit's rows (AUDIT --predictions FILE)")
    rows.add_argument("--predictions", help="CSV (.csv, .csv.gz/.bz2/.xz/.zst) or parquet file")
    rows.add_argument("--key", help="the file's column naming each row (default: the manifest's "
                                    "dataset.row_id column, else the one candidate column)")
    rows.add_argument("--rows", choices=ROW_SETS, default="held-out",
                      help="held-out: the audit's test rows, beside S0-S4 (default; the "
                           "file's training rows are not audited); all: every covered row")
    rows.add_argument("--prediction", help="a regression audit's: column of predicted numbers "
                                           "(the outcome on its analysed scale)")
    rows.add_argument("--rank", help="column of ranks (1 = the top, the favourable end) for the "
                                     "ranking view, beside --decision")
    rows.add_argument("--allow-partial", action="store_true",
                      help="audit only the rows the file covers (default: every audited row "
                           "must be there)")
    parser.add_argument("--decision", metavar="COL[=V,...]",
                        help="column of 0/1 decisions (1 = label 1 predicted); for a FILE also "
                             "COL=V[,V...] or COL>=X; of a multi-class audit, the predicted "
                             "class")
    parser.add_argument("--score", help="column of scores (higher = label 1 more likely)")
    parser.add_argument("--scale", choices=("probability", "ordinal"),
                        help="the score's scale (required with --score)")
    parser.add_argument("--name", default="model", help="the model's name in every table")
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
