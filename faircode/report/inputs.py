"""The report's inputs: every audit's result tables and run record, read only from disk.

Design decisions
----------------
* Names come from the data: metrics, strategies, models, attributes and optional columns are
  read from the CSVs.  Known strategies and families fix only the order (S0-S4, then the
  grid's family order); anything else follows in the order met.
* A results folder holds ``<audit>/run.json`` with its tables, or ``<audit>/unavailable.json``;
  each folder goes to the reader of its kind (:func:`faircode.core.layout.folder_kind`,
  :mod:`faircode.report._readers`; a kind without the grid to its own section,
  :mod:`faircode.report.kinds`).  A folder with ``run.json`` is read only once it holds exactly
  the files its record lists, each with the recorded sha256
  (:func:`faircode.core.digests.checked_run`): a table cut mid-row or another run's file is one
  line, never a report built from the remainder;
  an ``audits/<name>/audit.yaml`` without results is an unavailable audit whose instructions
  come from its manifest's ``dataset.source``.  Missing required columns are one-line errors
  naming the file and the columns; extra columns are kept and shown.
* ``<audit>/stability.csv`` (training replicates across seeds, :mod:`faircode.evaluate.stability`)
  is optional: read where it exists, an empty :attr:`ReportInputs.stability` otherwise; so is
  ``effects.csv`` (the paired effects of the strategies, :attr:`ReportInputs.effects`; at K > 1
  the K-replicate estimates, so ``effects_stability.csv`` is not read).
* ``<audit>/curves.csv`` (operating-point curves, :mod:`faircode.evaluate.curves`) likewise:
  :attr:`ReportInputs.curves`, empty where no audit has one; so are ``frontier.csv`` and
  ``matched.csv`` (S5's tolerance curve, :mod:`faircode.evaluate.matched`).
* **A deployed system** (manifest ``system:``) appears in ``fairness.csv``, ``performance.csv``
  and ``intersectional.csv`` as rows of strategy :data:`DEPLOYED` (model = the system's name) on
  the grid's test rows, and on every row in ``<audit>/deployed/``.  Those rows are split off at
  read time into :attr:`ReportInputs.deployed` (:class:`DeployedInputs`, with the optional
  ``groups.csv``, ``calibration.csv`` and ``calibration_gap.csv``), so every grid view -- the
  paper table, the figures, ``summary.csv``, the plot data -- reads exactly the rows it read
  before; an audit without a system is read byte for byte as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit.manifest import discover_manifests, load_manifest
from faircode.core.cells import ModelFamily, Strategy, strategy_code
from faircode.core.errors import DataError, FaircodeError, describe
from faircode.core.kinds import TASK_KINDS, kind_of_run
from faircode.core.layout import (
    ARBITRARINESS_TABLES,
    ENCODING_SENSITIVITY,
    RUN_RECORD,
    UNAVAILABLE,
    UNAVAILABLE_NOTE,
    audit_folders,
    folder_kind,
    run_record,
)
from faircode.report._readers import (
    DEPLOYED,
    MAIN_TABLES,
    REQUIRED,
    Found,
    read_grid_run,
    read_note,
    read_sensitivity,
)
from faircode.stats.operating import DEGENERATE_NOTE, UNFITTABLE_NOTE

__all__ = [
    "DEPLOYED",
    "MODELS",
    "STRATEGIES",
    "UNINFORMATIVE_NOTE",
    "UNINFORMATIVE_NOTES",
    "DeployedInputs",
    "ReportInputs",
    "UnavailableAudit",
    "family_mean",
    "is_uninformative",
    "load_results",
    "notes_of",
    "ordered",
    "resolve_metric",
    "strategy_code",
    "test_base_rates",
]

UNINFORMATIVE_NOTE = DEGENERATE_NOTE
"""The note of a degenerate cell's rows (one decision for every row of a group)."""
UNINFORMATIVE_NOTES = (DEGENERATE_NOTE, UNFITTABLE_NOTE)
"""Every note that makes a row uninformative: degenerate decisions, or a cell not fitted."""
@dataclass(frozen=True, slots=True)
class UnavailableAudit:
    """An audit without results: why, and how to obtain its data."""

    audit: str
    reason: str
    instructions: str = ""
    attributes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("audit", "reason", "instructions"):
            if not isinstance(getattr(self, name), str):
                raise DataError(f"UnavailableAudit.{name}: expected a string, "
                                f"got {describe(getattr(self, name))}")


def _empty(table: str) -> pd.DataFrame:
    return pd.DataFrame(columns=list(REQUIRED[table]))


