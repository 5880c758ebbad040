"""Bagged ensembles: ``B`` members of a grid cell, each fitted on a bootstrap draw of its
training rows, and the store of their test scores.

The members of Cooper et al.'s self-consistency (:mod:`faircode.stats.arbitrariness`): for every
bagged strategy (:data:`faircode.core.cells.BAGGED_STRATEGIES`, S0 and S2) and model family,
``arbitrariness.bags`` models, member ``b`` fitted by the grid's own :func:`~faircode.grid.fit.
fit_cell` on a bootstrap draw of the prepared split's training rows (replicate 0's split, the
split of the grid's own fit, whatever ``run.seeds``) and scored on its test rows.  The evaluate
step decides every member at its cell's operating point and counts the votes
(:mod:`faircode.evaluate.arbitrariness`); nothing model-sized is kept.

Design decisions
----------------
* **Which families** (:func:`bagged_families`): all three on an audit with fewer training rows
  than ``arbitrariness.all_families_below``, logistic regression alone on a larger one (a forest
  or boosting member on 55,000 rows costs seconds, and 21 of them per strategy a large share of
  the pipeline's time; logistic regression costs little anywhere).
* **Seeds by grid position and member**: member ``b`` of cell ``(s, m)`` draws its bootstrap
  from ``SeedSequence(master, spawn_key=(12, s, m, b, 0))`` and seeds its model with the first
  32-bit word of ``(12, s, m, b, 1)`` (:attr:`faircode.core.seeds.Stream.BAGS`), so the members
  are the same for any worker count, backend or ``B`` (member ``b`` of ``B = 21`` is member
  ``b`` of ``B = 51``).
* **The bootstrap draws units**, where the audit declares them (a person's several rows go in or
  out together, as the split keeps them), else rows; the draw is as large as the training set
  (in units) and sorted, so a member's rows do not depend on the draw's order.
* **Store** (``data/predictions/<audit>/bagged/``, :data:`BAGGED_PART`, beside the fit
  stages' parts): ``members.parquet`` (``strategy``, ``model``,
  ``member``, ``row``: the prepared position of the test row, ``score``: P(ŷ = 1)), rows grouped
  by cell in grid order, then member, then test row; ``bags.json`` (``audit``,
  ``manifest_sha256``, ``dataset_sha256``, ``bags``, ``all_families_below``, ``encoding``,
  ``numerics``, ``cells``: each ``{"strategy", "model"}``).  The seconds (``wall``: the
  stage's fitting; ``members``: the members' own fit and predict seconds, summed over the
  workers) go beside it (:func:`faircode.grid.predictions.timings_path`), never into it, as the
  fit stages' do.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit.prepared import PreparedAudit, manifest_sha256
from faircode.core.cells import BAGGED_STRATEGIES, ModelFamily, Strategy, grid_cells, position
from faircode.core.config import Encoding, ExecutionConfig, MitigationConfig
from faircode.core.errors import DataError
from faircode.core.numerics import configuration
from faircode.core.seeds import Stream, child_seed
from faircode.grid.fit import fit_cell
from faircode.grid.predictions import CellPredictions
from faircode.grid.scheduler import DEFAULT_COEFFICIENTS, CostModel, Finished, Task, run_tasks

__all__ = [
    "BAGGED_PART",
    "BaggedPredictions",
    "bagged_families",
    "bagged_store",
    "bootstrap_rows",
    "fit_bagged",
    "fit_member",
    "load_bagged",
    "member_seeds",
    "save_bagged",
]

MEMBERS, RECORD = "members.parquet", "bags.json"
BAGGED_PART = "bagged"
"""The store's folder under ``data/predictions/<audit>/``, beside the grid's parts."""
Cell = tuple[Strategy, ModelFamily]


@dataclass(frozen=True, slots=True)
class BaggedPredictions:
    """Every bagged member's test scores: ``scores[(strategy, family)]`` is ``(B, n_test)`` in
    the test rows' order (the prepared ``test_index``), cells in grid order."""

    audit: str
    bags: int
    scores: dict[Cell, np.ndarray]
    all_families_below: int
    encoding: str = "label"
    manifest_sha256: str = ""
    dataset_sha256: str = ""
    numerics: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for cell, scores in self.scores.items():
            if scores.ndim != 2 or scores.shape[0] != self.bags:
                raise ValueError(f"BaggedPredictions: {cell[0].value}/{cell[1].value}: expected "
                                 f"({self.bags}, rows) scores, got shape {scores.shape}")


