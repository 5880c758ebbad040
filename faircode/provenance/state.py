"""Provenance: what identifies the state a result was produced from, and the package versions.

A **state** is identified by four values, computed when the result is produced and shown the
same way in ``run.json``, ``report.html``, the MLflow parent run and the freeze record:

* ``git_commit`` -- HEAD of the repository holding the imported ``faircode`` when the result was
  produced (``None`` outside git);
* ``code_sha256`` -- sha256 over the sorted paths and bytes of every ``*.py`` file of the code
  that computes the numbers (:data:`RESULTS_CODE`), read from disk, so it is right before a
  commit too;
* ``inputs_dirty`` -- whether an input (:data:`INPUTS`: the package, the manifests, the params,
  the pipeline, the requirements) differed from that commit, with the first few
  ``git status`` lines in ``dirty_inputs``;
* ``params_sha256`` -- sha256 of the canonical JSON of the result-changing config
  (:func:`params_digest`; without the worker count).

Design decisions
----------------
* **Outputs never make a state dirty.**  ``results/``, ``dvc.lock`` and ``data/`` are what the
  run writes; while the pipeline runs they always differ from HEAD.  Only :data:`INPUTS` count.
* **The code hash covers the wings that compute the numbers, not the whole package.**  The
  ``evaluate`` stage re-runs exactly when one of its ``dvc.yaml`` deps changes and
  :data:`RESULTS_CODE` is a subset of them (``tests/test_provenance.py`` checks it), so results
  that ``dvc status`` calls up to date carry the hash of the code at HEAD -- a report-, record- or
  CLI-only change neither re-runs them nor makes their hash stale.  :data:`REPORT_CODE` is the
  same for the report stage (the page says which code rendered it).
* **No digest that can only be stale.**  The ``dvc.lock`` of a state and the commit that
  *contains* its results exist only after the results are committed; they belong to the freeze
  record (:mod:`faircode.record.freeze`), which is what a citation names.
* Nothing here raises: outside git the commit and dirty flag are ``None`` (unknown), never a
  guess.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "INPUTS",
    "PACKAGE_ROOT",
    "REPORT_CODE",
    "RESULTS_CODE",
    "StateIdentity",
    "code_digest",
    "git_commit",
    "group_states",
    "inputs_status",
    "params_digest",
    "params_file_record",
    "provenance",
    "state_identity",
    "state_of",
    "with_fit_numerics",
]

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
"""The folder holding the imported ``faircode`` package (the project root in a checkout)."""

INPUTS = ("faircode", "audits", "params.yaml", "dvc.yaml", "pyproject.toml", "requirements.lock")
"""What a state is produced from; a change to any of them (tracked or untracked) is dirty."""

_FACE = "faircode/__init__.py"
RESULTS_CODE = (_FACE, "faircode/core", "faircode/provenance", "faircode/counterfactual",
                "faircode/audit", "faircode/stats", "faircode/grid", "faircode/evaluate")
"""The code that computes the numbers of ``results/<audit>/`` (``faircode run``, ``evaluate``)."""
REPORT_CODE = (_FACE, "faircode/core", "faircode/provenance", "faircode/counterfactual",
               "faircode/audit", "faircode/stats", "faircode/report")
"""The code that renders the report outputs from those numbers (the ``report`` stage)."""

NOT_PARAMS = frozenset({"jobs"})
"""Config keys that change no number (the worker count); left out of :func:`params_digest`."""
_DIRTY_SHOWN = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class StateIdentity:
    """The identity of the state a result was produced from (see the module docstring)."""

    git_commit: str | None
    code_sha256: str
    inputs_dirty: bool | None
    params_sha256: str | None = None
    dirty_inputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("git_commit", "params_sha256"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"StateIdentity.{name}: expected a str or None, got {value!r}")
        if not isinstance(self.code_sha256, str) or len(self.code_sha256) != 64:
            raise ValueError(f"StateIdentity.code_sha256: expected 64 hex digits, got "
                             f"{self.code_sha256!r}")
        if self.inputs_dirty is not None and not isinstance(self.inputs_dirty, bool):
            raise TypeError(f"StateIdentity.inputs_dirty: expected a bool or None, got "
                            f"{self.inputs_dirty!r}")
        if not isinstance(self.dirty_inputs, tuple):
            raise TypeError("StateIdentity.dirty_inputs: expected a tuple of str, got "
                            f"{type(self.dirty_inputs).__name__}")

    def as_dict(self) -> dict[str, Any]:
        """The ``state`` block of ``run.json`` (``dirty_inputs`` only when dirty)."""
        record: dict[str, Any] = {"git_commit": self.git_commit, "code_sha256": self.code_sha256,
                                  "inputs_dirty": self.inputs_dirty,
                                  "params_sha256": self.params_sha256}
        if self.dirty_inputs:
            record["dirty_inputs"] = list(self.dirty_inputs)
        return record

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> StateIdentity:
        """The identity of a ``state`` block (raises ``KeyError``/``ValueError`` when malformed)."""
        return cls(git_commit=record.get("git_commit"), code_sha256=record["code_sha256"],
                   inputs_dirty=record.get("inputs_dirty"),
                   params_sha256=record.get("params_sha256"),
                   dirty_inputs=tuple(str(x) for x in record.get("dirty_inputs") or ()))

    def key(self) -> tuple[str | None, str, bool | None, str | None]:
        """The four values that identify the state (``dirty_inputs`` is detail, not identity)."""
        return self.git_commit, self.code_sha256, self.inputs_dirty, self.params_sha256

    def label(self) -> str:
        """One short line: ``commit 1ae06a6 · code 3f2a9c1 · params 9c1d0e2 · clean``."""
        commit = (self.git_commit or "unknown")[:7]
        params = (self.params_sha256 or "unknown")[:7]
        dirty = {True: "DIRTY inputs", False: "clean", None: "dirty unknown"}[self.inputs_dirty]
        return f"commit {commit} · code {self.code_sha256[:7]} · params {params} · {dirty}"


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout


def git_commit(root: Path = PACKAGE_ROOT) -> str | None:
    """HEAD of the git repository at ``root``, or ``None`` outside git."""
    out = _git(root, "rev-parse", "HEAD")
    return (out.strip() or None) if out is not None else None


def inputs_status(root: Path = PACKAGE_ROOT,
                  inputs: Iterable[str] = INPUTS) -> tuple[bool | None, tuple[str, ...]]:
    """(whether an input differs from HEAD, the first ``git status --porcelain`` lines).

    Untracked, non-ignored files under an input count (a new module is code); ``None`` outside
    git.
    """
    out = _git(root, "status", "--porcelain", "--untracked-files=all", "--", *inputs)
    if out is None:
        return None, ()
    lines = tuple(line.strip() for line in out.splitlines() if line.strip())
    return bool(lines), lines[:_DIRTY_SHOWN]


def code_digest(root: Path = PACKAGE_ROOT, paths: Iterable[str] = RESULTS_CODE) -> str:
    """sha256 over the sorted relative paths and bytes of every ``*.py`` file under ``paths``.

    ``paths`` are files or folders relative to ``root``; a missing one contributes nothing.
    """
    files: set[Path] = set()
    for rel in paths:
        path = root / rel
        if path.is_file():
            files.add(path)
        elif path.is_dir():
            files.update(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)
    digest = hashlib.sha256(b"faircode-code-v1\0")
    for path in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def params_digest(config: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, compact) of ``config`` without
    :data:`NOT_PARAMS`: the same for ``faircode run --params params.yaml`` and the DVC stages."""
    kept = {k: v for k, v in config.items() if k not in NOT_PARAMS}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def params_file_record(path: Path) -> dict[str, Any] | None:
    """What a report compares each run's parameters with: the params file at ``path`` as
    ``{"path", "sha256", "config"}`` (its config as ``run.json`` records it, and that config's
    :func:`params_digest`); None when there is no readable, valid file."""
    from faircode.core.config import config_record, load_params
    from faircode.core.errors import FaircodeError

    try:
        config = config_record(load_params(path).config)
    except (FaircodeError, OSError):
        return None
    return {"path": path.name, "sha256": params_digest(config), "config": config}


