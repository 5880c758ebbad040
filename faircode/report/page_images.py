"""The report page's embedded images: each figure's PNG quantised to 128 colours, base64.

Encoding is most of the page's time (PIL's median cut and an optimised PNG: about 0.2 s a
figure, 44 figures at K = 5), and a sweep value redraws only the figures whose inputs moved
(:mod:`faircode.report.figure_reuse`).  :func:`page_images` therefore carries an image over
from the page it replaces when that page embeds one made from the same PNG bytes, and encodes
the rest on the report's workers.

Design decisions
----------------
* **Keyed by the PNG's bytes.**  Every ``<img>`` of the page names the sha256 of the file it was
  made from (``data-png-sha256``); :func:`inline_png` is a function of those bytes alone (no
  date, fixed quantiser and encoder), so a carried-over image is the image that encoding would
  give, and the page is the same bytes with or without the previous one (tests/test_report.py).
* **Only the page being replaced**: the previous ``report.html`` beside it (``persist: true`` in
  ``dvc.yaml``, so DVC leaves it in place while the stage runs).  A missing, unreadable or foreign
  page is a miss; an image it does not hold is encoded.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
from collections.abc import Sequence
from pathlib import Path

from faircode.report.drawing import on_workers

__all__ = ["SHA_ATTRIBUTE", "inline_png", "page_images", "previous_images"]

SHA_ATTRIBUTE = "data-png-sha256"
"""The ``<img>`` attribute naming the sha256 of the PNG file the embedded image was made from."""
_EMBEDDED = re.compile(SHA_ATTRIBUTE + r'="([0-9a-f]{64})" src="data:image/png;base64,'
                       r'([A-Za-z0-9+/=]+)"')


def inline_png(path: Path) -> str:
    """The PNG at ``path`` quantised to 128 colours, base64 (deterministic for equal bytes)."""
    from PIL import Image

    with Image.open(path) as image:
        small = image.convert("RGB").quantize(128, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    small.save(buffer, format="PNG", optimize=True)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def previous_images(page: Path) -> dict[str, str]:
    """PNG sha256 -> embedded image of the page at ``page``; empty when there is none."""
    try:
        text = page.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return dict(_EMBEDDED.findall(text))


def page_images(pngs: Sequence[Path], *, previous: Path, workers: int
                ) -> dict[Path, tuple[str, str]]:
    """PNG path -> (its sha256, its embedded image) for every file of ``pngs``: carried over
    from the page at ``previous`` where it embeds the same bytes' image, the others encoded on
    ``workers`` processes."""
    digests = {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in pngs}
    held = previous_images(previous)
    todo = sorted({path for path, sha in digests.items() if sha not in held})
    held.update(zip((digests[p] for p in todo), on_workers(inline_png, todo, workers),
                    strict=True))
    return {path: (sha, held[sha]) for path, sha in digests.items()}
