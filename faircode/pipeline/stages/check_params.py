"""Stage ``check-params``: validate ``params.yaml`` before anything else runs.

``always_changed`` in ``dvc.yaml``: it runs on every ``dvc repro``, so a misspelt or unknown key
(``stats.n_resampels``) stops the repro with the one-line error even when no tracked param
changed.  Its output is constant while the file is valid, so it triggers nothing downstream.
It checks everything the pipeline will use: every key and value (finite numbers, the report's
metric and model family); the audit lists (``audits``, ``text_audits``, ``multiclass_audits``)
-- at least one audit between them, each an ``audits/<name>`` folder; and that ``dvc.yaml`` and
``upstream/dvc.yaml`` are the pipeline of those lists
(:func:`faircode.pipeline.dvc_check.check_written_for`: a list changed without ``faircode
pipeline`` is one line naming it, not DVC's ``[Errno 2]`` in a later stage).
A file it refuses during ``dvc exp run`` is put back as it last accepted it
(:mod:`faircode.core.params_file`): DVC rewrites ``params.yaml`` before any stage runs.

Besides the constant marker ``OUT`` it writes ``LISTS`` (``data/audits.txt``), the lists sorted
(:func:`faircode.pipeline.dvc_files.lists_text`): it changes with the lists alone, and the
report, which reports exactly those audits, depends on it.  Nothing is written on a refusal.

Usage: ``python -m faircode.pipeline.stages.check_params OUT [LISTS]``
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from faircode.core.config import Params, load_params
from faircode.core.errors import ConfigError, FaircodeError
from faircode.core.params_file import EXPERIMENT_ENV, remember_valid, restore_refused
from faircode.pipeline.dvc_check import check_written_for
from faircode.pipeline.dvc_files import lists_text
from faircode.pipeline.stages import PARAMS, run_stage


def main(argv: list[str]) -> None:
    """Validate ``params.yaml`` and the pipeline files' lists; write the constant marker
    ``argv[0]`` and, given ``argv[1]``, the lists there."""
    out, lists = Path(argv[0]), (Path(argv[1]) if len(argv) > 1 else None)

    def validate(path: Path) -> Params:
        params = load_params(path, audits_dir=Path("audits"))
        check_written_for(params, root=Path("."))
        return params

    def work() -> None:
        try:
            params = validate(PARAMS)
        except FaircodeError as exc:
            note = restore_refused(PARAMS, baseline=os.environ.get(EXPERIMENT_ENV),
                                   validate=validate)
            if note is None:
                raise
            raise ConfigError(f"{exc}; {note}") from None
        remember_valid(PARAMS)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("params.yaml: valid\n")
        if lists is not None:
            lists.parent.mkdir(parents=True, exist_ok=True)
            lists.write_text(lists_text(params))

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
