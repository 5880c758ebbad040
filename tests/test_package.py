"""Tests for the package's public face: what `import faircode` exposes and what it never loads."""

from __future__ import annotations

import subprocess
import sys

import faircode


def test_public_api_is_reexported() -> None:
    """The documented names are importable from the top-level package."""
    for name in ("AxisSpec", "Substitution", "PerturbationKind", "perturb", "flip_rate",
                 "load_manifest", "load_audit", "BenchmarkConfig", "run_audit"):
        assert name in faircode.__all__
        assert getattr(faircode, name) is not None


def test_import_never_loads_dvc_or_mlflow() -> None:
    """Importing faircode (and using perturb) loads neither pipeline dependency."""
    code = (
        "import sys, faircode\n"
        "ax = faircode.AxisSpec('g', (faircode.Substitution('he', 'she'),))\n"
        "assert faircode.perturb('he', [ax])[0].perturbed == 'she'\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'dvc', 'mlflow'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
