"""A text audit evaluated: every system's scores into ``results/<audit>/``.

:func:`evaluate_text` turns the audit's payloads (:class:`faircode.audit.text_data.TextPayloads`)
and each system's score of every distinct text into five tables, and :func:`write_text_audit`
writes them with their ``run.json``:

* ``flips.csv`` -- per system x operating point x axis x kind: the flip rate (Clopper–Pearson
  at the frames' effective counts), its direction (``to_positive``: newly flagged) and the
  direction test's p and q;
* ``ctf.csv`` -- per system x axis x kind: the CTF gap and the mean shift with cluster-bootstrap
  intervals, the shift's sign-flip p and q;
* ``terms.csv`` -- per system x operating point x identity term: the false positive rate on
  label-0 and the false negative rate on label-1 sentences against the background's, the exact
  stratified test, q and the minimum detectable difference;
* ``auc.csv`` -- per system: the overall AUC and per term the subgroup, BPSN and BNSP AUC;
* ``operating_points.csv`` -- per system x operating point: its threshold and error rates.

Design decisions
----------------
* **Which sentences.**  Flip rates and CTF gaps use each axis's own set (the data's sentences for
  the explicit axes, the rendered name sentences for the name axes); every other table the
  data's labelled sentences only, as Dixon et al. and Borkan et al. do.
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
from faircode.audit.text_data import TextPayloads
from faircode.audit.text_manifest import TextManifest, TextSystemSpec
from faircode.core.config import BenchmarkConfig, StatsConfig, config_record
from faircode.core.layout import TEXT_RUN, TEXT_TABLES, run_record, table_path
from faircode.core.seeds import Stream, child_seed
from faircode.evaluate.reuse import folder_digests
from faircode.evaluate.swap import replacing
from faircode.evaluate.text_tables import (
    TABLE_SEEDS,
    Point,
    auc_table,
    counterfactual_tables,
    equal_error_threshold,
    operating_table,
    term_table,
)
from faircode.evaluate.write import check_replaceable
from faircode.provenance.state import params_digest
from faircode.stats.resampling import benjamini_hochberg
from faircode.stats.subgroup_auc import unit_weights

__all__ = ["TextResults", "add_q_values", "evaluate_text", "points_of", "write_text_audit"]


@dataclass(frozen=True, slots=True)
class TextResults:
    """The five tables of a text audit (:data:`faircode.core.layout.TEXT_TABLES`) and each
    system's points."""

    flips: pd.DataFrame
    ctf: pd.DataFrame
    terms: pd.DataFrame
    auc: pd.DataFrame
    operating_points: pd.DataFrame
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


def evaluate_text(manifest: TextManifest, payloads: TextPayloads,
                  scores: Mapping[str, np.ndarray], *, decision_threshold: float,
                  stats: StatsConfig) -> TextResults:
    """Every table of the audit from ``scores``: system name -> its score of every text of
    ``payloads.texts`` (in that order)."""
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
    out: dict[str, list[pd.DataFrame]] = {t: [] for t in TEXT_TABLES}
    points: dict[str, tuple[Point, ...]] = {}
    for spec in manifest.systems:
        score = np.asarray(scores[spec.name], dtype=np.float64)
        original = score[text_ids]
        label = {"audit": manifest.name, "system": spec.name}
        chosen = points_of(spec, original[data], labels, decision_threshold=decision_threshold)
        points[spec.name] = chosen
        pairs = payloads.pairs.assign(copy_score=score[payloads.pairs["text_id"].to_numpy()])
        flips, ctf = counterfactual_tables(original, units, pairs, payloads.axes,
                                           points=chosen, stats=stats,
                                           master=manifest.random_state, label=label)
        terms = term_table(original[data], labels, members, category, units[data],
                           points=chosen, stats=stats, label=label)
        add_q_values([flips, ctf], alpha=stats.alpha)
        add_q_values([terms], alpha=stats.alpha)
        for name, table in (("flips", flips), ("ctf", ctf), ("terms", terms),
                            ("auc", auc_table(original[data], labels, members, category,
                                              weights=weights, stats=stats, label=label)),
                            ("operating_points", operating_table(original[data], labels,
                                                                 points=chosen, label=label))):
            out[name].append(table)
    return TextResults(**{t: pd.concat(f, ignore_index=True) for t, f in out.items()},
                       points=points)


def _relative(file: Path) -> str:
    try:
        return file.resolve().relative_to(repository_root(file.parent)).as_posix()
    except ValueError:
        return file.name


def write_text_audit(manifest: TextManifest, payloads: TextPayloads, results: TextResults, *,
                     systems: Mapping[str, Mapping[str, str]], config: BenchmarkConfig,
                     out_dir: Path, provenance_record: Mapping[str, Any]) -> Path:
    """Write ``<out_dir>/<audit>/`` (the :data:`~faircode.core.layout.TEXT_TABLES` and
    ``run.json``) whole, swapped in in one step (:func:`faircode.evaluate.swap.replacing`);
    return the folder.  A target that is not a folder of a text audit's results of the same
    audit is refused first (:func:`faircode.evaluate.write.check_replaceable`).

    ``systems`` maps each system to what ``run.json`` records of it (title, package, version).
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
            "axes_files": {f.declared_path: f.sha256 for f in (manifest.axes, manifest.name_axes)
                           if f is not None},
            "dataset": {"path": manifest.dataset.declared_path, "sha256": payloads.sha256,
                        "sha256_declared": manifest.dataset.sha256},
            "rows": {"sentences": int((sentences["set"] == "data").sum()),
                     "name_sentences": int((sentences["set"] == "names").sum()),
                     "units": int(sentences["unit"].nunique()),
                     "distinct_texts": len(payloads.texts),
                     "changed_copies": len(payloads.pairs)},
            "seeds": {"master": manifest.random_state,
                      "scheme": f"SeedSequence(master, spawn_key=({int(Stream.TEXT)}, table, "
                                "key)); tables " + ", ".join(f"{v}={k}" for k, v in
                                                             TABLE_SEEDS.items()) +
                                "; key: sha256 of (axis, kind[, threshold, direction])"},
            "systems": {name: dict(info) for name, info in systems.items()},
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
