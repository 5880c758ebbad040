"""Tests for faircode.grid.models: the three families and why the forest has a minimum leaf size."""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from faircode.core.cells import ModelFamily
from faircode.grid.models import RF_MIN_SAMPLES_LEAF, make_model, sample_weight_name


def _rare_label_data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows with a weak signal and an ~11 % label rate (healthcare's), like a hard audit."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(4000, 6))
    p = 1.0 / (1.0 + np.exp(-(-2.2 + 0.5 * X[:, 0])))
    return X, (rng.random(4000) < p).astype(int)


def _heldout_selection_under_costs(model, seed: int = 0) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Held-out share flagged by ``model`` fitted plainly and with S3's balanced error costs."""
    X, y = _rare_label_data(seed)
    X_new, _ = _rare_label_data(seed + 1)
    p = y.mean()
    weights = np.where(y == 1, 2 * (1 - p), 2 * p)
    plain = clone(model).fit(X, y).predict(X_new).mean()
    weighted = clone(model).fit(X, y, sample_weight=weights).predict(X_new).mean()
    return float(plain), float(weighted)


def test_forest_decisions_respond_to_sample_weights() -> None:
    """Reweighting the rare class (ExponentiatedGradient's lever) moves the forest's decisions."""
    forest = make_model(ModelFamily.RANDOM_FOREST, random_state=0)
    plain, weighted = _heldout_selection_under_costs(forest)
    assert forest.get_params()["min_samples_leaf"] == RF_MIN_SAMPLES_LEAF
    assert weighted > 0.10 and weighted > 5 * plain


def test_fully_grown_forest_ignores_sample_weights() -> None:
    """Why the leaf size: pure leaves keep voting the training labels whatever the weights."""
    forest = make_model(ModelFamily.RANDOM_FOREST, random_state=0).set_params(min_samples_leaf=1)
    plain, weighted = _heldout_selection_under_costs(forest)
    assert weighted < 0.05 and plain < 0.05


def test_every_family_is_seeded_and_takes_sample_weights() -> None:
    """Two fits with one seed agree exactly, and each family accepts weights by its stated name."""
    X, y = _rare_label_data(3)
    for family in ModelFamily:
        weights = {sample_weight_name(family): np.ones(len(y))}
        a = make_model(family, random_state=7).fit(X, y, **weights)
        b = make_model(family, random_state=7).fit(X, y, **weights)
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
