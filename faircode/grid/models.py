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
* **Encoding** (``models.encoding``).  ``label`` (the default, the manifest specification's
  uniform encoding) gives every model the prepared integer codes, so logistic regression reads
  a nominal column (occupation, marital status) as an ordered number: Adult's S0 accuracy is
  0.827 against 0.855 with one-hot columns on the same split.  ``onehot`` puts a
  ``OneHotEncoder`` of the nominal columns (:attr:`faircode.audit.prepared.PreparedAudit.nominal`)
  first in the pipeline of the families of :data:`ONEHOT_FAMILIES` -- logistic regression only:
  a tree splits a code list into ordered parts and needs no indicators (Adult S0: forest 0.861
  with codes, 0.857 one-hot; boosting 0.863, 0.862), and one-hot would give the trees 1,073
  columns on healthcare (its diagnosis codes) and multiply their fit time by as much.  One
  indicator per category seen in the fitting rows, a two-category column kept as one indicator
  (``drop="if_binary"``), categories seen on fewer than :data:`ONEHOT_MIN_ROWS` fitting rows
  pooled into one "infrequent" indicator, a value never seen in fitting (a counterfactual edit)
  into that indicator or none.  The indicators stay 0/1 (sparse) and only the other columns are
  standardised (scaling an indicator by its own spread would stretch a rare category's column
  and loosen the penalty on it).  One-hot is not better everywhere: on student performance (519
  training rows, 43 columns one-hot) S0's AUC falls from 0.663 to 0.614, which is one more reason
  the default stays ``label`` and ``bench/encoding_sensitivity.py`` reports what changes.  Inside
  the model, not in ``prepare``: the stored features, every counterfactual set and the tree
  families are exactly what they are under ``label``.
"""

from __future__ import annotations

from collections.abc import Sequence

from sklearn.base import ClassifierMixin
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from faircode.core.cells import ModelFamily

__all__ = ["ONEHOT_FAMILIES", "ONEHOT_MIN_ROWS", "RF_MIN_SAMPLES_LEAF", "ModelFamily",
           "make_model", "sample_weight_name"]

RF_MIN_SAMPLES_LEAF = 10
"""The random forest's smallest leaf (module docstring: why not scikit-learn's 1)."""

ONEHOT_MIN_ROWS = 10
"""Under ``onehot``, a category seen on fewer fitting rows joins its column's infrequent one."""

ONEHOT_FAMILIES: frozenset[ModelFamily] = frozenset({ModelFamily.LOGISTIC_REGRESSION})
"""The families ``models.encoding: onehot`` one-hot encodes for (module docstring)."""


def make_model(family: ModelFamily | str, *, random_state: int,
               onehot: Sequence[int] = ()) -> ClassifierMixin:
    """Return a fresh, unfitted estimator of ``family`` seeded with ``random_state``.

    ``onehot``: the positions (in the feature columns the model is fitted on) of the nominal
    columns to one-hot encode first (``models.encoding: onehot``; module docstring); empty: the
    codes as they are.
    """
    family = ModelFamily(family)
    steps: list[tuple[str, object]] = []
    linear = family is ModelFamily.LOGISTIC_REGRESSION
    if onehot:
        encoder = OneHotEncoder(handle_unknown="infrequent_if_exist", drop="if_binary",
                                min_frequency=ONEHOT_MIN_ROWS, sparse_output=True)
        # the other columns are standardised beside the indicators (never the indicators)
        steps.append(("encode", ColumnTransformer(
            [("onehot", encoder, list(onehot))], remainder=StandardScaler() if linear
            else "passthrough", sparse_threshold=1.0)))
    if linear:
        if not onehot:
            steps.append(("scale", StandardScaler()))
        steps.append(("model", LogisticRegression(max_iter=1000, random_state=random_state)))
    elif family is ModelFamily.RANDOM_FOREST:
        steps.append(("model", RandomForestClassifier(
            n_estimators=100, min_samples_leaf=RF_MIN_SAMPLES_LEAF, random_state=random_state,
            n_jobs=1)))
    else:
        steps.append(("model", GradientBoostingClassifier(random_state=random_state)))
    if len(steps) == 1:
        return steps[0][1]  # a bare estimator, as ever
    return Pipeline(steps)


def sample_weight_name(family: ModelFamily | str, *, onehot: bool = False) -> str:
    """The ``fit`` keyword through which ``family`` (one-hot encoding first or not) takes
    per-row sample weights."""
    if onehot or ModelFamily(family) is ModelFamily.LOGISTIC_REGRESSION:
        return "model__sample_weight"
    return "sample_weight"
