"""A prepared audit: everything the fit and evaluate steps need, and its parquet store.

:func:`prepare` turns a loaded :class:`~faircode.audit.data.AuditData` into a :class:`PreparedAudit`
(encoded features, label, disadvantaged masks, split, and every counterfactual axis applied to
the test rows and re-encoded).  :func:`save_prepared` / :func:`load_prepared` write and read it
as ``data/prepared/<audit>/`` -- the output of the pipeline's ``prepare`` stage.

Store layout (the contract other steps rely on)
-----------------------------------------------
``features.parquet``
    The encoded feature table ``X`` (float64, one column per named manifest column, in the
    encoder's order), one row per prepared row, row ``i`` = prepared position ``i``.
``rows.parquet``
    ``y`` (int8 label), ``split`` (``"train"`` | ``"test"``) and one bool column
    ``disadvantaged:<attribute>`` per protected attribute, in manifest order, ``unit`` (int64
    unit code) when the manifest declares ``dataset.unit``, and ``system_decision`` (int8 0/1)
    and ``system_score`` (float64, when it has a score) when it declares a ``system``, and one
    int64 column ``stratum:<name>`` per declared ``mantel_haenszel`` stratum (its code per
    row) and one float64 column ``covariate:<name>:<term>`` per term of each declared
    ``logistic_regression`` stratum (:mod:`faircode.audit.strata`); same rows as
    ``features.parquet``.
``counterfactual.parquet``
    Every perturbed test-row set stacked: ``set`` (int, index into ``meta.json``'s
    ``counterfactual``), ``row`` (prepared position of the test row), ``sensitive`` (bool: the
    first attribute's disadvantaged mask after the edit), ``changed`` (bool) and the encoded
    feature columns.
``meta.json``
    ``audit``, ``manifest_sha256``, ``dataset_sha256``, ``steps``, ``attributes``,
    ``counterfactual`` (one ``{"axis", "kind", "columns"}`` per set, in set order), ``system``
    (``{"name", "title", "rule", "scale", "outcome"}`` or null), ``strata`` (their names),
    ``stratum_levels`` (per stratum the level of each code), ``covariates`` (per regression
    stratum its terms) and
    ``nominal`` (the columns of ``features.parquet`` that hold category codes, in column order:
    what ``models.encoding: onehot`` expands inside the models).

Design decisions
----------------
* **Raw values never reach the store**: only encoded features and masks, and a deployed
  system's 0/1 decision and numeric score (COMPAS personal data stays in the raw file; a join
  key such as ``id`` is never stored -- a predictions file is joined on a fresh
  ``load_audit(key=...)``, whose rows are the store's rows in the same order).  Counterfactual
  rows are perturbed on the raw values at ``prepare`` and stored encoded, so the fit step never
  needs the raw table or the encoder.
* **The manifest is not stored**; :func:`load_prepared` is given it and refuses a store written
  from a different manifest (its sha256 is recorded), so a stale table cannot be evaluated under
  a changed manifest.
* Floats are stored as float64 parquet: every value round-trips exactly, so the pipeline's
  numbers are bit-identical to the in-memory ``faircode run``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast

import numpy as np
import pandas as pd

from faircode.audit.data import AuditData, split_rows
from faircode.audit.manifest import Manifest, ScoreScale
from faircode.audit.outputs import SystemOutputs
from faircode.audit.perturbed import PerturbedRows, perturb_test_rows
from faircode.core.errors import DataError
from faircode.core.seeds import replicate_seed
from faircode.counterfactual.perturb import PerturbationKind

__all__ = [
    "AuditLike",
    "PreparedAudit",
    "load_prepared",
    "manifest_sha256",
    "prepare",
    "replicate_split",
    "save_prepared",
]

FEATURES, ROWS, COUNTERFACTUAL, META = (
    "features.parquet", "rows.parquet", "counterfactual.parquet", "meta.json")
MASK_PREFIX = "disadvantaged:"
STRATUM_PREFIX = "stratum:"
COVARIATE_PREFIX = "covariate:"
SYSTEM_DECISION, SYSTEM_SCORE = "system_decision", "system_score"


class AuditLike(Protocol):
    """What the grid reads of an audit (:class:`AuditData` and :class:`PreparedAudit` have it)."""

    @property
    def manifest(self) -> Manifest: ...
    @property
    def X(self) -> pd.DataFrame: ...
    @property
    def y(self) -> np.ndarray: ...
    @property
    def disadvantaged(self) -> Mapping[str, np.ndarray]: ...
    @property
    def train_index(self) -> np.ndarray: ...
    @property
    def test_index(self) -> np.ndarray: ...
    @property
    def steps(self) -> tuple[tuple[str, int], ...]: ...
    @property
    def sha256(self) -> str: ...
    @property
    def unit(self) -> np.ndarray | None: ...
    @property
    def system(self) -> SystemOutputs | None: ...


@dataclass(frozen=True, slots=True)
class PreparedAudit:
    """An audit ready for the grid: :class:`AuditData` without the raw table, plus its
    counterfactual test-row sets."""

    manifest: Manifest
    X: pd.DataFrame
    y: np.ndarray
    disadvantaged: Mapping[str, np.ndarray]
    train_index: np.ndarray
    test_index: np.ndarray
    steps: tuple[tuple[str, int], ...]
    sha256: str
    perturbed: tuple[PerturbedRows, ...]
    unit: np.ndarray | None = None
    system: SystemOutputs | None = None
    """The deployed system's outputs per prepared row (manifest ``system:``), or None."""
    strata: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Per declared ``mantel_haenszel`` stratum (manifest ``strata:``), its integer code per
    prepared row."""
    stratum_levels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per such stratum, the readable level of each code."""
    covariates: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    """Per declared ``logistic_regression`` stratum, its design (prepared rows x terms)."""
    nominal: tuple[str, ...] = ()
    """The columns of ``X`` that hold category codes (:class:`~faircode.audit.data.Encoder`'s
    categorical columns), in ``X``'s order."""

    def __post_init__(self) -> None:
        n = len(self.X)
        unknown = [c for c in self.nominal if c not in self.X.columns]
        if unknown:
            raise DataError(f"{self.manifest.name}: prepared: nominal: expected columns of X, "
                            f"got {unknown}")
        if len(self.y) != n or any(len(m) != n for m in self.disadvantaged.values()):
            raise DataError(f"{self.manifest.name}: prepared: X, y and masks differ in length")
        if (self.system is None) != (self.manifest.system is None) or (
                self.system is not None and self.system.decision.size != n):
            raise DataError(f"{self.manifest.name}: prepared: expected the manifest's system "
                            "outputs for every row")
        pooled = [s.name for s in self.manifest.strata if not s.regression]
        adjusted = [s.name for s in self.manifest.strata if s.regression]
        if list(self.strata) != pooled or any(len(c) != n for c in self.strata.values()) or \
                list(self.covariates) != adjusted or \
                any(len(c) != n for c in self.covariates.values()) or \
                any(len(self.stratum_levels.get(k, ())) <= int(c.max(initial=-1))
                    for k, c in self.strata.items()):
            raise DataError(f"{self.manifest.name}: prepared: expected the codes, levels and "
                            "covariates of the manifest's strata for every row")
        names = [a.name for a in self.manifest.protected_attributes]
        if list(self.disadvantaged) != names:
            raise DataError(f"{self.manifest.name}: prepared: expected masks for {names}, "
                            f"got {list(self.disadvantaged)}")


