"""Comparing two results folders, cell by cell: what ``faircode verify`` and the CI drift check
report.

Files are compared by sha256 first; a CSV that differs is compared cell by cell (each differing
cell with its frozen value, its new value and the absolute difference), ``run.json`` without
its volatile keys (:data:`VOLATILE_RUN_KEYS`), any other differing file as one drift.
``report.html`` is not compared (:data:`RENDERED`): it renders compared files and names the code
that rendered it.

The numerical environment of the two runs (``run.json``'s ``numerics``,
:mod:`faircode.core.numerics`) is compared on its own and reported first
(:func:`compare_numerics`): another OpenBLAS kernel or numpy dispatch target changes numbers in
their last bits, so where numbers drift and the kernels differ (or the frozen state does not
record its own), that is named in one line as the likely cause.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.core.digests import sha256_file
from faircode.core.layout import REPORT_PAGE, RUN_RECORD, run_record

__all__ = ["RENDERED", "VOLATILE_RUN_KEYS", "CellDrift", "NumericsComparison", "compare_numerics",
           "compare_results", "environment_differences", "numerics_differences",
           "results_numerics", "sha256_file", "without_keys"]

RESULTS_DIR = "results"
VOLATILE_RUN_KEYS = frozenset({"seconds", "git_commit", "git_dirty", "jobs",
                               "evaluate_inputs_sha256", "files", "numerics"})
"""``run.json`` keys whose values legitimately differ between two runs of the same state (the
re-run's commit is the freeze commit, not the one that produced the results; the evaluate
step's content address covers the package versions; ``files`` are the digests of the folder's
other files, each compared on its own; ``numerics`` -- CPU model, library files -- is compared
on its own, first: :func:`compare_numerics`)."""
RENDERED = frozenset({REPORT_PAGE})
"""Results files that render compared files with their generation provenance (not compared)."""


@dataclass(frozen=True, slots=True)
class CellDrift:
    """One number (or file) that differs between the frozen and the re-derived results."""

    file: str
    row: str
    column: str
    frozen: str
    new: str
    difference: float | None = None

    def describe(self) -> str:
        """One line naming the cell, both values and the size of the drift."""
        size = "" if self.difference is None else f" (|diff| {self.difference:.3g})"
        where = f"{self.file}: {self.row}: {self.column}" if self.row else self.file
        return f"{where}: frozen {self.frozen}, now {self.new}{size}"


def environment_differences(frozen: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """One line per Python or package version that differs between two :func:`environment`s."""
    lines = []
    if frozen.get("python") != current.get("python"):
        lines.append(f"python: frozen {frozen.get('python')}, now {current.get('python')}")
    old, new = frozen.get("packages", {}), current.get("packages", {})
    for package in sorted(set(old) | set(new)):
        if package == "faircode":
            continue  # the code itself is pinned by the commit
        if old.get(package) != new.get(package):
            lines.append(f"{package}: frozen {old.get(package, 'absent')}, "
                         f"now {new.get(package, 'absent')}")
    return lines


def numerics_differences(frozen: Mapping[str, Any] | None,
                         current: Mapping[str, Any] | None) -> list[str]:
    """One line per difference of two ``run.json`` ``numerics`` records: the kernels of the
    evaluate and of the fit step, the mode, whether the configuration was pinned, the CPU."""
    from faircode.core.numerics import describe

    frozen, current = frozen or {}, current or {}
    if not frozen.get("configuration") and not current.get("configuration"):
        return []
    if not frozen.get("configuration"):
        return [f"numerical configuration: frozen not recorded (a state made before they were), "
                f"now {describe(current.get('configuration'))}"]
    lines = []
    for key, label in (("configuration", "kernels"), ("fit", "fit kernels")):
        before, after = describe(frozen.get(key)), describe(current.get(key))
        if before != after:
            lines.append(f"{label}: frozen {before}, now {after}")
    for key in ("mode", "pinned", "note"):
        if frozen.get(key) != current.get(key):
            lines.append(f"{key}: frozen {frozen.get(key)}, now {current.get(key)}")
    cpu = [(frozen.get("cpu") or {}).get(k) for k in ("model", "flags_sha256")]
    now = [(current.get("cpu") or {}).get(k) for k in ("model", "flags_sha256")]
    if cpu != now:
        lines.append(f"CPU: frozen {cpu[0]} (flags {str(cpu[1])[:12]}), now {now[0]} (flags "
                     f"{str(now[1])[:12]})")
    return lines


@dataclass(frozen=True, slots=True)
class NumericsComparison:
    """The numerical environments of two results folders: the differing lines (each with the
    audits it concerns) and whether the kernels differ (or the frozen ones are not recorded)."""

    lines: tuple[str, ...] = ()
    kernels_differ: bool = False
    frozen: str = "not recorded"
    now: str = "not recorded"

    def cause(self, drifting: int) -> str | None:
        """The one line naming the likely cause of ``drifting`` numbers (None: not kernels)."""
        if not drifting or not self.kernels_differ:
            return None
        return (f"likely cause: {drifting} number(s) drift under another numerical "
                f"configuration (frozen {self.frozen}, now {self.now}): another BLAS kernel or "
                "CPU dispatch rounds the last bits differently, and thresholds, "
                "ExponentiatedGradient and replicate tests turn them into other decisions; "
                "re-derive on an x86-64-v3 CPU under FAIRCODE_NUMERICS=pinned (README: Bit for "
                "bit)")


def compare_numerics(frozen: Path, new: Path) -> NumericsComparison:
    """Compare the ``numerics`` of every ``<audit>/run.json`` of ``frozen`` with ``new``'s."""
    from faircode.core.numerics import describe

    by_line: dict[str, list[str]] = {}
    differ, before, after = False, set(), set()
    for path in sorted(frozen.glob(f"*/{RUN_RECORD}")):
        other = run_record(new / path.parent.name)
        if not other.is_file():
            continue
        a = _read_numerics(path)
        b = _read_numerics(other)
        for line in numerics_differences(a, b):
            by_line.setdefault(line, []).append(path.parent.name)
        kernels = [(describe((a or {}).get(k)), describe((b or {}).get(k)))
                   for k in ("configuration", "fit")]
        differ |= any(x != y for x, y in kernels)  # "not recorded" on one side differs too
        before.add(kernels[0][0])
        after.add(kernels[0][1])
    return NumericsComparison(
        lines=tuple(f"{line} ({', '.join(audits)})" for line, audits in by_line.items()),
        kernels_differ=differ, frozen=" | ".join(sorted(before)) or "not recorded",
        now=" | ".join(sorted(after)) or "not recorded")


