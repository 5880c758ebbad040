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
process also imports the numerical stack once.  Audits without data and audits whose results
are those of the same inputs are settled first; the others -- grid and text audits alike -- are
evaluated ``run.jobs`` at a time, one worker process each (an audit's evaluation is largely
serial), longest first by the seconds their last evaluation took (``run.json``; an audit without
a record first), or -- one audit or one worker -- in this process on ``run.jobs`` workers.  No
number depends on the worker count or the order.  (A text audit was a stage of its own, run
after this one: ~10 s on one core while the other idled, and one more lock rewrite.)

The predictions are the fit stages' parts, ``PREDICTIONS_ROOT/<audit>/<part>/``
(:data:`faircode.pipeline.stages.PARTS`), merged in grid order; their seconds for ``run.json``
come from ``PREDICTIONS_ROOT/<audit>/<part>.seconds.json`` when present (not a dep: no number
depends on them, so a re-fit that only took another time re-runs nothing here).

In a sweep the stage re-runs every audit, so it does for each only what its inputs need:

* an audit without data carries its note forward and writes ``{audit: {"available": false}}``,
  an empty strategy plot and a header-only curve file, importing
  nothing numerical (numpy, pandas and the statistics are imported only to evaluate);
* an audit whose ``results/<audit>/run.json`` records the content address of this run's inputs
  (:mod:`faircode.evaluate.reuse`: e.g. a ``base_rate`` audit under a new
  ``models.decision_threshold``) keeps its tables and refreshes ``run.json``'s config only.