def manifest_sha256(manifest: Manifest) -> str:
    """The sha256 of the manifest file (recorded in every store written from it)."""
    return hashlib.sha256(manifest.file.read_bytes()).hexdigest()


def prepare(data: AuditData) -> PreparedAudit:
    """Drop the raw table of ``data``; apply the manifest's counterfactual axes to its test rows."""
    return PreparedAudit(
        manifest=data.manifest, X=data.X, y=data.y, disadvantaged=dict(data.disadvantaged),
        train_index=data.train_index, test_index=data.test_index, steps=data.steps,
        sha256=data.sha256, perturbed=perturb_test_rows(data), unit=data.unit,
        system=data.system, strata=dict(data.strata),
        stratum_levels=dict(data.stratum_levels), covariates=dict(data.covariates),
        nominal=tuple(c for c in data.X.columns if data.encoder.kinds[c] == "categorical"),
    )


def save_prepared(prepared: PreparedAudit, folder: Path) -> None:
    """Write ``prepared`` into ``folder`` (created) in the layout of the module docstring."""
    folder.mkdir(parents=True, exist_ok=True)
    prepared.X.reset_index(drop=True).to_parquet(folder / FEATURES, index=False)
    split = np.full(len(prepared.y), "train", dtype=object)
    split[prepared.test_index] = "test"
    rows = pd.DataFrame({"y": prepared.y.astype(np.int8), "split": split.astype(str)})
    for name, mask in prepared.disadvantaged.items():
        rows[MASK_PREFIX + name] = np.asarray(mask, dtype=bool)
    if prepared.unit is not None:
        rows["unit"] = np.asarray(prepared.unit, dtype=np.int64)
    system = prepared.system
    if system is not None:
        rows[SYSTEM_DECISION] = system.decision.astype(np.int8)
        if system.score is not None:
            rows[SYSTEM_SCORE] = system.score.astype(np.float64)
    for name, codes in prepared.strata.items():
        rows[STRATUM_PREFIX + name] = np.asarray(codes, dtype=np.int64)
    for name, design in prepared.covariates.items():
        for term in design.columns:
            rows[f"{COVARIATE_PREFIX}{name}:{term}"] = design[term].to_numpy(dtype=np.float64)
    rows.to_parquet(folder / ROWS, index=False)
    frames = []
    for k, rows_k in enumerate(prepared.perturbed):
        head = pd.DataFrame({"set": k, "row": prepared.test_index.astype(np.int64),
                             "sensitive": np.asarray(rows_k.sensitive, dtype=bool),
                             "changed": np.asarray(rows_k.changed, dtype=bool)})
        frames.append(pd.concat([head, rows_k.X.reset_index(drop=True)], axis=1))
    empty = pd.DataFrame({"set": pd.Series(dtype=np.int64), "row": pd.Series(dtype=np.int64),
                          "sensitive": pd.Series(dtype=bool), "changed": pd.Series(dtype=bool)})
    (pd.concat(frames, ignore_index=True) if frames else empty).to_parquet(
        folder / COUNTERFACTUAL, index=False)
    meta = {
        "audit": prepared.manifest.name,
        "manifest_sha256": manifest_sha256(prepared.manifest),
        "dataset_sha256": prepared.sha256,
        "steps": [list(step) for step in prepared.steps],
        "attributes": list(prepared.disadvantaged),
        "counterfactual": [{"axis": p.axis, "kind": p.kind.value, "columns": list(p.columns)}
                           for p in prepared.perturbed],
        "system": None if system is None else {"name": system.name, "title": system.title,
                                               "rule": system.rule, "scale": system.scale,
                                               **({"outcome": True} if system.outcome else {})},
        **({"strata": list(prepared.strata),
            "stratum_levels": {k: list(v) for k, v in prepared.stratum_levels.items()}}
           if prepared.strata else {}),
        **({"covariates": {k: list(v.columns) for k, v in prepared.covariates.items()}}
           if prepared.covariates else {}),
        "nominal": list(prepared.nominal),
    }
    (folder / META).write_text(json.dumps(meta, indent=2) + "\n")


