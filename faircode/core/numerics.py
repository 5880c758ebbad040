"""The declared numerical configuration: which compute kernels produce faircode's numbers.

numpy and scipy each bundle an OpenBLAS that picks its compute kernel from the CPU it finds
(SkylakeX on an AVX-512 CPU, Haswell on an AVX2 one), and numpy dispatches its own loops (exp,
log, sums, sorts) to the widest SIMD target the CPU has.  Kernels round the last bits
differently; ExponentiatedGradient, decision thresholds and replicate tests turn those bits into
different decisions, so without a declared configuration a cited number depends on the CPU that
computed it.  This module is that declaration, in one place, and the record of what a process
actually runs.

The configuration (``FAIRCODE_NUMERICS=pinned``, the default)
--------------------------------------------------------------
* **OpenBLAS kernel Haswell** (:data:`OPENBLAS_CORETYPE`) in both libraries: AVX2 + FMA, the
  kernel every x86-64-v3 CPU runs (Intel since Haswell, 2013; AMD Zen uses the same kernels),
  and the OpenBLAS kernel the committed states were computed with.
* **numpy dispatch up to X86_V3** (:data:`NUMPY_DISABLED`: every target above it is disabled):
  on every x86-64-v3 CPU numpy runs the same AVX2 loops; its AVX-512 loops give other bytes on
  the CPUs that have them.  The committed ``v0.3-paper`` was computed with those AVX-512 loops:
  pinning moves 76 values of german_credit_lending + insurance_denial in their last digit
  (|diff| <= 3.6e-15), as numpy's baseline loops alone would -- and the Haswell kernel needs
  x86-64-v3 anyway, so disabling X86_V3 too would make no further CPU agree.
* **One thread** in OpenBLAS and OpenMP (:data:`THREAD_ENV`): faircode's parallelism is its
  worker processes; a threaded reduction could split a sum differently.

Design decisions
----------------
* **Applied in the process itself, before numpy loads**: ``faircode/__init__.py`` calls
  :func:`apply` when the package is imported, which every entry point (the ``faircode`` command,
  ``python -m faircode.pipeline.stages.*`` under ``dvc repro`` from any shell, the grid's worker
  processes, ``python -m faircode.grid.dask_worker``) does before anything imports numpy.  It
  *overrides* inherited values (another CPU's choice is exactly a kernel forced in the shell);
  the child processes inherit them.  Standard library only: this runs on ``import faircode``.
* **Never a kernel the CPU cannot run**: the Haswell kernel is forced only where
  ``/proc/cpuinfo`` lists the x86-64-v3 flags (:data:`KERNEL_FLAGS`); elsewhere (an older or
  non-x86 CPU, flags unknown) OpenBLAS keeps its own choice -- forcing it would end in SIGILL --
  and the record says so (``pinned: false`` with the reason), so ``faircode verify`` names it.
  Bit-identity is promised on x86-64 only.
* **An escape hatch, recorded**: ``FAIRCODE_NUMERICS=native`` leaves OpenBLAS, numpy and the
  thread counts to the shell and the CPU (experiments, speed); ``run.json`` records it.
* **Too late is refused, not hidden**: a process that imported numpy before faircode (a
  notebook) keeps the kernel it loaded.  The library then warns and records the actual state
  (:func:`require` with ``strict=False``) and marks this process's children ``native`` so that
  its workers compute as it does; a computing entry point refuses with one line
  (:class:`NumericsError`, exit 2).
* **What a process runs is read, not assumed**: :func:`configuration` (the kernels and numpy
  targets in use, read through threadpoolctl and numpy; the same on every CPU that runs the
  pinned configuration) and :func:`record` (plus library versions, threads, CPU model, a digest
  of its flags) come from the loaded libraries.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
import warnings
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faircode.core.errors import ConfigError

__all__ = [
    "APPLIED",
    "KERNEL_FLAGS",
    "MODE_ENV",
    "NUMPY_DISABLED",
    "NUMPY_DISPATCH",
    "OPENBLAS_CORETYPE",
    "THREAD_ENV",
    "Applied",
    "NumericsError",
    "apply",
    "configuration",
    "cpu_flags",
    "declared_environment",
    "describe",
    "record",
    "require",
]

MODE_ENV = "FAIRCODE_NUMERICS"
"""``pinned`` (default: the declared configuration) or ``native`` (the CPU's own)."""
PINNED, NATIVE = "pinned", "native"
OPENBLAS_CORETYPE = "Haswell"
"""The OpenBLAS kernel of every computing process (numpy's and scipy's OpenBLAS alike)."""
KERNEL_FLAGS = ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")
"""The ``/proc/cpuinfo`` flags of x86-64-v3 (``abm`` is LZCNT): the Haswell kernel needs AVX2
and FMA, numpy's X86_V3 loops the rest.  The pinned kernel is forced only where all are listed."""
NUMPY_DISPATCH = "X86_V3"
"""The widest numpy dispatch target the configuration keeps."""
NUMPY_DISABLED = ("X86_V4", "AVX512_ICL", "AVX512_SPR")
"""numpy 2.4's dispatch targets above X86_V3 (``NPY_DISABLE_CPU_FEATURES``); a CPU without one
is simply not using it (numpy skips a disabled feature the CPU lacks without a word)."""
THREAD_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
"""Set to 1: one thread per process in OpenBLAS and in OpenMP (scikit-learn)."""
RELEVANT_FLAGS = ("sse4_2", "avx", "avx2", "fma", "bmi2", "avx512f", "avx512dq", "avx512bw",
                  "avx512vl", "avx512_fp16", "amx_tile")
"""The CPU flags a record lists by name (all flags enter its ``flags_sha256``)."""
_ENABLE_ENV = "NPY_ENABLE_CPU_FEATURES"  # numpy refuses both variables at once
_X86 = ("x86_64", "amd64")


class NumericsError(ConfigError):
    """This process cannot compute under the configuration asked for (the message says why)."""


@dataclass(frozen=True, slots=True)
class Applied:
    """What :func:`apply` did when faircode was imported.

    ``mode`` is the mode asked for (``pinned``/``native``; verbatim when invalid); ``pinned``
    whether the declared configuration is in this process's environment; ``note`` why not;
    ``error`` a reason a computing entry point must refuse to run (invalid mode, numpy imported
    first under another configuration).
    """

    mode: str
    pinned: bool
    note: str = ""
    error: str = ""


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """The CPU's flags (the first ``flags`` line of ``/proc/cpuinfo``), or None where unknown."""
    try:
        with cpuinfo.open(encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        return None
    return None


def _cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    try:
        with cpuinfo.open(encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        return None
    return platform.processor() or None


def declared_environment(machine: str, flags: Iterable[str] | None) -> tuple[dict[str, str], str]:
    """(the environment of the pinned configuration on this CPU, why it is partial or '').

    Without the x86-64-v3 flags (or off x86-64) the OpenBLAS kernel is left out: OpenBLAS then
    keeps a kernel this CPU can execute.
    """
    env = dict.fromkeys(THREAD_ENV, "1")
    if machine.lower() not in _X86:
        return env, (f"the machine is {machine}, not x86-64: OpenBLAS and numpy choose their own "
                     "kernels, and bit-identity with x86-64 results is not promised")
    env["NPY_DISABLE_CPU_FEATURES"] = " ".join(NUMPY_DISABLED)
    if flags is None:
        return env, ("the CPU's flags cannot be read (no /proc/cpuinfo): OpenBLAS keeps its own "
                     f"kernel instead of {OPENBLAS_CORETYPE}")
    missing = [f for f in KERNEL_FLAGS if f not in set(flags)]
    if missing:
        return env, (f"the CPU lacks {', '.join(missing)} (x86-64-v3), which the pinned "
                     f"{OPENBLAS_CORETYPE} kernel needs: OpenBLAS keeps its own kernel")
    env["OPENBLAS_CORETYPE"] = OPENBLAS_CORETYPE
    return env, ""


def apply(environ: MutableMapping[str, str], *, loaded: bool, machine: str,
          flags: Iterable[str] | None) -> Applied:
    """Put the declared configuration into ``environ`` (this process's, at import) unless
    ``FAIRCODE_NUMERICS`` says ``native`` or numpy is ``loaded`` already; return what was done."""
    raw = environ.get(MODE_ENV, "")
    mode = raw.strip().lower() or PINNED
    if mode not in (PINNED, NATIVE):
        return Applied(raw, False, error=f"{MODE_ENV}: expected one of {PINNED}, {NATIVE}, got "
                                         f"{raw!r} (str)")
    if mode == NATIVE:
        return Applied(NATIVE, False, note=f"{MODE_ENV}=native: the CPU's own kernels")
    wanted, partial = declared_environment(machine, flags)
    if loaded:
        if all(environ.get(k) == v for k, v in wanted.items()):
            return Applied(PINNED, not partial, note=partial)  # the shell set it already
        environ[MODE_ENV] = NATIVE  # the workers this process starts compute as it does
        return Applied(PINNED, False, note="numpy was imported before faircode",
                       error="numerics: numpy was imported before faircode, so this process "
                             "keeps the kernels it loaded instead of the declared configuration; "
                             "start it afresh (`faircode ...`, `python -m faircode...`) or set "
                             f"{MODE_ENV}=native to compute with the CPU's own (recorded)")
    environ.update(wanted)
    for name in ("OPENBLAS_CORETYPE", _ENABLE_ENV):
        if name not in wanted:
            environ.pop(name, None)  # never an inherited kernel the CPU may not execute
    return Applied(PINNED, not partial, note=partial)


APPLIED = apply(os.environ, loaded="numpy" in sys.modules, machine=platform.machine(),
                flags=cpu_flags())
"""What :func:`apply` did in this process (on ``import faircode``)."""


def require(*, strict: bool = True, applied: Applied | None = None) -> None:
    """Refuse to compute when :data:`APPLIED` says this process cannot (:class:`NumericsError`).

    ``strict=False`` (the library: a notebook that imported numpy first) warns instead when the
    only problem is that numpy came first; an invalid ``FAIRCODE_NUMERICS`` is an error either way.
    """
    applied = applied or APPLIED
    if not applied.error:
        return
    if strict or applied.mode not in (PINNED, NATIVE):
        raise NumericsError(applied.error)
    warnings.warn(f"{applied.error.removeprefix('numerics: ')} (recorded in run.json)",
                  RuntimeWarning, stacklevel=3)


def _numpy_targets() -> tuple[list[str], list[str], list[str]]:
    """(numpy's baseline, its dispatch targets, those enabled in this process)."""
    import importlib

    umath: Any = importlib.import_module("numpy._core._multiarray_umath")

    features = umath.__cpu_features__
    dispatch = list(umath.__cpu_dispatch__)
    return list(umath.__cpu_baseline__), dispatch, [d for d in dispatch if features.get(d)]


def _libraries() -> list[dict[str, Any]]:
    """The BLAS and OpenMP libraries loaded in this process (threadpoolctl), without paths."""
    import scipy.linalg  # noqa: F401  (loads scipy's own OpenBLAS: both libraries are recorded)
    from threadpoolctl import threadpool_info

    found = []
    for info in threadpool_info():
        found.append({"api": info.get("user_api"), "library": info.get("internal_api"),
                      "file": Path(str(info.get("filepath", ""))).name,
                      "version": info.get("version"), "architecture": info.get("architecture"),
                      "threads": info.get("num_threads"),
                      **({"threading": info["threading_layer"]}
                         if info.get("threading_layer") else {})})
    return sorted(found, key=lambda lib: (str(lib["api"]), str(lib["file"])))


def configuration() -> dict[str, list[str]]:
    """The kernels this process computes with: ``{"blas_kernels", "numpy_dispatch"}``.

    The same on every CPU that runs the pinned configuration (no host detail); what a worker's
    result is checked against and what the predictions store records.
    """
    _, _, enabled = _numpy_targets()
    kernels = sorted({f"{lib['library']} {lib['architecture']}" for lib in _libraries()
                      if lib["api"] == "blas"})
    return {"blas_kernels": kernels, "numpy_dispatch": enabled}


def describe(config: Mapping[str, Any] | None) -> str:
    """``OpenBLAS Haswell, numpy dispatch X86_V3`` (``not recorded`` for None/empty)."""
    if not config:
        return "not recorded"
    kernels = ", ".join(str(k).replace("openblas", "OpenBLAS") for k in
                        config.get("blas_kernels") or ()) or "no BLAS"
    dispatch = " ".join(config.get("numpy_dispatch") or ()) or "none (baseline only)"
    return f"{kernels}; numpy dispatch {dispatch}"


def record(applied: Applied | None = None) -> dict[str, Any]:
    """This process's numerical environment, as ``run.json`` records it (``numerics``)."""
    applied = applied or APPLIED
    import numpy

    baseline, dispatch, enabled = _numpy_targets()
    libraries = _libraries()
    flags = cpu_flags()
    config = configuration()
    declared = {"blas_kernels": sorted({f"{lib['library']} {OPENBLAS_CORETYPE}" for lib in
                                        libraries if lib["api"] == "blas"}),
                "numpy_dispatch": [d for d in dispatch if d not in NUMPY_DISABLED]}
    libc = " ".join(platform.libc_ver()).strip()
    return {
        "mode": applied.mode, "pinned": applied.pinned,
        **({"note": applied.note} if applied.note else {}),
        "as_declared": config == declared,
        "declared": {"openblas_coretype": OPENBLAS_CORETYPE,
                     "numpy_disabled": list(NUMPY_DISABLED), "threads": 1},
        "configuration": config,
        "blas": [lib for lib in libraries if lib["api"] == "blas"],
        "openmp": [lib for lib in libraries if lib["api"] == "openmp"],
        "numpy": {"version": numpy.__version__, "baseline": baseline, "dispatch": dispatch,
                  "enabled": enabled},
        "cpu": {"machine": platform.machine(), "model": _cpu_model(),
                "flags": sorted(set(flags or ()) & set(RELEVANT_FLAGS)),
                "flags_sha256": None if flags is None else hashlib.sha256(
                    " ".join(sorted(flags)).encode()).hexdigest()},
        **({"libc": libc} if libc else {}),
    }
