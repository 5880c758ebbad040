"""Stage ``text-score@<audit>``: every system of a text audit scores every distinct text once
(:mod:`faircode.audit.text_systems`; a system trained here from the text-train stage's
``SYSTEMS_DIR``), into ``data/text/<audit>/scores/`` (``scores.parquet``, one column per system
in the texts' order, and ``systems.json``: each system's title, package and version).  No
timings in these DVC-hashed outputs.

Usage: ``python -m faircode.pipeline.stages.text_score AUDIT PAYLOADS_DIR SYSTEMS_DIR OUT_DIR``
"""

from __future__ import annotations

import sys
from pathlib import Path

from faircode.pipeline.stages import carry_unavailable, manifest_path, run_stage


def main(argv: list[str]) -> None:
    """Score the payloads of text audit ``argv[0]`` in ``argv[1]`` with the systems of
    ``argv[2]`` into ``argv[3]``."""
    audit, payloads, trained_dir, out = argv[0], Path(argv[1]), Path(argv[2]), Path(argv[3])

    def work() -> None:
        if carry_unavailable(payloads, out, audit=audit):
            return
        from faircode.audit.text_data import load_texts
        from faircode.audit.text_manifest import load_text_manifest
        from faircode.audit.text_systems import save_scores, score_texts
        from faircode.audit.text_training import load_trained

        manifest = load_text_manifest(manifest_path(audit))
        texts = load_texts(payloads)
        scores, systems = score_texts([s.name for s in manifest.systems], texts,
                                      trained=load_trained(trained_dir))
        save_scores(scores, systems, out)
        print(f"{audit}: {len(texts):,} texts scored by {', '.join(systems)} into {out}")

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
