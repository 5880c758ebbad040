"""A text audit evaluated: every system's scores into ``results/<audit>/``.

:func:`evaluate_text` turns the audit's payloads (:class:`faircode.audit.text_data.TextPayloads`)
and each system's score of every distinct text into seven tables, and :func:`write_text_audit`
writes them with their ``run.json``:

* ``flips.csv`` -- per system x operating point x axis x kind x set: the flip rate
  (Clopper–Pearson at the frames' effective counts), its direction (``to_positive``: newly
  flagged) and the direction test's p and q;
* ``ctf.csv`` -- per system x axis x kind x set: the CTF gap and the mean shift with
  cluster-bootstrap intervals, the shift's sign-flip p and q;
* ``placebo.csv`` -- per system x set x axis x kind with a placebo arm x measure (the flip rate
  at each point, the CTF gap, the shift): the swap against the swaps within its groups, their
  difference with its paired interval, tests and verdict (:mod:`faircode.evaluate.
  text_placebo`);
* ``terms.csv`` -- per system x operating point x identity term: the false positive rate on
  label-0 and the false negative rate on label-1 sentences against the background's, the exact
  stratified test, q and the minimum detectable difference, and against the overall rate
  (Dixon et al.'s) with its interval;
* ``auc.csv`` -- per system: the overall AUC and per term the subgroup, BPSN, BNSP and pinned
  AUC;
* ``operating_points.csv`` -- per system x operating point: its threshold, error rates, FPED
  and FNED with their intervals;
* ``systems.csv`` -- per system: what it is, and for a system trained here its held-out AUC and
  accuracy.

Design decisions
----------------
* **Which sentences.**  Flip rates, CTF gaps and placebos use each axis's own sets (the data's
  sentences for the explicit axes, the rendered name sentences -- the data's name frames and
  the declared ones -- for the name axes, each set its own rows); every other table the data's
  labelled sentences only, as Dixon et al. and Borkan et al. do.
* **Operating points**: ``global`` at ``models.decision_threshold`` (``score > t``, as every
  audit without its own decision) and ``declared``, the system's own from the manifest
  (:class:`~faircode.audit.text_manifest.OperatingPoint`; the equal-error-rate threshold is
  computed on the data's sentences).
* **Families.**  Each system is its own study (as each audit is in the grid): one
  Benjamini–Hochberg family of its counterfactual tests (every flip-direction test and every
  shift test) and one of its per-term tests; ``significant`` is ``q < stats.alpha``.  So a
  practitioner auditing one model from score files (:mod:`faircode.evaluate.text_files`) gets
  the q-values this audit gives that model.
* **Seeds**: the manifest's ``random_state`` with :attr:`faircode.core.seeds.Stream.TEXT`
  (:mod:`faircode.evaluate.text_tables`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit.manifest import repository_root
from faircode.audit.text_data import BETWEEN, TextPayloads
from faircode.audit.text_manifest import TextManifest, TextSystemSpec
from faircode.audit.text_training import Trained
from faircode.core.config import BenchmarkConfig, StatsConfig, config_record
from faircode.core.layout import TEXT_RUN, TEXT_TABLES, run_record, table_path
from faircode.core.seeds import Stream, child_seed
from faircode.evaluate.reuse import folder_digests
from faircode.evaluate.swap import replacing
from faircode.evaluate.text_placebo import Arm, placebo_q_values, placebo_table
from faircode.evaluate.text_tables import (
    TABLE_SEEDS,
    Point,
    auc_table,
    counterfactual_tables,
    equal_error_threshold,
    equality_differences,
    operating_table,
    systems_table,
    term_table,
)
from faircode.evaluate.write import check_replaceable
from faircode.provenance.state import params_digest
from faircode.stats.resampling import benjamini_hochberg
from faircode.stats.subgroup_auc import unit_weights

__all__ = ["TextResults", "add_q_values", "evaluate_text", "points_of", "write_text_audit"]

_OWN_SETS = ("data", "names")
"""The sets every text audit may have; a declared frames set's name joins its seeds' key."""


@dataclass(frozen=True, slots=True)
class TextResults:
    """The tables of a text audit (:data:`faircode.core.layout.TEXT_TABLES`) and each system's
    points."""

    flips: pd.DataFrame
    ctf: pd.DataFrame
    placebo: pd.DataFrame
    terms: pd.DataFrame
    auc: pd.DataFrame
    operating_points: pd.DataFrame
    systems: pd.DataFrame
    points: Mapping[str, tuple[Point, ...]]


def points_of(spec: TextSystemSpec, scores: np.ndarray, labels: np.ndarray, *,
              decision_threshold: float) -> tuple[Point, ...]:
    """The system's operating points: ``global`` and, if declared, ``declared``."""
    points = [Point("global", "threshold", float(decision_threshold), "above")]
    declared = spec.operating_point
    if declared is not None:
        if declared.rule == "equal_error_rate":
            points.append(Point("declared", "equal_error_rate",
                                equal_error_threshold(scores, labels), "at_least"))
        else:
            assert declared.threshold is not None
            points.append(Point("declared", "threshold", declared.threshold,
                                declared.direction))
    return tuple(points)


