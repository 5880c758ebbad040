"""Frozen states: the exact code, data, params and results behind numbers people cite.

A *freeze* is a committed record, ``freezes/<NAME>.json``, plus an annotated git tag ``NAME`` on
the commit that adds it.  The record names the commit that contains the cited results and carries
every digest needed to recognise that state again: the pipeline's locks (:data:`LOCKS`),
``params.yaml``, each audit's manifest and raw dataset, every file under ``results/``, the
package versions and Python that produced them, and the ``state`` the results were produced
from -- the identity (:mod:`faircode.provenance.state`) their ``run.json``, ``report.html`` and
the MLflow parent show.
The record is what a citation names.  :func:`verify` re-creates the frozen commit in a temporary
git worktree, re-runs the pipeline there from the raw data, and compares what it produces with
the frozen results, cell by cell.

Design decisions
----------------
* **The record, not the tag, is the source of truth.**  Tags do not always travel with a push;
  ``verify`` reads ``freezes/<NAME>.json`` from the working tree and checks out the commit it names.
* **Refuse what cannot be re-derived.**  ``freeze`` refuses a dirty working tree (tracked changes
  or untracked files that are not ignored), results that ``dvc status`` says do not match
  ``dvc.lock``, and results whose ``state`` says they were produced from dirty inputs, by other
  code than HEAD's (:data:`~faircode.provenance.state.RESULTS_CODE`) or with other params than
  ``params.yaml``'s: the record must describe a state that exists in git, exactly.
* **Tags are a convenience.**  ``freeze`` tags the commit that adds the record;
  :func:`restore_tags` re-creates missing tags from the records (a clone may not have fetched
  them).  ``verify`` needs only the record.
* **Environment before numbers.**  The numerical environment (the OpenBLAS kernel and numpy
  dispatch that computed each audit, from its ``run.json``; the record keeps it too) and the
  package versions are reported before any number, because they are the first suspects of a
  drift; where numbers drift under other kernels, one line names that as the likely cause
  (:func:`faircode.record.compare.compare_numerics`).
* **Bit for bit first, then the size of each drift.**  Every results file is compared by sha256;
  a CSV that differs is then compared cell by cell and each differing cell is reported with its
  frozen value, its new value and the absolute difference.  ``run.json`` is compared without its
  volatile keys (wall-clock seconds, the worker count, the re-run's commit): its code and params
  digests must match.  ``verify`` also recomputes the code digest of the frozen commit and
  reports a difference from the record's before any number (:mod:`faircode.record.compare`).
  ``report.html`` is not compared byte-wise: it renders the compared tables and figures and names
  the commit of the code that rendered it; every number it shows is compared in its source.
* The library takes every input explicitly (the project root, the dvc command, the environment of
  the re-run); only the CLI reads the process environment.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

from faircode.core.config import config_record, load_params
from faircode.core.digests import checked_run
from faircode.core.errors import FaircodeError, describe
from faircode.core.files import read_json_object
from faircode.core.layout import RUN_RECORD, run_record
from faircode.core.names import check_name
from faircode.core.processes import Finished, run_group
from faircode.core.schema import read_yaml
from faircode.provenance.state import code_digest, group_states, params_digest
from faircode.record._worktree import verify_worktree
from faircode.record.compare import (
    VOLATILE_RUN_KEYS,
    CellDrift,
    NumericsComparison,
    compare_numerics,
    compare_results,
    environment_differences,
    results_numerics,
)
from faircode.record.compare import sha256_file as _sha256

__all__ = [
    "LOCKS",
    "VOLATILE_RUN_KEYS",
    "CellDrift",
    "FreezeError",
    "VerifyReport",
    "check_committed",
    "check_freeze_name",
    "compare_results",
    "environment",
    "environment_differences",
    "freeze",
    "list_freezes",
    "load_freeze",
    "matching_freeze",
    "read_record",
    "restore_tags",
    "verify",
]

FREEZES_DIR = "freezes"
RESULTS_DIR = "results"
LOCKS = ("dvc.lock", "upstream/dvc.lock")
"""The pipeline's locks: its results stages' and its data stages' (``upstream/dvc.yaml``)."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_RECORD_BYTES = 64 * 2**20
_RERUN_SECONDS = 6 * 3600
_RECORD_KEYS: dict[str, type] = {"name": str, "created": str, "git_commit": str,
                                 "results": dict, "environment": dict}
"""The keys every freeze record has, and their JSON types (``state`` since v0.3: a mapping)."""


class FreezeError(FaircodeError):
    """A state cannot be frozen or verified; the message says why in one line."""


