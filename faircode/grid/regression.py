"""The regression grid: S0-S3 x three regression families, fitted on a regression audit's rows.

=====  ===========================  ==========================================================
code   strategy                     features and mechanism
=====  ===========================  ==========================================================
S0     baseline                     core + proxy + protected columns
S1     unawareness                  core + proxy (protected columns dropped)
S2     unawareness_proxy_removal    core only
S3     in_processing                core; fairlearn ``ExponentiatedGradient`` under
                                    ``BoundedGroupLoss`` (absolute loss) with the first
                                    attribute's group as ``sensitive_features``
S4     post_processing              n/a: its reason is the strategy table's
                                    (:func:`faircode.core.cells.not_applicable_reason`)
=====  ===========================  ==========================================================

The families are the grid's (:class:`faircode.core.cells.ModelFamily`), as regressors: a linear
regression (``LR``; the name is :func:`faircode.core.cells.family_name`'s), a random forest
(``RandomForestRegressor(n_estimators=100, min_samples_leaf=10)``: leaves of several rows, so
ExponentiatedGradient's sample weights move them, as :mod:`faircode.grid.models` explains) and
gradient boosting (``GradientBoostingRegressor()``), single-threaded; ``models.encoding:
onehot`` one-hot encodes the nominal columns for the linear family as it does for the logistic
one.

Design decisions
----------------
* **S3's constraint is the regression one**: fairlearn's ``BoundedGroupLoss`` bounds every
  group's mean absolute error by ``ζ`` (the mean absolute error is the error gap
  ``faircode.stats.continuous`` reports, so the constraint and the metric are one quantity).
  ``ζ`` is the training MAE of the same family fitted without the constraint on the same
  features: "no group worse than the unconstrained model is on average".  The outcome is
  rescaled to [0, 1] on the training rows for the reduction (``AbsoluteLoss(0, 1)``), so
  ``mitigation.eps`` (its allowed violation) and ``mitigation.max_iter`` mean the same on a
  salary and on a rating; ``mitigation.constraint`` (a classification constraint) is not read.
* **S3 predicts as fairlearn deploys it**: randomised over its predictors, one draw per row in
  row order from ``child_seed(seed, Stream.PREDICTION, s, m)``, as the binary grid's S3 decides.
* **Replicates**: replicate 0 is the audit's own split and seed; replicate ``k`` seeds every
  model with :func:`faircode.core.seeds.replicate_seed` and, in ``split`` mode, re-splits with
  that seed (:func:`faircode.audit.regression_data.split_regression`).
* Seeds by position (:func:`faircode.core.cells.position`): a cell's estimator is seeded with
  the replicate's seed, its randomised predictions with its own child stream.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pandas.errors
from fairlearn.reductions import AbsoluteLoss, BoundedGroupLoss, ExponentiatedGradient
from sklearn.base import RegressorMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

from faircode.audit.regression_data import RegressionData, split_regression
from faircode.core.cells import ModelFamily, Strategy, applies, family_name, position
from faircode.core.config import Encoding, MitigationConfig, ReplicateConfig
from faircode.core.errors import DataError
from faircode.core.kinds import REGRESSION
from faircode.core.seeds import Stream, child_seed, replicate_seed
from faircode.grid.models import ONEHOT_MIN_ROWS, RF_MIN_SAMPLES_LEAF

__all__ = ["PREDICTIONS_FILE", "RECORD_FILE", "RegressionCell", "RegressionPredictions",
           "feature_set", "fit_regression_cell", "fit_regression_grid",
           "load_regression_predictions", "make_regressor", "regression_cells", "replicate_rows",
           "save_regression_predictions"]

PREDICTIONS_FILE = "predictions.parquet"
"""The regression fit stage's predictions: ``replicate``, ``strategy``, ``model`` (the grid
family), ``row`` (the position among the audit's rows) and ``prediction``, cell by cell in grid
order."""
RECORD_FILE = "cells.json"
"""The fit's record: the audit, the dataset's sha256, the replicates, the kernels that computed
it and every cell, with why when it could not be fitted.  The cells' seconds are no part of it
(they would change its bytes on every re-fit): :func:`faircode.grid.predictions.timings_path`
beside the folder."""


_PANDAS_DEPRECATION: type[Warning] = getattr(pandas.errors, "Pandas4Warning", FutureWarning)
"""What pandas warns of fairlearn's reductions' idioms (as :mod:`faircode.grid.strategies`)."""


def regression_cells() -> list[tuple[Strategy, ModelFamily]]:
    """The strategy x family cells a regression audit fits (its applicable strategies)."""
    return [(s, f) for s in Strategy if applies(s, REGRESSION.name) for f in ModelFamily]


def feature_set(strategy: Strategy, data: RegressionData) -> tuple[str, ...]:
    """The columns of ``data.X`` that ``strategy`` trains on, in a stable order."""
    m = data.manifest
    if strategy is Strategy.BASELINE:
        return tuple(dict.fromkeys((*m.core_features, *m.proxy_features, *m.protected_columns)))
    if strategy is Strategy.UNAWARENESS:
        return tuple(dict.fromkeys((*m.core_features, *m.proxy_features)))
    return tuple(dict.fromkeys(m.core_features))


def make_regressor(family: ModelFamily | str, *, random_state: int,
                   onehot: Sequence[int] = ()) -> RegressorMixin:
    """A fresh, unfitted regressor of ``family`` (module docstring); ``onehot``: positions of the
    nominal columns to one-hot encode first (the linear family under ``models.encoding:
    onehot``)."""
    family = ModelFamily(family)
    if family is ModelFamily.RANDOM_FOREST:
        return RandomForestRegressor(n_estimators=100, min_samples_leaf=RF_MIN_SAMPLES_LEAF,
                                     random_state=random_state, n_jobs=1)
    if family is ModelFamily.GRADIENT_BOOSTING:
        return GradientBoostingRegressor(random_state=random_state)
    if not onehot:
        return LinearRegression()
    encoder = OneHotEncoder(handle_unknown="infrequent_if_exist", drop="if_binary",
                            min_frequency=ONEHOT_MIN_ROWS, sparse_output=False)
    return Pipeline([("encode", ColumnTransformer([("onehot", encoder, list(onehot))],
                                                  remainder="passthrough")),
                     ("model", LinearRegression())])


def _weight_name(model: RegressorMixin) -> str:
    return "model__sample_weight" if isinstance(model, Pipeline) else "sample_weight"


@dataclass(frozen=True, slots=True)
class RegressionCell:
    """One cell's predictions on its replicate's test rows (``rows``: positions in the audit's
    rows), or why it has none (``unfittable``)."""

    strategy: Strategy
    family: ModelFamily
    replicate: int
    rows: np.ndarray
    prediction: np.ndarray
    seconds: float = 0.0
    unfittable: str = ""

    @property
    def model(self) -> str:
        """The family's name in a regression audit's tables."""
        return family_name(self.family, REGRESSION.name)


@dataclass(frozen=True, slots=True)
class RegressionPredictions:
    """Every cell of every replicate of one audit, in grid order (replicate, strategy,
    family)."""

    audit: str
    cells: tuple[RegressionCell, ...]
    seeds: int = 1
    seed_mode: str = "model"
    numerics: dict[str, Any] = field(default_factory=dict)
    sha256: str = ""
    """The sha256 of the raw file the predictions were fitted on."""


def replicate_rows(data: RegressionData, replicate: int, *, mode: str
                   ) -> tuple[np.ndarray, np.ndarray, int]:
    """Replicate ``replicate``'s (train, test) positions and master seed (module docstring)."""
    seed = replicate_seed(data.manifest.random_state, replicate)
    if replicate == 0 or mode != "split":
        return data.train_index, data.test_index, seed
    key = data.disadvantaged[data.manifest.protected_attributes[0].name].astype(np.int8)
    train, test = split_regression(key=key, unit=data.unit, test_size=data.manifest.test_size,
                                   random_state=seed)
    return train, test, seed


def fit_regression_cell(data: RegressionData, strategy: Strategy, family: ModelFamily, *,
                        train: np.ndarray, test: np.ndarray, seed: int, replicate: int,
                        mitigation: MitigationConfig, encoding: Encoding = "label"
                        ) -> RegressionCell:
    """Fit one cell on the rows ``train`` and predict its ``test`` rows (module docstring)."""
    columns = list(feature_set(strategy, data))
    nominal = [i for i, c in enumerate(columns) if data.encoder.kinds[c] == "categorical"]
    onehot = nominal if encoding == "onehot" and family is ModelFamily.LOGISTIC_REGRESSION \
        else []
    x_train, x_test = data.X.iloc[train][columns], data.X.iloc[test][columns]
    y_train = data.y[train]
    model = make_regressor(family, random_state=seed, onehot=onehot)
    started = time.perf_counter()
    if strategy is not Strategy.IN_PROCESSING:
        prediction = model.fit(x_train, y_train).predict(x_test)
        return RegressionCell(strategy, family, replicate, test, np.asarray(prediction, float),
                              time.perf_counter() - started)
    low, high = float(y_train.min()), float(y_train.max())
    scaled = (y_train - low) / (high - low)
    zeta = float(np.abs(scaled - clone(model).fit(x_train, scaled).predict(x_train)).mean())
    first = data.disadvantaged[data.manifest.protected_attributes[0].name]
    reduction = ExponentiatedGradient(
        model, constraints=BoundedGroupLoss(AbsoluteLoss(0, 1), upper_bound=zeta),
        eps=mitigation.eps, max_iter=mitigation.max_iter, sample_weight_name=_weight_name(model))
    draw = int(child_seed(seed, Stream.PREDICTION, *position(strategy, family))
               .generate_state(1)[0])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", _PANDAS_DEPRECATION)  # fairlearn's pandas idioms
            warnings.simplefilter("ignore", FutureWarning)
            reduction.fit(x_train, pd.Series(scaled), sensitive_features=first[train])
            prediction = reduction.predict(x_test, random_state=draw)
    except ValueError as exc:  # this cell only: the audit's other cells go on
        return RegressionCell(strategy, family, replicate, test, np.full(test.size, np.nan),
                              time.perf_counter() - started, f"not_fitted: {exc}")
    return RegressionCell(strategy, family, replicate, test,
                          np.asarray(prediction, float) * (high - low) + low,
                          time.perf_counter() - started)


def fit_regression_grid(data: RegressionData, *, mitigation: MitigationConfig,
                        replicates: ReplicateConfig, encoding: Encoding = "label"
                        ) -> RegressionPredictions:
    """Every cell of every replicate of ``data``, in this process, in grid order."""
    cells = []
    for k in range(replicates.seeds):
        train, test, seed = replicate_rows(data, k, mode=replicates.seed_mode)
        for strategy, family in regression_cells():
            cells.append(fit_regression_cell(data, strategy, family, train=train, test=test,
                                             seed=seed, replicate=k, mitigation=mitigation,
                                             encoding=encoding))
    from faircode.core.numerics import configuration

    return RegressionPredictions(data.manifest.name, tuple(cells), replicates.seeds,
                                 replicates.seed_mode, {"configuration": configuration()},
                                 data.sha256)


def save_regression_predictions(predictions: RegressionPredictions, folder: Path, *,
                                timings: Path | None = None) -> None:
    """Write :data:`PREDICTIONS_FILE` and :data:`RECORD_FILE` into ``folder`` (created); with
    ``timings``, the cells' seconds there."""
    folder.mkdir(parents=True, exist_ok=True)
    frames = [pd.DataFrame({"replicate": c.replicate, "strategy": c.strategy.value,
                            "model": c.family.value, "row": c.rows.astype(np.int64),
                            "prediction": c.prediction}) for c in predictions.cells]
    columns = ["replicate", "strategy", "model", "row", "prediction"]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    frame.to_parquet(folder / PREDICTIONS_FILE, index=False)
    record = {"audit": predictions.audit, "dataset_sha256": predictions.sha256,
              "seeds": predictions.seeds, "seed_mode": predictions.seed_mode,
              "numerics": predictions.numerics,
              "cells": [{"replicate": c.replicate, "strategy": c.strategy.value,
                         "model": c.family.value, "unfittable": c.unfittable}
                        for c in predictions.cells]}
    (folder / RECORD_FILE).write_text(json.dumps(record, indent=1) + "\n")
    if timings is not None:
        timings.write_text(json.dumps([c.seconds for c in predictions.cells]) + "\n")


def load_regression_predictions(folder: Path, *, sha256: str,
                                timings: Path | None = None) -> RegressionPredictions:
    """Read what :func:`save_regression_predictions` wrote (the seconds from ``timings`` when
    it exists, else 0); predictions fitted on another raw file than the one of ``sha256`` are
    one :class:`DataError` line."""
    try:
        record = json.loads((folder / RECORD_FILE).read_text(encoding="utf-8"))
        frame = pd.read_parquet(folder / PREDICTIONS_FILE)
    except (OSError, ValueError) as exc:
        raise DataError(f"{folder}: expected a regression fit's predictions, got "
                        f"{type(exc).__name__}: {exc}") from None
    seconds = [0.0] * len(record["cells"])
    if timings is not None and timings.is_file():
        try:
            found = json.loads(timings.read_text(encoding="utf-8"))
            seconds = [float(x) for x in found] if len(found) == len(seconds) else seconds
        except (OSError, ValueError, TypeError):
            pass  # timings order the log only; no number depends on them
    if record.get("dataset_sha256") != sha256:
        raise DataError(f"{folder / RECORD_FILE}: dataset_sha256: expected {sha256} (the raw "
                        f"file evaluated), got {record.get('dataset_sha256')!r}: re-run the fit")
    groups = {key: part for key, part in frame.groupby(["replicate", "strategy", "model"],
                                                      sort=False)}
    cells = []
    for entry, spent in zip(record["cells"], seconds, strict=True):
        key = (entry["replicate"], entry["strategy"], entry["model"])
        part = groups.get(key, frame.iloc[:0])
        cells.append(RegressionCell(Strategy(entry["strategy"]), ModelFamily(entry["model"]),
                                    int(entry["replicate"]),
                                    part["row"].to_numpy(dtype=np.int64),
                                    part["prediction"].to_numpy(dtype=np.float64),
                                    spent, str(entry["unfittable"])))
    return RegressionPredictions(str(record["audit"]), tuple(cells), int(record["seeds"]),
                                 str(record["seed_mode"]), dict(record.get("numerics") or {}),
                                 sha256)
