"""The parent run of a state: its name, its identity tags, the pipeline details the caller
gathered for it (:class:`SyncContext`) and its creation.

The identity is the results' own (their ``run.json`` ``state``; :mod:`faircode.provenance.state`):
one state's tags as they are, several states' common values with ``mixed`` where they differ
(and dirty if any audit is).  Named by :func:`faircode.record.names.parent_name`.  Beside it the
numerical environment that computed the numbers (``numerics.*``: kernels, libraries, mode, CPU;
:mod:`faircode.core.numerics`), the audits' common value or ``mixed``; and which children it
shares with an earlier state (:mod:`faircode.record._shared`: its base, counts and a note
paragraph).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faircode.core.errors import describe
from faircode.core.layout import run_record
from faircode.record._store import flatten, log_batched
from faircode.record.names import parent_name
from faircode.record.runs import (
    ChildRun,
    audit_folders,
    read_json,
    recorded_state,
    sanitise,
    state_tags,
)

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.tracking import MlflowClient

    from faircode.record._shared import Sharing

__all__ = ["SyncContext", "create_parent", "name_frozen", "numerics_tags", "parent_state"]

_FIELDS = ("git_commit", "code_sha256", "inputs_dirty", "params_sha256")


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncContext:
    """Pipeline-state details the caller gathered (freeze, DVC); every field is optional.

    The state's identity is not here: it is the results' own (their ``run.json``).

    Parameters
    ----------
    freeze_name
        The freeze record whose results are these (names the parent).
    dvc_exp_name, dvc_exp_baseline
        The DVC experiment's name and baseline commit, when run by ``dvc exp run``.
    versions
        Package versions to tag (``versions.<package>``).
    """

    freeze_name: str | None = None
    dvc_exp_name: str | None = None
    dvc_exp_baseline: str | None = None
    versions: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("freeze_name", "dvc_exp_name", "dvc_exp_baseline"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"SyncContext.{name}: expected a str or None, got "
                                f"{describe(value)}")

    def tags(self) -> dict[str, str]:
        """The parent-run tags these details become (absent ones are left out)."""
        tags = {"faircode.freeze": self.freeze_name, "dvc_exp_name": self.dvc_exp_name,
                "dvc_exp_baseline": self.dvc_exp_baseline}
        tags.update({f"versions.{k}": v for k, v in self.versions.items()})
        return {k: str(v) for k, v in tags.items() if v is not None}


def parent_state(results: Path) -> tuple[dict[str, str], dict[str, str | None]]:
    """(the parent's ``state.*`` tags, each identity field's tag value: the audits' common one,
    ``mixed`` where they differ, ``None`` where unknown; dirty if any audit is)."""
    groups = recorded_state(results)
    consensus: dict[str, str | None] = {}
    for i, name in enumerate(_FIELDS):
        values = {None if s is None else _tag_value(s.key()[i]) for s in groups}
        consensus[name] = values.pop() if len(values) == 1 else "mixed"
    if any(s is not None and s.inputs_dirty for s in groups):
        consensus["inputs_dirty"] = "true"
    if len(groups) == 1:
        return state_tags(next(iter(groups))), consensus
    tags = {f"state.{k}": v for k, v in consensus.items() if v is not None}
    return {**tags, "state.states": str(len(groups))}, consensus


def numerics_tags(results: Path) -> dict[str, str]:
    """The parent's ``numerics.*`` tags from the audits' ``run.json`` (``not recorded`` where a
    run.json has none; ``mixed`` where the audits differ)."""
    from faircode.core.numerics import describe

    values: dict[str, set[str]] = {}
    for folder in audit_folders(results):
        if not run_record(folder).is_file():
            continue
        block = read_json(run_record(folder)).get("numerics") or {}
        cpu = block.get("cpu") or {}
        for key, value in (
                ("kernels", describe(block.get("configuration"))),
                ("fit_kernels", describe(block.get("fit"))),
                ("mode", block.get("mode")), ("pinned", block.get("pinned")),
                ("note", block.get("note") or ""),
                ("blas", "; ".join(f"{b.get('file')} {b.get('version')} {b.get('architecture')} "
                                   f"threads {b.get('threads')}" for b in block.get("blas", ()))),
                ("cpu", cpu.get("model")), ("cpu_flags_sha256", cpu.get("flags_sha256"))):
            text = "not recorded" if value is None else str(value).lower() \
                if isinstance(value, bool) else str(value)
            values.setdefault(f"numerics.{key}", set()).add(text)
    return {k: (v.pop() if len(v) == 1 else "mixed")[:8000] for k, v in values.items()
            if v != {""}}


def _tag_value(value: object) -> str | None:
    return None if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def create_parent(client: MlflowClient, experiment_id: str, results: Path, digest: str,
                   children: list[ChildRun], skipped: Mapping[str, str], *,
                   config: Mapping[str, Any], context: SyncContext, inputs: list[Any],
                   sharing: Sharing) -> str:
    """Create the state's parent (``incomplete``) with its tags, params and inputs; its id.

    ``sharing`` (:mod:`faircode.record._shared`) is recorded on it: the base, the counts and
    the note's paragraph on which children are logged under it.
    """
    audits = sorted({c.audit for c in children})
    state, consensus = parent_state(results)
    name = parent_name(freeze=context.freeze_name, dvc_exp=context.dvc_exp_name, config=config,
                       code_sha256=consensus.get("code_sha256"),
                       params_sha256=consensus.get("params_sha256"),
                       dirty=consensus.get("inputs_dirty") == "true")
    tags = {"faircode.digest": digest, "faircode.sync_state": "incomplete",
            "faircode.children_expected": str(len(children)), "audits": ", ".join(audits),
            "results": str(results.resolve()), **state, **numerics_tags(results),
            **context.tags(),
            "versions.mlflow": importlib.metadata.version("mlflow"),
            **{sanitise(f"unavailable.{a}"): r for a, r in skipped.items()},
            **sharing.tags(len(children)),
            "mlflow.note.content": (
                f"faircode state {name}: {len(children)} child runs over "
                f"{', '.join(audits) or 'no audit'}"
                + (f"; unavailable: {', '.join(sorted(skipped))}" if skipped else "")
                + ". Identity (as in run.json and report.html): "
                + ", ".join(f"{k} {v}" for k, v in consensus.items())
                + ". Cite the freeze record (freezes/<name>.json), not this run."
                + sharing.note(len(children)))}
    parent = client.create_run(experiment_id, tags=tags, run_name=name)
    parent_id = parent.info.run_id
    log_batched(client, parent_id, params=dict(flatten(config)), metrics={})
    if inputs:
        client.log_inputs(parent_id, datasets=inputs)
    return str(parent_id)


def name_frozen(client: MlflowClient, parent_id: str, freeze: str) -> None:
    """Name a parent logged before its state was frozen by the freeze (tag and run name)."""
    run = client.get_run(parent_id)
    if run.data.tags.get("faircode.freeze") != freeze:
        dirty = run.data.tags.get("state.inputs_dirty") == "true"
        client.set_tag(parent_id, "faircode.freeze", freeze)
        client.update_run(parent_id, name=parent_name(
            freeze=freeze, dvc_exp=None, config={}, code_sha256=None, params_sha256=None,
            dirty=dirty))
