"""A practitioner's counterfactual audit from two score files: flip rates and CTF gaps.

:func:`audit_flips` reads a model's scores of its original payloads and of ``faircode perturb``'s
copies (:func:`faircode.audit.score_files.read_score_files`: joined on the payload id, every
defect one line, nothing written) and scores them with the very builders of a manifest's text
audit (:func:`faircode.evaluate.text_tables.counterfactual_tables`, one Benjamini–Hochberg family
as :func:`faircode.evaluate.text.add_q_values` forms it for each system), so the same scores give
the same numbers by either path.  :func:`write_flips` writes ``flips.csv``, ``ctf.csv`` and a
``run.json`` naming both files and their sha256 into a folder it creates (or one it wrote
before: a folder holding anything else is refused, never replaced).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.audit.score_files import ScorePairs, read_score_files
from faircode.core.config import StatsConfig
from faircode.core.errors import ConfigError, DataError
from faircode.core.layout import COUNTERFACTUAL_SCORES_RUN, folder_kind, run_record, table_path
from faircode.evaluate.reuse import folder_digests
from faircode.evaluate.swap import replacing
from faircode.evaluate.text import add_q_values
from faircode.evaluate.text_tables import Point, counterfactual_tables

__all__ = ["FLIPS_KIND", "FlipTables", "audit_flips", "score_pairs_tables", "write_flips"]

FLIPS_KIND = COUNTERFACTUAL_SCORES_RUN
"""``run.json``'s ``kind`` in a folder :func:`write_flips` wrote."""


@dataclass(frozen=True, slots=True)
class FlipTables:
    """The practitioner's two tables and what produced them."""

    flips: pd.DataFrame
    ctf: pd.DataFrame
    points: tuple[Point, ...]
    pairs: ScorePairs


def _points(thresholds: Sequence[float]) -> tuple[Point, ...]:
    if not thresholds:
        raise ConfigError("thresholds: expected at least one threshold in [0, 1], got none")
    out = []
    for t in thresholds:
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t <= 1:
            raise ConfigError(f"thresholds: expected numbers in [0, 1], got {t!r}")
        out.append(Point(f"threshold {float(t):g}", "threshold", float(t), "above"))
    if len({p.threshold for p in out}) != len(out):
        raise ConfigError(f"thresholds: expected distinct thresholds, got {list(thresholds)}")
    return tuple(out)


def score_pairs_tables(pairs: ScorePairs, *, thresholds: Sequence[float], stats: StatsConfig,
                       seed: int, system: str = "model", audit: str = "scores") -> FlipTables:
    """Flip rates (each threshold: decide 1 when ``score > t``) and CTF gaps of joined files."""
    points = _points(thresholds)
    flips, ctf = counterfactual_tables(pairs.scores, pairs.units, pairs.pairs, pairs.payloads,
                                       points=points, stats=stats, master=seed,
                                       label={"audit": audit, "system": system})
    add_q_values([flips, ctf], alpha=stats.alpha)
    return FlipTables(flips, ctf, points, pairs)


def audit_flips(originals: Path | str, copies: Path | str, *, thresholds: Sequence[float] = (0.5,),
                stats: StatsConfig | None = None, seed: int = 42, system: str = "model",
                audit: str = "scores") -> FlipTables:
    """Read the two score files and return their flip-rate and CTF-gap tables (notebook use).

    ``stats`` gives the resamples, permutations, confidence and FDR level (the benchmark's
    defaults: 2000, 2000, 0.95, 0.05); ``seed`` the master seed of every draw.
    """
    pairs = read_score_files(Path(originals), Path(copies))
    return score_pairs_tables(pairs, thresholds=thresholds, stats=stats or StatsConfig(),
                              seed=seed, system=system, audit=audit)


def _check_out(out: Path) -> None:
    """Refuse a folder that holds anything but a previous :func:`write_flips` output."""
    if not out.exists():
        return
    if not out.is_dir():
        raise DataError(f"{out}: --out: expected a folder to write, got a file")
    entries = [p.name for p in out.iterdir()]
    if not entries:
        return
    if folder_kind(out) != FLIPS_KIND:
        raise DataError(f"{out}: --out: expected a new folder or one faircode flips wrote, got a "
                        f"folder holding {sorted(entries)[0]!r} (nothing was written)")


def write_flips(tables: FlipTables, *, out: Path, originals: Path, copies: Path,
                stats: StatsConfig, seed: int, provenance_record: Mapping[str, Any]) -> Path:
    """Write ``flips.csv``, ``ctf.csv`` and ``run.json`` into ``out`` whole; return ``out``."""
    _check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out) as staging:
        tables.flips.to_csv(table_path(staging, "flips"), index=False)
        tables.ctf.to_csv(table_path(staging, "ctf"), index=False)
        run = {"kind": FLIPS_KIND,
               "originals": {"path": str(originals), "sha256": tables.pairs.sha256[0],
                             "payloads": len(tables.pairs.ids),
                             "units": tables.pairs.units is not None},
               "copies": {"path": str(copies), "sha256": tables.pairs.sha256[1],
                          "changed": len(tables.pairs.pairs)},
               "operating_points": [p.label() for p in tables.points],
               "stats": {"n_resamples": stats.n_resamples,
                         "n_permutations": stats.n_permutations,
                         "confidence": stats.confidence, "alpha": stats.alpha},
               "seed": seed, **provenance_record, "files": folder_digests(staging)}
        run_record(staging).write_text(json.dumps(run, indent=2) + "\n")
    return out
