"""The five mitigation strategies S0-S4 and how each is fitted and asked for decisions.

=====  ===========================  ==========================================================
code   strategy                     features and mechanism
=====  ===========================  ==========================================================
S0     baseline                     core + proxy + protected columns
S1     unawareness                  core + proxy (protected columns dropped)
S2     unawareness_proxy_removal    core only
S3     in_processing                core; fairlearn ``ExponentiatedGradient`` with the
                                    first attribute's 0/1 disadvantaged mask as
                                    ``sensitive_features``
S4     post_processing              core; fairlearn ``ThresholdOptimizer(prefit=True)`` over
                                    a base model fitted on 70 % of the training rows, its
                                    thresholds fitted on the other 30 %
=====  ===========================  ==========================================================

Design decisions:

* The sensitive feature of S3/S4 is never a column of X; it is carried alongside.
* S0-S2 decide ``ŷ = 1`` when ``predict_proba`` exceeds ``decision_threshold``; their score is
  that probability.
* S3's decisions come from ExponentiatedGradient's *randomised* ``predict`` with an explicit
  seed.  Its score is the mixture probability ``Σ_t w_t h_t(x)`` -- the chance that the
  randomised classifier says 1 -- computed from the public ``predictors_`` and ``weights_``.
  It ranks rows well enough for an AUC but it is **not a calibrated probability** of the label.
* **Operating point** (:mod:`faircode.audit.decision`).  Under the default ``threshold`` rule S3 and
  S4 optimise accuracy, fairlearn's defaults, exactly as before.  Under ``base_rate`` or
  ``top_fraction`` they are fitted for a comparable, balanced operating point instead of
  silently deciding for the majority class: S3's objective is
  ``ErrorRate(costs={"fp": 2p, "fn": 2(1 - p)})`` with ``p`` the training label rate
  (:func:`error_costs`) -- fairlearn's error ``c_FP·P[ŷ=1, y=0] + c_FN·P[ŷ=0, y=1]`` then equals
  ``2p(1-p)·(FPR + FNR)``, i.e. balanced error, its Bayes-optimal cutoff is ``P(y=1|x) > p``
  (the ``base_rate`` rule), and the costs sum to 2 like the default ``{1, 1}``, so the objective
  keeps the scale ``eps`` is set against; S4's is ``objective="balanced_accuracy_score"``.
  :attr:`FittedStrategy.objective` records which was used.  S0-S2 are fitted identically under
  every rule; only their cutoff moves (:meth:`FittedStrategy.with_cutoff`).
* S4 calibrates its thresholds on rows the base model never saw.  Calibrating on the rows the
  model was fitted on overfits: on German credit the post-processed parity gap is +0.22 instead
  of +0.07.  The calibration split is stratified on label x group and needs at least two rows in
  every combination; with fewer the cell is :class:`Unfittable` (the grid keeps the audit's other
  cells and marks this one uninformative, and ``faircode validate`` warns up front).  With a
  unit (``groups``) the calibration split is by unit: no unit has rows in both parts
  (:func:`faircode.audit.data.grouped_split`).  S4 gives decisions only (no score, so no AUC).
* Randomised predictors (S3, S4) draw one uniform per row, in row order, from the seed passed to
  :meth:`FittedStrategy.predict`.  Predicting an original and a counterfactually perturbed copy
  of the same rows with the same seed therefore uses common random numbers: a decision flips
  only because the input changed, never because of the draw.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pandas.errors
from fairlearn.postprocessing import ThresholdOptimizer
from fairlearn.reductions import (
    DemographicParity,
    EqualizedOdds,
    ErrorRate,
    ErrorRateParity,
    ExponentiatedGradient,
    FalsePositiveRateParity,
    TruePositiveRateParity,
)
from sklearn.model_selection import train_test_split

from faircode.audit.data import grouped_split
from faircode.audit.decision import Cutoff, DecisionRule
from faircode.audit.manifest import Manifest
from faircode.core.cells import STRATEGY_TABLE, ModelFamily, Strategy, strategy_info
from faircode.core.config import Encoding, MitigationConfig
from faircode.core.errors import DataError
from faircode.grid.models import ONEHOT_FAMILIES, make_model, sample_weight_name

__all__ = [
    "READS",
    "FittedStrategy",
    "Unfittable",
    "calibration_problem",
    "calibration_split",
    "calibration_warning",
    "error_costs",
    "feature_columns",
    "fit_strategy",
    "supports_constraint",
]

CALIBRATION_FRACTION = 0.3


class Unfittable(DataError):
    """A cell cannot be fitted on these training rows (a group too small for a stratified
    split); the message names the attribute, the stratum and its size.  The grid keeps the other
    cells and marks this one uninformative (:func:`faircode.grid.fit.fit_cell`)."""


def calibration_warning(y: np.ndarray, sensitive: np.ndarray, *, attribute: str,
                        margin: int = 5) -> str:
    """``faircode validate``'s warning about S4 on these training rows ('' when none): its
    cells will not be fitted (:func:`calibration_problem`), or a label x group stratum has
    fewer than ``margin`` rows, so a re-split training replicate may not be fitted."""
    problem = calibration_problem(y, sensitive, attribute=attribute)
    if problem:
        return f"{problem}: the S4 (post_processing) cells will be uninformative (not fitted)"
    strata = np.asarray(y, dtype=np.int64) * 2 + np.asarray(sensitive, dtype=np.int64)
    counts = np.bincount(strata, minlength=4)
    code = int(np.argmin(counts))
    if counts[code] < margin:
        return (f"post_processing calibration split: label={code // 2}, {attribute} "
                f"disadvantaged={bool(code % 2)} has only {counts[code]} training rows: a "
                "re-split training replicate (run.seed_mode split) may leave fewer than 2, and "
                "its S4 cells uninformative (not fitted)")
    return ""


def calibration_problem(y: np.ndarray, sensitive: np.ndarray, *, attribute: str = "",
                        fraction: float = CALIBRATION_FRACTION) -> str:
    """Why S4's stratified calibration split of these training rows is impossible ('' if it is
    not): a label x group stratum of fewer than two rows."""
    strata = np.asarray(y, dtype=np.int64) * 2 + np.asarray(sensitive, dtype=np.int64)
    counts = np.bincount(strata, minlength=4)
    for code, n in enumerate(counts):
        if n < 2:
            who = f"{attribute} " if attribute else ""
            return (f"post_processing calibration split: label={code // 2}, {who}"
                    f"disadvantaged={bool(code % 2)} has {n} training row(s); stratifying the "
                    f"{1 - fraction:.0%}/{fraction:.0%} split needs at least 2")
    return ""
_PANDAS_DEPRECATION: type[Warning] = getattr(pandas.errors, "Pandas4Warning", FutureWarning)


_REDUCTION_MOMENTS = {
    "demographic_parity": DemographicParity,
    "equalized_odds": EqualizedOdds,
    "true_positive_rate_parity": TruePositiveRateParity,
    "false_positive_rate_parity": FalsePositiveRateParity,
    "error_rate_parity": ErrorRateParity,
}
# ThresholdOptimizer's names for the same constraints; it has no error-rate parity.
_THRESHOLD_CONSTRAINTS = {
    "demographic_parity": "demographic_parity",
    "equalized_odds": "equalized_odds",
    "true_positive_rate_parity": "true_positive_rate_parity",
    "false_positive_rate_parity": "false_positive_rate_parity",
}


READS: dict[Strategy, frozenset[str]] = {s.strategy: s.reads for s in STRATEGY_TABLE}
"""Which ``mitigation.*`` keys each strategy's fit reads (the DVC fit stages are split by it;
each strategy's ``reads`` in :data:`faircode.core.cells.STRATEGY_TABLE`)."""


