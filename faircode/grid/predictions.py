"""What the fit step hands the evaluate step: every cell's predictions, and their parquet store.

The grid is two steps (see :mod:`faircode.grid.fit` and :mod:`faircode.evaluate.score`).  The fit
step
produces an :class:`AuditPredictions`: for each strategy x model cell, the test rows'
score and -- for the randomised S3-S5 -- their decision (S5's also at every tolerance), the
training rows' score, and the same for every counterfactual test-row set.  Nothing model-sized
is kept.  :func:`save_predictions` / :func:`load_predictions` write and read it as
``data/predictions/<audit>/`` (the pipeline's ``fit`` stage output).

Store layout (the contract other steps rely on)
-----------------------------------------------
``test.parquet``
    ``strategy``, ``model`` (enum values), ``row`` (int64 prepared position of the test row),
    ``score`` (float64; NaN for S4, which has none), ``decision`` (nullable Int8; null for S0-S2,
    whose decision is ``score > models.decision_threshold``, applied by evaluate).
``train.parquet``
    ``strategy``, ``model``, ``row``, ``score`` for the training rows (NaN for S4).
``counterfactual.parquet``
    ``strategy``, ``model``, ``set`` (index of the prepared counterfactual set), ``row``,
    ``score``, ``decision`` -- as ``test.parquet``, for the perturbed copies of the test rows.
``tolerances.parquet`` (only when a cell has a tolerance curve: S5)
    ``replicate`` (0: the grid's own cell), ``strategy``, ``model``, ``point`` (the curve's
    index), ``tolerance``, ``row``, ``decision`` (int8): the test rows' decisions at every
    tolerance of the curve.
``cells.json``
    ``audit``, ``manifest_sha256``, ``dataset_sha256``, ``config`` (the mitigation keys the fit
    read), ``numerics`` (the kernels that computed the predictions:
    :func:`faircode.core.numerics.configuration`) and ``cells``: one ``{"strategy", "model",
    "skipped", "objective", "score", "decision"}`` per cell in grid order (``score``/``decision``:
    whether the cell has them; a cell that could not be fitted also ``"unfittable"``: why; a
    cell that enforced the constraint also ``"violations"``, the violation it reached where it
    enforced it, and one with a curve ``"tolerances"`` and ``"base"``, its base model's
    strategy).
    With training replicates (``run.seeds`` > 1) also ``replicates``: ``{"seeds", "seed_mode",
    "cells"}``, one entry as above plus ``"replicate"`` per replicate cell.
``replicates.parquet`` (only with ``run.seeds`` > 1)
    The re-fits ``1..seeds-1`` of every cell (:mod:`faircode.evaluate.stability`): ``replicate``,
    ``strategy``, ``model``, ``part`` (``"test"``; ``"train"`` only where the cell kept training
    scores for the decision rule), ``row`` (prepared position; a ``split``-mode replicate has its
    own test rows, its training rows are the others), ``score``, ``decision`` as above.  No
    counterfactual predictions.
Rows of every parquet are grouped by cell in grid order, then in test-row (or set, row) order;
replicates by replicate, then cell in grid order, then part.

Timings are not in the store: they would make two fits of the same inputs differ, so DVC would
see a changed output and re-run everything downstream.  The fit's seconds go to a timings file
beside it (:func:`timings_path`, ``<part>.seconds.json``: ``{"cells": [{"strategy", "model",
"seconds"}], "replicates": [... "replicate"]}``), written and read only when a caller names it;
no number depends on it.

Design decisions
----------------
* **Decisions that need a draw are made at fit time**, with the cell's ``Stream.PREDICTION``
  child seed and common random numbers for the counterfactual sets (see
  :mod:`faircode.grid.strategies`); deterministic S0-S2 decisions are left to the threshold, so a
  threshold sweep never refits.
* **Seed streams** (:class:`Stream`) are keyed by grid position, shared by both steps; a
  child seed is ``SeedSequence(master, spawn_key=(stream, strategy, model, index))``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit.decision import Cutoff
from faircode.core.cells import ModelFamily, Strategy, grid_cells
from faircode.core.errors import DataError
from faircode.grid._tolerance_store import curve_fields, load_curves, save_curves

__all__ = [
    "AuditPredictions",
    "CellPredictions",
    "ReplicatePredictions",
    "load_predictions",
    "merge_predictions",
    "save_predictions",
    "timings_path",
]

TEST, TRAIN, COUNTERFACTUAL, CELLS, REPLICATES, TOLERANCES = (
    "test.parquet", "train.parquet", "counterfactual.parquet", "cells.json", "replicates.parquet",
    "tolerances.parquet")


@dataclass(frozen=True, slots=True)
class CellPredictions:
    """One strategy x model cell's predictions (``None`` where the cell has none).

    ``test_score``/``train_score``: P(ŷ = 1) for S0-S2, the mixture probability for S3, None for
    S4.  ``test_decision``: S3/S4 only (randomised).  ``counterfactual_*``: one entry per
    counterfactual set, likewise.  ``skipped``: why the cell was not run ('' if it was: a
    constraint its strategy cannot enforce); ``unfittable``: why it was run but could not be
    fitted on these training rows ('' if it was: :class:`faircode.grid.strategies.Unfittable`),
    an uninformative cell.  ``violations``: the violation of the constraint the cell reached
    where it enforced it (S3-S5; S5 one per tolerance); ``tolerances``/``curve_decision``: a
    tolerance curve's tolerances and its test decisions at each (S5), ``base`` the strategy
    whose features its base model reads.
    """

    strategy: Strategy
    family: ModelFamily
    test_score: np.ndarray | None = None
    test_decision: np.ndarray | None = None
    train_score: np.ndarray | None = None
    counterfactual_score: tuple[np.ndarray | None, ...] = ()
    counterfactual_decision: tuple[np.ndarray | None, ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)
    skipped: str = ""
    objective: str = ""
    unfittable: str = ""
    violations: tuple[float, ...] = ()
    tolerances: tuple[float, ...] = ()
    curve_decision: tuple[np.ndarray, ...] = ()
    base: str = ""

    @property
    def fitted(self) -> bool:
        """Whether the cell has predictions (neither skipped nor unfittable)."""
        return not (self.skipped or self.unfittable)

    def __post_init__(self) -> None:
        if self.fitted and self.test_score is None and self.test_decision is None:
            raise ValueError(f"{self.strategy.value}/{self.family.value}: a fitted cell needs "
                             "a test score or decision")
        if len(self.counterfactual_score) != len(self.counterfactual_decision):
            raise ValueError("counterfactual scores and decisions differ in number of sets")
        if self.tolerances and not (len(self.curve_decision) == len(self.violations)
                                    == len(self.tolerances)):
            raise ValueError(f"{self.strategy.value}/{self.family.value}: expected one curve "
                             f"decision and violation per tolerance ({len(self.tolerances)}), "
                             f"got {len(self.curve_decision)} and {len(self.violations)}")

    def decisions(self, cutoff: Cutoff) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """The test rows' and each counterfactual set's decisions (int8): S0-S2 scores at the
        audit's ``cutoff`` (:mod:`faircode.audit.decision`), S3/S4 their randomised decisions."""
        test = _decide(self.test_score, self.test_decision, cutoff)
        flipped = tuple(_decide(s, d, cutoff) for s, d in
                        zip(self.counterfactual_score, self.counterfactual_decision, strict=True))
        return test, flipped