def state_identity(*, root: Path = PACKAGE_ROOT, config: Mapping[str, Any] | None = None,
                   code: Iterable[str] = RESULTS_CODE) -> StateIdentity:
    """The identity of the state at ``root`` now (``params_sha256`` from ``config`` if given)."""
    dirty, lines = inputs_status(root)
    return StateIdentity(git_commit=git_commit(root), code_sha256=code_digest(root, code),
                         inputs_dirty=dirty, dirty_inputs=lines,
                         params_sha256=None if config is None else params_digest(config))


def state_of(run: Mapping[str, Any]) -> StateIdentity | None:
    """The identity in a ``run.json`` record's ``state`` block; ``None`` when it has none (one
    written before states were recorded) or a malformed one."""
    block = run.get("state")
    if not isinstance(block, Mapping):
        return None
    try:
        return StateIdentity.from_dict(block)
    except (KeyError, TypeError, ValueError):
        return None


def group_states(runs: Mapping[str, Mapping[str, Any]]) -> dict[StateIdentity | None,
                                                               tuple[str, ...]]:
    """The states of audits' ``run.json`` records: identity -> its audits, in the records' order.

    ``None`` collects the audits without a state (:func:`state_of`).  One key means every audit
    comes from one state.
    """
    groups: dict[StateIdentity | None, list[str]] = {}
    for audit, run in runs.items():
        groups.setdefault(state_of(run), []).append(audit)
    return {state: tuple(audits) for state, audits in groups.items()}


def _versions() -> dict[str, str]:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str] = {"python": platform.python_version()}
    for package in ("faircode", "numpy", "scipy", "pandas", "scikit-learn", "fairlearn", "joblib"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:  # pragma: no cover - every one is a dependency
            versions[package] = "unknown"
    return versions


def provenance(*, repo: Path | None = None, code: Iterable[str] = RESULTS_CODE,
               numerics: bool = True) -> dict[str, Any]:
    """``{"versions": ..., "state": ..., "numerics": ...}`` of the code producing a result now.

    ``state`` lacks ``params_sha256``: the writer of ``run.json`` adds it from the config it
    records (:func:`faircode.evaluate.write.write_audit`).  ``numerics`` is this process's
    numerical environment (:func:`faircode.core.numerics.record`: kernels, libraries, threads,
    CPU); ``numerics=False`` leaves it out (a record of no computed number: the report page, the
    MLflow sync).
    """
    state = state_identity(root=repo if repo is not None else PACKAGE_ROOT, code=code)
    record = {"versions": _versions(), "state": state.as_dict()}
    if numerics:
        from faircode.core.numerics import record as numerical_environment

        record["numerics"] = numerical_environment()
    return record


def with_fit_numerics(record: Mapping[str, Any], fit: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` (:func:`provenance`) with ``numerics.fit``: the kernels that computed the
    predictions (:attr:`faircode.grid.predictions.AuditPredictions.numerics`), which may be
    another process's than the one evaluating them."""
    return {**record, "numerics": {**(record.get("numerics") or {}), "fit": dict(fit)}}
