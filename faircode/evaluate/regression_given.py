"""Scoring a model no one here trained on a regression audit: its predicted number per row.

``faircode audit AUDIT --predictions FILE --key COLUMN --prediction COLUMN`` on a ``task:
regression`` manifest: the file (CSV, compressed CSV or parquet) names each row by a key -- the
raw file's key column, or with the manifest's ``dataset.row_id: position`` the row's 0-based
position among the raw file's data rows -- and holds the model's prediction of the outcome on
the analysed scale (a log wage for a log outcome).  The model is a row set of its own (strategy
``deployed``, model its name) beside the observed outcome, with every metric of a model
(:func:`faircode.evaluate.regression.evaluate_regression`), written as ``<out>/<audit>/`` with
a ``run.json`` naming the file and its sha256.

Design decisions
----------------
* **Held-out rows by default**, as a binary model's: the audit's own test rows (its split),
  so a model fitted on the audit's training rows is not scored on them; ``all`` scores every
  row.  Every audited row must have a prediction unless partial coverage is allowed; a key twice,
  a key of no audited row in a file that should cover them, text or a non-finite number is one
  :class:`~faircode.core.errors.DataError` line naming the file, the column and an example.
* The file is read whole (two columns): a regression audit's rows are thousands, not millions.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit.regression_data import POSITION, load_regression_audit
from faircode.audit.regression_manifest import RegressionManifest
from faircode.core.config import BenchmarkConfig
from faircode.core.digests import sha256_file
from faircode.core.errors import DataError, describe

__all__ = ["audit_prediction_file", "read_predictions"]


def read_predictions(path: Path, *, key: str, column: str) -> tuple[np.ndarray, np.ndarray]:
    """The file's keys (as text) and predictions; a missing column, a repeated key or a value
    that is no finite number is one line."""
    try:
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path, columns=[key, column])
        else:
            frame = pd.read_csv(path, usecols=[key, column], low_memory=False)
    except (OSError, ValueError, KeyError) as exc:
        raise DataError(f"{path}: expected columns {key!r} (key) and {column!r} (prediction), "
                        f"got {type(exc).__name__}: {exc}") from None
    keys = frame[key]
    if pd.api.types.is_float_dtype(keys) and (keys.dropna() % 1 == 0).all():
        keys = keys.astype("Int64")
    text = keys.astype(str).to_numpy(dtype=object)
    seen, first = np.unique(text, return_index=True)
    if seen.size != text.size:
        twice = text[np.setdiff1d(np.arange(text.size), first)[0]]
        raise DataError(f"{path}: column {key!r} (key): expected each row once, got "
                        f"{describe(twice)} more than once")
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{path}: column {column!r} (prediction): expected a finite number in "
                        f"every row, got {describe(frame[column].iloc[i])} (key "
                        f"{describe(text[i])})")
    return text, values


def audit_prediction_file(manifest: RegressionManifest, path: Path, *, key: str | None,
                          column: str, name: str, held_out: bool, allow_partial: bool,
                          config: BenchmarkConfig, out: Path,
                          provenance_record: Mapping[str, Any]) -> tuple[Path, int]:
    """Score ``path``'s predictions on ``manifest``'s rows and write ``<out>/<audit>/``; the
    folder and how many rows were scored (module docstring)."""
    from faircode.evaluate.regression import evaluate_regression
    from faircode.evaluate.regression_kind import write_regression_audit
    from faircode.evaluate.write import PREDICTIONS, check_replaceable

    check_replaceable(out / manifest.name, audit=manifest.name, kind=PREDICTIONS)
    declared = manifest.dataset.row_id
    raw_key = declared.column if declared is not None and declared.column else (
        POSITION if declared is not None else key)
    if raw_key is None:
        raise DataError(f"{manifest.file}: dataset.row_id: expected a key column or position "
                        "to join a predictions file on (or --key naming a raw column), got "
                        "nothing")
    file_key = key or (raw_key if raw_key != POSITION else POSITION)
    data = load_regression_audit(manifest, key=raw_key)
    assert data.keys is not None
    digest = sha256_file(path)  # a regular file only: a FIFO or a device is one line
    keys, values = read_predictions(path, key=file_key, column=column)
    index = pd.Series(np.arange(data.keys.size), index=data.keys)
    found = index.reindex(keys).to_numpy()
    known = ~pd.isna(found)
    audited = data.test_index if held_out else np.arange(data.y.size)
    covered = np.zeros(data.y.size, dtype=bool)
    covered[found[known].astype(np.int64)] = True
    missing = audited[~covered[audited]]
    if missing.size and not allow_partial:
        raise DataError(f"{path}: column {file_key!r} (key): expected a row for each of the "
                        f"{audited.size:,} audited rows, got none for {missing.size:,} of them, "
                        f"first {describe(data.keys[missing[0]])} (--allow-partial scores the "
                        "covered ones)")
    prediction = np.full(data.y.size, np.nan)
    prediction[found[known].astype(np.int64)] = values[known]
    rows = audited[covered[audited]]
    results = evaluate_regression(data, None, stats=config.stats, verdicts=config.verdicts,
                                  replicates=config.replicates,
                                  given={name: (rows, prediction[rows])})
    record = {"predictions": {
        "path": str(path), "sha256": digest,
        "key": file_key, "row_id": raw_key, "prediction": column,
        "rows_audited": "held_out" if held_out else "all", "rows": int(rows.size),
        "outside_audit": int((~known).sum()), "missing": int(missing.size)}}
    folder = write_regression_audit(data, results, None, config=config, out_dir=out,
                                    provenance_record=provenance_record,
                                    seconds={}, extra=record, kind=PREDICTIONS)
    return folder, int(rows.size)
