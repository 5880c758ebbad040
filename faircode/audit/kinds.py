"""The audit wing's table of task kinds: each kind's manifest loader.

An ``audit.yaml`` says its kind (``kind:``, :func:`faircode.audit.manifest.manifest_kind`;
absent: ``tabular``, the grid's, whose ``task:`` may name another: ``regression``,
``multiclass``), which names a task kind (:func:`faircode.core.kinds.kind_of_manifest`);
:data:`MANIFESTS` registers how each kind's manifest is read and validated (its schema).
:func:`load_any_manifest` is how a step that serves every kind -- the fetch stage -- reads a
manifest without naming a kind.

Design decisions
----------------
* **Keyed by** :attr:`faircode.core.kinds.TaskKind.name` (``tests/test_layout.py`` checks the
  table covers every kind); a kind's loader module is imported only when a manifest of that
  kind is read.
* A ``kind:`` no task kind declares is one line naming the manifest and the known kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from faircode.audit.manifest import manifest_kind
from faircode.core.kinds import TaskKind, kind_of_manifest, registered

__all__ = ["MANIFESTS", "load_any_manifest", "manifest_task_kind"]

MANIFESTS: dict[str, str] = {
    "binary": "faircode.audit.manifest:load_manifest",
    "text": "faircode.audit.text_manifest:load_text_manifest",
    "regression": "faircode.audit.regression_manifest:load_regression_manifest",
    "multiclass": "faircode.audit.multiclass_manifest:load_multiclass_manifest",
}
"""Task kind -> ``"<module>:<function>"``: ``function(path)`` reads and validates a manifest
of that kind (one-line :class:`~faircode.core.errors.ManifestError`)."""


def manifest_task_kind(path: Path | str) -> TaskKind:
    """The task kind the manifest at ``path`` declares (one line for an unknown ``kind:``)."""
    return kind_of_manifest(manifest_kind(path), where=f"{path}: kind (or a tabular "
                            "manifest's task)")


def load_any_manifest(path: Path | str) -> Any:
    """The manifest at ``path``, read by its kind's loader (:data:`MANIFESTS`)."""
    load: Callable[[Path], Any] = registered(MANIFESTS, manifest_task_kind(path),
                                             where="faircode.audit.kinds.MANIFESTS")
    return load(Path(path))
