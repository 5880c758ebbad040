"""Stage ``prepare@<audit>``: the filtered, labelled, encoded, split table and its
counterfactual test rows, as parquet under ``data/prepared/<audit>/`` (see
:mod:`faircode.audit.prepared` for the layout).

Usage: ``python -m faircode.pipeline.stages.prepare AUDIT RAW_DIR OUT_DIR``
"""

from __future__ import annotations

import sys
from pathlib import Path

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import prepare, save_prepared
from faircode.pipeline.stages import audit_argument, carry_unavailable, manifest_path, run_stage


def main(argv: list[str]) -> None:
    """Prepare audit ``argv[0]`` from ``argv[1]`` into ``argv[2]``."""
    audit, raw, out = audit_argument(argv[0]), Path(argv[1]), Path(argv[2])

    def work() -> None:
        if carry_unavailable(raw, out, audit=audit):
            return
        manifest = load_manifest(manifest_path(audit))
        save_prepared(prepare(load_audit(manifest)), out)
        print(f"{audit}: prepared {out}")

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