@dataclass(frozen=True, slots=True)
class DeployedInputs:
    """Every audit's deployed-system rows: on the grid's test rows and on all rows.

    ``fairness``/``performance``/``intersectional`` are the rows of strategy :data:`DEPLOYED`
    of the main tables (test rows); ``*_all`` those of ``<audit>/deployed/`` (every row);
    ``groups``, ``calibration``, ``calibration_gap`` the optional tables as written (every
    strategy, both row sets); ``stratified`` the gaps within declared strata on the test rows
    (every strategy) and ``stratified_all`` the system's on every row; ``stratum_rates`` and
    ``stratum_rates_all`` the levels they pool, likewise.  ``favourable`` maps
    each audit with a system to its target's favourable label (``run.json``
    ``target.favourable``, else its manifest); ``titles`` to the system's title; ``people``
    lists the audits whose system's decision is the recorded outcome (``run.json``
    ``system.outcome``: people's decisions, no ground truth).
    """

    fairness: pd.DataFrame = field(default_factory=lambda: _empty("fairness"))
    performance: pd.DataFrame = field(default_factory=lambda: _empty("performance"))
    intersectional: pd.DataFrame = field(default_factory=lambda: _empty("intersectional"))
    fairness_all: pd.DataFrame = field(default_factory=lambda: _empty("fairness"))
    performance_all: pd.DataFrame = field(default_factory=lambda: _empty("performance"))
    intersectional_all: pd.DataFrame = field(default_factory=lambda: _empty("intersectional"))
    groups: pd.DataFrame = field(default_factory=lambda: _empty("groups"))
    calibration: pd.DataFrame = field(default_factory=lambda: _empty("calibration"))
    calibration_gap: pd.DataFrame = field(default_factory=lambda: _empty("calibration_gap"))
    stratified: pd.DataFrame = field(default_factory=lambda: _empty("stratified"))
    stratified_all: pd.DataFrame = field(default_factory=lambda: _empty("stratified"))
    stratum_rates: pd.DataFrame = field(default_factory=lambda: _empty("stratum_rates"))
    stratum_rates_all: pd.DataFrame = field(default_factory=lambda: _empty("stratum_rates"))
    favourable: Mapping[str, int] = field(default_factory=dict)
    titles: Mapping[str, str] = field(default_factory=dict)
    people: tuple[str, ...] = ()

    @property
    def systems(self) -> dict[str, str]:
        """``{audit: system name}`` for every audit with deployed rows, in audit order."""
        rows = self.fairness.drop_duplicates("audit")
        return {str(a): str(m) for a, m in sorted(zip(rows["audit"], rows["model"],
                                                       strict=True))}