def check_freeze_name(name: object, *, where: str = "freeze NAME") -> str:
    """``name`` if it can name a freeze (a git tag name and a file of ``freezes/``), else a
    one-line :class:`FreezeError`."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name.endswith(
            (".lock", ".")) or ".." in name:
        raise FreezeError(f"{where}: expected letters, digits, '.', '_' or '-' (a git tag name, "
                          f"at most 100 characters), got {describe(name)}")
    return name


def read_record(path: Path) -> dict[str, Any]:
    """The freeze record at ``path``, validated: a JSON object whose ``name`` is its file's
    name and which holds every key of :data:`_RECORD_KEYS` with its type; else one line."""
    record = read_json_object(path, limit=_RECORD_BYTES, error=FreezeError,
                              what="freeze record")
    for key, kind in _RECORD_KEYS.items():
        if not isinstance(record.get(key), kind):
            raise FreezeError(f"{path}: {key}: expected a {'string' if kind is str else 'mapping'}"
                              f", got {describe(record.get(key))}")
    if record["name"] != path.stem:
        raise FreezeError(f"{path}: name: expected {path.stem!r} (the file's name), got "
                          f"{describe(record['name'])}")
    if not _COMMIT.fullmatch(record["git_commit"]):
        raise FreezeError(f"{path}: git_commit: expected 40 lowercase hex digits, got "
                          f"{describe(record['git_commit'])}")
    if not isinstance(record.get("state", {}), dict):
        raise FreezeError(f"{path}: state: expected a mapping, got {describe(record['state'])}")
    _check_fields(path, record)
    return record


_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "environment.python": (str,), "state.git_commit": (str, type(None)),
    "state.code_sha256": (str, type(None)), "state.params_sha256": (str, type(None)),
    "state.inputs_dirty": (bool, type(None))}
"""The types of the fields inside a record that verify and list read (when present)."""


def _check_fields(path: Path, record: dict[str, Any]) -> None:
    """One line for a field of the wrong type inside a record: ``results`` and
    ``environment.packages`` map names to strings, and :data:`_FIELD_TYPES`."""
    for key, kinds in _FIELD_TYPES.items():
        section, field_name = key.split(".")
        value = (record.get(section) or {}).get(field_name)
        if field_name in (record.get(section) or {}) and not isinstance(value, kinds):
            raise FreezeError(f"{path}: {key}: expected "
                              f"{'a string' if kinds[0] is str else 'true or false'}, got "
                              f"{describe(value)}")
    packages = record["environment"].get("packages", {})
    for key, mapping in (("results", record["results"]), ("environment.packages", packages)):
        if not isinstance(mapping, dict):
            raise FreezeError(f"{path}: {key}: expected a mapping, got {describe(mapping)}")
        wrong = next(((k, v) for k, v in mapping.items() if not isinstance(v, str)), None)
        if wrong is not None:
            raise FreezeError(f"{path}: {key}.{wrong[0]}: expected a string, got "
                              f"{describe(wrong[1])}")


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What :func:`verify` found: environment differences first, then every drifting number."""

    name: str
    commit: str
    environment: tuple[str, ...] = ()
    drift: tuple[CellDrift, ...] = ()
    numerics: NumericsComparison = field(default_factory=NumericsComparison)
    identical_files: int = 0
    files: int = 0
    seconds: float = 0.0
    log: tuple[str, ...] = field(default_factory=tuple)

    @property
    def identical(self) -> bool:
        """True when every results file was re-derived bit for bit (run.json less volatile keys)."""
        return not self.drift


# ------------------------------------------------------------------------------ records


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
    for run in sorted((root / RESULTS_DIR).glob(f"*/{RUN_RECORD}")):
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


