"""Stage ``check-params``: validate ``params.yaml`` before anything else runs.

``always_changed`` in ``dvc.yaml``: it runs on every ``dvc repro``, so a misspelt or unknown key
(``stats.n_resampels``) stops the repro with the one-line error even when no tracked param
changed.  Its output is constant while the file is valid, so it triggers nothing downstream.
It checks everything the pipeline will use: every key and value (finite numbers, the report's
metric and model family), and ``audits`` — present, non-empty, each an ``audits/<name>`` folder
(DVC's ``foreach`` would otherwise fail later with ``[Errno 2]`` or run nothing).

Usage: ``python -m faircode.pipeline.stages.check_params OUT``
"""

from __future__ import annotations

import sys
from pathlib import Path

from faircode.core.config import load_params
from faircode.pipeline.stages import PARAMS, run_stage


def main(argv: list[str]) -> None:
    """Validate ``params.yaml``; write the constant marker ``argv[0]``."""
    out = Path(argv[0])

    def work() -> None:
        load_params(PARAMS, audits_dir=Path("audits"))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("params.yaml: valid\n")

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
