"""The ``multiclass`` kind's manifest: a tabular manifest with ``task: multiclass``.

Its schema is the tabular one (:mod:`faircode.audit.manifest`: dataset, filters, protected
attributes, core and proxy features, split) with a target of method ``classes`` -- the column
and its classes in order, each row labelled by its class's position; a row of any other value is
dropped at the target step -- and none of a binary decision's blocks (``decision``, ``system``,
``counterfactual_axes``, ``strata``) nor a ``dataset.unit`` (its tests take rows as independent).
``BankWages``' job::

    task: multiclass
    target:
      column: job
      method: classes
      values: [custodial, admin, manage]

:func:`load_multiclass_manifest` is its entry of :data:`faircode.audit.kinds.MANIFESTS`.
"""

from __future__ import annotations

from pathlib import Path

from faircode.audit.manifest import Manifest, load_manifest
from faircode.core.errors import ManifestError
from faircode.core.kinds import MULTICLASS

__all__ = ["load_multiclass_manifest"]


def load_multiclass_manifest(path: Path | str) -> Manifest:
    """Read and validate the multi-class manifest at ``path`` (one line naming the file and key
    for anything else, a binary manifest included)."""
    manifest = load_manifest(path)
    if manifest.task != MULTICLASS.manifest_kind:
        raise ManifestError(f"{manifest.file}: task: expected {MULTICLASS.manifest_kind} (a "
                            f"multi-class audit), got {manifest.task!r} (str)")
    return manifest
