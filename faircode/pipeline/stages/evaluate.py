"""Stage ``evaluate@<audit>``: decisions, metrics, CIs, p- and q-values into ``results/<audit>/``
(the same four CSVs and ``run.json`` as ``faircode run``), plus the DVC metrics summary
``results/metrics/<audit>.json`` and plot data ``results/metrics/<audit>-parity.csv``
(``results/plots/`` belongs to the report stage).

Reads ``models.*``, ``stats.*``, ``run.seeds``, ``run.seed_mode`` (tracked) and ``run.jobs``
(not tracked, changes no number).  Always ``results/<audit>/effects.csv`` (the paired effects);
with ``run.seeds`` > 1 also ``stability.csv``, ``stability_replicates.csv`` and
``effects_stability.csv``.

The predictions are the fit stages' parts, ``PREDICTIONS_DIR/<part>/``
(:data:`faircode.pipeline.stages.PARTS`), merged in grid order.

Usage: ``python -m faircode.pipeline.stages.evaluate AUDIT PREPARED_DIR PREDICTIONS_DIR
RESULTS_DIR``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import load_prepared
from faircode.core.config import load_params
from faircode.core.provenance import provenance
from faircode.evaluate.audit import evaluate_audit
from faircode.evaluate.summary import parity_plot, summary
from faircode.evaluate.write import write_audit
from faircode.grid.predictions import load_predictions, merge_predictions
from faircode.pipeline.stages import PARAMS, PARTS, carry_unavailable, manifest_path, run_stage


def main(argv: list[str]) -> None:
    """Evaluate audit ``argv[0]`` from ``argv[1]`` (prepared) and ``argv[2]`` (predictions)."""
    audit, prepared_dir, predictions_dir, results = (argv[0], Path(argv[1]), Path(argv[2]),
                                                     Path(argv[3]))
    metrics = results / "metrics" / f"{audit}.json"
    plots = results / "metrics" / f"{audit}-parity.csv"

    def work() -> None:
        config = load_params(PARAMS).config
        parts = [predictions_dir / part for part in PARTS]
        metrics.parent.mkdir(parents=True, exist_ok=True)
        plots.parent.mkdir(parents=True, exist_ok=True)
        if carry_unavailable(parts[0], results / audit, audit=audit):
            metrics.write_text(json.dumps({"available": False}) + "\n")
            parity_plot(None).to_csv(plots, index=False)
            return
        data = load_prepared(prepared_dir, manifest=load_manifest(manifest_path(audit)))
        predictions = merge_predictions([load_predictions(part) for part in parts])
        outcome = evaluate_audit(
            data, predictions, decision_threshold=config.decision_threshold, stats=config.stats,
            degenerate=config.degenerate, replicates=config.replicates, jobs=config.jobs)
        folder = write_audit(data, outcome, config=config, out_dir=results,
                             provenance_record=provenance())
        metrics.write_text(json.dumps(summary(outcome), indent=2) + "\n")
        parity_plot(outcome).to_csv(plots, index=False)
        print(f"{audit}: wrote {folder}")

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
