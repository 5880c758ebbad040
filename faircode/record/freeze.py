"""Frozen states: the exact code, data, params and results behind numbers people cite.

A *freeze* is a committed record, ``freezes/<NAME>.json``, plus an annotated git tag ``NAME`` on
the commit that adds it.  The record names the commit whose results are cited and carries every
digest needed to recognise that state again: ``dvc.lock``, ``params.yaml``, each audit's manifest
and raw dataset, every file under ``results/``, and the package versions and Python that produced
them.  :func:`verify` re-creates the frozen commit in a temporary git worktree, re-runs the
pipeline there from the raw data, and compares what it produces with the frozen results, cell by
cell.

Design decisions
----------------
* **The record, not the tag, is the source of truth.**  Tags do not always travel with a push;
  ``verify`` reads ``freezes/<NAME>.json`` from the working tree and checks out the commit it names.
* **Refuse what cannot be re-derived.**  ``freeze`` refuses a dirty working tree (tracked changes
  or untracked files that are not ignored) and results that ``dvc status`` says do not match
  ``dvc.lock``: the record must describe a state that exists in git, exactly.
* **Environment before numbers.**  A different package version is reported before any number is
  compared, because it is the first suspect of a drift.
* **Bit for bit first, then the size of each drift.**  Every results file is compared by sha256;
  a CSV that differs is then compared cell by cell and each differing cell is reported with its
  frozen value, its new value and the absolute difference.  ``run.json`` is compared without its
  volatile keys (wall-clock seconds, the worker count, the git commit and dirty flag of the re-run).
  ``report.html`` is not compared byte-wise: it is a rendering of the compared tables and figures
  whose provenance block names the commit and ``dvc.lock`` it was generated from, which a
  re-run in another worktree cannot reproduce; every number it shows is compared in its source.
* The library takes every input explicitly (the project root, the dvc command, the environment of
  the re-run); only the CLI reads the process environment.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.core.errors import FaircodeError
from faircode.core.schema import read_yaml

__all__ = [
    "VOLATILE_RUN_KEYS",
    "CellDrift",
    "FreezeError",
    "VerifyReport",
    "check_committed",
    "compare_results",
    "environment",
    "freeze",
    "list_freezes",
    "load_freeze",
    "verify",
]

FREEZES_DIR = "freezes"
RESULTS_DIR = "results"
VOLATILE_RUN_KEYS = frozenset({"seconds", "git_commit", "git_dirty", "jobs"})
"""``run.json`` keys whose values legitimately differ between two runs of the same state."""
RENDERED = frozenset({"report.html"})
"""Results files that render compared files with their generation provenance (not compared)."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class FreezeError(FaircodeError):
    """A state cannot be frozen or verified; the message says why in one line."""


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


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What :func:`verify` found: environment differences first, then every drifting number."""

    name: str
    commit: str
    environment: tuple[str, ...] = ()
    drift: tuple[CellDrift, ...] = ()
    identical_files: int = 0
    files: int = 0
    seconds: float = 0.0
    log: tuple[str, ...] = field(default_factory=tuple)

    @property
    def identical(self) -> bool:
        """True when every results file was re-derived bit for bit (run.json less volatile keys)."""
        return not self.drift


# ------------------------------------------------------------------------------ records


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def environment() -> dict[str, Any]:
    """The Python version and every installed distribution's version (sorted by name)."""
    packages: dict[str, str] = {}
    for dist in distributions():
        name = dist.metadata["Name"]
        if name:
            packages[_canonical(name)] = dist.version
    return {"python": platform.python_version(), "packages": dict(sorted(packages.items()))}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _git(root: Path, *args: str, check: bool = True) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise FreezeError(f"git {' '.join(args)}: cannot run git: {exc}") from None
    if check and done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise FreezeError(f"git {' '.join(args)}: {message[-1] if message else 'failed'}")
    return done.stdout


def _results_digests(results: Path, root: Path) -> dict[str, str]:
    if not results.is_dir():
        return {}
    return {
        path.relative_to(root).as_posix(): _sha256(path)
        for path in sorted(results.rglob("*"))
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(
            results).parts)
    }