def _decide(score: np.ndarray | None, decision: np.ndarray | None, cutoff: Cutoff) -> np.ndarray:
    if decision is not None:
        return decision
    assert score is not None
    return cutoff.apply(score)


@dataclass(frozen=True, slots=True)
class ReplicatePredictions:
    """One training replicate of one cell (:mod:`faircode.evaluate.stability`): its predictions and
    its
    test rows (prepared positions, sorted; the training rows are all the others).

    ``cell`` has no counterfactual predictions; its ``train_score`` only where the decision
    rule needs it (``top_fraction``).
    """

    replicate: int
    cell: CellPredictions
    test_index: np.ndarray

    def __post_init__(self) -> None:
        if isinstance(self.replicate, bool) or not isinstance(self.replicate, int) \
                or self.replicate < 0:
            raise ValueError(f"ReplicatePredictions: replicate: expected an int >= 0, got "
                             f"{self.replicate!r} ({type(self.replicate).__name__})")
        if self.cell.counterfactual_score:
            raise ValueError("ReplicatePredictions: a replicate has no counterfactual predictions")


@dataclass(frozen=True, slots=True)
class AuditPredictions:
    """Every cell's predictions for one audit, in grid order, and what produced them.

    ``replicates``: the training replicates ``1..seeds-1`` of every cell (replicate, then grid
    order; empty with ``seeds`` 1), fitted in ``seed_mode``.
    """

    audit: str
    cells: tuple[CellPredictions, ...]
    config: dict[str, Any]
    manifest_sha256: str = ""
    dataset_sha256: str = ""
    replicates: tuple[ReplicatePredictions, ...] = ()
    seeds: int = 1
    seed_mode: str = "model"
    numerics: dict[str, Any] = field(default_factory=dict)