def load_prepared(folder: Path, *, manifest: Manifest) -> PreparedAudit:
    """Read a store written by :func:`save_prepared` from ``manifest``'s audit."""
    meta = json.loads((folder / META).read_text())
    if meta["manifest_sha256"] != manifest_sha256(manifest):
        raise DataError(f"{folder / META}: manifest_sha256: expected {manifest_sha256(manifest)} "
                        f"({manifest.file}), got {meta['manifest_sha256']}; re-run prepare")
    if "nominal" not in meta:
        raise DataError(f"{folder / META}: nominal: expected the list of category-coded "
                        "columns, got none (a store of an older faircode); re-run prepare")
    X = pd.read_parquet(folder / FEATURES)
    rows = pd.read_parquet(folder / ROWS)
    split = rows["split"].to_numpy(dtype=str)
    test_index = np.flatnonzero(split == "test")
    cf = pd.read_parquet(folder / COUNTERFACTUAL)
    perturbed = []
    for k, spec in enumerate(meta["counterfactual"]):
        part = cf[cf["set"] == k]
        perturbed.append(PerturbedRows(
            axis=spec["axis"], kind=PerturbationKind(spec["kind"]), columns=tuple(spec["columns"]),
            X=part.loc[:, list(X.columns)].reset_index(drop=True),
            sensitive=part["sensitive"].to_numpy(dtype=bool),
            changed=part["changed"].to_numpy(dtype=bool),
        ))
    return PreparedAudit(
        manifest=manifest, X=X, y=rows["y"].to_numpy(dtype=np.int8),
        disadvantaged={name: rows[MASK_PREFIX + name].to_numpy(dtype=bool)
                       for name in meta["attributes"]},
        train_index=np.flatnonzero(split == "train"), test_index=test_index,
        steps=tuple((str(s), int(n)) for s, n in meta["steps"]), sha256=meta["dataset_sha256"],
        perturbed=tuple(perturbed),
        unit=rows["unit"].to_numpy(dtype=np.int64) if "unit" in rows.columns else None,
        system=_stored_system(meta.get("system"), rows, folder=folder),
        strata={name: rows[STRATUM_PREFIX + name].to_numpy(dtype=np.int64)
                for name in meta.get("strata", [])},
        stratum_levels={name: tuple(str(v) for v in levels)
                        for name, levels in meta.get("stratum_levels", {}).items()},
        covariates={name: pd.DataFrame(
            {t: rows[f"{COVARIATE_PREFIX}{name}:{t}"].to_numpy(dtype=np.float64) for t in terms},
            columns=list(terms)) for name, terms in meta.get("covariates", {}).items()},
        nominal=tuple(str(c) for c in meta["nominal"]),
    )


