"""Stage ``evaluate@<audit>``: decisions, metrics, CIs, p- and q-values into ``results/<audit>/``
(the same four CSVs and ``run.json`` as ``faircode run``, plus ``curves.csv``), the DVC metrics
headline ``results/metrics/<audit>.json``, the full set ``results/metrics/full/<audit>.json``,
the strategy-plot data
``results/metrics/<audit>-strategies.json`` (:mod:`faircode.evaluate.summary`) and
``results/curves/<audit>.csv`` (the parity gap of S0-S2 against threshold).

Reads ``models.*``, ``stats.*``, ``degenerate.*``, ``verdicts.*``, ``curves.*``, ``run.seeds``,
``run.seed_mode`` (tracked) and ``run.jobs`` (not tracked, changes no number).  Always
``results/<audit>/effects.csv`` (the paired effects) and ``curves.csv``; with ``run.seeds`` > 1
also ``stability.csv``, ``stability_replicates.csv`` and ``effects_stability.csv``.

The predictions are the fit stages' parts, ``PREDICTIONS_DIR/<part>/``
(:data:`faircode.pipeline.stages.PARTS`), merged in grid order; their seconds for ``run.json``
come from ``PREDICTIONS_DIR/<part>.seconds.json`` when present (not a dep: no number depends on
them, so a re-fit that only took another time re-runs nothing here).

In a sweep every stage re-runs, so a stage does only what its inputs need:

* an audit without data carries its note forward and writes ``{audit: {"available": false}}``,
  an empty strategy plot and a header-only curve file, importing
  nothing numerical (numpy, pandas and the statistics are imported only to evaluate);
* an audit whose ``results/<audit>/run.json`` records the content address of this run's inputs
  (:mod:`faircode.evaluate.reuse`: e.g. a ``base_rate`` audit under a new
  ``models.decision_threshold``) keeps its tables and refreshes ``run.json``'s config only.

Usage: ``python -m faircode.pipeline.stages.evaluate AUDIT PREPARED_DIR PREDICTIONS_DIR
RESULTS_DIR``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faircode.core.config import BenchmarkConfig, load_params
from faircode.pipeline.stages import (
    PARAMS,
    PARTS,
    audit_argument,
    carry_unavailable,
    manifest_path,
    run_stage,
)

if TYPE_CHECKING:
    from faircode.audit.manifest import Manifest

EMPTY_PLOT = "[]\n"
"""``strategy_plot(None)`` as JSON (tests/test_stages.py checks it), written without pandas."""
CURVE_HEADER = ("threshold,S0 logistic_regression,S0 random_forest,S0 gradient_boosting,"
                "S1 logistic_regression,S1 random_forest,S1 gradient_boosting,"
                "S2 logistic_regression,S2 random_forest,S2 gradient_boosting\n")
"""``curve_plot(None)`` as CSV, likewise."""
UNAVAILABLE_HEADLINE = {"attr": None,
                        "dp": {"S0": None, "S1": None, "S2": None, "S3": None, "S4": None}}
"""``unavailable_headline()`` (tests/test_stages.py checks it), written without pandas."""


def main(argv: list[str]) -> None:
    """Evaluate audit ``argv[0]`` from ``argv[1]`` (prepared) and ``argv[2]`` (predictions)."""
    audit, prepared_dir, predictions_dir, results = (audit_argument(argv[0]), Path(argv[1]),
                                                     Path(argv[2]),
                                                     Path(argv[3]))
    metrics = results / "metrics" / f"{audit}.json"
    full = results / "metrics" / "full" / f"{audit}.json"
    plots = results / "metrics" / f"{audit}-strategies.json"
    curves = results / "curves" / f"{audit}.csv"

    def work() -> None:
        config = load_params(PARAMS).config
        parts = [predictions_dir / part for part in PARTS]
        for path in (metrics, full, plots, curves):
            path.parent.mkdir(parents=True, exist_ok=True)
        if carry_unavailable(parts[0], results / audit, audit=audit):
            metrics.write_text(json.dumps(UNAVAILABLE_HEADLINE) + "\n")
            full.write_text(json.dumps({audit: {"available": False}}) + "\n")
            plots.write_text(EMPTY_PLOT)
            curves.write_text(CURVE_HEADER)
            return
        evaluate(audit, prepared_dir, parts, results, config=config,
                 views=(metrics, full, plots, curves))

    run_stage(work)


def evaluate(audit: str, prepared_dir: Path, parts: list[Path], results: Path, *,
             config: BenchmarkConfig, views: tuple[Path, Path, Path, Path]) -> None:
    """Evaluate and write one available audit, unless its results are those of the same inputs
    (:mod:`faircode.evaluate.reuse`); the numerical imports happen past that check."""
    from faircode.audit.manifest import load_manifest
    from faircode.core.provenance import provenance, with_fit_numerics
    from faircode.evaluate.reuse import KEY, inputs_key, refresh_record, reusable, reuse_enabled

    manifest = load_manifest(manifest_path(audit))
    record = provenance()
    key = inputs_key(manifest, config=config, inputs=[prepared_dir, *parts],
                     versions=record["versions"], numerics=record["numerics"]["configuration"])
    run = reusable(results / audit, key=key, outputs=views) if reuse_enabled() else None
    if run is not None:  # the same predictions' bytes: the fit's kernels are those recorded
        fit = (run.get("numerics") or {}).get("fit") or {}
        refresh_record(results / audit, run, config=config,
                       provenance_record=with_fit_numerics(record, fit))
        print(f"{audit}: kept {results / audit}: it holds the results of these inputs "
              f"({KEY} {key[:12]}; this param change does not reach them)")
        return
    _evaluate(audit, prepared_dir, parts, results, manifest=manifest, config=config,
              views=views, provenance_record={**record, KEY: key})


def _evaluate(audit: str, prepared_dir: Path, parts: list[Path], results: Path, *,
              manifest: Manifest, config: BenchmarkConfig,
              views: tuple[Path, Path, Path, Path],
              provenance_record: dict[str, Any]) -> None:
    from faircode.audit.prepared import load_prepared
    from faircode.core.provenance import with_fit_numerics
    from faircode.evaluate.audit import evaluate_audit
    from faircode.evaluate.curves import curve_plot
    from faircode.evaluate.summary import headline, strategy_plot, summary
    from faircode.evaluate.write import write_audit
    from faircode.grid.predictions import load_predictions, merge_predictions, timings_path

    metrics, full, plots, curves = views
    data = load_prepared(prepared_dir, manifest=manifest)
    predictions = merge_predictions([load_predictions(part, timings=timings_path(part))
                                     for part in parts])
    outcome = evaluate_audit(
        data, predictions, decision_threshold=config.decision_threshold, stats=config.stats,
        degenerate=config.degenerate, replicates=config.replicates, jobs=config.jobs,
        curves=config.curves, verdicts=config.verdicts)
    folder = write_audit(data, outcome, config=config, out_dir=results,
                         provenance_record=with_fit_numerics(provenance_record,
                                                             predictions.numerics))
    metrics.write_text(json.dumps(headline(outcome), indent=1) + "\n")
    full.write_text(json.dumps(summary(outcome, audit=audit), indent=2) + "\n")
    plots.write_text(json.dumps(strategy_plot(outcome, audit=audit), indent=1) + "\n")
    curve_plot(outcome.curves).to_csv(curves, index=False)
    print(f"{audit}: wrote {folder}")


if __name__ == "__main__":
    main(sys.argv[1:])