def merge_predictions(parts: Sequence[AuditPredictions]) -> AuditPredictions:
    """One audit's predictions from the parts fitted apart (one per fit stage), in grid order.

    The parts must be of the same audit, manifest, data and replicates and cover distinct
    cells; the merged ``config`` records every mitigation key some part read.
    """
    if not parts:
        raise ValueError("merge_predictions: parts: expected at least one, got none")
    first = parts[0]
    for part in parts[1:]:
        for name in ("audit", "manifest_sha256", "dataset_sha256", "seeds", "seed_mode",
                     "numerics"):
            if getattr(part, name) != getattr(first, name):
                raise DataError(f"{first.audit}: predictions: {name}: the fit stages' parts "
                                f"differ ({getattr(first, name)!r} vs {getattr(part, name)!r}); "
                                "re-run fit")
    order = {cell: i for i, cell in enumerate(grid_cells())}
    cells = sorted((c for p in parts for c in p.cells),
                   key=lambda c: order[c.strategy, c.family])
    keys = [(c.strategy, c.family) for c in cells]
    if len(set(keys)) != len(keys):
        raise DataError(f"{first.audit}: predictions: a cell is in two parts; re-run fit")
    replicates = sorted((r for p in parts for r in p.replicates),
                        key=lambda r: (r.replicate, order[r.cell.strategy, r.cell.family]))
    config: dict[str, Any] = {}
    for part in parts:
        config.update(part.config)
    return dataclasses.replace(first, cells=tuple(cells), replicates=tuple(replicates),
                               config=config)


def _long(cell: CellPredictions, rows: np.ndarray, score: np.ndarray | None,
          decision: np.ndarray | None, **extra: object) -> pd.DataFrame:
    n = len(rows)
    frame = pd.DataFrame({"strategy": cell.strategy.value, "model": cell.family.value, **extra,
                          "row": rows.astype(np.int64)}, index=range(n))
    frame["score"] = np.full(n, np.nan) if score is None else np.asarray(score, dtype=float)
    frame["decision"] = pd.array(
        [pd.NA] * n if decision is None else np.asarray(decision, dtype=np.int8), dtype="Int8")
    return frame


def timings_path(folder: Path) -> Path:
    """The timings file of the store ``folder``: ``<folder>.seconds.json`` beside it."""
    return folder.with_name(f"{folder.name}.seconds.json")


def save_predictions(predictions: AuditPredictions, folder: Path, *, test_index: np.ndarray,
                     train_index: np.ndarray, timings: Path | None = None) -> None:
    """Write ``predictions`` into ``folder`` (created) in the layout of the module docstring;
    with ``timings``, the cells' seconds there."""
    folder.mkdir(parents=True, exist_ok=True)
    test, train, cf = [], [], []
    for cell in predictions.cells:
        if not cell.fitted:
            continue
        test.append(_long(cell, test_index, cell.test_score, cell.test_decision))
        train.append(_long(cell, train_index, cell.train_score, None).drop(columns="decision"))
        for k, (s, d) in enumerate(zip(cell.counterfactual_score, cell.counterfactual_decision,
                                       strict=True)):
            cf.append(_long(cell, test_index, s, d, set=k))
    empty = _long(CellPredictions(Strategy.BASELINE, ModelFamily.LOGISTIC_REGRESSION,
                                  skipped="-"), np.empty(0, np.int64), None, None)
    for name, frames, blank in ((TEST, test, empty), (TRAIN, train, empty.drop(columns="decision")),
                                (COUNTERFACTUAL, cf, empty.assign(set=0))):
        (pd.concat(frames, ignore_index=True) if frames else blank).to_parquet(
            folder / name, index=False)
    record = {
        "audit": predictions.audit, "manifest_sha256": predictions.manifest_sha256,
        "dataset_sha256": predictions.dataset_sha256, "config": predictions.config,
        "numerics": predictions.numerics,
        "cells": [_cell_record(c) for c in predictions.cells],
    }
    if predictions.seeds > 1:
        _save_replicates(predictions, folder, record)
    save_curves([(0, c, test_index) for c in predictions.cells]
                + [(r.replicate, r.cell, r.test_index) for r in predictions.replicates],
                folder / TOLERANCES)
    (folder / CELLS).write_text(json.dumps(record, indent=2) + "\n")
    if timings is not None:
        _save_timings(predictions, timings)


