"""The tracking wing's table of task kinds: how each kind's results become MLflow child runs.

:func:`collect_children` is what ``faircode track`` logs: every audit folder of a results
folder, each checked to hold exactly the files its ``run.json`` records
(:func:`faircode.core.digests.checked_run`) and turned into child runs by its kind's function
(:data:`CHILDREN`: the grid's :func:`faircode.record.runs.grid_children` with its ensembles' and
set of models' (:func:`faircode.record.arbitrariness_runs.binary_children`), the text audits'
:func:`faircode.record.text_runs.text_children`); an audit with the pipeline's note only is
skipped with its reason.

Design decisions
----------------
* **Keyed by** :attr:`faircode.core.kinds.TaskKind.name` (``tests/test_layout.py`` checks the
  table covers every kind); a kind's module is imported when a results folder holds its runs.
* Children come kind by kind in :data:`faircode.core.kinds.TASK_KINDS` order, each kind's
  audits in name order (the order they are logged in).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from faircode.core.digests import checked_run
from faircode.core.kinds import TASK_KINDS, kind_of_run, registered
from faircode.core.layout import UNAVAILABLE, UNAVAILABLE_NOTE, folder_kind, run_record
from faircode.record.child import ChildRun
from faircode.record.runs import ResultsError, audit_folders, read_json

__all__ = ["CHILDREN", "collect_children"]

CHILDREN: dict[str, str] = {
    "binary": "faircode.record.arbitrariness_runs:binary_children",
    "text": "faircode.record.text_runs:text_children",
    "regression": "faircode.record.regression_runs:regression_children",
    "multiclass": "faircode.record.multiclass_runs:multiclass_children",
}
"""Task kind -> ``"<module>:<function>"``: ``function(folder)`` is the list of
:class:`~faircode.record.child.ChildRun` of one checked audit folder of that kind."""


def _skip_reason(folder: Path) -> str:
    info = read_json(folder / UNAVAILABLE_NOTE)
    reason = info.get("reason") or info.get("message") if isinstance(info, dict) else None
    return str(reason or json.dumps(info))[:8000]


def collect_children(results: Path) -> tuple[list[ChildRun], dict[str, str]]:
    """Every child run the audits on disk describe, and the unavailable audits' reasons."""
    by_kind: dict[str, list[Path]] = {}
    skipped: dict[str, str] = {}
    for folder in audit_folders(results):
        kind = folder_kind(folder)
        if kind == UNAVAILABLE:
            skipped[folder.name] = _skip_reason(folder)
            continue
        task = kind_of_run(kind)
        if task is None:
            raise ResultsError(f"{run_record(folder)}: kind: expected a run of one of "
                               f"{', '.join(k.run_kind for k in TASK_KINDS)}, got {kind!r}")
        by_kind.setdefault(task.name, []).append(folder)
    children: list[ChildRun] = []
    for task in TASK_KINDS:
        if task.name not in by_kind:
            continue
        of_kind: Callable[[Path], list[ChildRun]] = registered(
            CHILDREN, task, where="faircode.record.kinds.CHILDREN")
        for folder in by_kind[task.name]:
            checked_run(folder, error=ResultsError)  # exactly the recorded files, byte for byte
            children.extend(of_kind(folder))
    return children, skipped
