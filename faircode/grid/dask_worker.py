"""``python -m faircode.grid.dask_worker SCHEDULER [dask worker options]``: a Dask worker that
computes under faircode's numerical configuration.

A plain ``dask worker`` imports numpy (``distributed`` does) before any task imports faircode,
so its OpenBLAS and numpy keep the CPU's own kernels, and the coordinating process refuses its
results (:mod:`faircode.grid._worker_numerics`).  Run as ``python -m faircode.grid.dask_worker``,
the ``faircode`` package is imported first (:mod:`faircode.core.numerics` puts the declared
configuration into the environment), then ``distributed``'s own ``dask worker`` command runs
with the same arguments; the worker processes its nanny starts inherit the environment.
"""

from __future__ import annotations

__all__ = ["main"]


def main() -> None:
    """Run ``dask worker`` with ``sys.argv[1:]`` (faircode already imported)."""
    from distributed.cli.dask_worker import main as worker

    worker()


if __name__ == "__main__":  # pragma: no cover - a process entry point
    main()
