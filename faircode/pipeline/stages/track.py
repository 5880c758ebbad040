"""Stage ``track``: sync ``results/`` into MLflow (:func:`faircode.record.tracking.sync_results`).

Gathers what the library takes explicitly: the project root (``$DVC_ROOT`` inside DVC, which is
the real project even in an experiment's temporary copy, else the working directory), the store
(``$MLFLOW_TRACKING_URI`` or ``sqlite:///<root>/mlflow.db``), the freeze record whose results
these are (it names the parent), ``$DVC_EXP_NAME``/``$DVC_EXP_BASELINE_REV``, the package
versions, and ``params.yaml`` minus ``run`` (worker count changes no number).  The state's
identity is not gathered here: the parent carries the results' own (their ``run.json``), never
the commit or ``dvc.lock`` of the moment of the sync.  The line printed ends with the runs
table's address (MLflow 3.17 opens an experiment on its GenAI overview unless the address says
``workflowType=machine_learning``; no experiment tag changes that).  Exit codes: 0 logged or
already logged, 2 bad results, 3 tracking failed (one line; results intact).  As a DVC stage a
tracking failure exits 0 unless ``--strict``: a failed stage would discard a ``dvc exp run``'s
results, and the next sync logs the missing state anyway.  Usage:
``python -m faircode.pipeline.stages.track [--strict] [RESULTS]``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

EXIT_TRACKING = 3


def track(results: Path, *, root: Path, env: Mapping[str, str], tracking_uri: str | None = None,
          experiment: str = "faircode", config: Mapping[str, Any] | None = None) -> int:
    """Gather the pipeline state, sync it, print one line; return the exit code (0 or 3)."""
    from faircode.provenance.state import provenance
    from faircode.record.freeze import matching_freeze
    from faircode.record.tracking import (
        SyncContext,
        TrackingError,
        default_tracking_uri,
        runs_url,
        sync_results,
    )

    for key, value in (("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2"), ("MLFLOW_DISABLE_TELEMETRY",
                       "true"), ("MLFLOW_HTTP_REQUEST_TIMEOUT", "30"),
                       ("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true"),
                       ("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")):
        # a dead server fails in seconds, not minutes; set_terminated neither prints two lines
        # per child run nor fetches the run (one extra request per child over HTTP) for them;
        # reading the base parent's children.json draws no progress bar
        os.environ.setdefault(key, value)
    uri = tracking_uri or env.get("MLFLOW_TRACKING_URI") or default_tracking_uri(root)
    context = SyncContext(
        freeze_name=matching_freeze(root, results) if results.is_dir() else None,
        dvc_exp_name=env.get("DVC_EXP_NAME"), dvc_exp_baseline=env.get("DVC_EXP_BASELINE_REV"),
        versions=provenance(repo=root, numerics=False)["versions"])
    local = None if "://" in uri.removeprefix("sqlite:///") else (root / "mlartifacts").as_uri()
    try:
        done = sync_results(results, tracking_uri=uri, experiment=experiment, config=config,
                            context=context, artifact_location=local)
    except TrackingError as exc:
        print(f"tracking failed: {exc}; results in {results} are intact; re-sync with: "
              f"faircode track --results {results} --tracking-uri {uri}", file=sys.stderr)
        return EXIT_TRACKING
    server = uri if uri.startswith(("http://", "https://")) else "http://127.0.0.1:5000"
    browse = "" if server == uri else f"`mlflow ui --backend-store-uri {uri}`, then "
    shared = (f" ({done.children_shared} shared with parent {done.base_run_id})"
              if done.children_shared else "")
    print(f"tracking {done.status}: {done.children_logged} of {done.children_total} child runs"
          f"{shared} in {done.seconds:.1f}s, parent {done.parent_run_id} (experiment "
          f"{experiment}, id {done.experiment_id}, {uri})"
          + (f"; unavailable: {', '.join(done.skipped)}" if done.skipped else "")
          + f"; runs table: {browse}{runs_url(server, done.experiment_id)}")
    return 0


def main(argv: list[str]) -> int:
    """DVC entry point: ``[--strict] [RESULTS]``, config from ``params.yaml`` (if present)."""
    from faircode.core.config import config_record, load_params
    from faircode.pipeline._boundary import run_command

    strict = "--strict" in argv
    results = Path(([a for a in argv if a != "--strict"] or ["results"])[0])
    params = Path("params.yaml")

    def body() -> int:  # bad results: one line, exit 2 (every other stop: _boundary)
        config = None
        if params.is_file():  # validated like every stage; the worker count changes no number
            loaded = load_params(params)
            config = {"audits": list(loaded.audits),
                      **{k: v for k, v in config_record(loaded.config).items() if k != "jobs"},
                      "report": {"metric": loaded.report.metric, "model": loaded.report.model}}
        code = track(results, root=Path(os.environ.get("DVC_ROOT") or Path.cwd()),
                     env=os.environ, config=config)
        return code if strict or code != EXIT_TRACKING else 0

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
