"""The rows ``faircode audit AUDIT --predictions FILE`` audits of a benchmark audit, whatever its
task kind (:mod:`faircode.pipeline.audit_command`, :mod:`faircode.pipeline.multiclass_command`):
``--rows held-out`` (the audit's test rows, beside S0-S4's) or ``all``, the check that the file
covers them, and the warning about the file's training rows.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

from faircode.core.errors import DataError, describe

if TYPE_CHECKING:
    from faircode.audit.data import AuditData
    from faircode.audit.predictions_file import PredictionsReader

__all__ = ["ROW_SETS", "audited_rows", "warn_training_rows"]

ROW_SETS = ("held-out", "all")
"""``--rows``: the audit's held-out test rows (default), or every row of the audit."""


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
        own = (f"; the file covers {int(held.sum()):,} held-out and {n_train:,} of the "
               f"{data.train_index.size:,} training rows alike: made on another split than "
               f"{data.manifest.name}'s? --rows all --allow-partial audits its "
               f"{int(covered.sum()):,} rows" if n_train else
               "; --allow-partial audits the covered ones")
        raise DataError(f"{found.path}: column {found.key!r} (key): expected a row for each of "
                        f"the audit's {data.test_index.size:,} held-out rows, got none for "
                        f"{int((~held).sum()):,} of them, first {describe(first)}{own}")
    return int(held.sum()), n_train, int((~held).sum())


def warn_training_rows(found: PredictionsReader, data: AuditData, *, rows: str, n_train: int,
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
              "trains on: if your model was fitted on them, it reads better there than on new "
              f"people (--rows held-out audits the {data.test_index.size:,} others only)",
              file=sys.stderr)
