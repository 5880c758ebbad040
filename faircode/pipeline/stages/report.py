"""DVC stage ``report``: summary, paper tables, figures, plot data and report.html.

``python -m faircode.pipeline.stages.report --params params.yaml --results results --audits audits``
reads the ``report`` section of params.yaml (``metric``, ``model``; absent means the defaults;
the whole file is validated), its audit lists (the report is of these audits only: a folder
of ``results/`` that another list left behind is not in it) and ``run.jobs`` (the processes
drawing the figures; not a tracked param: the files are the same bytes for any number) and
calls :func:`faircode.report.build.write_report`.  No statistics here.  The page names the
report code that rendered it (:data:`faircode.provenance.state.REPORT_CODE`); the state it
cites is its results' own.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from faircode.core.config import ReportConfig, load_params
from faircode.core.numerics import require
from faircode.pipeline._boundary import run_command
from faircode.provenance.state import REPORT_CODE, params_file_record, provenance
from faircode.report.build import write_report


def main(argv: list[str] | None = None) -> int:
    """Run the stage; return the exit code (2 with one line on bad input)."""
    parser = argparse.ArgumentParser(prog="faircode.pipeline.stages.report", description=__doc__)
    parser.add_argument("--params", default="params.yaml", help="params file (report section)")
    parser.add_argument("--results", default="results", help="results folder")
    parser.add_argument("--audits", default="audits", help="folder of <name>/audit.yaml")
    args = parser.parse_args(argv)

    def body() -> int:  # one line, exit 2 on bad input (and for every other stop: _boundary)
        require()
        params_path = Path(args.params)
        params = load_params(params_path) if params_path.is_file() else None
        config = params.report if params is not None else ReportConfig()
        only = params.every_audit if params is not None else ()
        outputs = write_report(Path(args.results), audits_dir=Path(args.audits), only=only,
                               metric=config.metric, model=config.model,
                               provenance={**provenance(code=REPORT_CODE, numerics=False),
                                           "params_file": params_file_record(params_path)},
                               workers=params.config.jobs if params is not None else 1)
        print(f"report: {outputs.html}")
        return 0

    return run_command(body)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
