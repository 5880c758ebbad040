"""faircode: a reproducible, data-versioned benchmark that audits ML decisions for bias.

The public API is re-exported here.  Importing faircode never imports dvc or mlflow.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
