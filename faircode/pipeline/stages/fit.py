"""Stage ``fit*@<audit>``: fit one part of the grid and store its predictions under
``data/predictions/<audit>/<part>/`` (see :mod:`faircode.grid.predictions` for the layout).

The grid is fitted in parts, one DVC stage each (each strategy's ``part`` in the strategy
table), split by the params they read (:data:`faircode.grid.strategies.READS`), so a
mitigation sweep re-fits only what it changes: ``unmitigated`` (S0-S2: no ``mitigation.*``
key), ``in_processing`` (S3: constraint, eps, max_iter), ``post_processing`` (S4: constraint)
and ``relaxed_post_processing`` (S5: constraint, tolerances).  Every part
reads ``models.encoding``, ``run.seeds`` and ``run.seed_mode`` (tracked by DVC) and
``run.jobs``, ``run.backend``, ``run.scheduler`` (deliberately not tracked: the worker count and
the backend change no number).
A part's cells (and their training replicates) are dispatched longest first, ordered by the
per-cell seconds of ``results/<audit>/run.json`` when it exists (ordering only).  The cells'
seconds go to ``OUT_DIR.seconds.json`` beside the store, never into it, and that file is
deliberately no DVC output (its hash would change ``dvc.lock`` on every re-fit): a re-fit of
unchanged inputs leaves the store's bytes, ``dvc.lock`` and everything downstream unchanged.

Usage: ``python -m faircode.pipeline.stages.fit AUDIT PART PREPARED_DIR OUT_DIR``
"""

from __future__ import annotations

import sys
from pathlib import Path

from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import load_prepared
from faircode.core.cells import STRATEGY_CODES
from faircode.core.config import load_params
from faircode.core.errors import ConfigError
from faircode.core.layout import run_record
from faircode.grid.fit import fit_audit
from faircode.grid.predictions import CellPredictions, save_predictions, timings_path
from faircode.grid.scheduler import previous_cell_seconds
from faircode.pipeline.stages import (
    PARAMS,
    PARTS,
    audit_argument,
    carry_unavailable,
    manifest_path,
    run_stage,
)

RESULTS = Path("results")


def _progress(cell: CellPredictions) -> None:
    what = cell.skipped or (f"not fitted (uninformative): {cell.unfittable}" if cell.unfittable
                            else " ".join(f"{k} {v:.1f}s" for k, v in cell.seconds.items()))
    print(f"  {STRATEGY_CODES[cell.strategy]} {cell.family.value}: {what}", flush=True)


def main(argv: list[str]) -> None:
    """Fit part ``argv[1]`` of audit ``argv[0]`` on the prepared table ``argv[2]``; write
    ``argv[3]``."""
    audit, part, prepared_dir, out = (audit_argument(argv[0]), argv[1], Path(argv[2]),
                                     Path(argv[3]))

    def work() -> None:
        if part not in PARTS:
            raise ConfigError(f"fit: PART: expected one of {', '.join(PARTS)}, got {part!r}")
        params = load_params(PARAMS)
        if carry_unavailable(prepared_dir, out, audit=audit):
            return
        data = load_prepared(prepared_dir, manifest=load_manifest(manifest_path(audit)))
        config = params.config
        predictions = fit_audit(
            data, mitigation=config.mitigation, replicates=config.replicates,
            strategies=PARTS[part], jobs=config.jobs, execution=params.execution,
            on_cell_done=_progress, previous=previous_cell_seconds(run_record(RESULTS / audit)),
            encoding=config.models.encoding)
        save_predictions(predictions, out, test_index=data.test_index,
                         train_index=data.train_index, timings=timings_path(out))
        print(f"{audit}: {part} predictions in {out}")

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
