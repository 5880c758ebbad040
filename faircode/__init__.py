"""faircode: a reproducible, data-versioned benchmark that audits ML decisions for bias.

The public API is re-exported here.  Importing faircode never imports dvc or mlflow.
"""

from __future__ import annotations

from faircode.counterfactual import flip_rate
from faircode.perturb import AxisSpec, Perturbation, PerturbationKind, Substitution, perturb

__version__ = "0.1.0"

__all__ = [
    "AxisSpec",
    "Perturbation",
    "PerturbationKind",
    "Substitution",
    "__version__",
    "flip_rate",
    "perturb",
]
