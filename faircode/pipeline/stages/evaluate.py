"""Stage ``evaluate``: for every audit of ``params.yaml``, decisions, metrics, CIs, p- and q-values
into ``results/<audit>/`` (the same four CSVs and ``run.json`` as ``faircode run``, plus
``curves.csv``), the DVC metrics
headline ``results/metrics/<audit>.json``, the full set ``results/metrics/full/<audit>.json``,
the strategy-plot data
``results/metrics/<audit>-strategies.json`` (:mod:`faircode.evaluate.summary`) and
``results/curves/<audit>.csv`` (the parity gap of S0-S2 against threshold); and for every text
audit (``text_audits``) its tables and ``run.json`` (:func:`faircode.evaluate.text.evaluate_text`
from ``TEXT_ROOT/<audit>/payloads`` and ``.../scores``).

Reads ``models.*``, ``stats.*``, ``degenerate.*``, ``verdicts.*``, ``curves.*``, ``run.seeds``,
``run.seed_mode`` (tracked) and ``run.jobs`` (not tracked, changes no number).  Always
``results/<audit>/effects.csv`` (the paired effects) and ``curves.csv``; with ``run.seeds`` > 1
also ``stability.csv``, ``stability_replicates.csv`` and ``effects_stability.csv``.  A text
audit reads ``models.decision_threshold`` (every system's global operating point) and
``stats.*``; its ``run.json`` records the config and the state exactly as every audit's does, so
the results of one state share one identity (freeze, report, MLflow parent).

One stage over all audits, not one per audit: DVC rewrites the whole ``dvc.lock`` after every
stage it runs (about 3.5 s for the K = 5 lock), so a sweep value paid that once per audit; one
process also imports the numerical stack once.  Each audit is its task kind's
(:mod:`faircode.core.kinds`: the ``params.yaml`` list that names it), and its kind's evaluator
(:mod:`faircode.evaluate.kinds`; the grid's :mod:`faircode.evaluate.binary_kind`, the text
audits' :mod:`faircode.evaluate.text_kind`) settles it first: an audit without data gets its
note (importing nothing numerical), an audit whose results are those of the same inputs keeps
them.  The others -- of every kind alike -- are evaluated ``run.jobs`` at a time, one worker
process each (an audit's evaluation is largely serial), longest first by the seconds their
last evaluation took (``run.json``; an audit without a record first), or -- one audit or one
worker -- in this process on ``run.jobs`` workers.  No number depends on the worker count or
the order.  (A text audit was a stage of its own, run after this one: ~10 s on one core while
the other idled, and one more lock rewrite.)

The predictions are the fit stages' parts, ``PREDICTIONS_ROOT/<audit>/<part>/``
(:data:`faircode.pipeline.stages.PARTS`), merged in grid order.

Usage: ``python -m faircode.pipeline.stages.evaluate PREPARED_ROOT PREDICTIONS_ROOT TEXT_ROOT
RESULTS_DIR`` (``data/prepared data/predictions data/text results``; the audits are
``params.yaml``'s, each name checked safe when it is loaded).
"""

from __future__ import annotations

import math
import multiprocessing
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from faircode.core.config import BenchmarkConfig, load_params
from faircode.core.kinds import TASK_KINDS, task_kind
from faircode.evaluate.job import Job, Upstream
from faircode.evaluate.kinds import evaluator
from faircode.pipeline.stages import PARAMS, PARTS, manifest_path, run_stage


def main(argv: list[str]) -> None:
    """Evaluate every audit of ``params.yaml`` from ``argv[0]/<audit>`` (prepared) and
    ``argv[1]/<audit>`` (predictions), every text audit from ``argv[2]/<audit>``, into
    ``argv[3]``."""
    if len(argv) != 4:
        print("usage: python -m faircode.pipeline.stages.evaluate PREPARED_ROOT PREDICTIONS_ROOT "
              "TEXT_ROOT RESULTS_DIR", file=sys.stderr)
        sys.exit(2)
    prepared, predictions, text, results = (Path(a) for a in argv)

    def work() -> None:
        params = load_params(PARAMS)
        upstream = Upstream(prepared, predictions, text, parts=tuple(PARTS))
        jobs = [job for kind in TASK_KINDS for audit in getattr(params, kind.params_key)
                if (job := evaluator(kind).settle(
                    audit, manifest=manifest_path(audit), upstream=upstream, results=results,
                    config=params.config, say=print)) is not None]
        run_jobs(jobs, config=params.config)

    run_stage(work)


def last_seconds(job: Job) -> float:
    """The seconds the audit's last evaluation took (``seconds.evaluate`` of the timings beside
    its folder, :func:`faircode.evaluate.write.read_timings`); infinite without a record (a new
    audit, a text audit, a clone whose results came from git), so it is started first."""
    from faircode.evaluate.write import read_timings  # pandas: only once there is a job

    try:
        return float(read_timings(job.results / job.audit)["seconds"]["evaluate"])
    except (ValueError, TypeError, KeyError):
        return math.inf


def run_jobs(jobs: Sequence[Job], *, config: BenchmarkConfig) -> None:
    """Evaluate ``jobs``: one after the other on ``config.jobs`` workers each, or -- several
    audits and workers -- that many audits at a time on one worker each, longest first
    (:func:`last_seconds`; an audit's evaluation is largely serial; no number depends on the
    worker count or the order)."""
    order = sorted(jobs, key=last_seconds, reverse=True)  # stable: params.yaml order on ties
    workers = min(config.jobs, len(order))
    if workers <= 1:
        for job in order:
            _run(job, config=config)
        return
    single = config.with_params({"run.jobs": 1})
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for done in [pool.submit(_run, job, config=single) for job in order]:
            done.result()  # the first failure is raised (the boundary words it in one line)


def _run(job: Job, *, config: BenchmarkConfig) -> None:
    """Evaluate ``job`` with its kind's evaluator (in this process or a worker)."""
    folder = evaluator(task_kind(job.kind)).run(job, config=config)
    print(f"{job.audit}: wrote {folder}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