def _cell_record(cell: CellPredictions) -> dict[str, Any]:
    return {"strategy": cell.strategy.value, "model": cell.family.value,
            "skipped": cell.skipped, "objective": cell.objective,
            "score": cell.test_score is not None, "decision": cell.test_decision is not None,
            **({"unfittable": cell.unfittable} if cell.unfittable else {}),
            **({"violations": list(cell.violations)} if cell.violations else {}),
            **({"tolerances": list(cell.tolerances), "base": cell.base}
               if cell.tolerances else {})}


def _not_fitted(entry: dict[str, Any], strategy: Strategy, family: ModelFamily,
                seconds: dict[str, float]) -> CellPredictions | None:
    """The cell of a ``cells.json`` entry that has no predictions (skipped or unfittable)."""
    if not (entry["skipped"] or entry.get("unfittable")):
        return None
    return CellPredictions(strategy, family, seconds=seconds, skipped=entry["skipped"],
                           unfittable=entry.get("unfittable", ""))


def _save_timings(predictions: AuditPredictions, path: Path) -> None:
    record = {"audit": predictions.audit,
              "cells": [{"strategy": c.strategy.value, "model": c.family.value,
                         "seconds": c.seconds} for c in predictions.cells],
              "replicates": [{"replicate": r.replicate, "strategy": r.cell.strategy.value,
                              "model": r.cell.family.value, "seconds": r.cell.seconds}
                             for r in predictions.replicates]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


def _load_timings(path: Path | None) -> dict[tuple[Any, ...], dict[str, float]]:
    """``(strategy, model[, replicate]) -> seconds`` of a timings file; {} when there is none
    or it cannot be read (no number depends on it)."""
    if path is None:
        return {}
    try:
        record = json.loads(path.read_text())
        cells: dict[tuple[Any, ...], dict[str, float]] = {
            (c["strategy"], c["model"]): dict(c["seconds"]) for c in record["cells"]}
        cells.update({(c["strategy"], c["model"], int(c["replicate"])): dict(c["seconds"])
                      for c in record.get("replicates", ())})
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return cells


def _save_replicates(predictions: AuditPredictions, folder: Path,
                     record: dict[str, Any]) -> None:
    """Write ``replicates.parquet`` and add the ``replicates`` entry to ``record``."""
    frames = []
    for rep in predictions.replicates:
        cell = rep.cell
        if not cell.fitted:
            continue
        frames.append(_long(cell, rep.test_index, cell.test_score, cell.test_decision,
                            replicate=rep.replicate, part="test"))
        if cell.train_score is not None:
            train = np.setdiff1d(np.arange(len(cell.train_score) + len(rep.test_index)),
                                 rep.test_index)
            frames.append(_long(cell, train, cell.train_score, None, replicate=rep.replicate,
                                part="train"))
    empty = _long(CellPredictions(Strategy.BASELINE, ModelFamily.LOGISTIC_REGRESSION,
                                  skipped="-"), np.empty(0, np.int64), None, None,
                  replicate=0, part="test")
    frame = pd.concat(frames, ignore_index=True) if frames else empty
    frame["replicate"] = frame["replicate"].astype(np.int64)
    frame.to_parquet(folder / REPLICATES, index=False)
    record["replicates"] = {
        "seeds": predictions.seeds, "seed_mode": predictions.seed_mode,
        "cells": [{"replicate": r.replicate, **_cell_record(r.cell)}
                  for r in predictions.replicates],
    }


def _load_replicates(folder: Path, entry: dict[str, Any],
                     seconds: dict[tuple[Any, ...], dict[str, float]],
                     curves: dict[tuple[int, str, str], tuple[np.ndarray, ...]],
                     ) -> tuple[ReplicatePredictions, ...]:
    """Read ``replicates.parquet`` as described by cells.json's ``replicates`` entry."""
    frame = pd.read_parquet(folder / REPLICATES)
    groups = dict(iter(frame.groupby(["replicate", "strategy", "model", "part"], sort=False)))
    out = []
    for c in entry["cells"]:
        strategy, family, k = Strategy(c["strategy"]), ModelFamily(c["model"]), int(c["replicate"])
        took = seconds.get((c["strategy"], c["model"], k), {})
        if (unfitted := _not_fitted(c, strategy, family, took)) is not None:
            out.append(ReplicatePredictions(k, unfitted, np.empty(0, np.int64)))
            continue
        key = (k, c["strategy"], c["model"])
        if (*key, "test") not in groups:
            raise DataError(f"{folder / REPLICATES}: expected rows of replicate cell {key}, "
                            "got none")
        test = groups[(*key, "test")]
        train = groups.get((*key, "train"))
        out.append(ReplicatePredictions(k, CellPredictions(
            strategy, family,
            test_score=_column(test, "score", c["score"]),
            test_decision=_column(test, "decision", c["decision"]),
            train_score=None if train is None else _column(train, "score", c["score"]),
            seconds=took, objective=c.get("objective", ""), **curve_fields(c, curves, k),
        ), test["row"].to_numpy(dtype=np.int64)))
    return tuple(out)


def load_predictions(folder: Path, *, timings: Path | None = None) -> AuditPredictions:
    """Read a store written by :func:`save_predictions`, with the seconds of ``timings`` (none
    without it, or when it is missing)."""
    record = json.loads((folder / CELLS).read_text())
    seconds = _load_timings(timings)
    test = pd.read_parquet(folder / TEST)
    train = pd.read_parquet(folder / TRAIN)
    cf = pd.read_parquet(folder / COUNTERFACTUAL)
    curves = load_curves(folder / TOLERANCES)
    groups = {name: dict(iter(frame.groupby(["strategy", "model"], sort=False)))
              for name, frame in (("test", test), ("train", train), ("cf", cf))}
    cells = []
    for c in record["cells"]:
        strategy, family = Strategy(c["strategy"]), ModelFamily(c["model"])
        took = seconds.get((c["strategy"], c["model"]), {})
        if (unfitted := _not_fitted(c, strategy, family, took)) is not None:
            cells.append(unfitted)
            continue
        key = (c["strategy"], c["model"])
        if key not in groups["test"]:
            raise DataError(f"{folder / TEST}: expected rows of cell {key}, got none")
        sets = groups["cf"].get(key, cf.iloc[:0])
        pieces = [sets[sets["set"] == k] for k in range(int(sets["set"].max()) + 1)] \
            if len(sets) else []
        cells.append(CellPredictions(
            strategy, family,
            test_score=_column(groups["test"][key], "score", c["score"]),
            test_decision=_column(groups["test"][key], "decision", c["decision"]),
            train_score=_column(groups["train"][key], "score", c["score"]),
            counterfactual_score=tuple(_column(p, "score", c["score"]) for p in pieces),
            counterfactual_decision=tuple(_column(p, "decision", c["decision"]) for p in pieces),
            seconds=took, objective=c.get("objective", ""), **curve_fields(c, curves, 0),
        ))
    entry = record.get("replicates")
    return AuditPredictions(audit=record["audit"], cells=tuple(cells), config=record["config"],
                            manifest_sha256=record["manifest_sha256"],
                            dataset_sha256=record["dataset_sha256"],
                            numerics=dict(record.get("numerics") or {}),
                            replicates=() if entry is None else _load_replicates(
                                folder, entry, seconds, curves),
                            seeds=1 if entry is None else int(entry["seeds"]),
                            seed_mode="model" if entry is None else str(entry["seed_mode"]))


def _column(frame: pd.DataFrame, name: str, present: bool) -> np.ndarray | None:
    if not present:
        return None
    if name == "decision":
        return frame[name].to_numpy(dtype=np.int8)
    return frame[name].to_numpy(dtype=float)
