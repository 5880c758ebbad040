"""Text systems trained here: declared in a text audit's manifest, fitted by the text-train stage.

A text audit may declare, beside the deployed systems it loads by name
(:mod:`faircode.audit.text_systems`), systems it **trains** on labelled text of its own choosing
(``training:`` of ``audit.yaml``): a corpus (a ``dataset`` block, fetched and verified as every
raw file is), its held-out part, its text and label columns and the label the systems flag, and
per system a name, a feature map from :data:`FEATURES` and the inverse regularisation ``c`` of a
logistic regression.  :func:`train_systems` fits every declared system on the training part and
scores the held-out part; :func:`save_trained` writes both, :func:`load_trained` reads them back
for scoring (:func:`TrainedModel.score`).

Design decisions
----------------
* **Feature maps by name, never code from a manifest**: ``tfidf`` -- word uni- and bigram
  TF-IDF (``min_df`` 2, sublinear term frequency, vocabulary and idf learnt on the training
  part); ``wordllama`` -- the mean of WordLlama's 256-d static token embeddings
  (``l2_supercat``), read from the weights inside the ``wordllama`` wheel, never downloaded.
* **Score = P(flagged)**: the probability of the declared ``positive`` label, as every system's
  score is "higher means more flagged" -- for the fine-food reviews, "not great".
* **Seeded and bit-identical.**  Each system's seed is ``SeedSequence(random_state,
  spawn_key=(Stream.TEXT, 4, key(name)))`` (its name, never its position), passed to the
  logistic regression; the fitted model is saved as plain arrays (``.npy``) and JSON, never a
  pickle, so two runs with one seed write the same bytes (``tests/test_text_training.py``) and
  loading a model runs no stored code.
* **The corpus is verified where it is read** (its sha256 and its companions'), as every raw file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import NDArray

from faircode.audit._manifest_parse import _parse_dataset
from faircode.audit._manifest_types import DatasetSpec
from faircode.core.digests import sha256_file
from faircode.core.errors import ChecksumError, DataError, DataUnavailableError, ManifestError
from faircode.core.names import is_safe_name
from faircode.core.schema import Checker, Scalar
from faircode.core.seeds import Stream, child_seed

__all__ = ["FEATURES", "HELDOUT", "TRAINED_RECORD", "Corpus", "Trained", "TrainedModel",
           "TrainedSystemSpec", "TrainingSpec", "load_trained", "parse_training", "read_corpus",
           "save_trained", "train_system", "train_systems", "wordllama_embedder"]

Feature = Literal["tfidf", "wordllama"]
FEATURES: tuple[str, ...] = ("tfidf", "wordllama")
"""The feature maps a trained system may declare (module docstring)."""
TRAINED_RECORD = "trained.json"
"""The text-train stage's record of every trained system (and the corpus it learnt from)."""
HELDOUT = "heldout.parquet"
"""The held-out part's labels and every trained system's scores of it."""
_SEED_TABLE = 4
"""Second spawn-key component of a trained system's seed (after :attr:`Stream.TEXT`)."""
_KEYS = {"dataset": True, "test_object": True, "text": True, "label": True, "positive": True,
         "systems": True}
_SYSTEM_KEYS = {"name": True, "features": True, "c": False}
_PACKAGES = {"tfidf": ("scikit-learn",), "wordllama": ("scikit-learn", "wordllama")}


@dataclass(frozen=True, slots=True)
class TrainedSystemSpec:
    """One declared trained system: its name, feature map and regularisation."""

    name: str
    features: Feature
    c: float = 1.0


@dataclass(frozen=True, slots=True)
class TrainingSpec:
    """The ``training:`` block: the corpus (``dataset.object`` its training part, ``test_object``
    its held-out part), its columns, the flagged label and the systems."""

    dataset: DatasetSpec
    test_object: str
    text: str
    label: str
    positive: Scalar
    systems: tuple[TrainedSystemSpec, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.systems)


def parse_training(c: Checker, raw: object, root: Path, *, audit: str,
                   reserved: Sequence[str]) -> TrainingSpec:
    """``training:`` of a text manifest (one-line :class:`ManifestError` naming the key path);
    ``reserved`` are names a trained system may not take (the deployed systems')."""
    data = c.mapping(raw, "training", _KEYS)
    try:
        dataset = _parse_dataset(c, data["dataset"], root, name=audit)
    except ManifestError as exc:  # the dataset parser names its keys from "dataset."
        raise ManifestError(str(exc).replace(f"{c.file}: dataset", f"{c.file}: training.dataset",
                                             1)) from None
    if dataset.object is None:
        raise c.fail("training.dataset.object", "the R object of the training part",
                     None)
    systems: list[TrainedSystemSpec] = []
    raw_systems = data["systems"]
    if not isinstance(raw_systems, list) or not raw_systems:
        raise c.fail("training.systems", "a non-empty list of systems", raw_systems)
    for i, item in enumerate(raw_systems):
        where = f"training.systems[{i}]"
        entry = c.mapping(item, where, _SYSTEM_KEYS)
        name = c.string(entry["name"], f"{where}.name")
        if not is_safe_name(name) or name in reserved or name in (s.name for s in systems):
            raise c.fail(f"{where}.name", "a new safe system name (not a deployed system's, "
                         "not listed twice)", name)
        features = cast(Feature, c.choice(entry["features"], f"{where}.features", FEATURES))
        value = c.number(entry.get("c", 1.0), f"{where}.c")
        if not 0 < value < 1e6:
            raise c.fail(f"{where}.c", "a positive number below 1e6", entry.get("c"))
        systems.append(TrainedSystemSpec(name, features, value))
    return TrainingSpec(dataset=dataset,
                        test_object=c.string(data["test_object"], "training.test_object"),
                        text=c.string(data["text"], "training.text"),
                        label=c.string(data["label"], "training.label"),
                        positive=c.scalar(data["positive"], "training.positive"),
                        systems=tuple(systems))


