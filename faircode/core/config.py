"""The benchmark's typed configuration: one frozen record, validated when it is built.

Configuration flows one way: ``params.yaml`` (or CLI flags) → :class:`BenchmarkConfig` →
explicit keyword arguments of library functions.  No library function reads a file, an
environment variable or ``params.yaml`` itself.  :func:`params_from_mapping` is the single
place a parsed mapping becomes a config; it rejects unknown keys and names the key path of any
bad value, so a typo in ``params.yaml`` cannot silently fall back to a default.

``params.yaml`` is split by concern: ``audits``, ``mitigation.*``, ``models.*``, ``stats.*``,
``degenerate.*``, ``verdicts.*``, ``curves.*``, ``arbitrariness.*``, ``run.*``, and
:class:`BenchmarkConfig` nests its sections the same way (``config.stats.alpha``), each a record
that writes its defaults once and names its errors by their ``params.yaml`` path.
:data:`PARAM_KEYS` is read off the records, so adding a param is adding its field; the
``faircode run`` flags go through the same paths (:meth:`BenchmarkConfig.with_params`), so the
pipeline and the command line build the very same config.  ``run.json`` records it flat
(:func:`config_record`, one function).  ``run.jobs: null`` means "every core"; apart from it only
``run.scheduler`` may be null.

Where the fit tasks run (``run.backend``, ``run.scheduler``) is an :class:`ExecutionConfig` beside
the :class:`BenchmarkConfig`, not a field of it: the config is recorded in every ``run.json`` and
tracked run, and the execution backend, like the worker count, changes no number, so it must
neither re-run a DVC stage nor appear as a difference between two runs of the same state.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from faircode.core.cells import ModelFamily
from faircode.core.errors import ConfigError, config_error
from faircode.core.metrics import FAIRNESS_METRICS, Metric
from faircode.core.names import check_name

__all__ = [
    "BACKENDS",
    "CONSTRAINTS",
    "ENCODINGS",
    "EXECUTION_KEYS",
    "MAX_CHUNK_ROWS",
    "MAX_DRAWS",
    "MAX_ITER",
    "MAX_JOBS",
    "MAX_SEEDS",
    "PARAM_KEYS",
    "SEED_MODES",
    "ArbitrarinessConfig",
    "Backend",
    "BenchmarkConfig",
    "Constraint",
    "CurvesConfig",
    "DegenerateConfig",
    "Encoding",
    "ExecutionConfig",
    "MitigationConfig",
    "ModelsConfig",
    "Params",
    "ReplicateConfig",
    "ReportConfig",
    "SeedMode",
    "StatsConfig",
    "VerdictsConfig",
    "check_scheduler",
    "config_from_params",
    "config_record",
    "load_params",
    "param_value",
    "params_from_mapping",
]

Constraint = Literal[
    "demographic_parity",
    "equalized_odds",
    "true_positive_rate_parity",
    "false_positive_rate_parity",
    "error_rate_parity",
]
CONSTRAINTS: tuple[str, ...] = get_args(Constraint)
Backend = Literal["local", "dask"]
BACKENDS: tuple[str, ...] = get_args(Backend)
SeedMode = Literal["model", "split"]
SEED_MODES: tuple[str, ...] = get_args(SeedMode)
Encoding = Literal["label", "onehot"]
ENCODINGS: tuple[str, ...] = get_args(Encoding)
"""``models.encoding``: ``label`` (the manifest specification's uniform integer codes) or
``onehot`` (every nominal column one indicator per category, inside each model; the fit step)."""

# The limits on every value that sets the amount of work (a run.seeds of 10**9 would run on,
# silently): far above any useful value, far below what never ends.  docs/operations.md lists them.
MAX_SEEDS = 100
"""``run.seeds`` / ``--seeds``: training replicates per cell (the paper state: 5)."""
MAX_DRAWS = 100_000
"""``stats.n_resamples`` / ``n_permutations`` and their flags (default 2,000)."""
MAX_JOBS = 1024
"""``run.jobs`` / ``--jobs``: local worker processes."""
MAX_ITER = 10_000
"""``mitigation.max_iter``: ExponentiatedGradient's iterations (default 50)."""
MAX_CHUNK_ROWS = 50_000_000
"""``faircode audit --chunk-rows``: rows read at a time (default 10**6 for a log)."""


def _default_jobs() -> int:
    return min(MAX_JOBS, max(1, os.cpu_count() or 1))


@dataclass(frozen=True, slots=True, kw_only=True)
class MitigationConfig:
    """``mitigation.*``: what S3 (ExponentiatedGradient), S4 (ThresholdOptimizer) and S5 (its
    relaxed form) enforce.

    Read by the fit step only, each key by the strategies whose ``reads`` name it
    (:data:`faircode.core.cells.STRATEGY_TABLE`): ``eps`` and ``max_iter`` by S3,
    ``tolerances`` by S5, ``constraint`` by all three.  ThresholdOptimizer has no
    ``error_rate_parity``; with it, S4 and S5 cells are skipped and the skip is recorded in
    ``run.json``.  ``tolerances``: S5's grid of allowed violations ε, increasing numbers in
    [0, 1) (0: the exact constraint); its main-table decisions are at the first.
    """

    constraint: Constraint = "demographic_parity"
    eps: float = 0.01
    max_iter: int = 50
    tolerances: tuple[float, ...] = (0.0, 0.01, 0.02, 0.05)

    def __post_init__(self) -> None:
        if self.constraint not in CONSTRAINTS:
            raise config_error("mitigation.constraint", f"one of {', '.join(CONSTRAINTS)}",
                               self.constraint)
        _check_number("mitigation.eps", self.eps, low=0.0, high=None, open_low=True)
        _check_int("mitigation.max_iter", self.max_iter, low=1, high=MAX_ITER)
        object.__setattr__(self, "tolerances",
                           check_tolerances("mitigation.tolerances", self.tolerances))


MAX_TOLERANCES = 20


def check_tolerances(where: str, value: object) -> tuple[float, ...]:
    """``value`` as a tuple of floats; :class:`ConfigError` unless it is a non-empty list of at
    most :data:`MAX_TOLERANCES` strictly increasing numbers in [0, 1) (not booleans)."""
    expected = (f"a non-empty list of at most {MAX_TOLERANCES} increasing numbers in [0, 1) "
                "such as [0, 0.01, 0.02, 0.05]")
    if not isinstance(value, list | tuple) or not 0 < len(value) <= MAX_TOLERANCES:
        raise config_error(where, expected, value)
    for i, item in enumerate(value):
        if (isinstance(item, bool) or not isinstance(item, int | float)
                or not math.isfinite(item) or not 0 <= item < 1):
            raise config_error(f"{where}[{i}]", "a number in [0, 1)", item)
    if any(b <= a for a, b in itertools.pairwise(value)):
        raise config_error(where, expected, value)
    return tuple(float(item) for item in value)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelsConfig:
    """``models.*``: the operating point of S0-S2 and how the models see nominal columns.

    ``decision_threshold``: S0-S2 predict 1 when ``predict_proba`` exceeds it, unless the
    manifest declares a ``decision`` rule (:mod:`faircode.audit.decision`; the evaluate step).
    ``encoding``: :data:`ENCODINGS` (the fit step, :func:`faircode.grid.models.make_model`).
    """

    decision_threshold: float = 0.5
    encoding: Encoding = "label"

    def __post_init__(self) -> None:
        _check_number("models.decision_threshold", self.decision_threshold, low=0.0, high=1.0,
                      open_low=False)
        if self.encoding not in ENCODINGS:
            raise config_error("models.encoding", f"one of {', '.join(ENCODINGS)}",
                               self.encoding)


@dataclass(frozen=True, slots=True, kw_only=True)
class StatsConfig:
    """``stats.*``: resamples, permutations, interval level, FDR level and the MDE's power, and
    the paired effects' equivalence margins (``effect_margin`` for a change of distance from
    parity, ``cost_margin`` for a change of accuracy or balanced accuracy).

    Read by the evaluate step only (``power``: see :mod:`faircode.stats.power`; the margins:
    :mod:`faircode.evaluate.effects`).
    """

    n_resamples: int = 2000
    n_permutations: int = 2000
    confidence: float = 0.95
    alpha: float = 0.05
    power: float = 0.8
    effect_margin: float = 0.05
    cost_margin: float = 0.02

    def __post_init__(self) -> None:
        _check_int("stats.n_resamples", self.n_resamples, low=1, high=MAX_DRAWS)
        _check_int("stats.n_permutations", self.n_permutations, low=1, high=MAX_DRAWS)
        for name in ("confidence", "alpha", "power"):
            _check_number(f"stats.{name}", getattr(self, name), low=0.0, high=1.0,
                          open_low=True, open_high=True)
        for name in ("effect_margin", "cost_margin"):
            _check_number(f"stats.{name}", getattr(self, name), low=0.0, high=None,
                          open_low=True)


CURVE_THRESHOLDS: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(1, 20))
"""``curves.thresholds``' default: 0.05, 0.10, ..., 0.95 (the decimal values exactly)."""

