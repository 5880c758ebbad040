"""Stage ``fit@<audit>``: fit the 15 strategy x model cells and store their predictions under
``data/predictions/<audit>/`` (see :mod:`faircode.grid.predictions` for the layout).

Reads ``mitigation.*``, ``run.seeds``, ``run.seed_mode`` (tracked by DVC) and ``run.jobs``,
``run.backend``, ``run.scheduler`` (deliberately not tracked: the worker count and the backend,
local processes or a Dask cluster, change no number, so changing them must not refit).  The
cells (and their training replicates) are dispatched longest first, ordered by the per-cell
seconds of ``results/<audit>/run.json`` when it exists (ordering only; it is not a dependency).

Usage: ``python -m faircode.pipeline.stages.fit AUDIT PREPARED_DIR OUT_DIR``
"""

from __future__ import annotations

import sys
from pathlib import Path

from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import load_prepared
from faircode.core.cells import STRATEGY_CODES
from faircode.core.config import load_params
from faircode.grid.fit import fit_audit
from faircode.grid.predictions import CellPredictions, save_predictions
from faircode.grid.scheduler import previous_cell_seconds
from faircode.pipeline.stages import PARAMS, carry_unavailable, manifest_path, run_stage

RESULTS = Path("results")


def _progress(cell: CellPredictions) -> None:
    what = cell.skipped or " ".join(f"{k} {v:.1f}s" for k, v in cell.seconds.items())
    print(f"  {STRATEGY_CODES[cell.strategy]} {cell.family.value}: {what}", flush=True)


def main(argv: list[str]) -> None:
    """Fit audit ``argv[0]`` on the prepared table ``argv[1]``; write ``argv[2]``."""
    audit, prepared_dir, out = argv[0], Path(argv[1]), Path(argv[2])

    def work() -> None:
        params = load_params(PARAMS)
        if carry_unavailable(prepared_dir, out, audit=audit):
            return
        data = load_prepared(prepared_dir, manifest=load_manifest(manifest_path(audit)))
        predictions = fit_audit(
            data, config=params.config, execution=params.execution, on_cell_done=_progress,
            previous=previous_cell_seconds(RESULTS / audit / "run.json"))
        save_predictions(predictions, out, test_index=data.test_index,
                         train_index=data.train_index)
        print(f"{audit}: predictions in {out}")

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
