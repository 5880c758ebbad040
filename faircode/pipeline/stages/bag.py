"""Stage ``bag@<audit>``: fit the bagged ensembles of an audit and store their test scores under
``data/bagged/<audit>/`` (:mod:`faircode.grid.bagging`: the layout, the seeds, which families).

For every bagged strategy (S0, S2) and model family, ``arbitrariness.bags`` members, each fitted
on a bootstrap draw of the prepared split's training rows -- replicate 0's split, whatever
``run.seeds``, so the stage reads no ``run.*`` param.  Reads ``arbitrariness.bags``,
``arbitrariness.all_families_below`` and ``models.encoding`` (tracked), the ``mitigation.*``
keys of the bagged strategies (none for S0 and S2) and ``run.jobs``, ``run.backend``,
``run.scheduler`` (not tracked: no number depends on them).  The seconds go to
``OUT_DIR.seconds.json`` beside the store (no DVC output, as the fit stages' timings).

Usage: ``python -m faircode.pipeline.stages.bag AUDIT PREPARED_DIR OUT_DIR``
"""

from __future__ import annotations

import sys
from pathlib import Path

from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import load_prepared
from faircode.core.config import load_params
from faircode.grid.bagging import fit_bagged, save_bagged
from faircode.grid.predictions import timings_path
from faircode.pipeline.stages import (
    PARAMS,
    audit_argument,
    carry_unavailable,
    manifest_path,
    run_stage,
)


def main(argv: list[str]) -> None:
    """Fit audit ``argv[0]``'s bagged ensembles on the prepared table ``argv[1]``; write
    ``argv[2]``."""
    if len(argv) != 3:
        print("usage: python -m faircode.pipeline.stages.bag AUDIT PREPARED_DIR OUT_DIR",
              file=sys.stderr)
        sys.exit(2)
    audit, prepared_dir, out = audit_argument(argv[0]), Path(argv[1]), Path(argv[2])

    def work() -> None:
        params = load_params(PARAMS)
        if carry_unavailable(prepared_dir, out, audit=audit):
            return
        data = load_prepared(prepared_dir, manifest=load_manifest(manifest_path(audit)))
        config = params.config
        bagged = fit_bagged(data, bags=config.arbitrariness.bags,
                            all_families_below=config.arbitrariness.all_families_below,
                            mitigation=config.mitigation, encoding=config.models.encoding,
                            jobs=config.jobs, execution=params.execution)
        save_bagged(bagged, out, test_index=data.test_index, timings=timings_path(out))
        cells = ", ".join(f"{s.value}/{m.value}" for s, m in bagged.scores)
        print(f"{audit}: {bagged.bags} members of {cells} in {out} "
              f"({bagged.seconds['members']:.1f} s in the members' fits)")

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