def add_q_values(tables: Sequence[pd.DataFrame], *, alpha: float) -> None:
    """One Benjamini–Hochberg family over the ``p_value`` of every table, in place."""
    p = np.concatenate([t["p_value"].to_numpy(dtype=np.float64) for t in tables]) \
        if tables else np.zeros(0)
    q = benjamini_hochberg(p)
    start = 0
    for table in tables:
        part = q[start:start + len(table)]
        table["q_value"] = part
        table["significant"] = part < alpha
        start += len(table)


def _members(manifest: TextManifest, terms: pd.Series) -> dict[str, np.ndarray]:
    """term -> which sentences hold it (terms are ``|``-joined per sentence)."""
    codes, found = pd.factorize(terms)
    holds = {t: np.array([t in str(f).split("|") for f in found], dtype=bool)
             for t in manifest.terms}
    return {t: holds[t][codes] if found.size else np.zeros(len(terms), dtype=bool)
            for t in manifest.terms}


def _arms(manifest: TextManifest, sets: Sequence[str]) -> list[Arm]:
    """Every (set, axis, kind, groups) with a placebo arm: the data's axes files' arms on the
    sets they edit."""
    out: list[Arm] = []
    for which in sets:
        file = manifest.axes if which == "data" else manifest.name_axes
        for arm in () if file is None else file.arms:
            out.append((which, arm.axis, arm.kind.value, arm.groups))
    return out


def _counterfactual(original: np.ndarray, units: np.ndarray, pairs: pd.DataFrame,
                    axes: pd.DataFrame, sets: Sequence[str], *, points: tuple[Point, ...],
                    stats: StatsConfig, master: int, label: Mapping[str, str]
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Flip and CTF rows of every set's own swaps, a ``set`` column after ``kind`` (a declared
    set's name joins its seeds' key)."""
    flips: list[pd.DataFrame] = []
    gaps: list[pd.DataFrame] = []
    between = pairs[pairs["arm"] == BETWEEN]
    for which in sets:
        mine = axes[(axes["set"] == which) & (axes["arm"] == BETWEEN)]
        f, c = counterfactual_tables(original, units, between[between["set"] == which], mine,
                                     points=points, stats=stats, master=master, label=label,
                                     scope="" if which in _OWN_SETS else which)
        for table, out in ((f, flips), (c, gaps)):
            table.insert(list(table.columns).index("kind") + 1, "set", which)
            out.append(table)
    return pd.concat(flips, ignore_index=True), pd.concat(gaps, ignore_index=True)


def evaluate_text(manifest: TextManifest, payloads: TextPayloads,
                  scores: Mapping[str, np.ndarray], *, decision_threshold: float,
                  stats: StatsConfig, systems: Mapping[str, Mapping[str, str]] | None = None,
                  trained: Trained | None = None) -> TextResults:
    """Every table of the audit from ``scores``: system name -> its score of every text of
    ``payloads.texts`` (in that order); ``systems`` what each system is (``systems.csv``) and
    ``trained`` the text-train stage's systems (their held-out scores)."""
    sentences = payloads.sentences
    data = sentences["set"].to_numpy() == "data"
    labels = sentences["label"].to_numpy()[data]
    units = sentences["unit"].to_numpy()
    members = _members(manifest, sentences["terms"][data])
    category = manifest.category
    weights = unit_weights(units[data], int(data.sum()), n_resamples=stats.n_resamples,
                           seed=child_seed(manifest.random_state, Stream.TEXT,
                                           TABLE_SEEDS["auc"]))
    text_ids = sentences["text_id"].to_numpy()
    sets = list(dict.fromkeys(sentences["set"]))
    arms = _arms(manifest, sets)
    set_of = sentences["set"].to_numpy()
    pairs = payloads.pairs.assign(set=set_of[payloads.pairs["sentence"].to_numpy()])
    out: dict[str, list[pd.DataFrame]] = {t: [] for t in TEXT_TABLES}
    points: dict[str, tuple[Point, ...]] = {}
    for spec in manifest.systems:
        score = np.asarray(scores[spec.name], dtype=np.float64)
        original = score[text_ids]
        label = {"audit": manifest.name, "system": spec.name}
        chosen = points_of(spec, original[data], labels, decision_threshold=decision_threshold)
        points[spec.name] = chosen
        scored = pairs.assign(copy_score=score[pairs["text_id"].to_numpy()])
        flips, ctf = _counterfactual(original, units, scored, payloads.axes, sets,
                                     points=chosen, stats=stats, master=manifest.random_state,
                                     label=label)
        placebo = placebo_table(original, units, scored, arms, points=chosen, stats=stats,
                                master=manifest.random_state, label=label)
        equality = equality_differences(original[data], labels, members, points=chosen,
                                        weights=weights, confidence=stats.confidence)
        terms = term_table(original[data], labels, members, category, units[data],
                           points=chosen, stats=stats, label=label, equality=equality)
        add_q_values([flips, ctf], alpha=stats.alpha)
        add_q_values([terms], alpha=stats.alpha)
        placebo_q_values(placebo, alpha=stats.alpha)
        for name, table in (("flips", flips), ("ctf", ctf), ("placebo", placebo),
                            ("terms", terms),
                            ("auc", auc_table(original[data], labels, members, category,
                                              weights=weights, stats=stats, label=label)),
                            ("operating_points", operating_table(original[data], labels,
                                                                 points=chosen, label=label,
                                                                 equality=equality))):
            out[name].append(table)
    out["systems"].append(_systems(manifest, systems, trained, decision_threshold, stats))
    return TextResults(**{t: pd.concat(f, ignore_index=True) for t, f in out.items()},
                       points=points)


