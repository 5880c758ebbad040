"""Stage ``text-prepare@<audit>``: a text audit's payloads -- its sentences, rendered name
sentences, frames, identity terms and every axis's copies -- as parquet under
``data/text/<audit>/payloads/`` (:func:`faircode.audit.text_data.build_payloads`).

Usage: ``python -m faircode.pipeline.stages.text_prepare AUDIT RAW_DIR OUT_DIR``
"""

from __future__ import annotations

import sys
from pathlib import Path

from faircode.audit.text_data import build_payloads, save_payloads
from faircode.audit.text_manifest import load_text_manifest
from faircode.pipeline.stages import carry_unavailable, manifest_path, run_stage


def main(argv: list[str]) -> None:
    """Build the payloads of text audit ``argv[0]`` from ``argv[1]`` into ``argv[2]``."""
    audit, raw, out = argv[0], Path(argv[1]), Path(argv[2])

    def work() -> None:
        if carry_unavailable(raw, out, audit=audit):
            return
        manifest = load_text_manifest(manifest_path(audit))
        payloads = build_payloads(manifest, path=raw / manifest.dataset.path.name)
        save_payloads(payloads, out)
        print(f"{audit}: {len(payloads.sentences):,} sentences, {len(payloads.pairs):,} changed "
              f"copies, {len(payloads.texts):,} distinct texts in {out}")

    run_stage(work)


if __name__ == "__main__":
    main(sys.argv[1:])