def bagged_families(train_rows: int, *, all_families_below: int) -> tuple[ModelFamily, ...]:
    """The families bagged on an audit of ``train_rows`` training rows (module docstring)."""
    if train_rows < all_families_below:
        return tuple(ModelFamily)
    return (ModelFamily.LOGISTIC_REGRESSION,)


def member_seeds(master: int, strategy: Strategy, family: ModelFamily,
                 member: int) -> tuple[np.random.SeedSequence, int]:
    """Member ``member``'s bootstrap seed sequence and model seed (module docstring)."""
    key = (Stream.BAGS, *position(strategy, family), member)
    model = int(child_seed(master, *key, 1).generate_state(1)[0])
    return child_seed(master, *key, 0), model


def bootstrap_rows(train: np.ndarray, *, units: np.ndarray | None,
                   seed: np.random.SeedSequence) -> np.ndarray:
    """A sorted bootstrap draw of the rows ``train``: as many units as they hold, with
    replacement, each with all its rows (``units`` the unit of every prepared row; None: rows)."""
    rng = np.random.default_rng(seed)
    if units is None:
        return np.sort(rng.choice(train, size=train.size, replace=True))
    order = train[np.argsort(units[train], kind="stable")]
    _, start, count = np.unique(units[order], return_index=True, return_counts=True)
    drawn = rng.integers(0, start.size, size=start.size)
    lengths = count[drawn]
    offsets = np.repeat(start[drawn] - np.cumsum(lengths) + lengths, lengths)
    return np.sort(order[offsets + np.arange(lengths.sum())])


def fit_member(data: PreparedAudit, strategy: Strategy, family: ModelFamily, member: int,
               mitigation: MitigationConfig, encoding: Encoding = "label") -> CellPredictions:
    """Scheduler task of one member: its bootstrap draw and seed, the test rows' scores."""
    rows_seed, model_seed = member_seeds(data.manifest.random_state, strategy, family, member)
    rows = bootstrap_rows(data.train_index, units=data.unit, seed=rows_seed)
    return fit_cell(data, strategy, family, mitigation=mitigation, seed=model_seed, train=rows,
                    test=data.test_index, perturbed=None, keep_train_scores=False,
                    encoding=encoding)


def _cells(data: PreparedAudit, all_families_below: int) -> list[Cell]:
    families = bagged_families(len(data.train_index), all_families_below=all_families_below)
    return [(s, m) for s, m in grid_cells() if s in BAGGED_STRATEGIES and m in families]


def fit_bagged(
    data: PreparedAudit,
    *,
    bags: int,
    all_families_below: int,
    mitigation: MitigationConfig,
    encoding: Encoding = "label",
    jobs: int = 1,
    execution: ExecutionConfig | None = None,
    on_done: Callable[[Finished], None] | None = None,
) -> BaggedPredictions:
    """Fit ``bags`` members of every bagged cell of ``data`` on one task queue (``jobs`` local
    workers or ``execution``'s backend; no number depends on either) and return their scores."""
    name = data.manifest.name
    cells = _cells(data, all_families_below)
    model = CostModel(DEFAULT_COEFFICIENTS)
    started = time.perf_counter()
    tasks = [Task(audit=name, key=(s, m, b), fn=fit_member, args=(s, m, b, mitigation, encoding),
                  cost=model.expected(s, m, rows=len(data.train_index)))
             for s, m in cells for b in range(bags)]
    done = run_tasks(tasks, data={name: data}, jobs=jobs, execution=execution, on_done=on_done)
    scores = {}
    for s, m in cells:
        members = [done[(name, (s, m, b))] for b in range(bags)]
        for b, cell in enumerate(members):
            if not cell.fitted or cell.test_score is None:
                raise DataError(f"{data.manifest.file}: bagged member {b} of {s.value}/"
                                f"{m.value}: {cell.skipped or cell.unfittable or 'no score'}")
        scores[(s, m)] = np.stack([c.test_score for c in members])
    return BaggedPredictions(name, bags, scores, all_families_below, encoding,
                             manifest_sha256(data.manifest), data.sha256, configuration(),
                             {"wall": time.perf_counter() - started,
                              "members": sum(sum(c.seconds.values()) for c in done.values())})


