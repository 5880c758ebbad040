"""faircode: a reproducible, data-versioned benchmark that audits ML decisions for bias.

The public API is re-exported here: manifests and data (:func:`load_manifest`,
:func:`load_audit`), the grid (:class:`BenchmarkConfig`, :func:`run_audit`), and the
counterfactual perturbation engine (:class:`AxisSpec`, :class:`Substitution`,
:class:`PerturbationKind`, :func:`perturb`, :func:`flip_rate`), and the audit of decisions no one
here trained (:func:`audit_decisions`; a text model's two score files: :func:`audit_flips`).

The package face is quiet: every name is loaded on first use (PEP 562 ``__getattr__``), so
``import faircode`` -- and importing one wing, e.g. ``faircode.counterfactual`` -- loads only
what that needs.  Importing faircode never imports dvc or mlflow.  The one thing the import
does: :mod:`faircode.core.numerics` (standard library only) puts the declared numerical
configuration -- the OpenBLAS kernel, numpy's CPU dispatch, one thread -- into this process's
environment before anything imports numpy, so every entry point computes with it.
Where each concept lives:
``core`` (errors, config, seeds, the grid vocabulary), ``counterfactual`` (perturbation),
``audit`` (manifests, data), ``stats`` (statistics), ``grid`` (fitting), ``evaluate``
(scoring, result files), ``report``, ``record`` (MLflow, freeze) and ``pipeline`` (the CLI and
the DVC stages); arrows run only downward in that order.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from faircode.core import numerics as _numerics  # noqa: F401  (applies it, before numpy loads)

__version__ = "0.1.0"

_PUBLIC: dict[str, str] = {
    "AxisSpec": "faircode.counterfactual.perturb",
    "BenchmarkConfig": "faircode.core.config",
    "FaircodeError": "faircode.core.errors",
    "Perturbation": "faircode.counterfactual.perturb",
    "PerturbationKind": "faircode.counterfactual.perturb",
    "audit_decisions": "faircode.pipeline.run",
    "audit_flips": "faircode.evaluate.text_files",
    "Substitution": "faircode.counterfactual.perturb",
    "flip_rate": "faircode.stats.flips",
    "load_audit": "faircode.audit.data",
    "load_manifest": "faircode.audit.manifest",
    "perturb": "faircode.counterfactual.perturb",
    "run_audit": "faircode.pipeline.run",
}

__all__ = [
    "AxisSpec",
    "BenchmarkConfig",
    "FaircodeError",
    "Perturbation",
    "PerturbationKind",
    "Substitution",
    "__version__",
    "audit_decisions",
    "audit_flips",
    "flip_rate",
    "load_audit",
    "load_manifest",
    "perturb",
    "run_audit",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from faircode.audit.data import load_audit
    from faircode.audit.manifest import load_manifest
    from faircode.core.config import BenchmarkConfig
    from faircode.core.errors import FaircodeError
    from faircode.counterfactual.perturb import (
        AxisSpec,
        Perturbation,
        PerturbationKind,
        Substitution,
        perturb,
    )
    from faircode.evaluate.text_files import audit_flips
    from faircode.pipeline.run import audit_decisions, run_audit
    from faircode.stats.flips import flip_rate


def __getattr__(name: str) -> Any:
    """Load a public name from its wing on first use (PEP 562)."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'faircode' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
