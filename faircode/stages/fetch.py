"""Stage ``fetch@<audit>``: the raw file into ``data/raw/<audit>/`` (sha256-verified).

Runs ``faircode data fetch <audit>``, which reads ``FAIRCODE_DATA_MIRROR`` itself; when that is
unset this stage sets it to ``<project>/../shared/datasets`` and ``.../datasets-extra``
(absolute, ``os.pathsep``-joined), resolving the project from outside ``.dvc/tmp/exps/``
(experiments run in a copy there).  An audit whose data
cannot be had gets ``data/raw/<audit>/unavailable.json`` and the repro goes on.

Usage: ``python -m faircode.stages.fetch AUDIT``
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from faircode.cli import MIRROR_ENV
from faircode.cli import main as cli_main
from faircode.fetch import unavailable_message
from faircode.manifest import load_manifest
from faircode.stages import manifest_path, run_stage, write_unavailable

MIRROR_FOLDERS = ("datasets", "datasets-extra")


def default_mirror(cwd: Path) -> str:
    """``<project>/../shared/{datasets,datasets-extra}`` (``os.pathsep``-joined) for the project
    that holds ``cwd`` (or its experiment copy)."""
    parts = cwd.resolve().parts
    for i in range(len(parts) - 2):
        if parts[i:i + 3] == (".dvc", "tmp", "exps"):
            cwd = Path(*parts[:i])
            break
    shared = cwd.resolve().parent / "shared"
    return os.pathsep.join(str((shared / name).resolve()) for name in MIRROR_FOLDERS)


def main(argv: list[str]) -> None:
    """Fetch the raw file of audit ``argv[0]`` or write its unavailable note."""
    audit = argv[0]

    def work() -> None:
        manifest = load_manifest(manifest_path(audit))
        os.environ.setdefault(MIRROR_ENV, default_mirror(Path.cwd()))
        code = cli_main(["data", "fetch", audit, "--audits", "audits"])
        if code != 0:
            sys.exit(code)
        if not manifest.dataset.path.is_file():
            write_unavailable(manifest.dataset.path.parent, audit=audit,
                              message=unavailable_message(manifest))

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
