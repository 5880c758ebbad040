"""Stage ``text-train@<audit>``: the systems a text audit trains (its manifest's ``training:``
block, :mod:`faircode.audit.text_training`), fitted on the corpus in ``data/raw/<audit>/`` with
the manifest's ``random_state``, into ``data/text/<audit>/systems/`` (each model's arrays, the
held-out part's scores, ``trained.json``).  An audit without a ``training:`` block gets the
record alone; one without data carries its unavailable note.

Usage: ``python -m faircode.pipeline.stages.text_train AUDIT RAW_DIR OUT_DIR``
"""

from __future__ import annotations

import sys
from pathlib import Path

from faircode.pipeline.stages import audit_argument, carry_unavailable, manifest_path, run_stage


def main(argv: list[str]) -> None:
    """Train the systems of text audit ``argv[0]`` from ``argv[1]`` into ``argv[2]``."""
    audit, raw, out = audit_argument(argv[0]), Path(argv[1]), Path(argv[2])

    def work() -> None:
        if carry_unavailable(raw, out, audit=audit):
            return
        from faircode.audit.text_manifest import load_text_manifest
        from faircode.audit.text_training import read_corpus, save_trained, train_systems

        manifest = load_text_manifest(manifest_path(audit))
        spec = manifest.training
        corpus = read_corpus(spec, raw) if spec is not None else None
        trained = train_systems(spec, corpus, master=manifest.random_state)
        save_trained(trained, out)
        print(f"{audit}: trained {', '.join(trained.models) or 'no system'} into {out}")

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