def _systems(manifest: TextManifest, systems: Mapping[str, Mapping[str, str]] | None,
             trained: Trained | None, decision_threshold: float,
             stats: StatsConfig) -> pd.DataFrame:
    records = {s.name: dict((systems or {}).get(s.name, {})) for s in manifest.systems}
    return systems_table(records, audit=manifest.name,
                         trained=trained.record.get("systems", {}) if trained else {},
                         heldout=trained.heldout if trained else {},
                         heldout_y=trained.heldout_y if trained else np.zeros(0),
                         decision_threshold=decision_threshold, confidence=stats.confidence)


def _relative(file: Path) -> str:
    try:
        return file.resolve().relative_to(repository_root(file.parent)).as_posix()
    except ValueError:
        return file.name


def write_text_audit(manifest: TextManifest, payloads: TextPayloads, results: TextResults, *,
                     systems: Mapping[str, Mapping[str, str]], config: BenchmarkConfig,
                     out_dir: Path, provenance_record: Mapping[str, Any],
                     trained: Trained | None = None) -> Path:
    """Write ``<out_dir>/<audit>/`` (the :data:`~faircode.core.layout.TEXT_TABLES` and
    ``run.json``) whole, swapped in in one step (:func:`faircode.evaluate.swap.replacing`);
    return the folder.  A target that is not a folder of a text audit's results of the same
    audit is refused first (:func:`faircode.evaluate.write.check_replaceable`).

    ``systems`` maps each system to what ``run.json`` records of it (title, package, version);
    ``trained`` the text-train stage's record of the systems trained here (``training``).
    """
    final = out_dir / manifest.name
    check_replaceable(final, audit=manifest.name, kind=TEXT_RUN)
    sentences = payloads.sentences
    with replacing(final) as staging:
        for name in TEXT_TABLES:
            getattr(results, name).to_csv(table_path(staging, name), index=False)
        run = {
            "audit": manifest.name, "kind": TEXT_RUN, "title": manifest.title,
            "manifest": _relative(manifest.file),
            "manifest_sha256": hashlib.sha256(manifest.file.read_bytes()).hexdigest(),
            "axes_files": {f.declared_path: f.sha256 for f in (manifest.axes, manifest.name_axes,
                                                               manifest.name_frames)
                           if f is not None},
            "dataset": {"path": manifest.dataset.declared_path, "sha256": payloads.sha256,
                        "sha256_declared": manifest.dataset.sha256},
            "rows": {"sentences": int((sentences["set"] == "data").sum()),
                     "name_sentences": int((sentences["set"] == "names").sum()),
                     **{f"{which}_sentences": int((sentences["set"] == which).sum())
                        for which in dict.fromkeys(sentences["set"])
                        if which not in _OWN_SETS},
                     "units": int(sentences["unit"].nunique()),
                     "distinct_texts": len(payloads.texts),
                     "changed_copies": len(payloads.pairs)},
            "seeds": {"master": manifest.random_state,
                      "scheme": f"SeedSequence(master, spawn_key=({int(Stream.TEXT)}, table, "
                                "key)); tables " + ", ".join(f"{v}={k}" for k, v in
                                                             TABLE_SEEDS.items()) +
                                "; key: sha256 of ([declared set,] axis, kind[, threshold, "
                                "direction]); placebo: of (set, axis, kind)"},
            "systems": {name: dict(info) for name, info in systems.items()},
            "training": trained.record if trained is not None else None,
            "operating_points": {name: [p.label() for p in chosen]
                                 for name, chosen in results.points.items()},
            "config": config_record(config),
            **provenance_record,
            "state": {**provenance_record.get("state", {}),
                      "params_sha256": params_digest(config_record(config))},
            "files": folder_digests(staging),
        }
        run_record(staging).write_text(json.dumps(run, indent=2) + "\n")
    return final