@dataclass(frozen=True, slots=True)
class ReportInputs:
    """Every audit's tables concatenated, the run records, and the unavailable audits."""

    fairness: pd.DataFrame
    performance: pd.DataFrame
    intersectional: pd.DataFrame
    counterfactual: pd.DataFrame
    runs: Mapping[str, Mapping[str, Any]]
    unavailable: tuple[UnavailableAudit, ...] = ()
    stability: pd.DataFrame = field(default_factory=pd.DataFrame)
    deployed: DeployedInputs = field(default_factory=DeployedInputs)
    effects: pd.DataFrame = field(default_factory=pd.DataFrame)
    curves: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every ``<audit>/curves.csv`` (operating-point curves); empty where none was written."""
    encoding_sensitivity: pd.DataFrame = field(default_factory=pd.DataFrame)
    """``<results>/encoding_sensitivity.csv`` (``bench/encoding_sensitivity.py``), if there."""
    frontier: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every ``<audit>/frontier.csv`` (S5's tolerance curve beside every strategy's point)."""
    matched: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every ``<audit>/matched.csv`` (the matched-violation comparisons)."""
    self_consistency: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every ``<audit>/self_consistency.csv`` (each group's share of arbitrary decisions)."""
    arbitrariness: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every ``<audit>/arbitrariness.csv`` (the gap after abstention beside the single model's)."""
    multiplicity: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every ``<audit>/multiplicity.csv`` (the test of a less discriminatory alternative)."""
    multiplicity_models: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every ``<audit>/multiplicity_models.csv`` (every fitted model's accuracy and gap)."""

    @property
    def audits(self) -> tuple[str, ...]:
        """Every audit, with results or not, sorted by name."""
        return tuple(sorted({*self.runs, *(u.audit for u in self.unavailable)}))


def load_results(results: Path, *, audits_dir: Path | None = None,
                 only: Sequence[str] = ()) -> ReportInputs:
    """Read every ``<results>/<audit>/`` folder, plus unavailable audits.

    Each audit folder goes to the reader of its kind (:func:`faircode.core.layout.folder_kind`,
    :mod:`faircode.report._readers`): a run of a kind with the grid (``run.json`` and its
    tables), or the pipeline's ``unavailable.json``; a run of another kind is its kind's section
    (:mod:`faircode.report.kinds`).  With ``audits_dir``, an ``<name>/audit.yaml`` there without a
    results folder is listed as unavailable with its manifest's source instructions.  ``only``
    restricts the report to the named audits.  Runs of kinds with sections alone (a text audit
    alone) are no error: the grid's tables are then empty.
    """
    if not results.is_dir():
        raise DataError(f"{results}: expected a results folder of <audit>/ subfolders, "
                        "got no such directory")
    found, sections = Found(), False
    for folder in audit_folders(results):  # hidden folders are writers' staging copies
        if not only or folder.name in only:
            sections |= _read_folder(folder, found)
    unavailable = {name: UnavailableAudit(note["audit"], note["reason"], note["instructions"])
                   for name, note in found.notes.items()}
    if audits_dir is not None and audits_dir.is_dir():
        _add_manifests(audits_dir, unavailable, runs=found.runs, only=only)
    if not found.runs and not unavailable and not sections:
        raise DataError(f"{results}: expected <audit>/{RUN_RECORD} or <audit>/{UNAVAILABLE_NOTE}, "
                        "got none")
    return _assemble(found, unavailable, audits_dir=audits_dir,
                     sensitivity=read_sensitivity(results / ENCODING_SENSITIVITY, only=only))


def _read_folder(folder: Path, found: Found) -> bool:
    """Hand ``folder`` to the reader of its kind; whether it is a run of a kind without the grid
    (its own section reads it)."""
    kind = folder_kind(folder)
    if kind == UNAVAILABLE:
        read_note(folder, found)
        return False
    task = kind_of_run(kind)
    if task is None:
        known = ", ".join(k.run_kind for k in TASK_KINDS)
        raise DataError(f"{run_record(folder)}: kind: expected a run of one of {known}, "
                        f"got {describe(kind)}")
    if task.grid:
        read_grid_run(folder, found)
    return not task.grid


def _add_manifests(audits_dir: Path, unavailable: dict[str, UnavailableAudit], *,
                   runs: Mapping[str, Any], only: Sequence[str]) -> None:
    """List every manifest of ``audits_dir`` without results as unavailable, with its source's
    instructions (an invalid manifest: why)."""
    for path in discover_manifests(audits_dir):
        name = path.parent.name
        if (only and name not in only) or name in runs:
            continue
        try:
            manifest = load_manifest(path)
        except FaircodeError as exc:
            unavailable.setdefault(name, UnavailableAudit(name, f"invalid manifest: {exc}"))
            continue
        source = manifest.dataset.source
        known = unavailable.get(name)
        unavailable[name] = UnavailableAudit(
            audit=name,
            reason=known.reason if known else "no results in the results folder",
            instructions=(known.instructions if known and known.instructions else
                          (source.instructions or source.url or "") if source else ""),
            attributes=tuple(a.name for a in manifest.protected_attributes))


def _assemble(found: Found, unavailable: Mapping[str, UnavailableAudit], *,
              audits_dir: Path | None, sensitivity: pd.DataFrame) -> ReportInputs:
    """The :class:`ReportInputs` of what the readers found, each table concatenated."""
    def joined(name: str) -> pd.DataFrame:
        frames = found.frames.get(name)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    return ReportInputs(
        **{t: (pd.concat(found.frames[t], ignore_index=True) if found.frames.get(t) else
               _empty(t)) for t in MAIN_TABLES},
        runs=found.runs, unavailable=tuple(unavailable[k] for k in sorted(unavailable)),
        stability=joined("stability"),
        deployed=_deployed_inputs(found.deployed, found.runs, audits_dir),
        effects=joined("effects"), curves=joined("curves"), encoding_sensitivity=sensitivity,
        frontier=joined("frontier"), matched=joined("matched"),
        **{t: joined(t) for t in ARBITRARINESS_TABLES})


def _favourable(audit: str, run: Mapping[str, Any], audits_dir: Path | None) -> int:
    """The audit's favourable label: ``run.json`` ``target.favourable``, else its manifest."""
    target = run.get("target")
    value = target.get("favourable") if isinstance(target, dict) else None
    if value is None and audits_dir is not None and (audits_dir / audit / "audit.yaml").is_file():
        value = load_manifest(audits_dir / audit / "audit.yaml").target.favourable
    if value not in (0, 1) or isinstance(value, bool):
        raise DataError(f"{audit}/{RUN_RECORD}: target.favourable: expected 0 or 1 (the coding "
                        f"of the deployed system's table), got {describe(value)}")
    return int(value)


def _deployed_inputs(frames: Mapping[str, list[pd.DataFrame]],
                     runs: Mapping[str, Mapping[str, Any]],
                     audits_dir: Path | None) -> DeployedInputs:
    """Concatenate the deployed rows and optional tables; orientation and title per system."""
    def part(name: str) -> pd.DataFrame:
        table = name.removesuffix("_all")
        return pd.concat(frames[name], ignore_index=True) if name in frames else _empty(table)

    out = DeployedInputs(
        fairness=part("fairness"), performance=part("performance"),
        intersectional=part("intersectional"), fairness_all=part("fairness_all"),
        performance_all=part("performance_all"), intersectional_all=part("intersectional_all"),
        groups=part("groups"), calibration=part("calibration"),
        calibration_gap=part("calibration_gap"), stratified=part("stratified"),
        stratified_all=part("stratified_all"), stratum_rates=part("stratum_rates"),
        stratum_rates_all=part("stratum_rates_all"))
    favourable, titles, people = {}, {}, []
    for audit, name in out.systems.items():
        favourable[audit] = _favourable(audit, runs.get(audit, {}), audits_dir)
        system = runs.get(audit, {}).get("system")
        titles[audit] = str(system.get("title") or name) if isinstance(system, dict) else name
        if isinstance(system, dict) and system.get("outcome") is True:
            people.append(audit)
    return replace(out, favourable=favourable, titles=titles, people=tuple(people))


def resolve_metric(name: str, available: Iterable[str], *, where: str = "--metric") -> str:
    """Return the metric of ``available`` named ``name`` or, failing that, ``name_<suffix>``."""
    names = sorted(set(available))
    if name in names:
        return name
    matches = [m for m in names if m.startswith(name + "_")]
    if len(matches) == 1:
        return matches[0]
    raise FaircodeError(f"{where}: expected one of {', '.join(names) or '(no metrics)'}, "
                        f"got {describe(name)}")


def ordered(values: Iterable[str], known: Sequence[str]) -> list[str]:
    """``values`` deduplicated, known names in ``known`` order first, the others as met."""
    seen = list(dict.fromkeys(str(v) for v in values))
    return [k for k in known if k in seen] + [v for v in seen if v not in known]


STRATEGIES = tuple(s.value for s in Strategy)
MODELS = tuple(m.value for m in ModelFamily)



def family_mean(values: pd.Series) -> float:
    """The value of a cell across model families: the mean of the finite values (NaN if none).

    The heatmap's cells and the headline's per-audit numbers are this one statistic.
    """
    finite = values.to_numpy(dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(finite.mean()) if finite.size else float("nan")


def is_uninformative(notes: pd.Series) -> pd.Series:
    """Whether each note marks a cell as uninformative (one of :data:`UNINFORMATIVE_NOTES`)."""
    return notes.map(lambda n: not notes_of(n).isdisjoint(UNINFORMATIVE_NOTES)).astype(bool)


def notes_of(note: object) -> set[str]:
    """The tokens of a note cell (``;``, ``,`` or space separated)."""
    text = "" if note is None or (isinstance(note, float) and np.isnan(note)) else str(note)
    return {t for t in text.replace(";", " ").replace(",", " ").split() if t}


def test_base_rates(inputs: ReportInputs) -> dict[str, tuple[float, float]]:
    """``{audit: (base rate, majority-class accuracy)}`` of each audit's test rows.

    The base rate is the share of test rows with the favourable label (``groups.csv``: S0's
    ``base_rate`` rows of the first model and attribute, label 1 turned favourable with
    ``run.json`` ``target.favourable``); the majority-class accuracy is ``performance.csv``'s
    ``majority_baseline_accuracy`` of S0.  NaN where the file or row is absent.
    """
    out: dict[str, tuple[float, float]] = {}
    groups, perf, baseline = inputs.deployed.groups, inputs.performance, STRATEGIES[0]
    for audit, run in inputs.runs.items():
        rate = np.nan
        rows = groups[(groups["audit"] == audit) & (groups["metric"] == "base_rate")
                      & (groups["row_set"].astype(str) == "test")
                      & (groups["strategy"] == baseline)] if not groups.empty else groups
        if not rows.empty:
            first = rows[(rows["model"] == rows["model"].iloc[0])
                         & (rows["protected_attribute"] == rows["protected_attribute"].iloc[0])]
            label1 = float(first["numerator"].sum()) / float(first["denominator"].sum())
            target = run.get("target")
            favourable = target.get("favourable", 1) if isinstance(target, dict) else 1
            rate = label1 if favourable == 1 else 1.0 - label1
        major = perf[(perf["audit"] == audit) & (perf["metric"] == "majority_baseline_accuracy")
                     & (perf["strategy"] == baseline)]
        out[str(audit)] = (float(rate), float(major["value"].iloc[0]) if len(major) else np.nan)
    return out
