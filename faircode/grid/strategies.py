"""The mitigation strategies S0-S5 and how each is fitted and asked for decisions.

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
S5     relaxed_post_processing      the most accurate of S0-S2's models of the family on S4's
                                    70 %, group thresholds within each tolerance ε of
                                    ``mitigation.tolerances`` on its 30 %
                                    (:mod:`faircode.grid.relaxed`)
=====  ===========================  ==========================================================

Design decisions:

* **One fitter per mitigated strategy** (:data:`FITTERS`), looked up, never branched on; the
  unmitigated S0-S2 share one.  A fitter returns the estimator, the objective it optimised,
  the columns it reads and the violation of the constraint it reached on the rows it enforced
  it on (S3: its training rows; S4, S5: the calibration rows;
  :func:`faircode.grid.violation.constraint_violation` of its expected decisions).
* The sensitive feature of S3-S5 is never a column of X; it is carried alongside.
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
  keeps the scale ``eps`` is set against; S4's and S5's is
  ``objective="balanced_accuracy_score"``.
  :attr:`FittedStrategy.objective` records which was used.  S0-S2 are fitted identically under
  every rule; only their cutoff moves (:meth:`FittedStrategy.with_cutoff`).
* S4 and S5 calibrate their thresholds on rows the base model never saw (the calibration split
  and why: :mod:`faircode.grid.calibration`).  They give decisions only (no score, so no AUC).
* Randomised predictors (S3-S5) draw one uniform per row, in row order, from the seed passed to
  :meth:`FittedStrategy.predict`.  Predicting an original and a counterfactually perturbed copy
  of the same rows with the same seed therefore uses common random numbers: a decision flips
  only because the input changed, never because of the draw.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
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

from faircode.audit.decision import Cutoff, DecisionRule
from faircode.audit.manifest import Manifest
from faircode.core.cells import (
    CUTOFF_STRATEGIES,
    STRATEGY_TABLE,
    ModelFamily,
    Strategy,
    strategy_info,
)
from faircode.core.config import CONSTRAINTS, Encoding, MitigationConfig
from faircode.core.errors import DataError
from faircode.grid.calibration import calibration_split
from faircode.grid.models import ONEHOT_FAMILIES, make_model, sample_weight_name
from faircode.grid.relaxed import Candidate, expected_decisions, fit_relaxed
from faircode.grid.violation import constraint_violation

__all__ = [
    "CANDIDATES",
    "FITTERS",
    "READS",
    "FitInputs",
    "FittedStrategy",
    "error_costs",
    "feature_columns",
    "fit_strategy",
    "supports_constraint",
]

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


_ENFORCES: dict[Strategy, frozenset[str]] = {
    Strategy.POST_PROCESSING: frozenset(_THRESHOLD_CONSTRAINTS),
    Strategy.RELAXED_POST_PROCESSING: frozenset(_THRESHOLD_CONSTRAINTS),
}
"""The constraints of a strategy that cannot enforce every one (ThresholdOptimizer's)."""

CANDIDATES: tuple[Strategy, ...] = tuple(reversed(CUTOFF_STRATEGIES))
"""S5's candidate base models: the unmitigated strategies' feature sets, fewest features first
(a tie in validation goes to the leaner; :mod:`faircode.grid.relaxed`)."""


def supports_constraint(strategy: Strategy, constraint: str) -> bool:
    """Whether ``strategy`` can enforce ``constraint`` (S4 and S5 cannot do error-rate
    parity)."""
    return constraint in _ENFORCES.get(Strategy(strategy), frozenset(CONSTRAINTS))


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
    violations: tuple[float, ...] = ()
    """The violation of the constraint it reached where it enforced it (S3-S5; S5 one per
    tolerance); empty for S0-S2."""

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
        """Return ``(decisions, scores)`` for the rows of ``X``; scores are None for S4, S5.

        ``sensitive`` is the rows' 0/1 disadvantaged mask of the first protected attribute
        (used by S4, S5 only); ``random_state`` seeds the randomised predictors (S3-S5).
        """
        features = X.loc[:, list(self.columns)]
        with warnings.catch_warnings():
            # a category never seen in fitting goes to the infrequent indicator, as designed
            warnings.filterwarnings("ignore", message="Found unknown categories",
                                    category=UserWarning)
            return self._predict(features, sensitive=sensitive, random_state=random_state)

    def predict_curve(self, X: pd.DataFrame, *, sensitive: np.ndarray,
                      random_state: int) -> tuple[np.ndarray, ...]:
        """Every tolerance's decisions of a strategy with a tolerance curve (S5), with the
        uniforms of :meth:`predict`; empty for any other."""
        curve = getattr(self.estimator, "predict_curve", None)
        if curve is None:
            return ()
        features = X.loc[:, list(self.columns)]
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Found unknown categories",
                                    category=UserWarning)
            return tuple(curve(features, sensitive_features=np.asarray(sensitive, dtype=np.int8),
                               random_state=random_state))

    @property
    def tolerances(self) -> tuple[float, ...]:
        """The tolerances of its curve (S5), else empty."""
        return tuple(getattr(self.estimator, "tolerances", ()))

    @property
    def base(self) -> str:
        """The strategy whose features its base model reads, where it chose one (S5), else ''."""
        chosen = getattr(self.estimator, "base", None)
        return chosen.value if isinstance(chosen, Strategy) else ""

    def _predict(
        self, features: pd.DataFrame, *, sensitive: np.ndarray, random_state: int
    ) -> tuple[np.ndarray, np.ndarray | None]:
        if self.strategy is Strategy.IN_PROCESSING:
            decisions = self.estimator.predict(features, random_state=random_state)
            score = _mixture_probability(self.estimator, features)
            return np.asarray(decisions, dtype=np.int8), score
        if strategy_info(self.strategy).sensitive_at_predict:
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
    attribute (S3-S5 only); ``groups``, the rows' unit ids, makes S4's (and S5's) calibration
    split by unit.  Every estimator (and the calibration split) is seeded with
    ``random_state``, by default the manifest's ``random_state``; a training replicate passes
    its own (:mod:`faircode.evaluate.stability`).
    ``decision`` is the manifest's declared rule; None or ``threshold`` keeps S3-S5's accuracy
    objectives, any other rule gives them the balanced ones (module docstring): the fit reads
    the rule's kind, never a threshold value.  ``mitigation`` is read by S3-S5 only, each the
    keys its ``reads`` names (:data:`READS`).  S0-S2 decide at 0.5 until
    :meth:`FittedStrategy.with_cutoff` moves them (the grid stores their scores and decides in
    the evaluate step).  ``encoding`` ``onehot`` one-hot encodes, inside the model of a family of
    :data:`faircode.grid.models.ONEHOT_FAMILIES`, the ``nominal`` columns among the strategy's
    features (:func:`faircode.grid.models.make_model`).
    """
    strategy, family = Strategy(strategy), ModelFamily(family)
    inputs = FitInputs(
        X=X, y=y, sensitive=np.asarray(sensitive, dtype=np.int8), manifest=manifest,
        family=family, mitigation=mitigation, groups=groups,
        balanced=decision is not None and not decision.default_objective,
        seed=manifest.random_state if random_state is None else random_state,
        encoding=encoding, nominal=nominal)
    fitted = FITTERS.get(strategy, _fit_unmitigated)(strategy, inputs)
    return FittedStrategy(strategy, family, fitted.columns, fitted.estimator,
                          objective=fitted.objective, violations=fitted.violations)


@dataclass(frozen=True, slots=True, kw_only=True)
class FitInputs:
    """What every fitter reads: the training rows (every column), their labels and 0/1 mask of
    the first attribute, the cell's family, the params and the seed (:func:`fit_strategy`)."""

    X: pd.DataFrame
    y: np.ndarray
    sensitive: np.ndarray
    manifest: Manifest
    family: ModelFamily
    mitigation: MitigationConfig
    groups: np.ndarray | None
    balanced: bool
    seed: int
    encoding: Encoding
    nominal: tuple[str, ...]

    def model(self, columns: tuple[str, ...]) -> _Model:
        """The family's model for ``columns`` (one-hot positions under ``onehot``)."""
        onehot = tuple(i for i, c in enumerate(columns) if c in self.nominal) \
            if self.encoding == "onehot" and self.family in ONEHOT_FAMILIES else ()
        return _Model(self.family, onehot)

    @property
    def attribute(self) -> str:
        """The first protected attribute, as a calibration error names it."""
        return f"protected_attributes[0] ({self.manifest.protected_attributes[0].name})"

    def split(self) -> tuple[np.ndarray, np.ndarray]:
        """S4's (and S5's) calibration split of these rows (:func:`calibration_split`)."""
        return calibration_split(self.y, self.sensitive, random_state=self.seed,
                                 groups=self.groups, attribute=self.attribute)


@dataclass(frozen=True, slots=True)
class _Fitted:
    """A fitter's result: the estimator, its objective, the columns it reads, its violations."""

    estimator: Any
    objective: str
    columns: tuple[str, ...]
    violations: tuple[float, ...] = ()


def _fit_unmitigated(strategy: Strategy, inputs: FitInputs) -> _Fitted:
    """S0-S2: the family's model on the strategy's features."""
    columns = feature_columns(strategy, inputs.manifest)
    estimator = inputs.model(columns).make(inputs.seed)
    estimator.fit(inputs.X.loc[:, list(columns)], inputs.y)
    return _Fitted(estimator, "", columns)


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


def _fit_in_processing(strategy: Strategy, inputs: FitInputs) -> _Fitted:
    """S3: ExponentiatedGradient under the constraint, with balanced costs if ``balanced``; its
    violation on its training rows, from the mixture's probabilities."""
    columns = feature_columns(strategy, inputs.manifest)
    features, y, mitigation = inputs.X.loc[:, list(columns)], inputs.y, inputs.mitigation
    model = inputs.model(columns)
    costs = error_costs(y) if inputs.balanced else None
    objective = "error_rate" if costs is None else (
        f"error_rate(costs={{fp: {costs['fp']!r}, fn: {costs['fn']!r}}})")
    estimator = ExponentiatedGradient(
        model.make(inputs.seed),
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
        estimator.fit(features, y, sensitive_features=inputs.sensitive)
    violation = constraint_violation(y, inputs.sensitive,
                                     _mixture_probability(estimator, features),
                                     constraint=mitigation.constraint)
    return _Fitted(estimator, objective, columns, (violation,))


def _objective(inputs: FitInputs) -> str:
    """ThresholdOptimizer's objective: balanced accuracy under a balanced rule, else accuracy."""
    return "balanced_accuracy_score" if inputs.balanced else "accuracy_score"


def _check_threshold_constraint(strategy: Strategy, constraint: str) -> None:
    if not supports_constraint(strategy, constraint):
        raise DataError(f"{strategy.value}: ThresholdOptimizer cannot enforce {constraint!r}")


def _fit_post_processing(strategy: Strategy, inputs: FitInputs) -> _Fitted:
    """S4: a base model on 70 % of the rows, ThresholdOptimizer's thresholds on the other 30 %;
    its violation on those 30 %."""
    constraint = inputs.mitigation.constraint
    _check_threshold_constraint(strategy, constraint)
    fit_idx, cal_idx = inputs.split()
    columns = feature_columns(strategy, inputs.manifest)
    features, y = inputs.X.loc[:, list(columns)], inputs.y
    base = inputs.model(columns).make(inputs.seed)
    base.fit(features.iloc[fit_idx], y[fit_idx])
    objective = _objective(inputs)
    estimator = ThresholdOptimizer(
        estimator=base,
        constraints=_THRESHOLD_CONSTRAINTS[constraint],
        objective=objective,
        prefit=True,
        predict_method="predict_proba",
    )
    calibration, sens = features.iloc[cal_idx], inputs.sensitive[cal_idx]
    estimator.fit(calibration, y[cal_idx], sensitive_features=sens)
    violation = constraint_violation(y[cal_idx], sens,
                                     expected_decisions(estimator, calibration, sens),
                                     constraint=constraint)
    return _Fitted(estimator, objective, columns, (violation,))


def _fit_relaxed(strategy: Strategy, inputs: FitInputs) -> _Fitted:
    """S5: the most accurate candidate base model on S4's split, its thresholds within every
    tolerance (:func:`faircode.grid.relaxed.fit_relaxed`)."""
    constraint = inputs.mitigation.constraint
    _check_threshold_constraint(strategy, constraint)
    fit_idx, cal_idx = inputs.split()
    candidates = []
    for candidate in CANDIDATES:
        columns = feature_columns(candidate, inputs.manifest)
        candidates.append(Candidate(candidate, columns,
                                    functools.partial(inputs.model(columns).make, inputs.seed)))
    objective = _objective(inputs)
    fitted = fit_relaxed(candidates, X=inputs.X, y=inputs.y, sensitive=inputs.sensitive,
                         fit_idx=fit_idx, cal_idx=cal_idx, constraint=constraint,
                         fairlearn_constraint=_THRESHOLD_CONSTRAINTS[constraint],
                         objective=objective, tolerances=inputs.mitigation.tolerances)
    return _Fitted(fitted, f"{objective}; {fitted.record}", fitted.columns, fitted.violations)


FITTERS: dict[Strategy, Callable[[Strategy, FitInputs], _Fitted]] = {
    Strategy.IN_PROCESSING: _fit_in_processing,
    Strategy.POST_PROCESSING: _fit_post_processing,
    Strategy.RELAXED_POST_PROCESSING: _fit_relaxed,
}
"""Each mitigated strategy's fitter; any other strategy is an unmitigated model
(:func:`fit_strategy` looks a strategy up here, it never branches on one)."""