@dataclass(frozen=True, slots=True)
class Corpus:
    """The training and held-out texts and their labels (1 = the flagged label)."""

    train: tuple[str, ...]
    train_y: NDArray[np.int8]
    test: tuple[str, ...]
    test_y: NDArray[np.int8]
    sha256: str


def read_corpus(spec: TrainingSpec, folder: Path) -> Corpus:
    """Both parts of the corpus from ``folder`` (the raw file and its companions, verified)."""
    from faircode.audit._data_rdb import read_lazyload

    file = folder / spec.dataset.path.name
    if not file.is_file():
        raise DataUnavailableError(f"{file}: expected the training corpus (the text-fetch stage "
                                   "fetches it), got no file")
    for expected, path in ((spec.dataset.sha256, file), *(
            (c.sha256, folder / c.path.name) for c in spec.dataset.companions)):
        digest = sha256_file(path) if path.is_file() else None
        if digest is None:
            raise DataUnavailableError(f"{path}: expected the corpus's companion, got no file")
        if expected is not None and digest != expected:
            raise ChecksumError(f"{path}: sha256: expected {expected}, got {digest}")
    parts = []
    for obj in (spec.dataset.object, spec.test_object):
        assert obj is not None
        frame = read_lazyload(file, object_name=obj, where=f"training: {obj}")
        for column in (spec.text, spec.label):
            if column not in frame.columns:
                raise DataError(f"{file}: {obj}: expected a column {column!r}, got "
                                f"{', '.join(map(str, frame.columns))}")
        labels = frame[spec.label].astype(str)
        if str(spec.positive) not in set(labels):
            raise DataError(f"{file}: {obj}: training.positive: expected a label of column "
                            f"{spec.label!r}, got {spec.positive!r}")
        parts.append((tuple(frame[spec.text].astype(str)),
                      (labels == str(spec.positive)).to_numpy().astype(np.int8)))
    (train, train_y), (test, test_y) = parts
    return Corpus(train, train_y, test, test_y, sha256_file(file))


def wordllama_embedder() -> Any:
    """WordLlama's ``l2_supercat`` 256-d embeddings from the weights inside its wheel."""
    import wordllama
    from wordllama import WordLlama

    # its own folder as the cache: the weights and the tokenizer the wheel ships, no download
    return WordLlama.load(config="l2_supercat", dim=256,
                          cache_dir=Path(wordllama.__file__).parent, disable_download=True)


def _tfidf(vocabulary: Mapping[str, int] | None = None) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, dtype=np.float64,
                           vocabulary=vocabulary)


@dataclass(frozen=True, slots=True)
class TrainedModel:
    """A fitted system: its features' state, its coefficients and what it learnt from."""

    spec: TrainedSystemSpec
    seed: int
    coef: NDArray[np.float64]
    intercept: float
    vocabulary: tuple[str, ...] = ()
    idf: NDArray[np.float64] | None = None

    def features(self, texts: Sequence[str], *, embedder: Any = None) -> Any:
        """The texts' feature matrix (sparse for ``tfidf``, dense for ``wordllama``)."""
        if self.spec.features == "tfidf":
            vectorizer = _tfidf({t: i for i, t in enumerate(self.vocabulary)})
            vectorizer.idf_ = self.idf
            return vectorizer.transform(list(texts))
        model = embedder if embedder is not None else wordllama_embedder()
        return np.asarray(model.embed(list(texts), batch_size=512), dtype=np.float64)

    def score(self, texts: Sequence[str], *, embedder: Any = None) -> NDArray[np.float64]:
        """P(flagged) of every text."""
        from scipy.special import expit

        logit = self.features(texts, embedder=embedder) @ self.coef + self.intercept
        return np.asarray(expit(np.asarray(logit, dtype=np.float64)).ravel(), dtype=np.float64)


def _seed(master: int, name: str) -> int:
    key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big")
    return int(child_seed(master, Stream.TEXT, _SEED_TABLE, key).generate_state(1)[0])


