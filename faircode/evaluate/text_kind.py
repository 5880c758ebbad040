"""The ``text`` kind's evaluator: a text audit's payloads and scores into ``results/<audit>/``.

Reads ``<text>/<audit>/payloads``, ``<text>/<audit>/systems`` and ``<text>/<audit>/scores``
(the ``text-prepare``, ``text-train`` and ``text-score`` stages' outputs) and writes the
audit's tables and ``run.json`` (:func:`faircode.evaluate.text.evaluate_text`,
:func:`~faircode.evaluate.text.write_text_audit`).  Reads ``models.decision_threshold``
(every system's global operating point) and ``stats.*``; its ``run.json`` records the config
and the state exactly as every audit's does.  An audit whose scores are the pipeline's
unavailable note gets that note, and nothing numerical is imported for it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from faircode.core.kinds import TEXT
from faircode.core.layout import unavailable_message, write_unavailable
from faircode.evaluate.job import Job, Upstream

if TYPE_CHECKING:
    from faircode.core.config import BenchmarkConfig

__all__ = ["EVALUATOR", "TextEvaluator"]


class TextEvaluator:
    """The ``text`` kind's :class:`~faircode.evaluate.job.Evaluator`."""

    def settle(self, audit: str, *, manifest: Path, upstream: Upstream, results: Path,
               config: BenchmarkConfig, say: Callable[[str], None]) -> Job | None:
        """Carry the scores' unavailable note into ``results/<audit>``; else the job."""
        folder = upstream.text / audit
        payloads, systems, scores = folder / "payloads", folder / "systems", folder / "scores"
        message = unavailable_message(scores)
        if message is None:
            return Job(TEXT.name, audit, results, manifest, (payloads, systems, scores))
        write_unavailable(results / audit, audit=audit, message=message)
        say(f"skipped: {message}")
        return None

    def run(self, job: Job, *, config: BenchmarkConfig) -> Path:
        """Evaluate and write one text audit (in this process or a worker)."""
        from faircode.audit.text_data import load_payloads
        from faircode.audit.text_manifest import load_text_manifest
        from faircode.audit.text_systems import load_scores
        from faircode.audit.text_training import load_trained
        from faircode.evaluate.text import evaluate_text, write_text_audit
        from faircode.provenance.state import provenance

        payloads_dir, systems_dir, scores_dir = job.inputs
        manifest = load_text_manifest(job.manifest)
        payloads = load_payloads(payloads_dir)
        trained = load_trained(systems_dir)
        scores, systems = load_scores(scores_dir, n_texts=len(payloads.texts))
        outcome = evaluate_text(manifest, payloads, scores,
                                decision_threshold=config.models.decision_threshold,
                                stats=config.stats, systems=systems, trained=trained)
        return write_text_audit(manifest, payloads, outcome, systems=systems, config=config,
                                out_dir=job.results, provenance_record=provenance(),
                                trained=trained)


EVALUATOR = TextEvaluator()
"""The ``text`` kind's entry of :data:`faircode.evaluate.kinds.EVALUATORS`."""