def _audit_digests(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(manifest sha256 per audit, dataset sha256 per audit from its results' run.json)."""
    manifests = {path.parent.name: _sha256(path)
                 for path in sorted((root / "audits").glob("*/audit.yaml"))}
    datasets: dict[str, str] = {}
    for run in sorted((root / RESULTS_DIR).glob("*/run.json")):
        try:
            record = json.loads(run.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise FreezeError(f"{run}: expected a JSON run record, got {exc}") from None
        sha = (record.get("dataset") or {}).get("sha256")
        if sha:
            datasets[run.parent.name] = sha
    return manifests, datasets


def _dvc_stale(root: Path, dvc: Sequence[str], env: Mapping[str, str] | None) -> list[str]:
    """Stages whose deps, params or outs differ from ``dvc.lock`` (``dvc status --json``)."""
    try:
        done = subprocess.run([*dvc, "status", "--json"], cwd=root, capture_output=True,
                              text=True, timeout=600, env=dict(env) if env else None)
    except (OSError, subprocess.SubprocessError) as exc:
        raise FreezeError(f"dvc status: cannot run {' '.join(dvc)}: {exc}") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise FreezeError(f"dvc status: {lines[-1] if lines else 'failed'}")
    text = done.stdout.strip()
    start = text.find("{")
    status = json.loads(text[start:]) if start >= 0 else {}
    # an always_changed stage (the params check, MLflow tracking) is listed on every call
    return sorted(str(stage) for stage, why in status.items() if why != ["always changed"])


def freeze(
    name: str,
    *,
    root: Path,
    dvc: Sequence[str] = ("dvc",),
    env: Mapping[str, str] | None = None,
    message: str | None = None,
) -> Path:
    """Record the state of ``root`` as ``freezes/<name>.json``, commit it and tag it ``name``.

    Refuses (:class:`FreezeError`, one line) an invalid or existing name, a dirty working tree,
    and results that do not match ``dvc.lock``.  Returns the record's path.
    """
    root = root.resolve()
    if not _NAME.match(name) or name.endswith((".lock", ".")) or ".." in name:
        raise FreezeError(f"freeze NAME: expected letters, digits, '.', '_' or '-' (a git tag "
                          f"name), got {name!r} (str)")
    record_path = root / FREEZES_DIR / f"{name}.json"
    if record_path.exists():
        raise FreezeError(f"{record_path.relative_to(root)}: a freeze named {name!r} exists")
    if _git(root, "tag", "--list", name).strip():
        raise FreezeError(f"freeze {name}: git tag {name!r} exists already")
    dirty = _git(root, "status", "--porcelain").strip().splitlines()
    if dirty:
        raise FreezeError(f"freeze {name}: the working tree is not clean ({len(dirty)} "
                          f"change(s), first: {dirty[0].strip()}); commit or stash first")
    lock = root / "dvc.lock"
    if not lock.is_file():
        raise FreezeError(f"freeze {name}: no dvc.lock in {root}; run the pipeline (dvc repro) "
                          "and commit its lock first")
    stale = _dvc_stale(root, dvc, env)
    if stale:
        raise FreezeError(f"freeze {name}: results do not match dvc.lock (dvc status lists "
                          f"{', '.join(stale[:5])}{' ...' if len(stale) > 5 else ''}); run "
                          "dvc repro and commit")
    commit = _git(root, "rev-parse", "HEAD").strip()
    params_path = root / "params.yaml"
    params = read_yaml(params_path) if params_path.is_file() else None  # bounded, as every reader
    manifests, datasets = _audit_digests(root)
    record = {
        "name": name,
        "created": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "git_commit": commit,
        "dvc_lock_sha256": _sha256(lock),
        "params_sha256": _sha256(params_path) if params_path.is_file() else None,
        "params": params,
        "manifests": manifests,
        "datasets": datasets,
        "results": _results_digests(root / RESULTS_DIR, root),
        "environment": environment(),
    }
    record_path.parent.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")
    _git(root, "add", record_path.relative_to(root).as_posix())
    summary = message or f"Freeze {name}: the state behind cited numbers ({commit[:12]})"
    _git(root, "commit", "-q", "-m", summary)
    _git(root, "tag", "-a", name, "-m", summary)
    return record_path


def load_freeze(name: str, *, root: Path) -> dict[str, Any]:
    """Read ``freezes/<name>.json`` (the committed record); one-line error when absent or bad."""
    path = root / FREEZES_DIR / f"{name}.json"
    if not path.is_file():
        known = ", ".join(r["name"] for r in list_freezes(root=root)) or "none"
        raise FreezeError(f"{FREEZES_DIR}/{name}.json: expected a frozen state (known: {known}), "
                          "got no such file")
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise FreezeError(f"{path}: expected JSON, got {exc}") from None
    for key in ("git_commit", "results", "environment"):
        if key not in record:
            raise FreezeError(f"{path}: {key}: expected a value, got nothing")
    return record


def list_freezes(*, root: Path) -> list[dict[str, Any]]:
    """Every committed freeze record, oldest first (name, created, commit, files)."""
    records = []
    for path in sorted((root / FREEZES_DIR).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        records.append({"name": record.get("name", path.stem), "created": record.get("created"),
                        "git_commit": record.get("git_commit"),
                        "files": len(record.get("results", {}))})
    return sorted(records, key=lambda r: str(r["created"]))


# ------------------------------------------------------------------------------ comparing


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


def _strip_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_volatile(v) for k, v in value.items() if k not in VOLATILE_RUN_KEYS}
    if isinstance(value, list):
        return [_strip_volatile(v) for v in value]
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
    old = _strip_volatile(json.loads(frozen.read_text()))
    now = _strip_volatile(json.loads(new.read_text()))
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
        if _sha256(a) == _sha256(b):
            identical += 1
        elif rel.endswith(".csv"):
            found = _compare_csv(name, a, b)
            drift.extend(found)
            identical += not found
        elif rel.endswith("run.json"):
            found = _compare_json(name, a, b)
            drift.extend(found)
            identical += not found
        else:
            drift.append(CellDrift(name, "", "sha256", _sha256(a)[:12], _sha256(b)[:12]))
    return drift, identical, len(compared)


# ------------------------------------------------------------------------------ verify


def verify(
    name: str,
    *,
    root: Path,
    command: Sequence[str] = ("dvc", "repro", "--force"),
    env: Mapping[str, str] | None = None,
    keep: Path | None = None,
) -> VerifyReport:
    """Re-create the frozen state ``name`` in a temporary worktree, re-run, compare.

    ``command`` is run in the worktree (default ``dvc repro --force``, which re-runs every stage
    from the raw data); ``env`` is its environment.  The frozen results are the worktree's
    ``results/`` as checked out, before the re-run.  With ``keep`` the worktree is created there
    and left for inspection.
    """
    import time

    root = root.resolve()
    record = load_freeze(name, root=root)
    commit = str(record["git_commit"])
    env_lines = tuple(environment_differences(record["environment"], environment()))
    start = time.perf_counter()
    base = Path(tempfile.mkdtemp(prefix=f"faircode-verify-{name}-")) if keep is None else keep
    work = base / "state" if keep is None else keep
    frozen = base / "frozen-results" if keep is None else keep.with_name(keep.name + "-frozen")
    try:
        _git(root, "worktree", "add", "--detach", "--force", str(work), commit)
        checked_out = work / RESULTS_DIR
        digests = _results_digests(checked_out, work)
        if digests != record["results"]:
            changed = sorted(k for k in set(digests) | set(record["results"])
                             if digests.get(k) != record["results"].get(k))
            raise FreezeError(f"{FREEZES_DIR}/{name}.json: results at commit {commit[:12]} do not "
                              f"match the record ({', '.join(changed[:3])})")
        shutil.copytree(checked_out, frozen)
        try:
            done = subprocess.run(list(command), cwd=work, capture_output=True, text=True,
                                  env=dict(env) if env else None, timeout=6 * 3600)
        except (OSError, subprocess.SubprocessError) as exc:
            raise FreezeError(f"verify {name}: cannot run {' '.join(command)}: {exc}") from None
        log = tuple((done.stdout + done.stderr).splitlines()[-40:])
        if done.returncode != 0:
            tail = log[-1] if log else ""
            raise FreezeError(f"verify {name}: {' '.join(command)} failed (exit "
                              f"{done.returncode}): {tail}")
        drift, identical, files = compare_results(frozen, checked_out)
        return VerifyReport(name=name, commit=commit, environment=env_lines, drift=tuple(drift),
                            identical_files=identical, files=files,
                            seconds=time.perf_counter() - start, log=log)
    finally:
        if keep is None:
            _git(root, "worktree", "remove", "--force", str(work), check=False)
            _git(root, "worktree", "prune", check=False)
            shutil.rmtree(base, ignore_errors=True)


# ------------------------------------------------------------------------------ drift check


def check_committed(
    audits: Sequence[str],
    *,
    root: Path,
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
) -> tuple[list[CellDrift], int]:
    """Re-run ``audits`` and compare with the committed ``results/<audit>/``: ``(drift, files)``.

    ``command`` is the run command without its output folder (e.g. ``python -m
    faircode.pipeline.cli run
    --params params.yaml AUDIT ...``); ``--out <temporary folder>`` is appended.  The committed
    numbers can then never drift from what the code produces: CI fails on any drift.
    """
    root = root.resolve()
    with tempfile.TemporaryDirectory(prefix="faircode-drift-") as tmp:
        out = Path(tmp) / "results"
        try:
            done = subprocess.run([*command, "--out", str(out)], cwd=root, capture_output=True,
                                  text=True, env=dict(env) if env else None, timeout=6 * 3600)
        except (OSError, subprocess.SubprocessError) as exc:
            raise FreezeError(f"drift check: cannot run {' '.join(command)}: {exc}") from None
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise FreezeError(f"drift check: {' '.join(command)} failed (exit {done.returncode})"
                              f": {lines[-1] if lines else ''}")
        drift: list[CellDrift] = []
        files = 0
        for audit in audits:
            committed = root / RESULTS_DIR / audit
            if not committed.is_dir():
                raise FreezeError(f"{RESULTS_DIR}/{audit}: expected committed results, got none")
            found, _, n = compare_results(committed, out / audit, label=f"{RESULTS_DIR}/{audit}")
            drift.extend(found)
            files += n
    return drift, files
