"""Stage ``check-params``: validate ``params.yaml`` before anything else runs.

``always_changed`` in ``dvc.yaml``: it runs on every ``dvc repro``, so a misspelt or unknown key
(``stats.n_resampels``) stops the repro with the one-line error even when no tracked param
changed.  Its output is constant while the file is valid, so it triggers nothing downstream.
It checks everything the pipeline will use: every key and value (finite numbers, the report's
metric and model family), and ``audits`` — present, non-empty, each an ``audits/<name>`` folder
(DVC's ``foreach`` would otherwise fail later with ``[Errno 2]`` or run nothing).  A file it
refuses during ``dvc exp run`` is put back as it last accepted it
(:mod:`faircode.core.params_file`): DVC rewrites ``params.yaml`` before any stage runs.

Usage: ``python -m faircode.pipeline.stages.check_params OUT``
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from faircode.core.config import load_params
from faircode.core.errors import ConfigError, FaircodeError
from faircode.core.params_file import EXPERIMENT_ENV, remember_valid, restore_refused
from faircode.pipeline.stages import PARAMS, run_stage


def main(argv: list[str]) -> None:
    """Validate ``params.yaml``; write the constant marker ``argv[0]``."""
    out = Path(argv[0])

    def validate(path: Path) -> None:
        load_params(path, audits_dir=Path("audits"))

    def work() -> None:
        try:
            validate(PARAMS)
        except FaircodeError as exc:
            note = restore_refused(PARAMS, baseline=os.environ.get(EXPERIMENT_ENV),
                                   validate=validate)
            if note is None:
                raise
            raise ConfigError(f"{exc}; {note}") from None
        remember_valid(PARAMS)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("params.yaml: valid\n")

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
