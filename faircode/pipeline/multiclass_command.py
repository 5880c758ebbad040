"""``faircode audit AUDIT --predictions FILE`` of a multi-class audit (``task: multiclass``).

The file's decision column holds a predicted class per row (one of the manifest's
``target.values``), joined on a key like any predictions file
(:class:`faircode.audit.predictions_file.PredictionsReader`); the classes are audited beside the
recorded ones (:func:`faircode.evaluate.multiclass.audit_class_predictions`: each class's share
by group, the joint test, BH and verdicts) and written as a multi-class run
(:func:`faircode.evaluate.multiclass_kind.write_multiclass_audit`), whose headline sentence is
printed.  The rows audited, the coverage check and the training-rows warning are the binary
command's (:mod:`faircode.pipeline.audit_rows`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from faircode.pipeline._args import EXIT_OK

if TYPE_CHECKING:
    from faircode.audit.data import AuditData
    from faircode.audit.predictions_file import PredictionsReader
    from faircode.core.config import BenchmarkConfig

__all__ = ["audit_classes"]


def audit_classes(args: argparse.Namespace, data: AuditData, found: PredictionsReader,
                  config: BenchmarkConfig, *, held_out: bool) -> int:
    """Audit a predicted class per row of ``data`` (module docstring); ``held_out``: only the
    audit's test rows."""
    from faircode.audit.prepared import prepare
    from faircode.core.kinds import MULTICLASS
    from faircode.evaluate.multiclass import audit_class_predictions
    from faircode.evaluate.multiclass_kind import write_multiclass_audit
    from faircode.pipeline.audit_rows import audited_rows, warn_training_rows
    from faircode.pipeline.run import run_lines
    from faircode.provenance.state import provenance

    tables, covered = audit_class_predictions(
        prepare(data), found, name=args.name, stats=config.stats, verdicts=config.verdicts,
        audited=data.test_index if held_out else None)
    audited, n_train, n_missing = audited_rows(data, found, covered, rows=args.rows,
                                               allow_partial=args.allow_partial)
    follows = bool(covered[data.test_index].all())
    if follows:
        warn_training_rows(found, data, rows=args.rows, n_train=n_train, audited=audited)
    record = {"predictions": {
        "path": str(found.path), "sha256": found.sha256, "key": found.key,
        "decision": found.decision, "classes": list(found.classes or ()),
        "rows_audited": args.rows.replace("-", "_"), "rows": audited,
        "training_rows_in_file": n_train, "follows_split": follows,
        "outside_audit": found.n_outside, "missing": n_missing}}
    folder = write_multiclass_audit(
        data.manifest, tables, sha256=data.sha256, steps=data.steps,
        rows=(len(data.train_index), len(data.test_index)), config=config,
        out_dir=Path(args.out), provenance_record=provenance(), seconds={}, extra=record)
    print(f"{data.manifest.name}: {args.name} on {audited:,} "
          f"{'held-out' if held_out else 'audit'} rows; wrote {folder}")
    print("\n".join(f"  {line}" for line in run_lines(folder, MULTICLASS)))
    print(f"  report: faircode report --results {args.out}")
    return EXIT_OK