def supports_constraint(strategy: Strategy, constraint: str) -> bool:
    """Whether ``strategy`` can enforce ``constraint`` (S4 cannot do error-rate parity)."""
    if strategy is Strategy.POST_PROCESSING:
        return constraint in _THRESHOLD_CONSTRAINTS
    return True


def feature_columns(strategy: Strategy, manifest: Manifest) -> tuple[str, ...]:
    """The columns of X that ``strategy`` trains on, in a stable order."""
    core, proxy = manifest.core_features, manifest.proxy_features
    if strategy is Strategy.BASELINE:
        return _unique(core + proxy + manifest.protected_columns)
    if strategy is Strategy.UNAWARENESS:
        return _unique(core + proxy)
    return _unique(core)


def _unique(columns: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(columns))


@dataclass(frozen=True, slots=True)
class FittedStrategy:
    """A fitted strategy x model cell that turns rows into decisions (and scores)."""

    strategy: Strategy
    family: ModelFamily
    columns: tuple[str, ...]
    estimator: Any
    decision_threshold: float = 0.5
    inclusive: bool = False
    objective: str = ""

    @property
    def scored(self) -> bool:
        """Whether decisions are a cutoff on a deterministic score (S0-S2), so a rule applies."""
        return strategy_info(self.strategy).cutoff

    def with_cutoff(self, cutoff: Cutoff) -> FittedStrategy:
        """Return a copy deciding ``score >= / > cutoff`` (S0-S2 only; S3/S4 are unaffected)."""
        if not self.scored:
            raise ValueError(f"{self.strategy.value}: decisions are not a cutoff on a score")
        return replace(self, decision_threshold=cutoff.value, inclusive=cutoff.inclusive)

    def predict(
        self, X: pd.DataFrame, *, sensitive: np.ndarray, random_state: int
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Return ``(decisions, scores)`` for the rows of ``X``; scores are None for S4.

        ``sensitive`` is the rows' 0/1 disadvantaged mask of the first protected attribute
        (used by S4 only); ``random_state`` seeds the randomised predictors (S3, S4).
        """
        features = X.loc[:, list(self.columns)]
        with warnings.catch_warnings():
            # a category never seen in fitting goes to the infrequent indicator, as designed
            warnings.filterwarnings("ignore", message="Found unknown categories",
                                    category=UserWarning)
            return self._predict(features, sensitive=sensitive, random_state=random_state)

    def _predict(
        self, features: pd.DataFrame, *, sensitive: np.ndarray, random_state: int
    ) -> tuple[np.ndarray, np.ndarray | None]:
        if self.strategy is Strategy.IN_PROCESSING:
            decisions = self.estimator.predict(features, random_state=random_state)
            score = _mixture_probability(self.estimator, features)
            return np.asarray(decisions, dtype=np.int8), score
        if self.strategy is Strategy.POST_PROCESSING:
            decisions = self.estimator.predict(
                features, sensitive_features=np.asarray(sensitive, dtype=np.int8),
                random_state=random_state,
            )
            return np.asarray(decisions, dtype=np.int8), None
        score = self.estimator.predict_proba(features)[:, 1]
        flagged = score >= self.decision_threshold if self.inclusive else (
            score > self.decision_threshold)
        return flagged.astype(np.int8), score


def _mixture_probability(model: ExponentiatedGradient, features: pd.DataFrame) -> np.ndarray:
    """P(randomised ExponentiatedGradient says 1) = Σ_t w_t h_t(x), from its public attributes."""
    score = np.zeros(len(features))
    for weight, predictor in zip(model.weights_, model.predictors_, strict=True):
        if weight > 0:
            score += weight * np.asarray(predictor.predict(features), dtype=float)
    return score


def error_costs(y: np.ndarray) -> dict[str, float]:
    """S3's cost-sensitive error costs from the training label rate ``p``: fp 2p, fn 2(1-p)."""
    p = float(np.mean(np.asarray(y, dtype=np.float64)))
    return {"fp": 2.0 * p, "fn": 2.0 * (1.0 - p)}


def calibration_split(
    y: np.ndarray, sensitive: np.ndarray, *, random_state: int,
    fraction: float = CALIBRATION_FRACTION, groups: np.ndarray | None = None,
    attribute: str = "",
) -> tuple[np.ndarray, np.ndarray]:
    """Split training rows into (model-fit, threshold-calibration) positions for S4.

    Stratified on label x group; every one of the four combinations must have >= 2 rows,
    otherwise :class:`Unfittable` names the combination (and ``attribute``) and its size
    (:func:`calibration_problem`).  ``groups`` (a unit id per row) splits by unit instead,
    stratified on each unit's label and group pattern; without it the split is the row split it
    always was.
    """
    problem = calibration_problem(y, sensitive, attribute=attribute, fraction=fraction)
    if problem:
        raise Unfittable(problem)
    strata = np.asarray(y, dtype=np.int64) * 2 + np.asarray(sensitive, dtype=np.int64)
    if groups is not None:
        _, codes = np.unique(np.asarray(groups), return_inverse=True)
        try:
            return grouped_split(
                codes.reshape(-1), [np.asarray(y), np.asarray(sensitive)],
                test_size=fraction, random_state=random_state,
            )
        except ValueError as exc:
            raise Unfittable(
                f"post_processing calibration split: cannot split the training units: {exc}"
            ) from None
    fit_idx, cal_idx = train_test_split(
        np.arange(len(strata)), test_size=fraction, stratify=strata, random_state=random_state
    )
    return np.sort(fit_idx), np.sort(cal_idx)


def fit_strategy(
    strategy: Strategy,
    family: ModelFamily,
    *,
    X: pd.DataFrame,
    y: np.ndarray,
    sensitive: np.ndarray,
    manifest: Manifest,
    mitigation: MitigationConfig,
    groups: np.ndarray | None = None,
    decision: DecisionRule | None = None,
    random_state: int | None = None,
    encoding: Encoding = "label",
    nominal: tuple[str, ...] = (),
) -> FittedStrategy:
    """Fit one strategy x model cell on the training rows ``X``, ``y``.

    ``sensitive`` is the training rows' disadvantaged mask of the manifest's *first* protected
    attribute (S3/S4 only); ``groups``, the rows' unit ids, makes S4's calibration split by unit.
    Every estimator (and S4's calibration split) is seeded with ``random_state``, by default
    the manifest's ``random_state``; a training replicate passes its own
    (:mod:`faircode.evaluate.stability`).
    ``decision`` is the manifest's declared rule; None or ``threshold`` keeps S3/S4's accuracy
    objectives, any other rule gives them the balanced ones (module docstring): the fit reads
    the rule's kind, never a threshold value.  ``mitigation`` is read by S3 (every key) and S4
    (the constraint) only (:data:`READS`).  S0-S2 decide at 0.5 until
    :meth:`FittedStrategy.with_cutoff` moves them (the grid stores their scores and decides in
    the evaluate step).  ``encoding`` ``onehot`` one-hot encodes, inside the model of a family of
    :data:`faircode.grid.models.ONEHOT_FAMILIES`, the ``nominal`` columns among the strategy's
    features (:func:`faircode.grid.models.make_model`).
    """
    strategy, family = Strategy(strategy), ModelFamily(family)
    columns = feature_columns(strategy, manifest)
    features = X.loc[:, list(columns)]
    seed = manifest.random_state if random_state is None else random_state
    sens = np.asarray(sensitive, dtype=np.int8)
    balanced = decision is not None and not decision.default_objective
    onehot = tuple(i for i, c in enumerate(columns) if c in nominal) \
        if encoding == "onehot" and family in ONEHOT_FAMILIES else ()
    model = _Model(family, onehot)
    objective = ""
    if strategy is Strategy.IN_PROCESSING:
        estimator, objective = _fit_in_processing(
            model, features, y, sens, mitigation=mitigation, balanced=balanced, seed=seed
        )
    elif strategy is Strategy.POST_PROCESSING:
        estimator, objective = _fit_post_processing(
            model, features, y, sens, mitigation=mitigation, balanced=balanced, seed=seed,
            groups=groups, attribute=f"protected_attributes[0] "
                                     f"({manifest.protected_attributes[0].name})",
        )
    else:
        estimator = model.make(seed)
        estimator.fit(features, y)
    return FittedStrategy(strategy, family, columns, estimator, objective=objective)


@dataclass(frozen=True, slots=True)
class _Model:
    """A model family and the positions of the columns it one-hot encodes (none: codes)."""

    family: ModelFamily
    onehot: tuple[int, ...]

    def make(self, seed: int) -> Any:
        return make_model(self.family, random_state=seed, onehot=self.onehot)

    @property
    def sample_weight_name(self) -> str:
        return sample_weight_name(self.family, onehot=bool(self.onehot))


def _fit_in_processing(
    model: _Model, features: pd.DataFrame, y: np.ndarray, sens: np.ndarray, *,
    mitigation: MitigationConfig, balanced: bool, seed: int,
) -> tuple[ExponentiatedGradient, str]:
    """S3: ExponentiatedGradient under the constraint, with balanced costs if ``balanced``."""
    costs = error_costs(y) if balanced else None
    objective = "error_rate" if costs is None else (
        f"error_rate(costs={{fp: {costs['fp']!r}, fn: {costs['fn']!r}}})")
    estimator = ExponentiatedGradient(
        model.make(seed),
        _REDUCTION_MOMENTS[mitigation.constraint](),
        objective=None if costs is None else ErrorRate(costs=costs),
        eps=mitigation.eps,
        max_iter=mitigation.max_iter,
        sample_weight_name=model.sample_weight_name,
    )
    with warnings.catch_warnings():
        # fairlearn 0.15 sets Series values with .at on new keys, which pandas 3 deprecates
        # (Pandas4Warning); the result is unaffected.  Not ours to fix, so not shown.
        warnings.filterwarnings("ignore", category=_PANDAS_DEPRECATION, module=r"fairlearn\.")
        estimator.fit(features, y, sensitive_features=sens)
    return estimator, objective


def _fit_post_processing(
    model: _Model, features: pd.DataFrame, y: np.ndarray, sens: np.ndarray, *,
    mitigation: MitigationConfig, balanced: bool, seed: int, groups: np.ndarray | None,
    attribute: str = "",
) -> tuple[ThresholdOptimizer, str]:
    """S4: a base model on 70 % of the rows, ThresholdOptimizer's thresholds on the other 30 %."""
    if not supports_constraint(Strategy.POST_PROCESSING, mitigation.constraint):
        raise DataError(f"post_processing: ThresholdOptimizer cannot enforce "
                        f"{mitigation.constraint!r}")
    fit_idx, cal_idx = calibration_split(y, sens, random_state=seed, groups=groups,
                                         attribute=attribute)
    base = model.make(seed)
    base.fit(features.iloc[fit_idx], y[fit_idx])
    objective = "balanced_accuracy_score" if balanced else "accuracy_score"
    estimator = ThresholdOptimizer(
        estimator=base,
        constraints=_THRESHOLD_CONSTRAINTS[mitigation.constraint],
        objective=objective,
        prefit=True,
        predict_method="predict_proba",
    )
    estimator.fit(features.iloc[cal_idx], y[cal_idx], sensitive_features=sens[cal_idx])
    return estimator, objective
