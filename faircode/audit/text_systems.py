"""Text systems a text audit may name: a registry of deployed text classifiers, loaded by name.

A text audit's manifest names its systems (``systems: [{name: profanity_check}, ...]``); this
module is the only place that knows how to load one, so a manifest can never make faircode
import code of its choosing.  Each system turns a list of texts into scores in [0, 1], higher
meaning "more flagged" (toxic, negative); the audit decides from the scores at its operating
points.

Design decisions
----------------
* **Names, not import paths.**  :data:`TEXT_SYSTEMS` lists what exists; an unknown name is one
  line naming the known ones.  The packages are imported only when a system is loaded
  (:func:`load_text_system`), never by the manifest reader, so validating a manifest needs
  neither package.
* **Scores, never decisions.**  A system returns its score; every threshold is the audit's
  (declared in the manifest, reviewed in its datasheet), so 0.5 is never hidden in a library.
* **What is recorded.**  Each system names its distribution, whose installed version goes into
  ``run.json``: a different version is a different system.
* **Each distinct text is scored once** (:func:`score_texts`, the text-score stage), and a
  score outside [0, 1] is an error naming the system and the text, never clipped.
* **Systems trained here** (a manifest's ``training:`` block, :mod:`faircode.audit.
  text_training`) are loaded from the text-train stage's folder by the name the manifest gave
  them, after the deployed ones: their record names scikit-learn (and wordllama) and their
  feature map.
* The systems here:

  - ``profanity_check``: ``alt-profanity-check``'s ``predict_prob`` -- a TF-IDF + linear SVM
    calibrated to probabilities, trained on about 200k human-labelled toxic and non-toxic
    comments; the score is its probability of "offensive".
  - ``vader_negative``: VADER (Hutto & Gilbert 2014), a lexicon of human-rated words and
    rules with no learned weights; the score is ``(1 − compound) / 2``, a monotone map of its
    normalised compound sentiment in [−1, 1] onto [0, 1] (0.5 = neutral, higher = more
    negative), so VADER's own "negative" cutoff ``compound <= −0.05`` is ``score >= 0.525``.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from faircode.core.errors import ConfigError, DataError, describe

__all__ = ["TEXT_SYSTEMS", "TextSystem", "load_scores", "load_text_system", "save_scores",
           "score_texts", "system_record"]

if TYPE_CHECKING:
    from faircode.audit.text_training import Trained

Scorer = Callable[[Sequence[str]], NDArray[np.float64]]


@dataclass(frozen=True, slots=True)
class TextSystem:
    """A loaded text system: its name, title, what its score means, its package and scorer."""

    name: str
    title: str
    score_meaning: str
    package: str
    version: str
    score: Scorer


def _profanity_check() -> Scorer:
    import profanity_check

    def score(texts: Sequence[str]) -> NDArray[np.float64]:
        return np.asarray(profanity_check.predict_prob(list(texts)), dtype=np.float64)

    return score


def _vader_negative() -> Scorer:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()

    def score(texts: Sequence[str]) -> NDArray[np.float64]:
        compound = np.fromiter((analyzer.polarity_scores(t)["compound"] for t in texts),
                               dtype=np.float64, count=len(texts))
        return (1.0 - compound) / 2.0

    return score


_REGISTRY: dict[str, tuple[str, str, str, Callable[[], Scorer]]] = {
    "profanity_check": ("alt-profanity-check (TF-IDF + calibrated linear SVM)",
                        "probability that the text is offensive", "alt-profanity-check",
                        _profanity_check),
    "vader_negative": ("VADER sentiment, negative (lexicon and rules)",
                       "(1 - compound) / 2: 0.5 neutral, 1 most negative", "vaderSentiment",
                       _vader_negative),
}

TEXT_SYSTEMS: tuple[str, ...] = tuple(_REGISTRY)
"""The names a text audit's ``systems`` may use."""


_TRAINED_TITLES = {"tfidf": "TF-IDF word 1-2 grams + logistic regression, trained here",
                   "wordllama": "WordLlama static embeddings + logistic regression, trained here"}


