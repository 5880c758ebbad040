"""Tests of the text systems trained here: bit-identical across two runs with one seed, scored
as saved, loaded by name, and the manifest's training block checked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from faircode.audit.text_manifest import load_text_manifest
from faircode.audit.text_systems import score_texts
from faircode.audit.text_training import (
    Corpus,
    TrainedSystemSpec,
    TrainingSpec,
    load_trained,
    save_trained,
    train_systems,
)
from faircode.core.errors import ManifestError

REPO = Path(__file__).resolve().parent.parent
GOOD = ["great coffee, rich and smooth", "lovely tea, will buy again", "best cookies ever",
        "fresh and tasty chips", "smooth peanut butter, great value", "delicious soft candy"]
BAD = ["stale and burnt coffee", "weak tea, not good", "dry crumbly cookies, awful",
       "soggy broken chips", "rancid nuts, never again", "melted candy, bad value"]


def _corpus() -> Corpus:
    texts = tuple(t for pair in zip(GOOD, BAD, strict=True) for t in pair)
    labels = np.array([0, 1] * len(GOOD), dtype=np.int8)  # 1: not great (flagged)
    return Corpus(texts * 3, np.tile(labels, 3), texts, labels, "0" * 64)


def _spec(*features: str) -> TrainingSpec:
    from faircode.audit._manifest_types import DatasetSpec

    dataset = DatasetSpec(path=Path("/nowhere/Rdata.rdb").resolve(), declared_path="Rdata.rdb",
                          object="training_data")
    return TrainingSpec(dataset, "testing_data", "review", "score", "other",
                        tuple(TrainedSystemSpec(f"{f}_lr", f, 1.0) for f in features))  # type: ignore[arg-type]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_tfidf_system_is_bit_identical_across_two_runs(tmp_path: Path) -> None:
    """Two trainings with one seed write the same bytes (arrays, vocabulary, held-out scores,
    record)."""
    for run in ("a", "b"):
        save_trained(train_systems(_spec("tfidf"), _corpus(), master=42), tmp_path / run)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert {"tfidf_lr.coef.npy", "tfidf_lr.idf.npy", "tfidf_lr.vocabulary.json",
            "heldout.parquet", "trained.json"} == set(_files(tmp_path / "a"))


def test_wordllama_system_is_bit_identical_across_two_runs(tmp_path: Path) -> None:
    """The wordllama system too: its embeddings come from the wheel, never a download."""
    pytest.importorskip("wordllama")
    for run in ("a", "b"):
        save_trained(train_systems(_spec("wordllama"), _corpus(), master=42), tmp_path / run)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_a_loaded_system_scores_as_the_trained_one(tmp_path: Path) -> None:
    """Saved and loaded, a system gives the held-out scores it gave when trained, and the
    registry scores texts with it by name; the seed is the name's, not the position's."""
    trained = train_systems(_spec("tfidf"), _corpus(), master=42)
    save_trained(trained, tmp_path)
    loaded = load_trained(tmp_path)
    model = loaded.models["tfidf_lr"]
    np.testing.assert_array_equal(model.score(_corpus().test), trained.heldout["tfidf_lr"])
    scores, records = score_texts(["tfidf_lr"], ["stale and burnt tea"], trained=loaded)
    assert 0.5 < scores["tfidf_lr"][0] <= 1 and records["tfidf_lr"]["package"] == "scikit-learn"
    assert model.seed == trained.models["tfidf_lr"].seed
    other = train_systems(_spec("tfidf"), _corpus(), master=43).models["tfidf_lr"]
    assert other.seed != model.seed


def test_training_block_errors_name_the_key(tmp_path: Path) -> None:
    """An unknown feature map, a trained name that is a deployed system's, and a trained system
    left out of systems are each one line naming the key path."""
    doc = yaml.safe_load((REPO / "audits" / "bias_madlibs" / "audit.yaml").read_text())
    folder = tmp_path / "audits" / "bias_madlibs"
    folder.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("")
    for name in ("axes_terms.yaml", "axes_names.yaml", "frames_reviews.yaml"):
        (folder / name).write_bytes((REPO / "audits" / "bias_madlibs" / name).read_bytes())
    cases = [
        (("training", "systems", 0, "features"), "bow",
         r"training\.systems\[0\]\.features: expected one of tfidf, wordllama, got 'bow'"),
        (("training", "systems", 0, "name"), "vader_negative",
         r"training\.systems\[0\]\.name: expected a new safe system name"),
        (("systems",), [{"name": "profanity_check"}],
         r"systems: expected every trained system listed"),
    ]
    for keys, value, message in cases:
        changed = yaml.safe_load(yaml.safe_dump(doc))
        target = changed
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
        (folder / "audit.yaml").write_text(yaml.safe_dump(changed, allow_unicode=True))
        with pytest.raises(ManifestError, match=message):
            load_text_manifest(folder / "audit.yaml")


@pytest.mark.slow
def test_shipped_systems_on_the_mirrored_reviews(mirror_extra: Path) -> None:
    """modeldata's 4,000 training and 1,000 held-out reviews read from the lazy-load database;
    tfidf_lr reaches a held-out AUC near 0.88 (the datasheet's figure)."""
    from sklearn.metrics import roc_auc_score

    from faircode.audit.text_training import read_corpus

    manifest = load_text_manifest(REPO / "audits" / "bias_madlibs" / "audit.yaml")
    assert manifest.training is not None
    corpus = read_corpus(manifest.training, mirror_extra / "modeldata")
    assert (len(corpus.train), len(corpus.test)) == (4000, 1000)
    assert (int(corpus.train_y.sum()), int(corpus.test_y.sum())) == (1400, 342)
    spec = TrainingSpec(manifest.training.dataset, "testing_data", "review", "score", "other",
                        manifest.training.systems[:1])
    trained = train_systems(spec, corpus, master=manifest.random_state)
    assert roc_auc_score(corpus.test_y, trained.heldout["tfidf_lr"]) == pytest.approx(0.879,
                                                                                    abs=0.002)
