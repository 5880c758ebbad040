"""Stage ``regression-fit@<audit>``: a regression audit's S0-S3 grid into
``data/predictions/<audit>/regression/`` (:func:`faircode.grid.regression.
save_regression_predictions`: ``predictions.parquet`` and ``cells.json``).

Reads the manifest, the raw file (``data/raw/<audit>/``, the fetch stage's) and the params
``mitigation.eps``, ``mitigation.max_iter`` (S3's reduction), ``models.encoding``, ``run.seeds``
and ``run.seed_mode``.  The cells' seconds go to ``OUT_DIR.seconds.json`` beside the store,
never into it (a re-fit of unchanged inputs leaves the store's bytes and ``dvc.lock``
unchanged).  An audit whose raw file is the fetch stage's unavailable note carries it forward.

Usage: ``python -m faircode.pipeline.stages.regression_fit AUDIT RAW_DIR OUT_DIR``
"""

from __future__ import annotations

import sys
from pathlib import Path

from faircode.pipeline.stages import (
    PARAMS,
    audit_argument,
    carry_unavailable,
    manifest_path,
    run_stage,
)


def main(argv: list[str]) -> None:
    """Fit regression audit ``argv[0]`` from its raw folder ``argv[1]`` into ``argv[2]``."""
    audit, raw, out = audit_argument(argv[0]), Path(argv[1]), Path(argv[2])

    def work() -> None:
        if carry_unavailable(raw, out, audit=audit):
            return
        from faircode.audit.regression_data import load_regression_audit
        from faircode.audit.regression_manifest import load_regression_manifest
        from faircode.core.config import load_params
        from faircode.grid.predictions import timings_path
        from faircode.grid.regression import fit_regression_grid, save_regression_predictions

        config = load_params(PARAMS).config
        data = load_regression_audit(load_regression_manifest(manifest_path(audit)))
        predictions = fit_regression_grid(data, mitigation=config.mitigation,
                                          replicates=config.replicates,
                                          encoding=config.models.encoding)
        save_regression_predictions(predictions, out, timings=timings_path(out))
        unfitted = [c for c in predictions.cells if c.unfittable]
        print(f"{audit}: {len(predictions.cells)} cells into {out}"
              + (f" ({len(unfitted)} not fitted)" if unfitted else ""))

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
