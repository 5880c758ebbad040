"""The three model families every strategy is crossed with.

Each family is a fresh, seeded scikit-learn estimator built by :func:`make_model`.  Deliberate
choices:

* ``logistic_regression`` standardises its inputs (``StandardScaler`` → ``LogisticRegression``,
  ``max_iter=1000``).  faircode encodes categoricals as integer codes and keeps numerics on their
  own scale (credit amounts in the thousands beside 0/1 flags); unscaled, lbfgs stops before
  converging on several shipped audits.  Scaling changes no tree model and no decision rule.
* ``random_forest`` is ``RandomForestClassifier(n_estimators=100, min_samples_leaf=10)``.  Fully
  grown trees (scikit-learn's default ``min_samples_leaf=1``) end in pure leaves, so per-row
  sample weights -- ExponentiatedGradient's only lever on its base learner -- cannot change any
  leaf's vote: the forest reproduces its training labels whatever the weights.  On healthcare
  readmission (label rate 11 %) S3 then flagged 0.27 % of test rows (balanced accuracy 0.500, a
  degenerate cell) while flagging 8.8 % of its own training rows.  With leaves of at least
  :data:`RF_MIN_SAMPLES_LEAF` rows each leaf decides by a weighted vote, and the same cell flags
  11.7 % (balanced accuracy 0.528).  The family is defined once for every strategy, so S0-S4 use
  the same forest and S0 -> S3 differences stay the mitigation's alone; the regularised forest
  ranks no worse (S0 AUC healthcare 0.626 -> 0.644, German credit 0.788 -> 0.790).
* ``gradient_boosting`` is ``GradientBoostingClassifier()`` with defaults.  Parallelism comes from
  the grid's workers, so every estimator runs single-threaded (``n_jobs=1``) and results do not
  depend on the worker count.
* Every family accepts ``sample_weight`` (ExponentiatedGradient reweights through it); the name
  under which a family takes it is :func:`sample_weight_name`.
"""

from __future__ import annotations

from sklearn.base import ClassifierMixin
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from faircode.core.cells import ModelFamily

__all__ = ["RF_MIN_SAMPLES_LEAF", "ModelFamily", "make_model", "sample_weight_name"]

RF_MIN_SAMPLES_LEAF = 10
"""The random forest's smallest leaf (module docstring: why not scikit-learn's 1)."""


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
        return RandomForestClassifier(n_estimators=100, min_samples_leaf=RF_MIN_SAMPLES_LEAF,
                                      random_state=random_state, n_jobs=1)
    return GradientBoostingClassifier(random_state=random_state)


def sample_weight_name(family: ModelFamily | str) -> str:
    """The ``fit`` keyword through which ``family`` takes per-row sample weights."""
    if ModelFamily(family) is ModelFamily.LOGISTIC_REGRESSION:
        return "model__sample_weight"
    return "sample_weight"