MAX_CURVE_THRESHOLDS = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class CurvesConfig:
    """``curves.*``: the threshold grid of the operating-point curves (``curves.csv``).

    Read by the evaluate step only (:mod:`faircode.evaluate.curves`); the audit's declared
    cutoff is always added to the grid, so the grid never moves a main-table number.  A list
    or tuple of distinct finite numbers in [0, 1] (the score scale of S0-S2), stored as a tuple.
    """

    thresholds: tuple[float, ...] = CURVE_THRESHOLDS

    def __post_init__(self) -> None:
        object.__setattr__(self, "thresholds",
                           check_thresholds("curves.thresholds", self.thresholds))


def check_thresholds(where: str, value: object) -> tuple[float, ...]:
    """``value`` as a tuple of floats; :class:`ConfigError` unless it is a non-empty list of at
    most :data:`MAX_CURVE_THRESHOLDS` distinct numbers in [0, 1] (not booleans)."""
    expected = (f"a non-empty list of at most {MAX_CURVE_THRESHOLDS} distinct numbers in "
                "[0, 1]")
    if not isinstance(value, list | tuple) or not 0 < len(value) <= MAX_CURVE_THRESHOLDS:
        raise config_error(where, expected, value)
    for i, item in enumerate(value):
        if (isinstance(item, bool) or not isinstance(item, int | float)
                or not math.isfinite(item) or not 0 <= item <= 1):
            raise config_error(f"{where}[{i}]", "a number in [0, 1]", item)
    if len(set(value)) != len(value):
        raise config_error(where, expected, value)
    return tuple(float(item) for item in value)