def save_bagged(bagged: BaggedPredictions, folder: Path, *, test_index: np.ndarray,
                timings: Path | None = None) -> None:
    """Write ``bagged`` into ``folder`` (created) in the store's layout (module docstring); with
    ``timings``, its seconds there."""
    folder.mkdir(parents=True, exist_ok=True)
    frames = [pd.DataFrame({"strategy": s.value, "model": m.value,
                            "member": np.repeat(np.arange(bagged.bags, dtype=np.int64),
                                                test_index.size),
                            "row": np.tile(test_index.astype(np.int64), bagged.bags),
                            "score": scores.reshape(-1).astype(np.float64)})
              for (s, m), scores in bagged.scores.items()]
    empty = pd.DataFrame({"strategy": pd.Series(dtype=str), "model": pd.Series(dtype=str),
                          "member": pd.Series(dtype=np.int64), "row": pd.Series(dtype=np.int64),
                          "score": pd.Series(dtype=np.float64)})
    (pd.concat(frames, ignore_index=True) if frames else empty).to_parquet(folder / MEMBERS,
                                                                          index=False)
    record = {"audit": bagged.audit, "manifest_sha256": bagged.manifest_sha256,
              "dataset_sha256": bagged.dataset_sha256, "bags": bagged.bags,
              "all_families_below": bagged.all_families_below, "encoding": bagged.encoding,
              "numerics": bagged.numerics,
              "cells": [{"strategy": s.value, "model": m.value} for s, m in bagged.scores]}
    (folder / RECORD).write_text(json.dumps(record, indent=2) + "\n")
    if timings is not None:
        timings.write_text(json.dumps({"audit": bagged.audit,
                                       "seconds": bagged.seconds}, indent=1) + "\n")


def bagged_store(predictions: Path) -> Path | None:
    """The bagged members' store of an audit's predictions folder
    (``<predictions>/bagged``), or None when the bag stage has not written one there."""
    folder = predictions / BAGGED_PART
    return folder if (folder / RECORD).is_file() else None


def load_bagged(folder: Path, *, test_index: np.ndarray,
                timings: Path | None = None) -> BaggedPredictions:
    """Read a store written by :func:`save_bagged` whose test rows are ``test_index``."""
    record = json.loads((folder / RECORD).read_text())
    frame = pd.read_parquet(folder / MEMBERS)
    bags = int(record["bags"])
    groups = dict(iter(frame.groupby(["strategy", "model"], sort=False)))
    scores = {}
    for entry in record["cells"]:
        key = (entry["strategy"], entry["model"])
        rows = groups.get(key)
        expected = np.tile(test_index.astype(np.int64), bags)
        if rows is None or not np.array_equal(rows["row"].to_numpy(dtype=np.int64), expected):
            raise DataError(f"{folder / MEMBERS}: {key[0]}/{key[1]}: expected {bags} members "
                            f"on the prepared test rows; re-run the bagging stage")
        scores[(Strategy(key[0]), ModelFamily(key[1]))] = rows["score"].to_numpy(
            dtype=np.float64).reshape(bags, test_index.size)
    seconds: dict[str, float] = {}
    if timings is not None and timings.is_file():
        try:
            seconds = {k: float(v) for k, v in json.loads(timings.read_text())["seconds"].items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            seconds = {}
    return BaggedPredictions(record["audit"], bags, scores, int(record["all_families_below"]),
                             str(record.get("encoding", "label")), record["manifest_sha256"],
                             record["dataset_sha256"], dict(record.get("numerics") or {}),
                             seconds)