def _results_state(root: Path, name: str) -> dict[str, Any]:
    """The record's ``state``: the identity the results' ``run.json`` carry, checked against
    HEAD (clean inputs, HEAD's code digest, ``params.yaml``'s params digest)."""
    runs = {}
    for path in sorted((root / RESULTS_DIR).glob(f"*/{RUN_RECORD}")):  # never freeze a damaged one
        runs[path.parent.name] = checked_run(path.parent, error=FreezeError)
    if not runs:
        raise FreezeError(f"freeze {name}: {RESULTS_DIR}/: expected <audit>/run.json, got none")
    groups = group_states(runs)
    code = code_digest(root)
    params_path = root / "params.yaml"
    params = params_digest(config_record(load_params(params_path).config)) \
        if params_path.is_file() else None
    for state, audits in groups.items():
        where = f"{RESULTS_DIR}/{audits[0]}/run.json: state"
        if state is None:
            raise FreezeError(f"{where}: expected the state the results were produced from, got "
                              "none (written before states were recorded); re-run and commit")
        if state.inputs_dirty is not False:
            raise FreezeError(f"{where}.inputs_dirty: expected false (produced from committed "
                              f"inputs), got {state.inputs_dirty} "
                              f"({', '.join(state.dirty_inputs) or 'no git status'}); commit "
                              "the inputs, re-run and commit")
        if state.code_sha256 != code:
            raise FreezeError(f"{where}.code_sha256: expected {code[:12]} (the code at HEAD), "
                              f"got {state.code_sha256[:12]}; re-run with this code and commit")
        if params is not None and state.params_sha256 != params:
            raise FreezeError(f"{where}.params_sha256: expected {params[:12]} (params.yaml), got "
                              f"{str(state.params_sha256)[:12]}; re-run and commit")
    commits = {audit: state.git_commit for state, audits in groups.items() if state
               for audit in audits}
    one = len(set(commits.values())) == 1
    return {"git_commit": next(iter(commits.values())) if one else "mixed",
            **({} if one else {"git_commits": commits}),
            "code_sha256": code, "params_sha256": params, "inputs_dirty": False}


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
    results that do not match ``dvc.lock``, and results whose state is not HEAD's (see the module
    docstring).  Returns the record's path.
    """
    root = root.resolve()
    check_freeze_name(name)
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
    state = _results_state(root, name)
    commit = _git(root, "rev-parse", "HEAD").strip()
    params_path = root / "params.yaml"
    params = read_yaml(params_path) if params_path.is_file() else None  # bounded, as every reader
    manifests, datasets = _audit_digests(root)
    record = {
        "name": name,
        "created": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "git_commit": commit,
        "state": state,
        "dvc_locks": {p: _sha256(root / p) for p in LOCKS if (root / p).is_file()},
        "params_sha256": _sha256(params_path) if params_path.is_file() else None,
        "params": params,
        "manifests": manifests,
        "datasets": datasets,
        "results": _results_digests(root / RESULTS_DIR, root),
        "environment": environment(),
        "numerics": results_numerics(root / RESULTS_DIR),
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
    check_freeze_name(name, where="NAME")
    path = root / FREEZES_DIR / f"{name}.json"
    if not path.exists():
        known = ", ".join(r["name"] for r in list_freezes(root=root)) or "none"
        raise FreezeError(f"{FREEZES_DIR}/{name}.json: expected a frozen state (known: {known}), "
                          "got no such file")
    return read_record(path)


def list_freezes(*, root: Path, problems: list[str] | None = None) -> list[dict[str, Any]]:
    """Every valid freeze record, oldest first (name, created, commit, code digest, files).

    A file of ``freezes/`` that is not a valid record (:func:`read_record`) is left out; its
    one-line error is appended to ``problems`` when given.
    """
    records = []
    for path in sorted((root / FREEZES_DIR).glob("*.json")):
        try:
            record = read_record(path)
        except FreezeError as exc:
            if problems is not None:
                problems.append(str(exc))
            continue
        records.append({"name": record["name"], "created": record["created"],
                        "git_commit": record["git_commit"],
                        "code_sha256": record.get("state", {}).get("code_sha256"),
                        "files": len(record["results"])})
    return sorted(records, key=lambda r: str(r["created"]))


def matching_freeze(root: Path, results: Path) -> str | None:
    """The newest freeze record whose results are exactly the files under ``results`` now."""
    results = results.resolve()
    current = _results_digests(results, results.parent)
    names = [r["name"] for r in list_freezes(root=root)]
    for name in reversed(names):
        try:
            record = read_record(root / FREEZES_DIR / f"{name}.json")
        except FreezeError:
            continue
        if record["results"] == current:
            return str(name)
    return None


def restore_tags(*, root: Path) -> list[str]:
    """Create the missing annotated tag of every freeze record (on the commit that added the
    record, as :func:`freeze` tags it); one line per record saying what was done."""
    root = root.resolve()
    lines = []
    for record in list_freezes(root=root):
        name = str(record["name"])
        rel = f"{FREEZES_DIR}/{name}.json"
        added = _git(root, "log", "--diff-filter=A", "--format=%H", "--", rel).split()
        if not added:
            lines.append(f"{name}: {rel} is not committed; no tag")
            continue
        commit = added[-1]
        existing = _git(root, "rev-parse", "--verify", "--quiet", f"refs/tags/{name}^{{commit}}",
                        check=False).strip()
        if existing:
            same = "on" if existing == commit else f"on {existing[:12]}, not on"
            lines.append(f"{name}: tag exists ({same} {commit[:12]}); left alone")
            continue
        _git(root, "tag", "-a", name, commit, "-m",
             f"Freeze {name} (restored from {rel}; the record is the source of truth)")
        lines.append(f"{name}: tagged {commit[:12]} (the commit that added {rel})")
    return lines


# ------------------------------------------------------------------------------ verify


def verify(
    name: str,
    *,
    root: Path,
    command: Sequence[str] = ("dvc", "repro", "--force"),
    env: Mapping[str, str] | None = None,
) -> VerifyReport:
    """Re-create the frozen state ``name`` in a temporary worktree, re-run, compare.

    ``command`` is run in the worktree (default ``dvc repro --force``, which re-runs every stage
    from the raw data) in a process group of its own, ended with it however verify ends
    (:func:`faircode.core.processes.run_group`); ``env`` is its environment.  The frozen results
    are the worktree's ``results/`` as checked out, before the re-run.  The worktree of an
    earlier verify that was killed is removed first (:mod:`faircode.record._worktree`).
    """
    import time

    root = root.resolve()
    record = load_freeze(name, root=root)
    commit = str(record["git_commit"])
    env_lines = tuple(environment_differences(record["environment"], environment()))
    start = time.perf_counter()
    with verify_worktree(root, commit, name=name, error=FreezeError) as tree:
        work, frozen = tree.work, tree.frozen
        checked_out = work / RESULTS_DIR
        digests = _results_digests(checked_out, work)
        if digests != record["results"]:
            changed = sorted(k for k in set(digests) | set(record["results"])
                             if digests.get(k) != record["results"].get(k))
            raise FreezeError(f"{FREEZES_DIR}/{name}.json: results at commit {commit[:12]} do not "
                              f"match the record ({', '.join(changed[:3])})")
        frozen_code = (record.get("state") or {}).get("code_sha256")
        now_code = code_digest(work)
        if frozen_code and frozen_code != now_code:
            env_lines = (f"code: frozen code_sha256 {frozen_code[:12]}, now {now_code[:12]} at "
                         f"commit {commit[:12]}", *env_lines)
        shutil.copytree(checked_out, frozen)
        done = _run(command, cwd=work, env=env, what=f"verify {name}",
                    started=tree.record_group)
        log = tuple((done.stdout + done.stderr).splitlines()[-40:])
        if done.returncode != 0:
            tail = log[-1] if log else ""
            raise FreezeError(f"verify {name}: {' '.join(command)} failed (exit "
                              f"{done.returncode}): {tail}")
        drift, identical, files = compare_results(frozen, checked_out)
        return VerifyReport(name=name, commit=commit, environment=env_lines, drift=tuple(drift),
                            numerics=compare_numerics(frozen, checked_out),
                            identical_files=identical, files=files,
                            seconds=time.perf_counter() - start, log=log)


def _run(command: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None, what: str,
         started: Callable[[int], None] | None = None) -> Finished:
    """``command`` run in a group of its own (ended with it), within the six-hour bound."""
    try:
        return run_group(command, cwd=cwd, env=env, timeout=_RERUN_SECONDS, started=started)
    except subprocess.TimeoutExpired:
        raise FreezeError(f"{what}: {' '.join(command)} stopped after {_RERUN_SECONDS:,} s "
                          "(its processes are ended)") from None
    except OSError as exc:
        raise FreezeError(f"{what}: cannot run {' '.join(command)}: {exc}") from None


# ------------------------------------------------------------------------------ drift check


def check_committed(
    audits: Sequence[str],
    *,
    root: Path,
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
) -> tuple[list[CellDrift], int, NumericsComparison]:
    """Re-run ``audits`` and compare with the committed ``results/<audit>/``: ``(drift, files,
    the numerical environments compared)``.

    ``command`` is the run command without its output folder (e.g. ``python -m
    faircode.pipeline.cli run
    --params params.yaml AUDIT ...``); ``--out <temporary folder>`` is appended.  The committed
    numbers can then never drift from what the code produces: CI fails on any drift.
    """
    root = root.resolve()
    for audit in audits:
        check_name(audit, where="verify --committed AUDIT")
    for audit in audits:  # the committed side is checked before the re-run, not after it
        if run_record(root / RESULTS_DIR / audit).is_file():
            checked_run(root / RESULTS_DIR / audit, error=FreezeError)
    with tempfile.TemporaryDirectory(prefix="faircode-drift-") as tmp:
        out = Path(tmp) / "results"
        done = _run([*command, "--out", str(out)], cwd=root, env=env, what="drift check")
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
        numerics = compare_numerics(root / RESULTS_DIR, out)
    return drift, files, numerics