Usage: ``python -m faircode.pipeline.stages.evaluate PREPARED_ROOT PREDICTIONS_ROOT TEXT_ROOT
RESULTS_DIR`` (``data/prepared data/predictions data/text results``; the audits are
``params.yaml``'s, each name checked safe when it is loaded).
"""

from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faircode.core.cells import CUTOFF_STRATEGIES, STRATEGY_TABLE, ModelFamily, strategy_code
from faircode.core.config import BenchmarkConfig, load_params
from faircode.pipeline.stages import PARAMS, PARTS, carry_unavailable, manifest_path, run_stage

EMPTY_PLOT = "[]\n"
"""``strategy_plot(None)`` as JSON (tests/test_stages.py checks it), written without pandas."""
CURVE_HEADER = ",".join(["threshold", *(f"{strategy_code(s)} {m.value}"
                                         for s in CUTOFF_STRATEGIES for m in ModelFamily)]) + "\n"
"""``curve_plot(None)`` as CSV, likewise."""
UNAVAILABLE_HEADLINE = {"attr": None, "dp": {s.code: None for s in STRATEGY_TABLE}}
"""``unavailable_headline()`` (tests/test_stages.py checks it), written without pandas."""


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
        jobs: list[Job | TextJob] = [
            job for audit in params.audits
            if (job := settle(audit, prepared / audit, predictions / audit, results,
                              config=params.config)) is not None]
        jobs += [TextJob(audit, text / audit / "payloads", text / audit / "scores", results)
                 for audit in params.text_audits
                 if not carry_unavailable(text / audit / "scores", results / audit, audit=audit)]
        run_jobs(jobs, config=params.config)

    run_stage(work)


@dataclass(frozen=True, slots=True)
class Job:
    """An audit to evaluate: :func:`_evaluate`'s arguments."""

    audit: str
    prepared_dir: Path
    parts: list[Path]
    results: Path
    views: tuple[Path, Path, Path, Path]
    provenance_record: dict[str, Any]


def settle(audit: str, prepared_dir: Path, predictions_dir: Path, results: Path, *,
           config: BenchmarkConfig) -> Job | None:
    """Write an audit without data's note and an audit whose results are those of the same
    inputs (:mod:`faircode.evaluate.reuse`); the :class:`Job` of any other.  The numerical
    imports happen past these checks."""
    views = (results / "metrics" / f"{audit}.json", results / "metrics" / "full" / f"{audit}.json",
             results / "metrics" / f"{audit}-strategies.json", results / "curves" / f"{audit}.csv")
    parts = [predictions_dir / part for part in PARTS]
    for path in views:
        path.parent.mkdir(parents=True, exist_ok=True)
    if carry_unavailable(parts[0], results / audit, audit=audit):
        for path, text in zip(views, (json.dumps(UNAVAILABLE_HEADLINE) + "\n", json.dumps(
                {audit: {"available": False}}) + "\n", EMPTY_PLOT, CURVE_HEADER), strict=True):
            path.write_text(text)
        return None
    from faircode.audit.manifest import load_manifest
    from faircode.evaluate.reuse import KEY, inputs_key, refresh_record, reusable, reuse_enabled
    from faircode.provenance.state import provenance, with_fit_numerics

    manifest = load_manifest(manifest_path(audit))
    record = provenance()
    key = inputs_key(manifest, config=config, inputs=[prepared_dir, *parts],
                     versions=record["versions"], numerics=record["numerics"]["configuration"])
    run = reusable(results / audit, key=key, outputs=views) if reuse_enabled() else None
    if run is None:
        return Job(audit, prepared_dir, parts, results, views, {**record, KEY: key})
    fit = (run.get("numerics") or {}).get("fit") or {}  # the same predictions' bytes
    refresh_record(results / audit, run, config=config,
                   provenance_record=with_fit_numerics(record, fit))
    print(f"{audit}: kept {results / audit}: it holds the results of these inputs "
          f"({KEY} {key[:12]}; this param change does not reach them)")
    return None


@dataclass(frozen=True, slots=True)
class TextJob:
    """A text audit to evaluate: :func:`_evaluate_text`'s arguments."""

    audit: str
    payloads: Path
    scores: Path
    results: Path


def last_seconds(job: Job | TextJob) -> float:
    """The seconds the audit's last evaluation took (``run.json``'s ``seconds.evaluate``);
    infinite without a record (a new audit, a text audit), so it is started first."""
    try:
        run = json.loads((job.results / job.audit / "run.json").read_text(encoding="utf-8"))
        return float(run["seconds"]["evaluate"])
    except (OSError, ValueError, TypeError, KeyError):
        return math.inf


def run_jobs(jobs: Sequence[Job | TextJob], *, config: BenchmarkConfig) -> None:
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
    single = dataclasses.replace(config, jobs=1)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for done in [pool.submit(_run, job, config=single) for job in order]:
            done.result()  # the first failure is raised (the boundary words it in one line)


def _run(job: Job | TextJob, *, config: BenchmarkConfig) -> None:
    if isinstance(job, TextJob):
        _evaluate_text(job, config=config)
    else:
        _evaluate(job, config=config)


def _evaluate_text(job: TextJob, *, config: BenchmarkConfig) -> None:
    """Evaluate and write one text audit (in this process or a worker)."""
    from faircode.audit.text_data import load_payloads
    from faircode.audit.text_manifest import load_text_manifest
    from faircode.audit.text_systems import load_scores
    from faircode.evaluate.text import evaluate_text, write_text_audit
    from faircode.provenance.state import provenance

    manifest = load_text_manifest(manifest_path(job.audit))
    payloads = load_payloads(job.payloads)
    scores, systems = load_scores(job.scores, n_texts=len(payloads.texts))
    outcome = evaluate_text(manifest, payloads, scores,
                            decision_threshold=config.decision_threshold, stats=config.stats)
    folder = write_text_audit(manifest, payloads, outcome, systems=systems, config=config,
                              out_dir=job.results, provenance_record=provenance())
    print(f"{job.audit}: wrote {folder}", flush=True)


def _evaluate(job: Job, *, config: BenchmarkConfig) -> None:
    """Evaluate and write one audit (in this process or a worker)."""
    from faircode.audit.manifest import load_manifest
    from faircode.audit.prepared import load_prepared
    from faircode.evaluate.audit import evaluate_audit
    from faircode.evaluate.curves import curve_plot
    from faircode.evaluate.summary import headline, strategy_plot, summary
    from faircode.evaluate.write import write_audit
    from faircode.grid.predictions import load_predictions, merge_predictions, timings_path
    from faircode.provenance.state import with_fit_numerics

    metrics, full, plots, curves = job.views
    data = load_prepared(job.prepared_dir, manifest=load_manifest(manifest_path(job.audit)))
    predictions = merge_predictions([load_predictions(part, timings=timings_path(part))
                                     for part in job.parts])
    outcome = evaluate_audit(
        data, predictions, decision_threshold=config.decision_threshold, stats=config.stats,
        degenerate=config.degenerate, replicates=config.replicates, jobs=config.jobs,
        curves=config.curves, verdicts=config.verdicts)
    folder = write_audit(data, outcome, config=config, out_dir=job.results,
                         provenance_record=with_fit_numerics(job.provenance_record,
                                                             predictions.numerics))
    metrics.write_text(json.dumps(headline(outcome), indent=1) + "\n")
    full.write_text(json.dumps(summary(outcome, audit=job.audit), indent=2) + "\n")
    plots.write_text(json.dumps(strategy_plot(outcome, audit=job.audit), indent=1) + "\n")
    curve_plot(outcome.curves).to_csv(curves, index=False)
    print(f"{job.audit}: wrote {folder}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
