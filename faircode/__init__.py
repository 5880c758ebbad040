"""faircode: a reproducible, data-versioned benchmark that audits ML decisions for bias.

The public API is re-exported here: manifests and data (:func:`load_manifest`,
:func:`load_audit`), the grid (:class:`BenchmarkConfig`, :func:`run_audit`), and the
counterfactual perturbation engine (:class:`AxisSpec`, :class:`Substitution`,
:class:`PerturbationKind`, :func:`perturb`, :func:`flip_rate`).  Importing faircode never imports
dvc or mlflow.
"""

from __future__ import annotations

from faircode.benchmark import run_audit
from faircode.config import BenchmarkConfig
from faircode.counterfactual import flip_rate
from faircode.data import load_audit
from faircode.errors import FaircodeError
from faircode.manifest import load_manifest
from faircode.perturb import AxisSpec, Perturbation, PerturbationKind, Substitution, perturb

__version__ = "0.1.0"

__all__ = [
    "AxisSpec",
    "BenchmarkConfig",
    "FaircodeError",
    "Perturbation",
    "PerturbationKind",
    "Substitution",
    "__version__",
    "flip_rate",
    "load_audit",
    "load_manifest",
    "perturb",
    "run_audit",
]
