"""Writing one audit's results: ``results/<audit>/`` (its tables, ``effects.csv``, ``run.json``),
swapped in whole.

``run.json`` records what produced the tables: the manifest and dataset digests, the rows after
each step, the seed scheme, the config, whether training variance is included, the decision
rule, the design-effect summary, the package versions, the ``state`` the tables were produced
from (commit, code and params digests, dirty inputs:
:class:`faircode.provenance.state.StateIdentity`; the params digest is of the config recorded
here) and ``files``: the sha256 of every other file of the folder, so a folder can be checked
to hold exactly what was written (:mod:`faircode.evaluate.reuse`).

**No timing inside the folder.**  The evaluate step's and the cells' seconds go to
``<audit>.seconds.json`` beside the folder (:func:`save_timings`, the fit stores' rule:
:func:`faircode.grid.predictions.timings_path`), never into it: a folder is a function of its
inputs, so a re-evaluation of unchanged inputs writes the same bytes and the evaluate stage's
DVC outputs (``results/<audit>/``) keep their hashes -- ``dvc status`` stays clean.  The
timings order the next run's work (the evaluate stage's jobs, ``faircode run``'s cells); no
number depends on them.

**A writer replaces only a folder of its own kind.**  Before anything is written the target is
checked (:func:`check_replaceable`): none, an empty folder, the pipeline's ``unavailable.json``
note (for a pipeline's kind: every task kind's run, :mod:`faircode.core.kinds`) or a results
folder of the same audit and the same kind (:func:`results_kind`: the grid's ``faircode
run``/``dvc repro`` folder, a ``faircode audit`` folder, whose ``run.json`` names its
predictions file, or another task kind's run, e.g. a text audit's) is replaced; anything else --
a regular
file, another kind's results (``faircode audit --out results`` over the grid's committed
``results/compas_two_years``), another audit's, a folder of files faircode did not write -- is
one :class:`~faircode.core.errors.DataError` line and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sized
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from faircode.audit.manifest import Manifest, repository_root
from faircode.core.config import BenchmarkConfig, config_record
from faircode.core.digests import folder_digests
from faircode.core.errors import DataError
from faircode.core.files import read_json_object
from faircode.core.kinds import kind_of_run
from faircode.core.layout import (
    ARBITRARINESS_TABLES,
    DEPLOYED_FOLDER,
    DEPLOYED_TABLES,
    GRID_RUN,
    GRID_TABLES,
    RANKING_TABLES,
    RUN_RECORD,
    UNAVAILABLE_NOTE,
    run_kind,
    run_record,
    table_path,
)
from faircode.core.seeds import Stream
from faircode.evaluate import stability
from faircode.evaluate.counted import p_value_record
from faircode.evaluate.swap import replacing
from faircode.evaluate.tables import AuditResults
from faircode.grid.predictions import timings_path
from faircode.provenance.state import params_digest

__all__ = ["WrittenAudit", "check_replaceable", "design_effect_summary", "fit_timings",
           "read_timings", "results_kind", "save_timings", "write_audit"]

PREDICTIONS = "predictions"
"""The kind of a ``faircode audit`` folder: a grid run whose ``run.json`` names the predictions
file it scored."""
_RUN_JSON_BYTES = 64 * 2**20


def _described(kind: str) -> str:
    """How a refusal names a kind of results folder."""
    if kind == PREDICTIONS:
        return "the results of `faircode audit` (a predictions file)"
    if kind == GRID_RUN:
        return "the grid's results (faircode run, dvc repro)"
    task = kind_of_run(kind)
    return f"the results of a {task.name} audit" if task is not None else f"{kind} results"


def results_kind(run: Mapping[str, Any]) -> str:
    """The kind of results a ``run.json`` describes: ``predictions`` when it names the
    predictions file it scored (``faircode audit``), else its run kind
    (:func:`faircode.core.layout.run_kind`: ``grid`` for the grid's)."""
    return PREDICTIONS if PREDICTIONS in run else run_kind(run)


def check_replaceable(final: Path, *, audit: str, kind: str) -> None:
    """Raise :class:`DataError` unless ``final`` may be replaced by ``kind`` results of ``audit``
    (module docstring): nothing there, an empty folder, for the pipeline's kinds (every task
    kind's run) its ``unavailable.json`` note, or a results folder of the same audit and kind."""
    refuse = f"{final}: expected no folder, or {_described(kind)} of {audit} to replace, got " \
             "{}; nothing was written (write to another folder, or move it away)"
    if not os.path.lexists(final):
        above = next((p for p in final.parents if os.path.lexists(p)), None)
        if above is not None and not above.is_dir():  # --out names a file: nothing can go in
            raise DataError(f"{above}: expected a folder to write the results of {audit} into, "
                            "got a file that is not a folder; nothing was written")
        return
    if final.is_symlink() or not final.is_dir():
        raise DataError(refuse.format("a symbolic link" if final.is_symlink() else
                                      "a file that is not a folder"))
    names = {p.name for p in final.iterdir()}
    if not names or (kind_of_run(kind) is not None and names == {UNAVAILABLE_NOTE}):
        return
    if RUN_RECORD not in names:
        raise DataError(refuse.format(f"a folder without {RUN_RECORD} ({len(names)} entries "
                                      "faircode did not write)"))
    try:
        run = read_json_object(run_record(final), limit=_RUN_JSON_BYTES, error=DataError)
    except DataError:
        raise DataError(refuse.format(f"a folder whose {RUN_RECORD} is not a results "
                                      "record")) from None
    if run.get("audit") != audit:
        raise DataError(refuse.format(f"the results of another audit ({run.get('audit')!r})"))
    if results_kind(run) != kind:
        raise DataError(refuse.format(_described(results_kind(run))))


class _System(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def rule(self) -> str: ...
    @property
    def scale(self) -> str | None: ...
    @property
    def outcome(self) -> bool: ...


class WrittenAudit(Protocol):
    """What :func:`write_audit` reads of an audit: an :class:`~faircode.audit.data.AuditData`,
    a prepared audit, or a decision log's record (:class:`faircode.audit.logs.LogRecord`)."""

    @property
    def manifest(self) -> Manifest: ...
    @property
    def system(self) -> _System | None: ...
    @property
    def sha256(self) -> str: ...
    @property
    def steps(self) -> tuple[tuple[str, int], ...]: ...
    @property
    def train_index(self) -> Sized: ...
    @property
    def test_index(self) -> Sized: ...


def _relative_manifest(file: Path) -> str:
    """The manifest's path relative to its repository (results never carry a machine's path)."""
    try:
        return file.resolve().relative_to(repository_root(file.parent)).as_posix()
    except ValueError:
        return file.name


def write_audit(
    data: WrittenAudit,
    results: AuditResults,
    *,
    config: BenchmarkConfig,
    out_dir: Path,
    provenance_record: dict[str, Any],
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``<out_dir>/<audit>/`` (the :data:`~faircode.core.layout.GRID_TABLES`,
    ``effects.csv`` + ``run.json``; with declared strata ``stratified.csv`` and
    ``stratum_rates.csv``, also in
    ``deployed/``; with training replicates also ``stability.csv``,
    ``stability_replicates.csv``, ``effects_stability.csv`` and ``effects_replicates.csv``; with
    curves ``curves.csv``; with a tolerance curve (S5) ``frontier.csv`` and ``matched.csv``;
    with a deployed system its own tables on every row in
    ``deployed/``) atomically; return the folder.  ``extra`` adds keys
    to ``run.json`` (e.g. the predictions file an external audit read).

    Everything is written to a sibling staging folder which then replaces the audit's folder in
    one step (:func:`faircode.evaluate.swap.replacing`): a failure or a kill leaves the old
    folder or the new one, never a half-written one and never none; the next write removes the
    leftovers.  A target that is not a folder of these results' kind is refused first
    (:func:`check_replaceable`).
    """
    manifest = data.manifest
    final = out_dir / manifest.name
    check_replaceable(final, audit=manifest.name,
                      kind=results_kind(extra) if extra is not None else GRID_RUN)
    with replacing(final) as staging:
        # the gaps conditional on declared strata, and the strata they pool
        strata = ("stratified", "stratum_rates") if manifest.strata else ()
        _write_tables(results, staging, (*GRID_TABLES, *strata))
        if results.deployed is not None:  # the deployed system on every row, its own tables
            (staging / DEPLOYED_FOLDER).mkdir()
            _write_tables(results.deployed, staging / DEPLOYED_FOLDER,
                          (*DEPLOYED_TABLES, *strata))
            for table in RANKING_TABLES:  # the ranking view of its score, when it has one
                frame = getattr(results.deployed, table)
                if frame is not None:
                    frame.to_csv(table_path(staging / DEPLOYED_FOLDER, table), index=False)
        for table, attribute in _OPTIONAL:  # written when the run has them
            frame = getattr(results, attribute)
            if frame is not None:
                frame.to_csv(table_path(staging, table), index=False)
        run = {
            "audit": manifest.name,
            "title": manifest.title,
            "target": {"column": manifest.target.column,
                       "favourable": manifest.target.favourable},
            **({"system": {"name": data.system.name, "title": data.system.title,
                           "decision": data.system.rule, "scale": data.system.scale,
                           **({"outcome": True} if data.system.outcome else {})}}
               if data.system is not None else {}),
            **({"strata": {s.name: list(s.columns) for s in manifest.strata}}
               if manifest.strata else {}),
            "manifest": _relative_manifest(manifest.file),
            "manifest_sha256": hashlib.sha256(manifest.file.read_bytes()).hexdigest(),
            "dataset": {"path": manifest.dataset.declared_path, "sha256": data.sha256,
                        "sha256_declared": manifest.dataset.sha256},
            "rows": {"steps": [list(step) for step in data.steps],
                     "train": len(data.train_index), "test": len(data.test_index)},
            "seeds": {"master": manifest.random_state,
                      "scheme": "SeedSequence(master, spawn_key=(stream, strategy, model, "
                                "index)); streams " + ", ".join(
                                    f"{s.value}={s.name.lower()}" for s in Stream
                                    if s not in (Stream.REPLICATE, Stream.EFFECTS)),
                      "effects": f"SeedSequence(master, spawn_key=({int(Stream.EFFECTS)}, "
                                 "comparison, model, attribute))",
                      "models": manifest.random_state,
                      **({"replicates": stability.run_record(config.replicates,
                                                             master=manifest.random_state)}
                         if config.replicates.seeds > 1 else {})},
            "config": config_record(config),
            "training_variance": stability.training_variance(config.replicates),
            "tests": p_value_record(config.stats,
                                  attributes=len(manifest.protected_attributes),
                                  row_sets=max(1, len(results.cells))),
            "decision": {
                **(results.rule.as_dict() if results.rule is not None else {}),
                "source": ("manifest decision block" if manifest.decision is not None
                           else "config decision_threshold"),
            },
            "design_effect": design_effect_summary(results, unit=manifest.unit),
            **(extra or {}),
            **provenance_record,
            "state": {**provenance_record.get("state", {}),
                      "params_sha256": params_digest(config_record(config))},
            "cells": [
                {"strategy": str(c.strategy), "model": str(c.family),
                 **({"decision": dict(c.decision)} if c.decision else {}),
                 **({"skipped": c.skipped} if c.skipped else {}),
                 **({"unfittable": c.unfittable} if c.unfittable else {})}
                for c in results.cells
            ],
            "files": folder_digests(staging),
        }
        run_record(staging).write_text(json.dumps(run, indent=2) + "\n")
    save_timings(final, results.seconds,
                 cells=[{"strategy": str(c.strategy), "model": str(c.family),
                         "seconds": c.seconds.as_dict()} for c in results.cells])
    return final


def save_timings(folder: Path, seconds: Mapping[str, float],
                 cells: Iterable[Mapping[str, Any]] = ()) -> Path:
    """Write a results folder's timings beside it (``<folder>.seconds.json``:
    ``{"audit", "seconds": {step: s}, "cells": [{"strategy", "model", "seconds"}]}``, rounded
    to 0.1 ms) and return the file.  Never inside the folder, so its bytes depend on its inputs
    alone (module docstring); read back only to order work (:func:`read_timings`)."""
    path = timings_path(folder)
    record = {"audit": folder.name, "seconds": {k: round(float(v), 4) for k, v in seconds.items()},
              "cells": [{**c, "seconds": {k: round(float(v), 4)
                                          for k, v in c["seconds"].items()}} for c in cells]}
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


class _FittedCell(Protocol):
    """A regression or multi-class cell of one replicate: what its timing entry names."""

    @property
    def strategy(self) -> Any: ...
    @property
    def family(self) -> Any: ...
    @property
    def replicate(self) -> int: ...
    @property
    def seconds(self) -> float: ...


def fit_timings(cells: Iterable[_FittedCell]) -> list[dict[str, Any]]:
    """The :func:`save_timings` entries of cells fitted one replicate at a time (the regression
    and multi-class grids): strategy, model, replicate and the fit's seconds."""
    return [{"strategy": c.strategy.value, "model": c.family.value, "replicate": c.replicate,
             "seconds": {"fit": c.seconds}} for c in cells]


def read_timings(folder: Path) -> dict[str, Any]:
    """The timings :func:`save_timings` wrote beside ``folder``; ``{}`` when there are none or
    they cannot be read (a new audit, a clone whose results came from git or DVC: no number
    depends on them)."""
    try:
        record = json.loads(timings_path(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


_OPTIONAL = (("stability", "stability"), ("stability_replicates", "replicates"),
             ("effects", "effects"), ("effects_stability", "effects_stability"),
             ("effects_replicates", "effect_replicates"), ("curves", "curves"),
             ("frontier", "frontier"), ("matched", "matched"),
             *zip(ARBITRARINESS_TABLES, ("self_consistency", "arbitrariness", "multiplicity",
                                         "multiplicity_models"), strict=True),
             *((table, table) for table in RANKING_TABLES))
"""``(table, attribute of AuditResults)`` of the tables a run writes when it has them:
training replicates (``run.seeds`` > 1), the paired effects (:mod:`faircode.evaluate.effects`),
the operating-point curves (``curves.*`` params), a tolerance curve's frontier and matched
comparisons (:mod:`faircode.evaluate.matched`), the bagged ensembles and the set of models (the
bag stage's members, :mod:`faircode.evaluate.arbitrariness`), the ranking view of its scores
(:mod:`faircode.evaluate.ranking`); in this order."""


def _write_tables(results: AuditResults, folder: Path, names: tuple[str, ...]) -> None:
    for name in names:
        # default float formatting is the shortest exact repr: numbers round-trip
        getattr(results, name).to_csv(table_path(folder, name), index=False)


def design_effect_summary(results: AuditResults, *, unit: str | None) -> dict[str, Any]:
    """run.json's design-effect record: per fairness metric (and for the intersectional gap and
    the flip rates) the number of rows with a finite design effect and its min/median/max."""

    def spread(values: pd.Series) -> dict[str, Any]:
        finite = values.to_numpy(dtype=float)
        finite = finite[np.isfinite(finite)]
        if not finite.size:
            return {"n": 0, "min": None, "median": None, "max": None}
        return {"n": int(finite.size), "min": float(finite.min()),
                "median": float(np.median(finite)), "max": float(finite.max())}

    def column(frame: pd.DataFrame) -> pd.Series:  # a table without the column: nothing to say
        return frame["design_effect"] if "design_effect" in frame else pd.Series(dtype=float)

    fairness = results.fairness
    return {
        "unit": unit,
        "definition": "cluster-bootstrap variance / row-bootstrap variance of the statistic "
                      "(flip rates: linearised cluster variance / binomial variance); 1.0 "
                      "without a unit or with one test row per unit; NaN where undefined",
        "fairness": ({metric: spread(column(group))
                      for metric, group in fairness.groupby("metric", sort=False)}
                     if "metric" in fairness else {}),
        "intersectional_gap": spread(column(results.intersectional)),
        "counterfactual": spread(column(results.counterfactual)),
    }