def _stored_system(meta: Mapping[str, object] | None, rows: pd.DataFrame, *,
                   folder: Path) -> SystemOutputs | None:
    """The system outputs of a store's ``rows.parquet`` (None when it has none)."""
    if meta is None:
        return None
    if SYSTEM_DECISION not in rows.columns:
        raise DataError(f"{folder / ROWS}: expected column {SYSTEM_DECISION} (meta.json names "
                        "a system), got none; re-run prepare")
    score = rows[SYSTEM_SCORE].to_numpy(dtype=np.float64) if SYSTEM_SCORE in rows.columns \
        else None
    scale = meta.get("scale")
    return SystemOutputs(name=str(meta["name"]), title=str(meta["title"]),
                         decision=rows[SYSTEM_DECISION].to_numpy(dtype=np.int8), score=score,
                         scale=cast(ScoreScale | None, scale), rule=str(meta.get("rule", "")),
                         outcome=bool(meta.get("outcome", False)))


def replicate_split(
    data: PreparedAudit, *, replicate: int, mode: str
) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) positions of a replicate: the prepared split in ``model`` mode and for
    replicate 0; in ``split`` mode the prepare step's split drawn with the replicate's seed."""
    if mode == "model" or replicate == 0:
        return data.train_index, data.test_index
    manifest = data.manifest
    try:
        return split_rows(data.y, data.unit, test_size=manifest.test_size,
                          random_state=replicate_seed(manifest.random_state, replicate))
    except ValueError as exc:
        raise DataError(f"{manifest.file}: test_size: cannot split replicate {replicate}'s "
                        f"{len(data.y)} rows: {exc}") from None

