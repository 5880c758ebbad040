"""Tests for faircode.grid.models: the three families and why the forest has a minimum leaf size."""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from faircode.core.cells import ModelFamily
from faircode.grid.models import (
    ONEHOT_MIN_ROWS,
    RF_MIN_SAMPLES_LEAF,
    make_model,
    sample_weight_name,
)


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


def _nominal_data() -> tuple[np.ndarray, np.ndarray]:
    """A nominal column of codes 0, 1, 2 (200 rows each) whose middle code alone has label 1,
    beside a pure-noise numeric column: no ordering of the codes separates the labels."""
    rng = np.random.default_rng(0)
    code = np.repeat([0.0, 1.0, 2.0], 200)
    X = np.column_stack([rng.normal(size=600), code])
    return X, (code == 1).astype(int)


def test_onehot_lets_logistic_regression_use_a_nominal_column() -> None:
    """Codes as numbers: the middle code cannot be singled out (accuracy at most 2/3); one-hot
    of position 1: every row right."""
    X, y = _nominal_data()
    label = make_model(ModelFamily.LOGISTIC_REGRESSION, random_state=0).fit(X, y)
    onehot = make_model(ModelFamily.LOGISTIC_REGRESSION, random_state=0, onehot=(1,)).fit(X, y)
    assert (label.predict(X) == y).mean() <= 2 / 3 + 0.02
    assert (onehot.predict(X) == y).mean() == 1.0


def test_onehot_pools_rare_and_unseen_categories() -> None:
    """A code seen on fewer than ONEHOT_MIN_ROWS fitting rows and a code never seen (-1) both
    land in the one infrequent indicator, so they predict alike."""
    X, y = _nominal_data()
    X = np.vstack([X, [[0.0, 5.0]] * (ONEHOT_MIN_ROWS - 1)])
    y = np.concatenate([y, np.ones(ONEHOT_MIN_ROWS - 1, dtype=int)])
    model = make_model(ModelFamily.LOGISTIC_REGRESSION, random_state=0, onehot=(1,)).fit(X, y)
    encoder = model.named_steps["encode"].named_transformers_["onehot"]
    assert list(encoder.infrequent_categories_[0]) == [5.0]
    rare, unseen = model.predict_proba(np.array([[0.0, 5.0], [0.0, -1.0]]))[:, 1]
    assert rare == unseen


def test_onehot_models_take_sample_weights_by_their_stated_name() -> None:
    """With one-hot encoding first every family is a pipeline taking model__sample_weight."""
    X, y = _nominal_data()
    for family in ModelFamily:
        name = sample_weight_name(family, onehot=True)
        assert name == "model__sample_weight"
        make_model(family, random_state=0, onehot=(1,)).fit(X, y, **{name: np.ones(len(y))})
