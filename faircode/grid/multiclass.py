"""The multi-class grid: the strategies that apply to a multi-class outcome (S0-S2) x the three
model families, each predicting one class per test row.

Each cell is the grid's own model family (:func:`faircode.grid.models.make_model`) on its
strategy's features (:func:`faircode.grid.strategies.feature_columns`), fitted to the class codes
of the training rows: scikit-learn's logistic regression is multinomial on three or more
classes, the forest and the boosting grow one model of every class.  The predicted class is the
most probable one (``predict``).  Strategies whose task kinds leave out ``multiclass``
(:data:`faircode.core.cells.STRATEGY_TABLE`) are not fitted; their reason is the table's.

Design decisions
----------------
* **Seeds and splits are the binary grid's**: replicate ``r``'s models are seeded with
  :func:`faircode.core.seeds.replicate_seed` of the manifest's ``random_state``, and in
  ``split`` mode its split is :func:`faircode.audit.prepared.replicate_split`'s; replicate 0 is
  the manifest's split and seed.
* **In memory, one process**: a multi-class audit is a few hundred rows (BankWages: 474), so its
  cells are fitted where they are evaluated (:mod:`faircode.evaluate.multiclass_kind`), in
  grid order, with no store of their own.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from faircode.audit.prepared import PreparedAudit, replicate_split
from faircode.core.cells import ModelFamily, Strategy, applies
from faircode.core.config import Encoding, ReplicateConfig
from faircode.core.kinds import MULTICLASS
from faircode.core.seeds import replicate_seed
from faircode.grid.models import ONEHOT_FAMILIES, make_model
from faircode.grid.strategies import feature_columns

__all__ = ["ClassCell", "class_cells", "fit_class_cell"]


@dataclass(frozen=True, slots=True)
class ClassCell:
    """One strategy x family cell of one training replicate: its test rows (prepared
    positions) and the class it predicts for each."""

    strategy: Strategy
    family: ModelFamily
    replicate: int
    test_index: np.ndarray
    predicted: np.ndarray
    seconds: float


def fit_class_cell(data: PreparedAudit, strategy: Strategy, family: ModelFamily, *,
                   replicate: int, seed_mode: str, encoding: Encoding) -> ClassCell:
    """Fit one cell of replicate ``replicate`` and predict its test rows' classes."""
    started = time.perf_counter()
    train, test = replicate_split(data, replicate=replicate, mode=seed_mode)
    columns = feature_columns(strategy, data.manifest)
    onehot = tuple(i for i, c in enumerate(columns) if c in data.nominal) \
        if encoding == "onehot" and family in ONEHOT_FAMILIES else ()
    model = make_model(family, random_state=replicate_seed(data.manifest.random_state,
                                                           replicate), onehot=onehot)
    features = data.X.loc[:, list(columns)]
    with warnings.catch_warnings():  # a category never seen in fitting: as the binary grid
        warnings.filterwarnings("ignore", message="Found unknown categories",
                                category=UserWarning)
        model.fit(features.iloc[train], data.y[train])
        predicted = np.asarray(model.predict(features.iloc[test]), dtype=np.int8)
    return ClassCell(strategy, family, replicate, np.asarray(test, dtype=np.int64), predicted,
                     time.perf_counter() - started)


def class_cells(data: PreparedAudit, *, replicates: ReplicateConfig,
                encoding: Encoding) -> tuple[ClassCell, ...]:
    """Every applying cell of every replicate, replicate then grid order."""
    return tuple(
        fit_class_cell(data, strategy, family, replicate=r, seed_mode=replicates.seed_mode,
                       encoding=encoding)
        for r in range(replicates.seeds) for strategy in Strategy
        if applies(strategy, MULTICLASS.name) for family in ModelFamily)
