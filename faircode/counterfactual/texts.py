"""Many texts at once: their counterfactual copies, and the terms each text holds.

General helpers over :func:`faircode.counterfactual.perturb.perturb` for a list of strings (a
text audit's sentences, a practitioner's payloads); they know nothing of audits or models.

Design decisions
----------------
* **One engine call per list.**  :func:`perturb_texts` passes the whole list as one payload, so
  every string is edited by the engine's own rules (whole-word, case-preserving, one pass per
  axis and kind, longest pattern first) and the engine's checks (no axes is an error) hold.  A
  text counts as *changed* exactly when its copy differs from it: a substitution that fires
  always changes the text, because its replacement differs from its pattern case- and
  whitespace-insensitively (:class:`~faircode.counterfactual.perturb.Substitution` refuses
  anything else).
* **Terms are found by the same matcher.**  :func:`mark_terms` replaces every term with a
  numbered marker through :func:`perturb` and reads the markers back, so "which identity term
  does this sentence hold" follows exactly the matching an axis would use (``african american``
  is one term, not ``american``; ``trans`` never matches inside ``transgender``).  The markers
  contain no cased letter, so the engine inserts them as written; a text that already holds a
  marker is refused rather than misread (a :data:`SLOT` is not a marker: a frame can be marked
  again, e.g. a name frame for its terms).
* **Frames.**  The text with every term (and every *blank* pattern, e.g. the names that fill a
  template's name slot) replaced by :data:`SLOT` is the text's *frame*: the sentence pattern an
  audit may treat as its unit of dependence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import NDArray

from faircode.core.errors import describe
from faircode.counterfactual.perturb import (
    AxisSpec,
    PerturbationKind,
    Substitution,
    perturb,
)

__all__ = ["SLOT", "TermMarks", "TextCopies", "mark_terms", "perturb_texts"]

SLOT = "⟦·⟧"
"""What a term or a blank pattern becomes in a frame."""
_OPEN, _CLOSE = "⟦", "⟧"
_MARK = re.compile(r"⟦(\d+)⟧")


@dataclass(frozen=True, slots=True)
class TextCopies:
    """One (axis, kind) applied to a list of texts: every text's copy and whether it changed."""

    axis: str
    kind: PerturbationKind
    texts: tuple[str, ...]
    changed: NDArray[np.bool_]

    def __post_init__(self) -> None:
        if self.changed.shape != (len(self.texts),) or self.changed.dtype != np.bool_:
            raise ValueError(f"TextCopies: changed: expected {len(self.texts)} booleans, got "
                             f"shape {self.changed.shape} dtype {self.changed.dtype}")


def _strings(name: str, texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"{name}: expected a sequence of strings, got {describe(texts)}")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"{name}[{i}]: expected a string, got {describe(text)}")
    return out


def perturb_texts(texts: Sequence[str], axes: Sequence[AxisSpec]) -> tuple[TextCopies, ...]:
    """Apply every axis to every text; one :class:`TextCopies` per (axis, kind), as
    :func:`perturb` orders them (axes in order, explicit before proxy).

    Raises what :func:`perturb` raises for bad axes (none at all included).
    """
    originals = _strings("texts", texts)
    out = []
    for pert in perturb(originals, axes):
        copies = cast(list[str], pert.perturbed)
        changed = np.fromiter((c != o for c, o in zip(copies, originals, strict=True)),
                              dtype=bool, count=len(originals))
        out.append(TextCopies(pert.axis, pert.kind, tuple(copies), changed))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class TermMarks:
    """Which of ``terms`` each text holds (indices into ``terms``, in text order) and each text's
    frame (terms and blanks replaced by :data:`SLOT`)."""

    terms: tuple[str, ...]
    found: tuple[tuple[int, ...], ...]
    frames: tuple[str, ...]
    blanked: NDArray[np.int64]
    """How many blank patterns fired in each text."""


def mark_terms(texts: Sequence[str], terms: Sequence[str], *,
               blanks: Sequence[str] = ()) -> TermMarks:
    """Find ``terms`` in ``texts`` with the perturbation engine's matching; see the module.

    ``terms`` and ``blanks`` must be distinct patterns (case-insensitively, as an axis's
    patterns must be): a duplicate raises :class:`~faircode.core.errors.PerturbationError`.
    """
    originals = _strings("texts", texts)
    wanted, hidden = _strings("terms", terms), _strings("blanks", blanks)
    blank = f"{_OPEN}#{_CLOSE}"
    for i, text in enumerate(originals):
        if blank in text or _MARK.search(text):
            raise ValueError(f"texts[{i}]: expected no term marker ({_OPEN}#{_CLOSE} or "
                             f"{_OPEN}<digits>{_CLOSE}), got {describe(text)}")
    subs = tuple(Substitution(t, f"{_OPEN}{i}{_CLOSE}") for i, t in enumerate(wanted))
    subs += tuple(Substitution(b, blank) for b in hidden)
    if not subs:
        return TermMarks((), tuple(() for _ in originals), tuple(originals),
                         np.zeros(len(originals), dtype=np.int64))
    marked = cast(list[str], perturb(originals, [AxisSpec("terms", subs)])[0].perturbed)
    found = tuple(tuple(int(m) for m in _MARK.findall(text)) for text in marked)
    frames = tuple(_MARK.sub(SLOT, text).replace(blank, SLOT) for text in marked)
    counts = np.fromiter((text.count(blank) for text in marked), dtype=np.int64,
                         count=len(marked))
    return TermMarks(tuple(wanted), found, frames, counts)
