"""Stage ``text-evaluate@<audit>``: a text audit's tables and ``run.json`` into
``results/<audit>/`` (:func:`faircode.evaluate.text.evaluate_text`).

Reads ``models.decision_threshold`` (every system's global operating point) and ``stats.*``;
its ``run.json`` records the config and the state exactly as every audit's ``evaluate`` does, so
the results of one state share one identity (freeze, report, MLflow parent) -- which is why the
stage lists the result params and code of that identity in ``dvc.yaml``.

Usage: ``python -m faircode.pipeline.stages.text_evaluate AUDIT PAYLOADS_DIR SCORES_DIR RESULTS``
"""

from __future__ import annotations

import sys
from pathlib import Path

from faircode.core.config import load_params
from faircode.pipeline.stages import PARAMS, carry_unavailable, manifest_path, run_stage


def main(argv: list[str]) -> None:
    """Evaluate text audit ``argv[0]`` from ``argv[1]`` (payloads) and ``argv[2]`` (scores)."""
    audit, payloads_dir, scores_dir, results = (argv[0], Path(argv[1]), Path(argv[2]),
                                                Path(argv[3]))

    def work() -> None:
        config = load_params(PARAMS).config
        if carry_unavailable(scores_dir, results / audit, audit=audit):
            return
        from faircode.audit.text_data import load_payloads
        from faircode.audit.text_manifest import load_text_manifest
        from faircode.audit.text_systems import load_scores
        from faircode.core.provenance import provenance
        from faircode.evaluate.text import evaluate_text, write_text_audit

        manifest = load_text_manifest(manifest_path(audit))
        payloads = load_payloads(payloads_dir)
        scores, systems = load_scores(scores_dir, n_texts=len(payloads.texts))
        outcome = evaluate_text(manifest, payloads, scores,
                                decision_threshold=config.decision_threshold,
                                stats=config.stats)
        folder = write_text_audit(manifest, payloads, outcome, systems=systems, config=config,
                                  out_dir=results, provenance_record=provenance())
        print(f"{audit}: wrote {folder}")

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