@dataclass(frozen=True, slots=True, kw_only=True)
class DegenerateConfig:
    """``degenerate.*``: when a cell's decisions cannot show a gap
    (:func:`faircode.stats.operating.is_degenerate`).  Read by the evaluate step."""

    min_selection_rate: float = 0.01
    max_selection_rate: float = 0.99
    balanced_accuracy_margin: float = 0.02

    def __post_init__(self) -> None:
        check_degenerate_bounds(
            min_selection_rate=self.min_selection_rate,
            max_selection_rate=self.max_selection_rate,
            balanced_accuracy_margin=self.balanced_accuracy_margin, where="degenerate",
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class VerdictsConfig:
    """``verdicts.*``: what a gap's evidence lets the benchmark claim
    (:mod:`faircode.stats.verdicts`).  Read by the evaluate step.

    ``margin`` is the equivalence margin ``δ`` of every difference metric (and of equalized
    odds): ``parity`` means the ``1 − 2·alpha`` interval lies inside ``±δ``; ``ratio_margin``
    disparate impact's range ``[low, high]`` around 1 (tested on the log scale);
    ``min_informative_share`` the share of a cell's K training replicates (rounded up) that must
    be informative for the cell not to be ``uninformative``; ``claims`` the metric whose cells
    (every strategy x model x attribute) are the pre-specified claims of the headline and the
    paper table: their equivalence tests form their own Benjamini-Hochberg family
    (:mod:`faircode.evaluate.claims`), stored as the metric's full name.  (A regression audit's
    margin is in its outcome's units, so its manifest declares it: ``target.margin``.)
    """

    margin: float = 0.05
    ratio_margin: tuple[float, float] = (0.8, 1.25)
    min_informative_share: float = 0.6
    claims: str = Metric.DEMOGRAPHIC_PARITY.value

    def __post_init__(self) -> None:
        _check_number("verdicts.margin", self.margin, low=0.0, high=1.0, open_low=True,
                      open_high=True)
        object.__setattr__(self, "ratio_margin", check_ratio_margin(
            "verdicts.ratio_margin", self.ratio_margin))
        _check_number("verdicts.min_informative_share", self.min_informative_share,
                      low=0.0, high=1.0, open_low=True)
        object.__setattr__(self, "claims", metric_name("verdicts.claims", self.claims))


def metric_name(where: str, value: object) -> str:
    """The fairness metric ``value`` names (its full name, or a unique prefix before ``_``:
    ``demographic_parity``); else a :class:`ConfigError` naming ``where``."""
    if isinstance(value, str):
        if value in FAIRNESS_METRICS:
            return value
        found = [m for m in FAIRNESS_METRICS if m.startswith(f"{value}_")]
        if len(found) == 1:
            return found[0]
    raise config_error(where, f"one of {', '.join(FAIRNESS_METRICS)} or a unique prefix "
                       "before _ (demographic_parity)", value)


def check_ratio_margin(where: str, value: object) -> tuple[float, float]:
    """``value`` as ``(low, high)``; :class:`ConfigError` unless two numbers with
    ``0 < low < 1 < high``."""
    expected = "two numbers [low, high] with 0 < low < 1 < high"
    if not isinstance(value, list | tuple) or len(value) != 2 or any(
            isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
            for v in value) or not 0 < value[0] < 1 < value[1]:
        raise config_error(where, expected, value)
    return float(value[0]), float(value[1])


@dataclass(frozen=True, slots=True, kw_only=True)
class ArbitrarinessConfig:
    """``arbitrariness.*``: the bagged ensembles and the set of equally accurate models
    (``docs/statistics.md``, "Arbitrariness and multiplicity").

    ``bags`` members per ensemble and ``all_families_below`` (all three model families on an
    audit with fewer training rows than this, logistic regression alone on a larger one) are read
    by the bagging stage (:mod:`faircode.grid.bagging`); ``consistency_level`` (a decision is
    arbitrary, and the ensemble abstains, where its self-consistency is below it; above 0.5, so
    a tied vote always abstains) and ``accuracy_tolerance`` (the set of models within it of the
    most accurate one, and the alternative test's equivalence margin of accuracy) by the
    evaluate step.
    """

    bags: int = 21
    all_families_below: int = 10000
    consistency_level: float = 0.8
    accuracy_tolerance: float = 0.01

    def __post_init__(self) -> None:
        _check_int("arbitrariness.bags", self.bags, low=2)
        _check_int("arbitrariness.all_families_below", self.all_families_below, low=0)
        _check_number("arbitrariness.consistency_level", self.consistency_level, low=0.5,
                      high=1.0, open_low=True)
        _check_number("arbitrariness.accuracy_tolerance", self.accuracy_tolerance, low=0.0,
                      high=1.0, open_low=True, open_high=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicateConfig:
    """``run.seeds`` and ``run.seed_mode``: training replicates per cell and what each re-draws.

    ``seeds`` 1 is the single fit; replicates ``1..seeds-1`` are re-fits with derived seeds
    (:mod:`faircode.evaluate.stability`).  ``seed_mode`` ``model`` re-seeds every fit on the same
    split, ``split`` also re-draws the train/test split.  Read by the fit and evaluate steps.
    """

    seeds: int = 1
    seed_mode: SeedMode = "model"

    def __post_init__(self) -> None:
        _check_int("run.seeds", self.seeds, low=1, high=MAX_SEEDS)
        if self.seed_mode not in SEED_MODES:
            raise config_error("run.seed_mode", f"one of {', '.join(SEED_MODES)}",
                               self.seed_mode)


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchmarkConfig:
    """Every knob of the grid and its statistics, nested as ``params.yaml`` nests them.

    One section per concern (``config.stats.alpha`` is ``params.yaml``'s ``stats.alpha``), each
    a frozen record that validates itself and writes its defaults once.  Library functions do
    not take the config whole: each takes the sections it reads -- :attr:`mitigation` (fit),
    :attr:`models` (``encoding``: fit; ``decision_threshold``: evaluate), :attr:`stats`,
    :attr:`degenerate`, :attr:`verdicts` and :attr:`curves` (evaluate), :attr:`arbitrariness`
    (the bagging stage and evaluate), :attr:`replicates` (``run.seeds``, ``run.seed_mode``:
    both) and :attr:`jobs` (``run.jobs``: worker processes; no number depends on it) -- so
    every signature says which params it reads.

    :meth:`with_params` changes values by their ``params.yaml`` key paths (the command-line
    flags, the tests); :func:`config_record` is ``run.json``'s flat record of it.
    """

    mitigation: MitigationConfig = field(default_factory=MitigationConfig)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    stats: StatsConfig = field(default_factory=StatsConfig)
    degenerate: DegenerateConfig = field(default_factory=DegenerateConfig)
    verdicts: VerdictsConfig = field(default_factory=VerdictsConfig)
    curves: CurvesConfig = field(default_factory=CurvesConfig)
    arbitrariness: ArbitrarinessConfig = field(default_factory=ArbitrarinessConfig)
    replicates: ReplicateConfig = field(default_factory=ReplicateConfig)
    jobs: int = field(default_factory=_default_jobs)

    def __post_init__(self) -> None:
        for name, kind in _SECTIONS.items():
            if not isinstance(getattr(self, name), kind):
                raise config_error(f"config.{name}", f"a {kind.__name__}", getattr(self, name))
        _check_int("run.jobs", self.jobs, low=1, high=MAX_JOBS)

    def with_params(self, changes: Mapping[str, object]) -> BenchmarkConfig:
        """A copy with ``changes`` applied, each keyed by its ``params.yaml`` path
        (``{"stats.n_resamples": 200, "run.jobs": 1}``) and validated by its section; an unknown
        path is a :class:`ConfigError` naming it."""
        grouped: dict[str, dict[str, object]] = {}
        jobs = self.jobs
        for path, value in changes.items():
            if path not in PARAM_KEYS:
                raise config_error(path, f"a known param ({', '.join(PARAM_KEYS)})", path)
            section, key = PARAM_KEYS[path]
            if key is None:
                jobs = value  # type: ignore[assignment]
            else:
                grouped.setdefault(section, {})[key] = value
        sections = {name: dataclasses.replace(getattr(self, name), **values)
                    for name, values in grouped.items()}
        return dataclasses.replace(self, jobs=jobs, **sections)


_SECTIONS: dict[str, type] = {
    "mitigation": MitigationConfig, "models": ModelsConfig, "stats": StatsConfig,
    "degenerate": DegenerateConfig, "verdicts": VerdictsConfig, "curves": CurvesConfig,
    "arbitrariness": ArbitrarinessConfig, "replicates": ReplicateConfig,
}
"""The sections of :class:`BenchmarkConfig` and their records."""

_PARAMS_SECTION = {"replicates": "run"}
"""The ``params.yaml`` section of a config section whose name differs (``run.seeds``)."""

PARAM_KEYS: dict[str, tuple[str, str | None]] = {
    **{f"{_PARAMS_SECTION.get(name, name)}.{f.name}": (name, f.name)
       for name, kind in _SECTIONS.items() for f in dataclasses.fields(kind)},
    "run.jobs": ("jobs", None),
}
"""``params.yaml`` key path -> (:class:`BenchmarkConfig` section, field), read off the records
(``run.jobs`` is the config's own field), so adding a param is adding its field."""

_RECORD_NAMES: dict[str, str] = {
    "mitigation.constraint": "constraint", "mitigation.eps": "eps",
    "mitigation.max_iter": "max_iter", "models.decision_threshold": "decision_threshold",
    "models.encoding": "encoding", "stats.n_resamples": "n_resamples",
    "stats.n_permutations": "n_permutations", "stats.confidence": "confidence",
    "stats.alpha": "alpha", "stats.power": "power", "stats.effect_margin": "effect_margin",
    "stats.cost_margin": "cost_margin", "run.jobs": "jobs",
    "degenerate.min_selection_rate": "degenerate_min_selection_rate",
    "degenerate.max_selection_rate": "degenerate_max_selection_rate",
    "degenerate.balanced_accuracy_margin": "degenerate_balanced_accuracy_margin",
    "run.seeds": "seeds", "run.seed_mode": "seed_mode", "curves.thresholds": "curve_thresholds",
    "verdicts.margin": "verdict_margin", "verdicts.ratio_margin": "verdict_ratio_margin",
    "verdicts.min_informative_share": "verdict_min_informative_share",
    "verdicts.claims": "verdict_claims",
}
"""``run.json``'s flat name of each param, in the record's order (the names and order every
committed ``run.json`` and params digest has; a new param records under its path)."""


def param_value(config: BenchmarkConfig, path: str) -> object:
    """The value of the ``params.yaml`` key ``path`` in ``config`` (lists as params.yaml
    spells them)."""
    section, key = PARAM_KEYS[path]
    value = getattr(config, section) if key is None else getattr(getattr(config, section), key)
    return list(value) if isinstance(value, tuple) else value


def config_record(config: BenchmarkConfig) -> dict[str, object]:
    """The config as ``run.json`` and tracking record it: one flat mapping, every param under
    its record name (:data:`_RECORD_NAMES`; a param without one under its path).

    ``seeds`` and ``seed_mode`` appear only when ``seeds > 1``: a single replicate is the run as
    it always was (the mode then changes nothing), and its record stays the same.
    """
    names = {**_RECORD_NAMES, **{p: p for p in PARAM_KEYS if p not in _RECORD_NAMES}}
    record = {names[path]: param_value(config, path) for path in names}
    if config.replicates.seeds == 1:
        del record["seeds"], record["seed_mode"]
    return record


_NULL_MEANS_DEFAULT = frozenset({"run.jobs", "run.scheduler"})

EXECUTION_KEYS: dict[str, str] = {"run.backend": "backend", "run.scheduler": "scheduler"}
"""``params.yaml`` key path -> :class:`ExecutionConfig` field (where the fit tasks run)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionConfig:
    """Where the fit tasks of a run execute (:mod:`faircode.grid.scheduler`); never a result param.

    Parameters
    ----------
    backend
        ``local``: a pool of ``jobs`` worker processes on this machine.  ``dask``: the workers of
        an existing ``dask.distributed`` scheduler at ``scheduler``.
    scheduler
        The dask scheduler's address (``tcp://host:8786``); required with ``backend: dask``.
    """

    backend: Backend = "local"
    scheduler: str | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise config_error("run.backend", f"one of {', '.join(BACKENDS)}", self.backend)
        if self.scheduler is not None:
            check_scheduler(self.scheduler, where="run.scheduler")
        if self.backend == "dask" and self.scheduler is None:
            raise config_error("run.scheduler", "a dask scheduler address such as "
                               "tcp://host:8786 (run.backend is dask)", self.scheduler)


_SCHEDULER = re.compile(r"(?:tcp|tls|ws|wss|ucx)://(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):"
                        r"(?P<port>[0-9]{1,5})")


def check_scheduler(address: object, *, where: str) -> str:
    """``address`` if it is a dask scheduler address (``tcp://host:port``, a port 1-65535),
    else one line naming ``where``: checked before a client is made, since ``distributed``
    fails on a malformed one only after its own 20 s close timeout, with a traceback."""
    found = _SCHEDULER.fullmatch(address) if isinstance(address, str) else None
    if found is None or not isinstance(address, str) or not 1 <= int(found["port"]) <= 65535:
        raise config_error(where, "a dask scheduler address such as tcp://host:8786 "
                           "(tcp, tls, ws, wss or ucx; a port 1-65535), or null", address)
    return address


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportConfig:
    """The ``report`` section of ``params.yaml``: which metric and model family to show."""

    metric: str = "demographic_parity"
    model: str | None = None

    def __post_init__(self) -> None:
        metric_name("report.metric", self.metric)
        if self.model is not None:
            families = tuple(f.value for f in ModelFamily)
            if not isinstance(self.model, str) or self.model not in families:
                raise config_error("report.model", f"one of {', '.join(families)} or null",
                                   self.model)

    @classmethod
    def from_mapping(cls, data: object, *, where: str) -> ReportConfig:
        """Build from a parsed mapping; unknown keys are rejected with their key path."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise config_error(where, "a mapping", data)
        for key in data:
            if key not in ("metric", "model"):
                raise config_error(f"{where}.{key}", "a known key (metric, model)", key)
        try:
            return cls(**{str(k): v for k, v in data.items()})
        except ConfigError as exc:
            raise ConfigError(str(exc).replace("report.", f"{where}.", 1)) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """A validated ``params.yaml``: its audits (empty = every shipped audit for ``faircode run``;
    the pipeline runs exactly the listed ones), its text audits (``text_audits``: the text
    stages' audits, :mod:`faircode.evaluate.text`), its regression audits
    (``regression_audits``: ``task: regression`` manifests), its multi-class audits
    (``multiclass_audits``: ``task: multiclass`` manifests) and the config."""

    audits: tuple[str, ...] = ()
    text_audits: tuple[str, ...] = ()
    regression_audits: tuple[str, ...] = ()
    multiclass_audits: tuple[str, ...] = ()
    config: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    execution: ExecutionConfig = field(default_factory=ExecutionConfig)

    def __post_init__(self) -> None:
        for key, names in self.lists():
            for i, name in enumerate(names):  # folders and words of every dvc.yaml cmd
                check_name(name, where=f"{key}[{i}]")
            if len(set(names)) != len(names):
                raise config_error(key, "distinct audit names", list(names))
        seen: dict[str, str] = {}
        for key, names in self.lists():
            for i, name in enumerate(names):
                if name in seen:
                    what = key.removesuffix("_audits") if key != "audits" else "grid"
                    raise config_error(f"{key}[{i}]", f"a {what} audit not also in "
                                       f"{seen[name]}", name)
                seen[name] = key

    def lists(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Every audit list with its ``params.yaml`` key (:data:`AUDIT_LISTS` order)."""
        return tuple((key, getattr(self, key)) for key in AUDIT_LISTS)

    @property
    def every_audit(self) -> tuple[str, ...]:
        """The audits of every list, in :data:`AUDIT_LISTS` order."""
        return tuple(name for _, names in self.lists() for name in names)


AUDIT_LISTS: tuple[str, ...] = ("audits", "text_audits", "regression_audits", "multiclass_audits")
"""The ``params.yaml`` lists of audits, one per task kind (its
:attr:`faircode.core.kinds.TaskKind.params_key`)."""


def params_from_mapping(data: object, *, where: str = "params.yaml") -> Params:
    """Validate a parsed ``params.yaml`` and return its :class:`Params`.

    Every section and key must be known (:data:`PARAM_KEYS`); errors read
    ``<where>: <section>.<key>: expected ..., got ... (type)``.
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise config_error(where, "a mapping of sections", data)
    sections: dict[str, set[str]] = {}
    for path in [*PARAM_KEYS, *EXECUTION_KEYS]:
        section, key = path.split(".", 1)
        sections.setdefault(section, set()).add(key)
    lists: dict[str, tuple[str, ...]] = dict.fromkeys(AUDIT_LISTS, ())
    report = ReportConfig()
    flat: dict[str, object] = {}
    execution: dict[str, object] = {}
    for section, body in data.items():
        if section in lists:  # an audit list of a task kind (any may be empty)
            if not isinstance(body, list | None):
                raise config_error(f"{where}: {section}", "a list of audit names", body)
            lists[section] = tuple(body or ())
            continue
        if section == "report":
            report = ReportConfig.from_mapping(body, where=f"{where}: report")
            continue
        if section not in sections:
            known = ", ".join([*AUDIT_LISTS, *sections, "report"])
            raise config_error(f"{where}: {section}", f"a known section ({known})", section)
        if not isinstance(body, Mapping):
            raise config_error(f"{where}: {section}", "a mapping", body)
        for key, value in body.items():
            path = f"{section}.{key}"
            if path not in PARAM_KEYS and path not in EXECUTION_KEYS:
                known = ", ".join(sorted(sections[section]))
                raise config_error(f"{where}: {path}", f"a known key of {section} ({known})", key)
            if value is None and path in _NULL_MEANS_DEFAULT:
                continue
            if path in EXECUTION_KEYS:
                execution[EXECUTION_KEYS[path]] = value
            else:
                flat[path] = value
    try:
        run = ExecutionConfig(**execution)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    try:
        return Params(**lists, config=BenchmarkConfig().with_params(flat), report=report,
                      execution=run)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def config_from_params(data: object, *, where: str = "params.yaml") -> BenchmarkConfig:
    """The :class:`BenchmarkConfig` of a parsed ``params.yaml`` (:func:`params_from_mapping`)."""
    return params_from_mapping(data, where=where).config


def load_params(path: Path, *, audits_dir: Path | None = None) -> Params:
    """Read and validate the ``params.yaml`` at ``path`` (a repeated key is an error too).

    The file is read by :func:`faircode.core.schema.read_yaml` (bounded size, depth and alias
    expansion; UTF-8; merge keys); an empty document is an error.  With ``audits_dir`` (the
    pipeline's check, ``check-params``) the two lists must name at least one audit between them
    (a text audit alone, or grid audits alone, is a pipeline), and every name must be an audit
    folder there (``<audits_dir>/<name>/audit.yaml``): the pipeline runs exactly these.
    """
    from faircode.core.schema import read_yaml

    where = str(path)
    try:
        doc = read_yaml(path)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot be read ({exc.strerror})") from None
    if doc is None:
        raise ConfigError(f"{where}: top level: expected a mapping of sections, got an empty "
                          "document")
    params = params_from_mapping(doc, where=where)
    if audits_dir is not None:
        _check_audit_folders(params, where=where, audits_dir=audits_dir)
    return params


def _check_audit_folders(params: Params, *, where: str, audits_dir: Path) -> None:
    """Raise unless the lists name an audit and each name is an audit folder of ``audits_dir``."""
    if not params.every_audit:
        raise ConfigError(f"{where}: audits: expected a non-empty list of audit names, or audits "
                          f"in {', '.join(AUDIT_LISTS[1:])} (the audits the pipeline runs), got "
                          "none")
    known = sorted(p.parent.name for p in audits_dir.glob("*/audit.yaml"))
    for key, names in params.lists():
        for i, name in enumerate(names):
            if name not in known:
                raise config_error(f"{where}: {key}[{i}]", f"an audit folder of {audits_dir} "
                                   f"({', '.join(known) or 'none'})", name)


def _check_int(where: str, value: object, *, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise config_error(where, "an integer", value)
    if value < low:
        raise config_error(where, f"an integer >= {low}", value)
    if high is not None and value > high:
        raise config_error(where, f"an integer in [{low:,}, {high:,}] (the limit on work)",
                           value)


def _check_number(
    where: str,
    value: object,
    *,
    low: float,
    high: float | None,
    open_low: bool,
    open_high: bool = False,
) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise config_error(where, "a number", value)
    if not math.isfinite(value):  # NaN passes every comparison below
        raise config_error(where, "a finite number", value)
    too_low = value <= low if open_low else value < low
    too_high = high is not None and (value >= high if open_high else value > high)
    if too_low or too_high:
        lo = "(" if open_low else "["
        hi = ")" if open_high or high is None else "]"
        bound = "inf" if high is None else f"{high:g}"
        raise config_error(where, f"a number in {lo}{low:g}, {bound}{hi}", value)


def check_degenerate_bounds(
    *, min_selection_rate: float, max_selection_rate: float, balanced_accuracy_margin: float,
    where: str = "degenerate",
) -> None:
    """Raise :class:`ConfigError` unless ``0 <= min < max <= 1`` and the margin is in [0, 0.5)."""
    for key, value in (("min_selection_rate", min_selection_rate),
                       ("max_selection_rate", max_selection_rate)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise config_error(f"{where}.{key}", "a number in [0, 1]", value)
    if not min_selection_rate < max_selection_rate:
        raise config_error(f"{where}.max_selection_rate",
                           f"a number above min_selection_rate "
                           f"({min_selection_rate:g})", max_selection_rate)
    margin = balanced_accuracy_margin
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin < 0.5:
        raise config_error(f"{where}.balanced_accuracy_margin", "a number in [0, 0.5)",
                           margin)