def results_numerics(results: Path) -> dict[str, Any]:
    """The numerical environment the ``<audit>/run.json`` of ``results`` record, as a freeze
    record keeps it: one block when every audit shares it, else ``{"per_audit": {...}}``."""
    blocks = {path.parent.name: _read_numerics(path)
              for path in sorted(results.glob(f"*/{RUN_RECORD}"))}
    if len({json.dumps(b, sort_keys=True) for b in blocks.values()}) <= 1:
        return next(iter(blocks.values()), None) or {}
    return {"per_audit": blocks}


def _read_numerics(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text()).get("numerics")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, dict) else None


def without_keys(value: Any, keys: frozenset[str]) -> Any:
    """``value`` (parsed JSON) with every mapping key in ``keys`` dropped, at any depth."""
    if isinstance(value, dict):
        return {k: without_keys(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without_keys(v, keys) for v in value]
    return value


def _compare_csv(name: str, frozen: Path, new: Path) -> list[CellDrift]:
    old_frame = pd.read_csv(frozen, dtype=str, keep_default_na=False)
    new_frame = pd.read_csv(new, dtype=str, keep_default_na=False)
    if list(old_frame.columns) != list(new_frame.columns) or len(old_frame) != len(new_frame):
        return [CellDrift(name, "", "shape",
                          f"{len(old_frame)} rows x {list(old_frame.columns)}",
                          f"{len(new_frame)} rows x {list(new_frame.columns)}")]
    keys = [c for c in ("strategy", "model", "protected_attribute", "attribute_a",
                        "attribute_b", "axis", "kind", "metric") if c in old_frame.columns]
    drift = []
    differs = old_frame.to_numpy() != new_frame.to_numpy()
    for i, j in zip(*differs.nonzero(), strict=True):
        row = old_frame.iloc[i]
        label = " ".join(str(row[k]) for k in keys) if keys else ""
        column = str(old_frame.columns[j])
        before, after = str(old_frame.iat[i, j]), str(new_frame.iat[i, j])
        drift.append(CellDrift(name, f"row {i + 2} ({label})" if label else f"row {i + 2}",
                               column, before, after, _difference(before, after)))
    return drift


def _difference(before: str, after: str) -> float | None:
    try:
        a, b = float(before), float(after)
    except ValueError:
        return None
    if math.isnan(a) or math.isnan(b):
        return None
    return abs(a - b)


def _compare_json(name: str, frozen: Path, new: Path) -> list[CellDrift]:
    old = without_keys(json.loads(frozen.read_text()), VOLATILE_RUN_KEYS)
    now = without_keys(json.loads(new.read_text()), VOLATILE_RUN_KEYS)
    drift: list[CellDrift] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                walk(a.get(key), b.get(key), f"{path}.{key}" if path else str(key))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for k, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{path}[{k}]")
        elif a != b:
            drift.append(CellDrift(name, "", path, json.dumps(a), json.dumps(b),
                                   _difference(str(a), str(b))))

    walk(old, now, "")
    return drift


def compare_results(frozen: Path, new: Path, *, label: str = RESULTS_DIR) -> tuple[
        list[CellDrift], int, int]:
    """Compare two results folders: ``(drifts, identical files, files compared)``.

    Files are compared by content first; a CSV that differs is compared cell by cell and a
    ``run.json`` without :data:`VOLATILE_RUN_KEYS`; any other differing file is one drift.  A file
    present on one side only is a drift.
    """
    old_files = {p.relative_to(frozen).as_posix() for p in frozen.rglob("*") if p.is_file()}
    new_files = {p.relative_to(new).as_posix() for p in new.rglob("*") if p.is_file()}
    drift: list[CellDrift] = []
    identical = 0
    compared = {rel for rel in old_files | new_files if Path(rel).name not in RENDERED}
    for rel in sorted(compared):
        name = f"{label}/{rel}"
        if rel not in new_files:
            drift.append(CellDrift(name, "", "file", "present", "missing"))
            continue
        if rel not in old_files:
            drift.append(CellDrift(name, "", "file", "missing", "present"))
            continue
        a, b = frozen / rel, new / rel
        if sha256_file(a) == sha256_file(b):
            identical += 1
        elif rel.endswith(".csv"):
            found = _compare_csv(name, a, b)
            drift.extend(found)
            identical += not found
        elif Path(rel).name == RUN_RECORD:
            found = _compare_json(name, a, b)
            drift.extend(found)
            identical += not found
        else:
            drift.append(CellDrift(name, "", "sha256", sha256_file(a)[:12], sha256_file(b)[:12]))
    return drift, identical, len(compared)
