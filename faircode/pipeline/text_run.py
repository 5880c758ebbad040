"""A text audit end to end in one process: what ``faircode run <text audit>`` does.

The same library calls as the DVC stages, in their order, with no DVC and no grid audit's data:
fetch the sentences and the training corpus (:func:`faircode.audit.fetch.fetch`, when they are
not there yet), build the payloads (text-prepare), train the declared systems (text-train),
score every distinct text once per system (text-score), evaluate and write
``<out>/<audit>/`` (evaluate).  On the same inputs and config it writes the numbers the pipeline
writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from faircode.core.config import BenchmarkConfig

__all__ = ["run_text_audit"]


def run_text_audit(path: Path, *, config: BenchmarkConfig, out: Path,
                   obtain: Callable[[Any], None], provenance_record: Mapping[str, Any],
                   say: Callable[[str], None]) -> Path:
    """Run the text audit whose manifest is ``path`` into ``out``; ``obtain(target)`` fetches
    each of its datasets that is not there (the sentences, then the training corpus)."""
    from faircode.audit.text_data import build_payloads
    from faircode.audit.text_manifest import load_text_manifest
    from faircode.audit.text_systems import score_texts
    from faircode.audit.text_training import read_corpus, train_systems
    from faircode.evaluate.text import evaluate_text, write_text_audit

    manifest = load_text_manifest(path)
    for target in (manifest, *manifest.extra_datasets):
        obtain(target)
    payloads = build_payloads(manifest)
    say(f"{manifest.name}: {len(payloads.sentences):,} sentences, {len(payloads.pairs):,} "
        f"changed copies, {len(payloads.texts):,} distinct texts")
    spec = manifest.training
    corpus = read_corpus(spec, spec.dataset.path.parent) if spec is not None else None
    trained = train_systems(spec, corpus, master=manifest.random_state)
    scores, systems = score_texts([s.name for s in manifest.systems], payloads.texts,
                                  trained=trained)
    say(f"{manifest.name}: scored by {', '.join(systems)}")
    results = evaluate_text(manifest, payloads, scores,
                            decision_threshold=config.models.decision_threshold,
                            stats=config.stats, systems=systems, trained=trained)
    return write_text_audit(manifest, payloads, results, systems=systems, config=config,
                            out_dir=out, provenance_record=provenance_record, trained=trained)
