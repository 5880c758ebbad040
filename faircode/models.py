"""The three model families every strategy is crossed with.

Each family is a fresh, seeded scikit-learn estimator built by :func:`make_model`.  Deliberate
choices:

* ``logistic_regression`` standardises its inputs (``StandardScaler`` → ``LogisticRegression``,
  ``max_iter=1000``).  faircode encodes categoricals as integer codes and keeps numerics on their
  own scale (credit amounts in the thousands beside 0/1 flags); unscaled, lbfgs stops before
  converging on several shipped audits.  Scaling changes no tree model and no decision rule.
* ``random_forest`` is ``RandomForestClassifier(n_estimators=100)`` and ``gradient_boosting`` is
  ``GradientBoostingClassifier()`` with defaults; parallelism comes from the grid's workers, so
  every estimator runs single-threaded (``n_jobs=1``) and results do not depend on the worker count.
* Every family accepts ``sample_weight`` (ExponentiatedGradient reweights through it); the name
  under which a family takes it is :func:`sample_weight_name`.
"""

from __future__ import annotations

from enum import StrEnum

from sklearn.base import ClassifierMixin
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

__all__ = ["ModelFamily", "make_model", "sample_weight_name"]


class ModelFamily(StrEnum):
    """The three model families of the grid, in the order results are reported."""

    LOGISTIC_REGRESSION = "logistic_regression"
    RANDOM_FOREST = "random_forest"
    GRADIENT_BOOSTING = "gradient_boosting"


def make_model(family: ModelFamily | str, *, random_state: int) -> ClassifierMixin:
    """Return a fresh, unfitted estimator of ``family`` seeded with ``random_state``."""
    family = ModelFamily(family)
    if family is ModelFamily.LOGISTIC_REGRESSION:
        return Pipeline(
            [
                ("scale", StandardScaler()),
                ("model", LogisticRegression(max_iter=1000, random_state=random_state)),
            ]
        )
    if family is ModelFamily.RANDOM_FOREST:
        return RandomForestClassifier(n_estimators=100, random_state=random_state, n_jobs=1)
    return GradientBoostingClassifier(random_state=random_state)


def sample_weight_name(family: ModelFamily | str) -> str:
    """The ``fit`` keyword through which ``family`` takes per-row sample weights."""
    if ModelFamily(family) is ModelFamily.LOGISTIC_REGRESSION:
        return "model__sample_weight"
    return "sample_weight"
