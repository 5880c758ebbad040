"""Stage ``fetch@<audit>`` (and ``text-fetch@<audit>`` of a text audit): the raw file into
``data/raw/<audit>/`` (sha256-verified).

Fetches from the mirrors of ``FAIRCODE_DATA_MIRROR``; when that is unset, from
``<project>/../shared/datasets`` and ``.../datasets-extra``
(:func:`faircode.audit.fetch.default_mirror`,
which resolves the project from outside ``.dvc/tmp/exps/``: experiments run in a copy there).  An
audit whose data cannot be had gets ``data/raw/<audit>/unavailable.json`` and the repro goes on.
A manifest's ``extra_datasets`` (a text audit's training corpus) are fetched with its raw file,
into the same folder; any of them unavailable makes the audit unavailable.

Usage: ``python -m faircode.pipeline.stages.fetch AUDIT``
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from faircode.audit.fetch import (
    MIRROR_ENV,
    default_mirror,
    fetch,
    mirror_dirs,
    unavailable_message,
)
from faircode.audit.kinds import load_any_manifest
from faircode.core.errors import DataUnavailableError
from faircode.pipeline.stages import audit_argument, manifest_path, run_stage, write_unavailable


def main(argv: list[str]) -> None:
    """Fetch the raw file of audit ``argv[0]`` or write its unavailable note."""
    audit = audit_argument(argv[0])

    def work() -> None:
        manifest = load_any_manifest(manifest_path(audit))  # of any task kind
        env = os.environ.get(MIRROR_ENV) or default_mirror(Path.cwd())
        for target in (manifest, *getattr(manifest, "extra_datasets", ())):
            try:
                result = fetch(target, mirrors=mirror_dirs(None, env))
            except DataUnavailableError as exc:
                print(f"skipped: {exc}")  # the note says how to obtain it, not why it failed
                write_unavailable(manifest.dataset.path.parent, audit=audit,
                                  message=unavailable_message(target))
                return
            print(result.line(manifest.name))

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