def train_system(spec: TrainedSystemSpec, texts: Sequence[str], labels: NDArray[np.int8], *,
                 master: int, embedder: Any = None) -> TrainedModel:
    """Fit one system on ``texts`` (labels 1 = flagged) with its seed from ``master``."""
    from sklearn.linear_model import LogisticRegression

    seed = _seed(master, spec.name)
    vocabulary: tuple[str, ...] = ()
    idf = None
    if spec.features == "tfidf":
        vectorizer = _tfidf()
        matrix = vectorizer.fit_transform(list(texts))
        order = sorted(vectorizer.vocabulary_.items(), key=lambda item: item[1])
        vocabulary = tuple(term for term, _ in order)
        idf = np.asarray(vectorizer.idf_, dtype=np.float64)
    else:
        model = embedder if embedder is not None else wordllama_embedder()
        matrix = np.asarray(model.embed(list(texts), batch_size=512), dtype=np.float64)
    fitted = LogisticRegression(C=spec.c, max_iter=5000, random_state=seed).fit(matrix, labels)
    return TrainedModel(spec, seed, np.asarray(fitted.coef_[0], dtype=np.float64),
                        float(fitted.intercept_[0]), vocabulary, idf)


@dataclass(frozen=True, slots=True)
class Trained:
    """Every trained system of an audit and their scores of the held-out part."""

    models: dict[str, TrainedModel]
    heldout: dict[str, NDArray[np.float64]]
    heldout_y: NDArray[np.int8]
    record: dict[str, Any]


def train_systems(spec: TrainingSpec | None, corpus: Corpus | None, *, master: int) -> Trained:
    """Fit every system of ``spec`` on the corpus and score its held-out part (nothing without
    a ``training:`` block)."""
    if spec is None or corpus is None:
        return Trained({}, {}, np.zeros(0, dtype=np.int8), {"systems": {}})
    wanted = any(s.features == "wordllama" for s in spec.systems)
    embedder = wordllama_embedder() if wanted else None
    models, heldout, systems = {}, {}, {}
    for system in spec.systems:
        model = train_system(system, corpus.train, corpus.train_y, master=master,
                             embedder=embedder)
        models[system.name] = model
        heldout[system.name] = model.score(corpus.test, embedder=embedder)
        systems[system.name] = {
            "features": system.features, "c": system.c, "seed": model.seed,
            "n_features": int(model.coef.size), "n_train": len(corpus.train),
            "n_train_positive": int(corpus.train_y.sum()), "n_test": len(corpus.test),
            "packages": {p: importlib.metadata.version(p) for p in _PACKAGES[system.features]}}
    record = {"corpus": {"path": spec.dataset.declared_path, "sha256": corpus.sha256,
                         "train": spec.dataset.object, "test": spec.test_object,
                         "text": spec.text, "label": spec.label, "positive": spec.positive},
              "master": master, "systems": systems}
    return Trained(models, heldout, corpus.test_y, record)


def save_trained(trained: Trained, folder: Path) -> None:
    """Write ``folder`` whole: :data:`TRAINED_RECORD`, :data:`HELDOUT` and per system its arrays
    (``<name>.coef.npy``; ``tfidf`` also ``.idf.npy`` and ``.vocabulary.json``)."""
    import pandas as pd

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, model in trained.models.items():
        np.save(folder / f"{name}.coef.npy", np.append(model.coef, model.intercept))
        if model.idf is not None:
            np.save(folder / f"{name}.idf.npy", model.idf)
            (folder / f"{name}.vocabulary.json").write_text(
                json.dumps(list(model.vocabulary), ensure_ascii=False) + "\n", encoding="utf-8")
    pd.DataFrame({"label": trained.heldout_y, **trained.heldout}).to_parquet(
        folder / HELDOUT, index=False)
    (folder / TRAINED_RECORD).write_text(json.dumps(trained.record, indent=2) + "\n")


def load_trained(folder: Path) -> Trained:
    """Read what :func:`save_trained` wrote (one :class:`DataError` line if it is not there)."""
    import pandas as pd

    try:
        record = json.loads((folder / TRAINED_RECORD).read_text())
        frame = pd.read_parquet(folder / HELDOUT)
        models = {}
        for name, info in record["systems"].items():
            weights = np.load(folder / f"{name}.coef.npy", allow_pickle=False)
            spec = TrainedSystemSpec(name, info["features"], float(info["c"]))
            vocabulary, idf = (), None
            if spec.features == "tfidf":
                idf = np.load(folder / f"{name}.idf.npy", allow_pickle=False)
                vocabulary = tuple(json.loads((folder / f"{name}.vocabulary.json").read_text(
                    encoding="utf-8")))
            models[name] = TrainedModel(spec, int(info["seed"]), weights[:-1],
                                        float(weights[-1]), vocabulary, idf)
    except (OSError, ValueError, KeyError) as exc:
        raise DataError(f"{folder}: expected the text-train stage's systems, got "
                        f"{type(exc).__name__}: {exc}") from None
    return Trained(models, {n: frame[n].to_numpy(dtype=np.float64) for n in models},
                   frame["label"].to_numpy(dtype=np.int8), record)