def _trained_system(name: str, trained: Trained) -> TextSystem:
    model = trained.models[name]
    embedder = None
    if model.spec.features == "wordllama":
        from faircode.audit.text_training import wordllama_embedder

        embedder = wordllama_embedder()

    def score(texts: Sequence[str]) -> NDArray[np.float64]:
        return model.score(texts, embedder=embedder)

    positive = trained.record.get("corpus", {}).get("positive", "the flagged label")
    return TextSystem(name=name, title=_TRAINED_TITLES[model.spec.features],
                      score_meaning=f"probability of the label {positive!r}",
                      package="scikit-learn", version=importlib.metadata.version("scikit-learn"),
                      score=score)


def load_text_system(name: str, *, trained: Trained | None = None) -> TextSystem:
    """Load the system registered as ``name`` (its package is imported here, not before), or
    the system of that name in ``trained`` (the text-train stage's).

    An unknown name is a :class:`~faircode.core.errors.ConfigError` naming the known ones.
    """
    if trained is not None and name in trained.models:
        return _trained_system(name, trained)
    if not isinstance(name, str) or name not in _REGISTRY:
        known = (*TEXT_SYSTEMS, *(trained.models if trained is not None else ()))
        raise ConfigError(f"text system: expected one of {', '.join(known)}, got "
                          f"{describe(name)}")
    title, meaning, package, make = _REGISTRY[name]
    return TextSystem(name=name, title=title, score_meaning=meaning, package=package,
                      version=importlib.metadata.version(package), score=make())


def system_record(system: TextSystem) -> dict[str, str]:
    """What ``run.json`` records of a system."""
    return {"title": system.title, "score": system.score_meaning, "package": system.package,
            "version": system.version}


def score_texts(names: Sequence[str], texts: Sequence[str], *, trained: Trained | None = None
                ) -> tuple[dict[str, NDArray[np.float64]], dict[str, dict[str, str]]]:
    """Every system of ``names`` scores every text once: ``(name -> scores, name -> record)``;
    a name of ``trained`` is that trained system.

    A score that is not finite or not in [0, 1] is a :class:`~faircode.core.errors.DataError`
    naming the system and the text (a system must keep to its declared scale).
    """
    scores: dict[str, NDArray[np.float64]] = {}
    records: dict[str, dict[str, str]] = {}
    for name in names:
        system = load_text_system(name, trained=trained)
        values = np.asarray(system.score(list(texts)), dtype=np.float64)
        if values.shape != (len(texts),):
            raise DataError(f"text system {name}: expected {len(texts)} scores, got shape "
                            f"{values.shape}")
        bad = np.flatnonzero(~(np.isfinite(values) & (values >= 0) & (values <= 1)))
        if bad.size:
            raise DataError(f"text system {name}: expected scores in [0, 1], got "
                            f"{values[bad[0]]!r} for {describe(texts[bad[0]])}")
        scores[name], records[name] = values, system_record(system)
    return scores, records


def save_scores(scores: Mapping[str, NDArray[np.float64]],
                records: Mapping[str, Mapping[str, str]], folder: Path) -> None:
    """Write ``scores.parquet`` (one column per system) and ``systems.json`` into ``folder``."""
    import pandas as pd

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    pd.DataFrame(dict(scores)).to_parquet(folder / "scores.parquet", index=False)
    (folder / "systems.json").write_text(json.dumps({k: dict(v) for k, v in records.items()},
                                                    indent=2) + "\n")


def load_scores(folder: Path, *, n_texts: int
                ) -> tuple[dict[str, NDArray[np.float64]], dict[str, dict[str, str]]]:
    """Read what :func:`save_scores` wrote; a row count other than ``n_texts`` is an error."""
    import pandas as pd

    try:
        frame = pd.read_parquet(folder / "scores.parquet")
        records = json.loads((folder / "systems.json").read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"{folder}: expected the text-score stage's scores, got "
                        f"{type(exc).__name__}: {exc}") from None
    if len(frame) != n_texts:
        raise DataError(f"{folder / 'scores.parquet'}: expected {n_texts} rows (one per text "
                        f"of the payloads), got {len(frame)}")
    return {str(c): frame[c].to_numpy(dtype=np.float64) for c in frame.columns}, records
